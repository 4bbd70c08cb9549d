// SPDX-License-Identifier: MIT
#include "model/model.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "loadgen/random.hpp"
#include "model/half.hpp"

namespace batching::compute {

std::uint64_t model_config::layer_params() const noexcept {
  const std::uint64_t d = hidden, f = ffn;
  return 2 * d + 3 * d * d + d * d + 2 * d * f;
}

std::uint64_t model_config::params() const noexcept {
  return streamed_params() + std::uint64_t(vocab) * hidden;
}

std::uint64_t model_config::streamed_params() const noexcept {
  return layers * layer_params() + hidden + std::uint64_t(vocab) * hidden;
}

namespace {

template <class T>
T parse_number(std::string_view key, std::string_view v) {
  T out{};
  const auto* end = v.data() + v.size();
  if constexpr (std::is_floating_point_v<T>) {
    // std::from_chars for floating point is missing from some standard libraries (libc++ 14).
    std::string s(v);
    char* e = nullptr;
    const double d = std::strtod(s.c_str(), &e);
    if (s.empty() || e != s.c_str() + s.size() || !std::isfinite(d))
      throw std::invalid_argument("model " + std::string(key) + ": not a number: '" + s + "'");
    out = static_cast<T>(d);
  } else {
    auto [p, ec] = std::from_chars(v.data(), end, out);
    if (ec != std::errc() || p != end || v.empty())
      throw std::invalid_argument("model " + std::string(key) + ": not an integer: '" +
                                  std::string(v) + "'");
  }
  return out;
}

}  // namespace

void model_config::set(std::string_view key, std::string_view value) {
  if (key == "layers")
    layers = parse_number<std::uint32_t>(key, value);
  else if (key == "hidden")
    hidden = parse_number<std::uint32_t>(key, value);
  else if (key == "heads")
    heads = parse_number<std::uint32_t>(key, value);
  else if (key == "ffn")
    ffn = parse_number<std::uint32_t>(key, value);
  else if (key == "vocab")
    vocab = parse_number<std::uint32_t>(key, value);
  else if (key == "seed")
    seed = parse_number<std::uint64_t>(key, value);
  else if (key == "norm_eps")
    norm_eps = parse_number<float>(key, value);
  else if (key == "rope_theta")
    rope_theta = parse_number<float>(key, value);
  else
    throw std::invalid_argument(
        "unknown model field '" + std::string(key) +
        "' (layers, hidden, heads, ffn, vocab, seed, norm_eps, rope_theta)");
}

void model_config::validate() const {
  auto bad = [](const char* m) { throw std::invalid_argument(std::string("model: ") + m); };
  if (layers == 0 || hidden == 0 || heads == 0 || ffn == 0 || vocab < 2)
    bad("layers, hidden, heads, ffn must be > 0 and vocab >= 2");
  if (hidden % heads != 0) bad("hidden must be a multiple of heads");
  if (head_dim() % 2 != 0) bad("head dim (hidden / heads) must be even (rope)");
  if (!(norm_eps > 0) || !(rope_theta > 1)) bad("norm_eps must be > 0 and rope_theta > 1");
  if (std::uint64_t(vocab) * hidden > (1ull << 31) || std::uint64_t(ffn) * hidden > (1ull << 31))
    bad("a matrix over 2^31 values");
}

std::string model_config::describe() const {
  return "L" + std::to_string(layers) + " d" + std::to_string(hidden) + " h" +
         std::to_string(heads) + " f" + std::to_string(ffn) + " V" + std::to_string(vocab);
}

namespace {

// Uniform with standard deviation `sd` around `mean`, rounded to fp16 values.
std::vector<float> draw(std::uint64_t seed, std::uint64_t stream, std::size_t n, double mean,
                        double sd) {
  tokchron_loadgen::rng r(tokchron_loadgen::mix_seed(seed, stream));
  const double a = sd * std::sqrt(3.0);
  std::vector<float> v(n);
  for (auto& x : v) x = round_to_half(static_cast<float>(mean + r.uniform(-a, a)));
  return v;
}

}  // namespace

model_weights model_weights::random(const model_config& cfg) {
  cfg.validate();
  model_weights w;
  w.cfg = cfg;
  const std::size_t d = cfg.hidden, f = cfg.ffn, V = cfg.vocab;
  const double sd_d = 1.0 / std::sqrt(double(d)), sd_f = 1.0 / std::sqrt(double(f));
  std::uint64_t s = 0;
  w.embedding = draw(cfg.seed, s++, V * d, 0, 1);
  w.layers.resize(cfg.layers);
  for (auto& l : w.layers) {
    l.attn_norm = draw(cfg.seed, s++, d, 1, 0.1);
    l.wqkv = draw(cfg.seed, s++, 3 * d * d, 0, sd_d);
    l.wo = draw(cfg.seed, s++, d * d, 0, sd_d);
    l.mlp_norm = draw(cfg.seed, s++, d, 1, 0.1);
    l.w_up = draw(cfg.seed, s++, f * d, 0, sd_d);
    l.w_down = draw(cfg.seed, s++, d * f, 0, sd_f);
  }
  w.final_norm = draw(cfg.seed, s++, d, 1, 0.1);
  // Logit scale 4: a peaked next-token distribution, as a trained model's; greedy decoding
  // does not depend on it, the top-1 margin relative to rounding error does not either.
  w.lm_head = draw(cfg.seed, s++, V * d, 0, 4 * sd_d);
  return w;
}

std::int32_t prompt_token(std::uint64_t seed, std::uint64_t seq_id, std::uint32_t i,
                          std::uint32_t vocab) noexcept {
  return static_cast<std::int32_t>(
      tokchron_loadgen::mix_seed(tokchron_loadgen::mix_seed(seed, seq_id), i) % vocab);
}

std::int32_t argmax(const float* v, std::size_t n) noexcept {
  std::size_t best = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (v[i] > v[best] || (std::isnan(v[best]) && !std::isnan(v[i]))) best = i;
  return static_cast<std::int32_t>(best);
}

}  // namespace batching::compute
