// SPDX-License-Identifier: MIT
// The one file of the program that holds the explicit instantiations (tests.cmake).
#include "tokchron/record_instantiate.hpp"
