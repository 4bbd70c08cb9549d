// SPDX-License-Identifier: MIT
// Times one (simulated) streamed request and prints its TTFT and TPOT.
#include <chrono>
#include <cstdio>
#include <thread>

#include "tokchron/tokchron.hpp"

int main() {
  using namespace std::chrono_literals;
  tokchron::request_timeline tl;  // steady_clock, every chunk kept
  tl.arrive();                    // the request arrives
  std::this_thread::sleep_for(30ms);
  tl.chunk(1);  // first token
  for (int i = 0; i < 9; ++i) {
    std::this_thread::sleep_for(5ms);
    tl.chunk(1);  // one more token
  }
  tl.finish(tokchron::finish_reason::stop);
  std::printf("TTFT %.1f ms, TPOT %.2f ms, %llu tokens\n",
              tokchron::to_seconds(*tokchron::ttft(tl)) * 1e3,
              tokchron::to_seconds(*tokchron::tpot(tl)) * 1e3,
              static_cast<unsigned long long>(tl.output_tokens()));
}
