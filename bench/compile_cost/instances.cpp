// SPDX-License-Identifier: MIT
// Compile-cost probe (bench/compile_cost/measure.py): the one file of a program that holds the
// explicit instantiations of the separate-instantiation mode (tokchron/record_instantiate.hpp),
// compiled once per program, not once per hot file.
#include "tokchron/record_instantiate.hpp"
