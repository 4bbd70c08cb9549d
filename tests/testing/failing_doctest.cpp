// SPDX-License-Identifier: MIT
// A doctest program whose one check fails on purpose: ctest passes only when its output holds
// the whole difference as testing/doctest.hpp prints it (tests.cmake beside this file).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "tokchron/testing/doctest.hpp"
// clang-format off
#include "failing_case.hpp"
// clang-format on
