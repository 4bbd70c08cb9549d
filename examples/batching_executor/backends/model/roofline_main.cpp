// SPDX-License-Identifier: MIT
// cpu-roofline: measures this machine's copy bandwidth and sgemm throughput, then the cpu
// backend's model's decode step time per batch size and prefill time per prompt length, each
// beside its roofline floor (bytes / bandwidth, FLOPs / sgemm throughput).
//
//   cpu-roofline [key=value ...]   keys: the model's (layers, hidden, heads, ffn, vocab, seed),
//                                  threads, context (decode context, default 128), repeats
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "cpu_backend.hpp"
#include "model/forward.hpp"

extern "C" void openblas_set_num_threads(int num_threads);

using namespace batching;
using namespace batching::compute;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Square sgemm throughput (FLOP/s), best of `repeats`.
double sgemm_flops(int n, int repeats) {
  std::vector<float> a(std::size_t(n) * n, 0.5f), b(a), c(a);
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    best = std::max(best, 2.0 * n * double(n) * n / seconds_since(t0));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) try {
  cpu_backend_config cfg;
  cfg.measure_bandwidth = false;
  std::uint32_t context = 128;
  int repeats = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr,
                   "usage: cpu-roofline [key=value ...] (model keys, threads, context, "
                   "repeats)\n");
      return 2;
    }
    const std::string k = a.substr(0, eq), v = a.substr(eq + 1);
    if (k == "context")
      context = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "repeats")
      repeats = std::max(1, std::stoi(v));
    else
      cfg.set(k, v);
  }
  cfg.validate();
  openblas_set_num_threads(static_cast<int>(cfg.threads));
  const model_config& mc = cfg.model;
  const double bw = measure_copy_bandwidth(std::size_t(256) << 20, repeats);
  const double flops = sgemm_flops(1024, repeats);
  const double wbytes = double(mc.streamed_params()) * 4,
               kvb = double(mc.kv_values_per_token()) * 4;
  std::printf(
      "model %s: %.1f MB streamed fp32 weights, %.1f KB KV a token; %u OpenBLAS threads "
      "(openblas_set_num_threads)\n",
      mc.describe().c_str(), wbytes / 1e6, kvb / 1e3, cfg.threads);
  std::printf(
      "copy bandwidth %.2f GB/s (read + write, best of %d x 256 MiB memcpy); sgemm %.1f "
      "GFLOP/s (1024^3, best of %d)\n\n",
      bw / 1e9, repeats, flops / 1e9, repeats);

  const auto w = model_weights::random(mc);
  const std::uint32_t bs = 16, max_batch = 64;
  const std::uint32_t per_seq = (std::max(context + repeats + 1, 512u) + bs - 1) / bs;
  paged_kv_cache kv(mc, max_batch * per_seq, bs);
  cpu_forward_options opt;
  opt.threads = cfg.threads;
  cpu_model m(w, kv, opt);
  std::vector<std::vector<std::uint32_t>> blocks(max_batch);
  std::vector<std::vector<std::int32_t>> toks(max_batch);
  for (std::uint32_t s = 0; s < max_batch; ++s) {
    blocks[s].resize(per_seq);
    std::iota(blocks[s].begin(), blocks[s].end(), s * per_seq);
    for (std::uint32_t i = 0; i < per_seq * bs; ++i)
      toks[s].push_back(prompt_token(mc.seed, s, i, mc.vocab));
  }
  std::vector<std::int32_t> next;
  auto seq = [&](std::uint32_t s, std::uint32_t past, std::uint32_t n) {
    forward_seq f;
    f.tokens = toks[s].data() + past;
    f.past = past;
    f.n_new = n;
    f.blocks = blocks[s].data();
    f.num_blocks = per_seq;
    f.sample = true;
    return f;
  };
  // Fill every sequence's cache up to `context` (untimed).
  for (std::uint32_t s = 0; s < max_batch; ++s) {
    forward_batch b;
    b.block_size = bs;
    b.seqs.push_back(seq(s, 0, context));
    m.forward(b, next);
  }
  std::printf("decode, context %u: step time vs the floor max(bytes / copy bw, FLOPs / sgemm)\n",
              context);
  std::printf("| batch | step ms (best) | median | floor ms | best / floor | tokens/s |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (std::uint32_t batch : {1u, 2u, 4u, 8u, 16u, 32u, 64u}) {
    std::vector<double> t;
    for (int r = 0; r < repeats; ++r) {
      forward_batch b;
      b.block_size = bs;
      for (std::uint32_t s = 0; s < batch; ++s) b.seqs.push_back(seq(s, context + r, 1));
      const auto t0 = std::chrono::steady_clock::now();
      m.forward(b, next);
      t.push_back(seconds_since(t0));
    }
    std::sort(t.begin(), t.end());
    const double bytes = wbytes + batch * (context + 1.0) * kvb;
    const double fl = 2.0 * double(mc.streamed_params()) * batch +
                      4.0 * mc.layers * mc.hidden * double(batch) * (context + 1);
    const double floor = std::max(bytes / bw, fl / flops);
    std::printf("| %u | %.2f | %.2f | %.2f | %.2f | %.0f |\n", batch, t[0] * 1e3,
                t[t.size() / 2] * 1e3, floor * 1e3, t[0] / floor, batch / t[0]);
  }
  std::printf("\nprefill of one prompt (past 0): time vs the compute floor FLOPs / sgemm\n");
  std::printf("| tokens | ms (best) | compute floor ms | memory floor ms | GFLOP/s |\n");
  std::printf("|---|---|---|---|---|\n");
  for (std::uint32_t n : {32u, 128u, 512u}) {
    double best = 1e9;
    for (int r = 0; r < std::min(repeats, 3); ++r) {
      forward_batch b;
      b.block_size = bs;
      b.seqs.push_back(seq(0, 0, n));
      const auto t0 = std::chrono::steady_clock::now();
      m.forward(b, next);
      best = std::min(best, seconds_since(t0));
    }
    const double fl = 2.0 * double(mc.streamed_params()) * n +
                      4.0 * mc.layers * mc.hidden * double(n) * (n / 2.0);
    std::printf("| %u | %.1f | %.1f | %.1f | %.1f |\n", n, best * 1e3, fl / flops * 1e3,
                (wbytes + n * kvb) / bw * 1e3, fl / best / 1e9);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cpu-roofline: %s\n", e.what());
  return 1;
}
