// SPDX-License-Identifier: MIT
// A consumer of an installed / vendored tokchron: records one request and prints its TTFT.
#include <chrono>
#include <cstdio>

#include <tokchron/tokchron.hpp>

int main() {
  using namespace std::chrono_literals;
  tokchron::basic_request_timeline<tokchron::manual_clock> tl;
  tl.arrive(tokchron::manual_clock::at(0ms));
  tl.chunk(tokchron::manual_clock::at(120ms), 1);
  tl.finish(tokchron::manual_clock::at(130ms));
  std::printf("tokchron %s TTFT %.3f s\n", TOKCHRON_VERSION_STRING,
              tokchron::to_seconds(*tokchron::ttft(tl)));
  return tokchron::ttft(tl) == 120ms ? 0 : 1;
}
