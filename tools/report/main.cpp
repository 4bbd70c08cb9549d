// SPDX-License-Identifier: MIT
// tokchron-report: request traces in, every tool's latency and throughput numbers out.
// The work is done by the tokchron_report_lib library (commands.hpp); see `tokchron-report --help`.
#include <iostream>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "report/commands.hpp"

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // The report allocates and frees a few large sample buffers; keeping freed memory in the heap
  // (instead of mmap/munmap per buffer) lets later buffers reuse pages already faulted in.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  return tokchron_report::run(args, std::cout, std::cerr);
}
