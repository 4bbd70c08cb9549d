// SPDX-License-Identifier: MIT
// Shared by the fleet replica and checker: the exported bucket layout and small helpers.
#ifndef TOKCHRON_EXAMPLES_FLEET_COMMON_HPP
#define TOKCHRON_EXAMPLES_FLEET_COMMON_HPP

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <tokchron/export/prometheus_protobuf.hpp>
#include <tokchron/export/serving_metrics.hpp>

namespace fleet {

// The classic buckets every replica exports: log_histogram edges at scale 4 (base 2^(1/16),
// PromQL interpolation error <= 4.43 %) over 1 ms..100 s. Every replica must use the same list:
// PromQL sums buckets by their le label.
inline constexpr int bucket_scale = 4;
inline constexpr double bucket_lo = 1e-3;
inline constexpr double bucket_hi = 100.0;

// The accuracy the fleet asks of PromQL's quantiles over the native histograms; the replicas
// record at the coarsest scale whose native buckets keep PromQL's linear interpolation within
// it (1 %: scale 7, buckets 0.54 % wide; log_histogram(0.01) alone would pick scale 6, whose
// 1.09 % wide buckets keep its own midpoint answers within 0.54 % but not PromQL's).
inline constexpr double native_accuracy = 0.01;

inline tokchron::serving_metrics_options options(const std::string& replica) {
  tokchron::serving_metrics_options o;
  o.scale = tokchron::prometheus_native_scale_for(native_accuracy);
  o.buckets = tokchron::bucket_layout::exponential(bucket_scale, bucket_lo, bucket_hi);
  o.labels = {{"replica", replica}};
  return o;
}

// "--name value" arguments.
inline std::string arg(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return def;
}

[[noreturn]] inline void die(const std::string& msg) {
  std::fprintf(stderr, "fleet: %s\n", msg.c_str());
  std::exit(2);
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes a file atomically (a reader sees all of it or nothing).
inline void write_atomically(const std::string& path, const void* data, std::size_t n) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!out) die("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) die("cannot rename " + tmp);
}

}  // namespace fleet

#endif  // TOKCHRON_EXAMPLES_FLEET_COMMON_HPP
