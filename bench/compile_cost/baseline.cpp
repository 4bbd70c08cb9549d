// SPDX-License-Identifier: MIT
// Compile-cost baseline (bench/compile_cost/measure.py): the standard headers a server's
// request-handling file includes anyway, and nothing else.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

int main() { return 0; }
