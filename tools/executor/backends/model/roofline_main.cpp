// SPDX-License-Identifier: MIT
// cpu-roofline and cuda-roofline (this file built twice; ROOFLINE_CUDA selects the GPU): measure
// the machine's memory bandwidth and matrix-product throughput, then the backend's model's decode
// step time per batch size and prefill time per prompt length, each beside its roofline floor
// (bytes / bandwidth, FLOPs / throughput). With a known accelerator (`hw`), also beside the floor
// at the data sheet's peaks and the `sim` backend's prediction for the same step, which is what
// calibrating a sim hardware preset compares.
//
//   cpu-roofline  [key=value ...]  threads (OpenBLAS, default 1)
//   cuda-roofline [key=value ...]  device (default 0); hw=auto (default) picks the sim preset
//                                  from the device's name
//   keys of both: the model's (layers, hidden, heads, ffn, vocab, seed); context (decode
//   context, default 128); repeats (default 5); batches (default 1,2,4,8,16,32,64); prefill
//   (prompt lengths, default 32,128,512 on the cpu, 128,512,2048 on the gpu); hw (a sim preset:
//   a10g, a100-80g, h100, h200, or none); repeat_layer=1 (draw one layer and use it for every
//   layer: the same bytes and FLOPs a step, without drawing billions of weights on the host);
//   data=FILE (every row as tab-separated numbers, for scripts)
//
// Exit status: 0 done, 1 a failure while measuring, 2 a bad argument, 77 (cuda-roofline) no GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/forward.hpp"
#include "sim_backend.hpp"

#ifdef ROOFLINE_CUDA
#include "cuda/cuda_backend.hpp"
#else
#include <cblas.h>

#include "cpu_backend.hpp"

extern "C" void openblas_set_num_threads(int num_threads);
#endif

using namespace batching;
using namespace batching::compute;

namespace {

#ifdef ROOFLINE_CUDA
constexpr const char* tool = "cuda-roofline";
constexpr bool cuda = true;
#else
constexpr const char* tool = "cpu-roofline";
constexpr bool cuda = false;
#endif

struct usage_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

#ifndef ROOFLINE_CUDA
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
#endif

// A whole number in [min, max], digits only.
std::uint32_t to_number(const std::string& key, const std::string& v, std::uint32_t min,
                        std::uint32_t max) {
  std::uint64_t x = 0;
  bool ok = !v.empty() && v.size() <= 10;
  for (char c : v) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) x = x * 10 + std::uint64_t(c - '0');
  }
  if (!ok || x < min || x > max)
    throw usage_error(key + ": '" + v + "' is not a whole number in [" + std::to_string(min) +
                      ", " + std::to_string(max) + "]");
  return static_cast<std::uint32_t>(x);
}

std::uint32_t to_count(const std::string& key, const std::string& v, std::uint32_t max) {
  return to_number(key, v, 1, max);
}

std::vector<std::uint32_t> to_counts(const std::string& key, const std::string& v,
                                     std::uint32_t max) {
  std::vector<std::uint32_t> out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t comma = v.find(',', pos);
    out.push_back(
        to_count(key, v.substr(pos, comma == std::string::npos ? comma : comma - pos), max));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

#ifdef ROOFLINE_CUDA
// The sim preset whose name the device's name carries ("NVIDIA H200" -> h200), if any.
std::optional<std::string> preset_for_device(const std::string& device) {
  if (device.find("H200") != std::string::npos) return "h200";
  if (device.find("H100") != std::string::npos) return "h100";
  if (device.find("A100") != std::string::npos && device.find("80") != std::string::npos)
    return "a100-80g";
  if (device.find("A10G") != std::string::npos) return "a10g";
  return std::nullopt;
}
#endif

struct stats {
  double best = 0, median = 0, wall = 0;  // seconds: device time best and median, wall best
};

}  // namespace

