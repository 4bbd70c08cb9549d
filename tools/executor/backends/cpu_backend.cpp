// SPDX-License-Identifier: MIT
#include "cpu_backend.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>

// OpenBLAS's own entry point (declared by OpenBLAS's cblas.h, not by the reference one).
extern "C" void openblas_set_num_threads(int num_threads);

namespace batching {

void cpu_backend_config::set(std::string_view key, std::string_view value) {
  if (key == "clock") {
    if (value != "wall" && value != "cpu")
      throw std::invalid_argument("cpu clock: '" + std::string(value) + "' (wall or cpu)");
    cpu_clock = value == "cpu";
    return;
  }
  if (key == "kv_memory" || key == "threads") {
    const std::string s(value);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 1)
      throw std::invalid_argument("cpu " + std::string(key) + ": not a positive number: '" + s +
                                  "'");
    if (key == "kv_memory")
      kv_memory_bytes = v;
    else
      threads = static_cast<unsigned>(v);
    return;
  }
  model.set(key, value);
}

void cpu_backend_config::validate() const {
  model.validate();
  if (!(kv_memory_bytes > 0)) throw std::invalid_argument("cpu: kv_memory must be > 0");
  if (threads < 1 || threads > 256) throw std::invalid_argument("cpu: threads must be in [1, 256]");
  if (cpu_clock && threads != 1)
    throw std::invalid_argument("cpu: clock=cpu needs threads=1 (it counts this thread's time)");
}

namespace {
// This thread's CPU time (clock=cpu).
double thread_cpu_seconds() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}
}  // namespace

double measure_copy_bandwidth(std::size_t bytes, int repeats) {
  std::vector<char> a(bytes, 1), b(bytes, 2);  // touched: no page faults inside the timing
  double best = 0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    a[std::size_t(r) % bytes] = b[bytes - 1];  // keep the copies observable
    if (s > 0) best = std::max(best, 2.0 * double(bytes) / s);
  }
  return best;
}

namespace {

double cached_bandwidth() {
  static const double bw = measure_copy_bandwidth();
  return bw;
}

}  // namespace

cpu_backend::cpu_backend(const cpu_backend_config& cfg)
    : cfg_(cfg), book_(cfg.model.seed, cfg.model.vocab) {
  cfg_.validate();
  openblas_set_num_threads(static_cast<int>(cfg_.threads));
  w_ = compute::model_weights::random(cfg_.model);
  if (cfg_.measure_bandwidth) bandwidth_ = cached_bandwidth();
}

double cpu_backend::weight_bytes() const noexcept {
  return double(cfg_.model.streamed_params()) * sizeof(float);
}

std::string cpu_backend::name() const {
  char buf[256];
  if (bandwidth_ > 0)
    std::snprintf(buf, sizeof buf,
                  "cpu %s, %.1f MB weights, %u threads; copy %.1f GB/s, decode floor %.1f ms",
                  cfg_.model.describe().c_str(), weight_bytes() / 1e6, cfg_.threads,
                  bandwidth_ / 1e9, weight_bytes() / bandwidth_ * 1e3);
  else
    std::snprintf(buf, sizeof buf, "cpu %s, %.1f MB weights, %u threads",
                  cfg_.model.describe().c_str(), weight_bytes() / 1e6, cfg_.threads);
  return buf;
}

std::uint32_t cpu_backend::kv_blocks(std::uint32_t block_size) const {
  const double per_block =
      double(block_size) * double(cfg_.model.kv_values_per_token()) * sizeof(float);
  const double n = std::floor(cfg_.kv_memory_bytes / per_block);
  if (n < 1) throw std::invalid_argument("cpu: kv_memory holds no block");
  return static_cast<std::uint32_t>(std::min(n, 4294967295.0));
}

step_result cpu_backend::step(const batch& b) {
  if (!kv_) {
    kv_ = std::make_unique<compute::paged_kv_cache>(cfg_.model, kv_blocks(b.block_size),
                                                    b.block_size);
    compute::cpu_forward_options opt;
    opt.threads = cfg_.threads;
    model_ = std::make_unique<compute::cpu_model>(w_, *kv_, opt);
  } else if (kv_->block_size() != b.block_size) {
    throw std::runtime_error("cpu backend: block size changed between steps");
  }
  const double cpu0 = cfg_.cpu_clock ? thread_cpu_seconds() : 0.0;  // after the one-off setup
  try {
    book_.prepare(b, fb_);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("cpu backend: ") + e.what());
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    model_->forward(fb_, next_);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("cpu backend: ") + e.what());
  }
  const auto t1 = std::chrono::steady_clock::now();
  step_result r;
  r.elapsed = std::chrono::duration_cast<duration>(t1 - t0);
  book_.commit(b, next_, r.outputs);
  if (cfg_.cpu_clock)
    r.elapsed = std::chrono::duration_cast<duration>(
        std::chrono::duration<double>(thread_cpu_seconds() - cpu0));
  if (b.num_decodes() == 0) {  // on the step's own clock, as the scheduler sees the step
    prefill_s_ += std::chrono::duration<double>(cfg_.cpu_clock ? r.elapsed : t1 - t0).count();
    prefill_tokens_ += b.num_tokens();
  }
  return r;
}

void cpu_backend::release(std::uint64_t seq_id) noexcept { book_.release(seq_id); }

std::optional<duration> cpu_backend::predict_prefill(std::uint32_t tokens) const {
  if (prefill_tokens_ <= 0) return std::nullopt;
  return std::chrono::duration_cast<duration>(
      std::chrono::duration<double>(prefill_s_ / prefill_tokens_ * tokens));
}

std::vector<std::int32_t> cpu_backend::tokens(std::uint64_t seq_id) const {
  return book_.tokens(seq_id);
}

}  // namespace batching
