// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// tokchron-bench: a load generator for OpenAI-compatible servers (docs/tools/tokchron-bench.md).
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench_cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return tokchron_bench::run_cli(args, std::cout, std::cerr, isatty(STDERR_FILENO) != 0);
}