int main(int argc, char** argv) try {
  model_config mc;
  std::uint32_t context = 128;
  int repeats = 5;
  std::vector<std::uint32_t> batches{1, 2, 4, 8, 16, 32, 64};
#ifdef ROOFLINE_CUDA
  std::vector<std::uint32_t> prefills{128, 512, 2048};
  std::string hw = "auto";
  int device = 0;
#else
  std::vector<std::uint32_t> prefills{32, 128, 512};
  std::string hw = "none";
  unsigned threads = 1;
#endif
  bool repeat_layer = false;
  std::string data_path;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto eq = a.find('=');
      if (eq == std::string::npos) throw usage_error("'" + a + "' is not KEY=VALUE");
      const std::string k = a.substr(0, eq), v = a.substr(eq + 1);
      if (k == "context")
        context = to_count(k, v, 1u << 20);
      else if (k == "repeats")
        repeats = static_cast<int>(to_count(k, v, 10000));
      else if (k == "batches")
        batches = to_counts(k, v, 4096);
      else if (k == "prefill")
        prefills = to_counts(k, v, 1u << 20);
      else if (k == "hw")
        hw = v;
      else if (k == "repeat_layer")
        repeat_layer = to_number(k, v, 0, 1) == 1;
      else if (k == "data")
        data_path = v;
#ifdef ROOFLINE_CUDA
      else if (k == "device")
        device = static_cast<int>(to_number(k, v, 0, 1023));
#else
      else if (k == "threads")
        threads = to_count(k, v, 256);
#endif
      else
        mc.set(k, v);
    }
    mc.validate();
    if (hw != "auto" && hw != "none") (void)hardware_preset(hw);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "%s: %s\nusage: %s [key=value ...]: the model's keys (layers, hidden, heads, "
                 "ffn, vocab, seed), context, repeats, batches=1,16,64, prefill=128,2048, "
                 "hw=NAME|auto|none, repeat_layer=0|1, data=FILE, %s\n",
                 tool, e.what(), tool,
#ifdef ROOFLINE_CUDA
                 "device"
#else
                 "threads"
#endif
    );
    return 2;
  }

#ifdef ROOFLINE_CUDA
  // Before drawing weights (seconds to minutes): is there a device at all?
  if (auto why = cuda_unavailable_reason()) throw no_gpu_error("cuda: " + *why);
#endif
  // The weights: drawn, or one layer drawn and repeated.
  model_weights w;
  if (repeat_layer) {
    model_config one = mc;
    one.layers = 1;
    w = model_weights::random(one);
    const layer_weights layer = std::move(w.layers.front());
    w.layers.assign(mc.layers, layer);
    w.cfg = mc;
  } else {
    w = model_weights::random(mc);
  }

  // The machine: measured bandwidth and throughput, the model's forward, its bytes.
  const std::uint32_t bs = 16, max_batch = *std::max_element(batches.begin(), batches.end());
  const std::uint32_t max_prefill = *std::max_element(prefills.begin(), prefills.end());
  const std::uint32_t per_decode = (context + std::uint32_t(repeats) + 1 + bs - 1) / bs,
                      per_prefill = (max_prefill + bs - 1) / bs;
  const std::uint32_t num_blocks = max_batch * per_decode + per_prefill;
  double bw = 0, flops = 0, bytes_per_value = 0;
  std::string machine, bw_how, flops_how;
  std::function<void(const forward_batch&, std::vector<std::int32_t>&)> forward;
  std::function<double(double wall)> device_seconds;  // of the last forward
#ifdef ROOFLINE_CUDA
  const std::size_t copy_bytes = std::size_t(1) << 30;
  const int gemm_n = 8192;
  bw = measure_device_bandwidth(device, copy_bytes, repeats);
  flops = measure_device_gemm_flops(device, gemm_n, repeats);
  bytes_per_value = 2;  // fp16 weights and KV
  cuda_model gpu(w, device);
  gpu.reserve_kv(num_blocks, bs);
  machine = gpu.device_name() + " (device " + std::to_string(device) + ")";
  bw_how = "device-to-device cudaMemcpy of 1 GiB, read + write";
  flops_how = "cublasGemmEx fp16 in, fp32 out and compute, 8192^3";
  forward = [&](const forward_batch& b, std::vector<std::int32_t>& next) { gpu.forward(b, next); };
  device_seconds = [&](double) { return gpu.last_step_ms() / 1e3; };
  if (hw == "auto") hw = preset_for_device(gpu.device_name()).value_or("none");
#else
  openblas_set_num_threads(static_cast<int>(threads));
  bw = measure_copy_bandwidth(std::size_t(256) << 20, repeats);
  flops = sgemm_flops(1024, repeats);
  bytes_per_value = 4;  // fp32 weights and KV
  paged_kv_cache kv(mc, num_blocks, bs);
  cpu_forward_options opt;
  opt.threads = threads;
  cpu_model cpu(w, kv, opt);
  machine = std::to_string(threads) + " OpenBLAS threads (openblas_set_num_threads)";
  bw_how = "memcpy of 256 MiB, read + write";
  flops_how = "sgemm 1024^3";
  forward = [&](const forward_batch& b, std::vector<std::int32_t>& next) { cpu.forward(b, next); };
  device_seconds = [](double wall) { return wall; };
