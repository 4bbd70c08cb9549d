// SPDX-License-Identifier: MIT
#include "sim_backend.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tokchron/clock.hpp"

namespace batching {

hardware_spec hardware_preset(std::string_view name) {
  // Dense (not sparse) fp16/bf16 and fp8 tensor throughput, memory bandwidth and memory from
  // the vendors' data sheets (docs/tools/executor.md). The A10G's 125 TF is NVIDIA's figure; 70 TF
  // is also quoted. A100 80GB and H100 80GB carry 80 GiB; the A10G's 24 GB and the H200's 141 GB
  // are the data sheets' figures.
  constexpr double gib = 1073741824.0;
  auto hw = [](const char* n, double mem, double bw, double f16, double f8) {
    return hardware_spec{n, mem, bw, f16, f16, f8};
  };
  if (name == "a10g") return hw("a10g", 24e9, 600e9, 125e12, 0);
  if (name == "a100-80g") return hw("a100-80g", 80 * gib, 2.0e12, 312e12, 0);
  if (name == "h100") return hw("h100", 80 * gib, 3.35e12, 989e12, 1979e12);
  if (name == "h200") return hw("h200", 141e9, 4.8e12, 989e12, 1979e12);
  throw std::invalid_argument("unknown hardware '" + std::string(name) +
                              "' (a10g, a100-80g, h100, h200)");
}

model_spec model_preset(std::string_view name) {
  // fp16: 2 bytes a parameter; KV values per token = 2 (K and V) * layers * kv width.
  auto m = [](const char* n, double params, std::uint32_t layers, std::uint32_t hidden,
              double kv_width) {
    const double kv_values = 2.0 * layers * kv_width;
    return model_spec{n, params, 2 * params, 2 * kv_values, layers, hidden, kv_values};
  };
  if (name == "llama2-7b") return m("llama2-7b", 6.74e9, 32, 4096, 4096);
  // GQA: 8 KV heads of 128. Llama 3.1 8B has Llama 3 8B's shape (it changes RoPE scaling and the
  // context length, 128k), so its step cost is the same.
  if (name == "llama3-8b") return m("llama3-8b", 8.03e9, 32, 4096, 1024);
  if (name == "llama3.1-8b") return m("llama3.1-8b", 8.03e9, 32, 4096, 1024);
  throw std::invalid_argument("unknown model '" + std::string(name) +
                              "' (llama2-7b, llama3-8b, llama3.1-8b)");
}

precision_spec precision_preset(std::string_view name) {
  if (name == "fp16" || name == "bf16") return {std::string(name), 2, 2, false};
  if (name == "fp8") return {"fp8", 1, 1, true};
  if (name == "fp8-weights") return {"fp8-weights", 1, 2, true};
  throw std::invalid_argument("unknown precision '" + std::string(name) +
                              "' (fp16, bf16, fp8, fp8-weights)");
}

void sim_config::set_hardware(std::string_view name) {
  hardware_spec h = hardware_preset(name);
  if (precision.fp8_compute) {
    if (!(h.flops_8 > 0))
      throw std::invalid_argument("hardware '" + h.name + "' has no fp8 throughput (precision " +
                                  precision.name + "); give it with --sim flops=...");
    h.flops = h.flops_8;
  }
  hw = h;
}

void sim_config::set_model(std::string_view name) {
  model = model_preset(name);
  model.weight_bytes = model.params * precision.weight_bytes;
  model.kv_bytes_per_token = model.kv_values_per_token * precision.kv_bytes;
}

void sim_config::set_precision(std::string_view name) {
  const precision_spec p = precision_preset(name);
  const double f = p.fp8_compute ? hw.flops_8 : hw.flops_16;
  if (!(f > 0))
    throw std::invalid_argument("hardware '" + hw.name + "' has no " +
                                (p.fp8_compute ? "fp8" : "16-bit") + " throughput (precision " +
                                p.name + "); give it with --sim flops=...");
  precision = p;
  hw.flops = f;
  model.weight_bytes = model.params * p.weight_bytes;
  model.kv_bytes_per_token = model.kv_values_per_token * p.kv_bytes;
}

const char* sim_config::keys() noexcept {
  return "bandwidth, flops, memory, params, weight_bytes, kv_bytes_per_token, layers, hidden, "
         "eta_bw, eta_compute, t_fixed, t_seq, t_seq2, t_request, t_front, t_client, jitter, "
         "mem_util, activation_reserve";
}

void sim_config::set(std::string_view key, double v) {
  if (!std::isfinite(v)) throw std::invalid_argument("sim " + std::string(key) + ": not finite");
  if (key == "bandwidth")
    hw.bandwidth = v;
  else if (key == "flops")
    hw.flops = v;
  else if (key == "memory")
    hw.memory_bytes = v;
  else if (key == "params")
    model.params = v;
  else if (key == "weight_bytes")
    model.weight_bytes = v;
  else if (key == "kv_bytes_per_token")
    model.kv_bytes_per_token = v;
  else if (key == "layers")
    model.layers = static_cast<std::uint32_t>(v);
  else if (key == "hidden")
    model.hidden = static_cast<std::uint32_t>(v);
  else if (key == "eta_bw")
    eta_bw = v;
  else if (key == "eta_compute")
    eta_compute = v;
  else if (key == "t_fixed")
    t_fixed_s = v;
  else if (key == "t_seq")
    t_seq_s = v;
  else if (key == "t_seq2")
    t_seq2_s = v;
  else if (key == "t_request")
    t_request_s = v;
  else if (key == "t_front")
    t_front_s = v;
  else if (key == "t_client")
    t_client_s = v;
  else if (key == "jitter")
    jitter = v;
  else if (key == "mem_util")
    mem_util = v;
  else if (key == "activation_reserve")
    activation_reserve_bytes = v;
  else
    throw std::invalid_argument("unknown sim constant '" + std::string(key) + "' (" + keys() + ")");
}

double sim_config::kv_capacity_tokens() const noexcept {
  return (hw.memory_bytes * mem_util - model.weight_bytes - activation_reserve_bytes) /
         model.kv_bytes_per_token;
}

void sim_config::validate() const {
  auto bad = [](const std::string& m) { throw std::invalid_argument("sim: " + m); };
  if (!(hw.bandwidth > 0) || !(hw.flops > 0) || !(hw.memory_bytes > 0))
    bad("bandwidth, flops and memory must be > 0");
  if (!(model.params > 0) || !(model.weight_bytes > 0) || !(model.kv_bytes_per_token > 0) ||
      model.layers == 0 || model.hidden == 0)
    bad("params, weight_bytes, kv_bytes_per_token, layers and hidden must be > 0");
  if (!(eta_bw > 0 && eta_bw <= 1) || !(eta_compute > 0 && eta_compute <= 1))
    bad("eta_bw and eta_compute must be in (0, 1]");
  if (!(t_fixed_s >= 0) || !(t_seq_s >= 0) || !(t_seq2_s >= 0) || !(t_request_s >= 0))
    bad("t_fixed, t_seq, t_seq2 and t_request must be >= 0");
  // Outside the steps: at most a day (a request's latency, not a step's).
  if (!(t_front_s >= 0 && t_front_s <= 86400) || !(t_client_s >= 0 && t_client_s <= 86400))
    bad("t_front and t_client must be in [0, 86400] s");
  if (!(jitter >= 0 && jitter < 0.3)) bad("jitter must be in [0, 0.3)");
  if (!(mem_util > 0 && mem_util <= 1)) bad("mem_util must be in (0, 1]");
  if (!(activation_reserve_bytes >= 0)) bad("activation_reserve must be >= 0");
  // The shortest step the model can give: one sequence decoding its first token (every other
  // step reads more bytes, does more FLOPs and has more overhead), at the lowest jitter factor.
  const double roofline =
      std::max((model.weight_bytes + model.kv_bytes_per_token) / (eta_bw * hw.bandwidth),
               2.0 * model.params / (eta_compute * hw.flops));
  const double shortest = t_fixed_s + t_seq_s + t_seq2_s + roofline * (1.0 - 3.0 * jitter);
  if (!(shortest >= min_step_s))
    bad("the shortest step (one token of one sequence) would take " + std::to_string(shortest) +
        " s, less than 1 us: the virtual clock would barely move and the run would not end "
        "(check t_fixed, t_seq, bandwidth, flops, eta_bw, eta_compute)");
  if (kv_capacity_tokens() < 1)
    bad("the weights (" + std::to_string(model.weight_bytes / 1e9) + " GB) leave no KV memory on " +
        hw.name);
}

sim_backend::sim_backend(const sim_config& cfg)
    : cfg_(cfg), rng_(tokchron_loadgen::mix_seed(cfg.seed, 7)) {
  cfg_.validate();
}

std::string sim_backend::name() const { return "sim " + cfg_.hw.name + " " + cfg_.model.name; }

std::uint32_t sim_backend::kv_blocks(std::uint32_t block_size) const {
  const double blocks = std::floor(cfg_.kv_capacity_tokens() / block_size);
  return blocks >= 4e9 ? 4000000000u : static_cast<std::uint32_t>(std::max(blocks, 0.0));
}

step_cost sim_backend::cost(const batch& b) const noexcept {
  const double kvb = cfg_.model.kv_bytes_per_token;
  const double ld4 = 4.0 * cfg_.model.layers * static_cast<double>(cfg_.model.hidden);
  double ctx_read = 0, new_tokens = 0, attn = 0, starts = 0;
  for (const auto& s : b.seqs) {
    const double past = s.past_tokens;
    if (s.decode) {
      attn += ld4 * (past + 1.0);
      new_tokens += 1;
    } else {
      const double c = s.prefill_tokens;
      attn += ld4 * c * (past + c / 2.0);
      new_tokens += c;
      if (s.past_tokens == s.reused_tokens) starts += 1;
    }
    ctx_read += past;
  }
  step_cost k;
  k.bytes = cfg_.model.weight_bytes + kvb * ctx_read + kvb * new_tokens;
  k.flops = 2.0 * cfg_.model.params * new_tokens + attn;
  k.memory_s = k.bytes / (cfg_.eta_bw * cfg_.hw.bandwidth);
  k.compute_s = k.flops / (cfg_.eta_compute * cfg_.hw.flops);
  const double n = static_cast<double>(b.seqs.size());
  k.overhead_s =
      cfg_.t_fixed_s + cfg_.t_seq_s * n + cfg_.t_seq2_s * n * n + cfg_.t_request_s * starts;
  k.seconds = k.overhead_s + std::max(k.memory_s, k.compute_s);
  return k;
}

step_result sim_backend::step(const batch& b) {
  const step_cost k = cost(b);
  double factor = 1.0;
  if (cfg_.jitter > 0) factor += cfg_.jitter * std::clamp(rng_.normal(), -3.0, 3.0);
  const double seconds = k.overhead_s + std::max(k.memory_s, k.compute_s) * factor;
  if (!(seconds < max_step_s))
    throw std::runtime_error("sim: a step of " + std::to_string(b.num_tokens()) +
                             " tokens would take " + std::to_string(seconds) +
                             " s, more than the clock's 1e9 s a step (check the --sim constants)");
  step_result r;
  r.elapsed = tokchron::from_seconds<duration>(seconds);
  r.outputs.resize(b.seqs.size());
  for (std::size_t i = 0; i < b.seqs.size(); ++i) r.outputs[i].tokens = b.seqs[i].samples ? 1 : 0;
  return r;
}

std::optional<duration> sim_backend::predict_prefill(std::uint32_t tokens) const {
  batch b;
  sequence_work w;
  w.prefill_tokens = tokens;
  w.samples = true;
  b.seqs.push_back(w);
  const double seconds = cost(b).seconds;
  if (!(seconds < max_step_s)) return std::nullopt;  // cannot be told in the clock's range
  return tokchron::from_seconds<duration>(seconds);
}

duration sim_backend::front_latency() const noexcept {
  return tokchron::from_seconds<duration>(cfg_.t_front_s);
}

duration sim_backend::client_latency() const noexcept {
  return tokchron::from_seconds<duration>(cfg_.t_client_s);
}

}  // namespace batching
