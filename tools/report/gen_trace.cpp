// SPDX-License-Identifier: MIT
// tokchron-gen-trace: writes a synthetic JSONL trace (for measuring tokchron-report).
//   tokchron-gen-trace REQUESTS TOKENS [SEED] > trace.jsonl
// Each request: Poisson arrivals at 20 req/s, a role chunk ("empty"), TOKENS output tokens in
// chunks of 1 token (every 10th chunk carries 2: bundled tokens), a trailing usage chunk; one
// request in 100 fails. Times in seconds with microsecond resolution. Deterministic per seed.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokchron-gen-trace REQUESTS TOKENS [SEED]\n");
    return 2;
  }
  const long requests = std::strtol(argv[1], nullptr, 10);
  const long tokens = std::strtol(argv[2], nullptr, 10);
  const unsigned long seed = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 1;
  if (requests < 0 || tokens < 1) return 2;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(20.0);
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  std::string line;
  double t = 1000.0;
  auto us = [](double s) { return static_cast<long long>(s * 1e6 + 0.5); };
  auto put = [&](double s) {
    const long long u = us(s);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%lld.%06lld", u / 1000000, u % 1000000);
    line += buf;
  };
  for (long i = 0; i < requests; ++i) {
    t += gap(rng);
    const double send = t + 0.0005 * jitter(rng);
    const bool ok = i % 100 != 99;
    line = "{\"id\":\"r" + std::to_string(i) + "\",\"arrival\":";
    put(t);
    line += ",\"send\":";
    put(send);
    line += ",\"scheduled\":";
    const double sched = send + 0.002 + 0.01 * jitter(rng);
    put(sched);
    line += ",\"prompt_tokens\":" + std::to_string(100 + static_cast<int>(400 * jitter(rng)));
    line += ",\"chunks\":[";
    double c = sched + 0.05 + 0.05 * jitter(rng);
    line += "[";
    put(c);
    line += ",0,\"empty\"]";
    long left = ok ? tokens : tokens / 3;
    long n = 0;
    while (left > 0) {
      const long k = (n % 10 == 9 && left >= 2) ? 2 : 1;
      c += (n == 0 ? 0.001 : 0.015 + 0.01 * jitter(rng) * static_cast<double>(k));
      line += ",[";
      put(c);
      line += "," + std::to_string(k) + "]";
      left -= k;
      ++n;
    }
    const long produced = ok ? tokens : tokens / 3;
    if (ok) {
      line += ",[";
      put(c);
      line += ",0,\"usage\"]";
    }
    line += "],\"end\":";
    put(c);
    if (ok)
      line += ",\"usage_output_tokens\":" + std::to_string(produced) + ",\"ok\":true}\n";
    else
      line += ",\"ok\":false,\"error\":\"connection reset\"}\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  return 0;
}
