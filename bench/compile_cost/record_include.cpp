// SPDX-License-Identifier: MIT
// Compile-cost probe (bench/compile_cost/measure.py): tokchron/record.hpp included, nothing
// called, for the header's own cost beside record.cpp's (which also compiles the calls).
#include "tokchron/record.hpp"

int main() { return 0; }
