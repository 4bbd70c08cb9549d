// SPDX-License-Identifier: MIT
#include "sim_backend.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tokchron/clock.hpp"

namespace batching {

hardware_spec hardware_preset(std::string_view name) {
  // Dense fp16 tensor throughput and memory bandwidth from the vendors' data sheets
  // (docs/executor.md). The A10G's 125 TF is NVIDIA's figure; 70 TF is also quoted.
  if (name == "a10g") return {"a10g", 24e9, 600e9, 125e12};
  if (name == "a100-80g") return {"a100-80g", 80e9, 2.0e12, 312e12};
  if (name == "h100") return {"h100", 80e9, 3.35e12, 989e12};
  if (name == "h200") return {"h200", 141e9, 4.8e12, 989e12};
  throw std::invalid_argument("unknown hardware '" + std::string(name) +
                              "' (a10g, a100-80g, h100, h200)");
}

model_spec model_preset(std::string_view name) {
  // fp16: 2 bytes a parameter; KV bytes per token = 2 (K and V) * layers * kv width * 2 bytes.
  if (name == "llama2-7b") return {"llama2-7b", 6.74e9, 13.48e9, 2.0 * 32 * 4096 * 2, 32, 4096};
  if (name == "llama3-8b")  // GQA: 8 KV heads of 128
    return {"llama3-8b", 8.03e9, 16.06e9, 2.0 * 32 * 1024 * 2, 32, 4096};
  throw std::invalid_argument("unknown model '" + std::string(name) + "' (llama2-7b, llama3-8b)");
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
  else if (key == "jitter")
    jitter = v;
  else if (key == "mem_util")
    mem_util = v;
  else if (key == "activation_reserve")
    activation_reserve_bytes = v;
  else
    throw std::invalid_argument(
        "unknown sim constant '" + std::string(key) +
        "' (bandwidth, flops, memory, params, weight_bytes, kv_bytes_per_token, layers, hidden, "
        "eta_bw, eta_compute, t_fixed, jitter, mem_util, activation_reserve)");
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
  if (!(t_fixed_s >= 0)) bad("t_fixed must be >= 0");
  if (!(jitter >= 0 && jitter < 0.3)) bad("jitter must be in [0, 0.3)");
  if (!(mem_util > 0 && mem_util <= 1)) bad("mem_util must be in (0, 1]");
  if (!(activation_reserve_bytes >= 0)) bad("activation_reserve must be >= 0");
  if (kv_capacity_tokens() < 1)
    bad("the weights (" + std::to_string(model.weight_bytes / 1e9) + " GB) leave no KV memory on " +
        hw.name);
}

sim_backend::sim_backend(const sim_config& cfg) : cfg_(cfg), rng_(mix_seed(cfg.seed, 7)) {
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
  double ctx_read = 0, new_tokens = 0, attn = 0;
  for (const auto& s : b.seqs) {
    const double past = s.past_tokens;
    if (s.decode) {
      attn += ld4 * (past + 1.0);
      new_tokens += 1;
    } else {
      const double c = s.prefill_tokens;
      attn += ld4 * c * (past + c / 2.0);
      new_tokens += c;
    }
    ctx_read += past;
  }
  step_cost k;
  k.bytes = cfg_.model.weight_bytes + kvb * ctx_read + kvb * new_tokens;
  k.flops = 2.0 * cfg_.model.params * new_tokens + attn;
  k.memory_s = k.bytes / (cfg_.eta_bw * cfg_.hw.bandwidth);
  k.compute_s = k.flops / (cfg_.eta_compute * cfg_.hw.flops);
  k.seconds = cfg_.t_fixed_s + std::max(k.memory_s, k.compute_s);
  return k;
}

step_result sim_backend::step(const batch& b) {
  const step_cost k = cost(b);
  double factor = 1.0;
  if (cfg_.jitter > 0) factor += cfg_.jitter * std::clamp(rng_.normal(), -3.0, 3.0);
  const double seconds = cfg_.t_fixed_s + std::max(k.memory_s, k.compute_s) * factor;
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

}  // namespace batching
