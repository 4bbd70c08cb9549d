// SPDX-License-Identifier: MIT
// A Catch2 program whose one check fails on purpose: ctest passes only when its output holds
// the whole difference as testing/catch2.hpp prints it (tests.cmake beside this file).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "tokchron/testing/catch2.hpp"
// clang-format off
#include "failing_case.hpp"
// clang-format on