#endif
  const double wbytes = double(mc.streamed_params()) * bytes_per_value,
               kvb = double(mc.kv_values_per_token()) * bytes_per_value;

  // The sim's view of the same model on the named accelerator (its default constants).
  std::optional<sim_backend> sim;
  if (hw != "none") {
    sim_config sc;
    sc.hw = hardware_preset(hw);
    sc.model = {mc.describe(), double(mc.params()), wbytes, kvb, mc.layers, mc.hidden};
    sc.jitter = 0;
    sim.emplace(sc);
  }
  const double unit = cuda ? 1e12 : 1e9;
  const char* unit_name = cuda ? "TFLOP/s" : "GFLOP/s";

  std::printf("%s: model %s: %.1f MB streamed %s weights%s, %.1f KB KV a token; %s\n", tool,
              mc.describe().c_str(), wbytes / 1e6, cuda ? "fp16" : "fp32",
              repeat_layer ? " (every layer a copy of one drawn layer)" : "", kvb / 1e3,
              machine.c_str());
  std::printf("bandwidth %.2f GB/s (%s, best of %d); throughput %.2f %s (%s, best of %d)\n",
              bw / 1e9, bw_how.c_str(), repeats, flops / unit, unit_name, flops_how.c_str(),
              repeats);
  if (sim)
    std::printf(
        "sim preset %s: %.2f TB/s, %.0f TFLOP/s peak; sim constants eta_bw %.2f, eta_compute "
        "%.2f, t_fixed %.3g ms\n",
        hw.c_str(), sim->config().hw.bandwidth / 1e12, sim->config().hw.flops / 1e12,
        sim->config().eta_bw, sim->config().eta_compute, sim->config().t_fixed_s * 1e3);
  std::printf("\n");

  struct closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, closer> data_file;
  if (!data_path.empty()) {
    data_file.reset(std::fopen(data_path.c_str(), "w"));
    if (!data_file) throw std::runtime_error("cannot write the data file '" + data_path + "'");
  }
  std::FILE* const data = data_file.get();
  if (data) {
    std::fprintf(data,
                 "kind\tn\tcontext\tbytes\tflops\tbest_s\tmedian_s\twall_s\tbandwidth\t"
                 "throughput\tpeak_bandwidth\tpeak_throughput\tsim_s\n");
  }

  // Sequences: 0 .. max_batch - 1 decode, max_batch prefills; each owns its blocks.
  std::vector<std::vector<std::uint32_t>> blocks(max_batch + 1);
  std::vector<std::vector<std::int32_t>> toks(max_batch + 1);
  for (std::uint32_t s = 0, first = 0; s <= max_batch; ++s) {
    const std::uint32_t n = s < max_batch ? per_decode : per_prefill;
    blocks[s].resize(n);
    std::iota(blocks[s].begin(), blocks[s].end(), first);
    first += n;
    for (std::uint32_t i = 0; i < n * bs; ++i)
      toks[s].push_back(prompt_token(mc.seed, s, i, mc.vocab));
  }
  std::vector<std::int32_t> next;
  auto seq = [&](std::uint32_t s, std::uint32_t past, std::uint32_t n) {
    forward_seq f;
    f.tokens = toks[s].data() + past;
    f.past = past;
    f.n_new = n;
    f.blocks = blocks[s].data();
    f.num_blocks = static_cast<std::uint32_t>(blocks[s].size());
    f.sample = true;
    return f;
  };
  // Times `make(r)` for r < reps: device time (best, median) and wall time (best).
  auto time_it = [&](int reps, const std::function<forward_batch(int)>& make) {
    std::vector<double> dev;
    double wall = 1e300;
    for (int r = 0; r < reps; ++r) {
      const forward_batch b = make(r);
      const auto t0 = std::chrono::steady_clock::now();
      forward(b, next);
      const double s = seconds_since(t0);
      wall = std::min(wall, s);
      dev.push_back(device_seconds(s));
    }
    std::sort(dev.begin(), dev.end());
    return stats{dev.front(), dev[dev.size() / 2], wall};
  };
  auto sim_seconds = [&](std::uint32_t n_seqs, std::uint32_t past, std::uint32_t prefill) {
    batch b;
    b.block_size = bs;
    for (std::uint32_t s = 0; s < n_seqs; ++s) {
      sequence_work x;
      x.seq_id = s;
      x.past_tokens = past;
      x.prefill_tokens = prefill;
      x.decode = prefill == 0;
      x.samples = true;
      b.seqs.push_back(x);
    }
    return sim->cost(b).seconds;
  };
  auto row_data = [&](const char* kind, std::uint32_t n, std::uint32_t ctx, double bytes, double fl,
                      const stats& t, double sim_s) {
    if (!data) return;
    std::fprintf(data, "%s\t%u\t%u\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n",
                 kind, n, ctx, bytes, fl, t.best, t.median, t.wall, bw, flops,
                 sim ? sim->config().hw.bandwidth : 0.0, sim ? sim->config().hw.flops : 0.0, sim_s);
  };

  // Fill every decode sequence's cache up to `context` (untimed).
  for (std::uint32_t s = 0; s < max_batch; ++s) {
    forward_batch b;
    b.block_size = bs;
    b.seqs.push_back(seq(s, 0, context));
    forward(b, next);
  }
  std::printf(
      "decode, context %u: step time vs the floor max(bytes / bandwidth, FLOPs / "
      "throughput)%s\n",
      context, cuda ? "; step = CUDA events around the step, wall = on the host" : "");
  std::printf("| batch | step ms (best) | median |%s floor ms | best / floor |%s tokens/s |\n",
              cuda ? " wall ms (best) |" : "",
              sim ? " peak floor ms | best / peak floor | sim ms | best / sim |" : "");
  std::printf("|---|---|---|%s---|---|%s---|\n", cuda ? "---|" : "", sim ? "---|---|---|---|" : "");
  for (std::uint32_t batch_size : batches) {
    const stats t = time_it(repeats, [&](int r) {
      forward_batch b;
      b.block_size = bs;
      for (std::uint32_t s = 0; s < batch_size; ++s)
        b.seqs.push_back(seq(s, context + std::uint32_t(r), 1));
      return b;
    });
    const double bytes = wbytes + batch_size * (context + 1.0) * kvb;
    const double fl = 2.0 * double(mc.streamed_params()) * batch_size +
                      4.0 * mc.layers * mc.hidden * double(batch_size) * (context + 1);
    const double floor = std::max(bytes / bw, fl / flops);
    std::printf("| %u | %.4g | %.4g |", batch_size, t.best * 1e3, t.median * 1e3);
    if (cuda) std::printf(" %.4g |", t.wall * 1e3);
    std::printf(" %.4g | %.2f |", floor * 1e3, t.best / floor);
    double sim_s = 0;
    if (sim) {
      const double peak = std::max(bytes / sim->config().hw.bandwidth, fl / sim->config().hw.flops);
      sim_s = sim_seconds(batch_size, context, 0);
      std::printf(" %.4g | %.2f | %.4g | %.2f |", peak * 1e3, t.best / peak, sim_s * 1e3,
                  t.best / sim_s);
    }
    std::printf(" %.0f |\n", batch_size / t.best);
    row_data("decode", batch_size, context, bytes, fl, t, sim_s);
  }

  std::printf("\nprefill of one prompt (past 0): time vs the compute floor FLOPs / throughput\n");
  std::printf(
      "| tokens | ms (best) |%s compute floor ms | memory floor ms | best / floor | %s |%s\n",
      cuda ? " wall ms (best) |" : "", unit_name,
      sim ? " peak floor ms | best / peak floor | sim ms | best / sim |" : "");
  std::printf("|---|---|%s---|---|---|---|%s\n", cuda ? "---|" : "", sim ? "---|---|---|---|" : "");
  for (std::uint32_t n : prefills) {
    const stats t = time_it(std::min(repeats, 3), [&](int) {
      forward_batch b;
      b.block_size = bs;
      b.seqs.push_back(seq(max_batch, 0, n));
      return b;
    });
    const double fl = 2.0 * double(mc.streamed_params()) * n +
                      4.0 * mc.layers * mc.hidden * double(n) * (n / 2.0);
    const double bytes = wbytes + n * kvb;
    const double floor = std::max(fl / flops, bytes / bw);
    std::printf("| %u | %.4g |", n, t.best * 1e3);
    if (cuda) std::printf(" %.4g |", t.wall * 1e3);
    std::printf(" %.4g | %.4g | %.2f | %.2f |", fl / flops * 1e3, bytes / bw * 1e3, t.best / floor,
                fl / t.best / unit);
    double sim_s = 0;
    if (sim) {
      const double peak = std::max(bytes / sim->config().hw.bandwidth, fl / sim->config().hw.flops);
      sim_s = sim_seconds(1, 0, n);
      std::printf(" %.4g | %.2f | %.4g | %.2f |", peak * 1e3, t.best / peak, sim_s * 1e3,
                  t.best / sim_s);
    }
    std::printf("\n");
    row_data("prefill", n, 0, bytes, fl, t, sim_s);
  }
  if (data && std::fclose(data_file.release()) != 0)
    throw std::runtime_error("writing the data file '" + data_path + "' failed");
  return 0;
#ifdef ROOFLINE_CUDA
} catch (const no_gpu_error& e) {
  std::fprintf(stderr, "%s: %s\n", tool, e.what());
  return exit_no_gpu;
#endif
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s: %s\n", tool, e.what());
  return 1;
}
