// SPDX-License-Identifier: MIT
#include "model/forward.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

#include "model/half.hpp"

namespace batching::compute {

paged_kv_cache::paged_kv_cache(const model_config& cfg, std::uint32_t num_blocks,
                               std::uint32_t block_size)
    : layers_(cfg.layers), hidden_(cfg.hidden), blocks_(num_blocks), block_size_(block_size) {
  if (num_blocks == 0 || block_size == 0)
    throw std::invalid_argument("kv cache: num_blocks and block_size must be > 0");
  // new float[n] leaves the memory untouched: the OS commits pages as slots are written.
  data_.reset(new float[std::size_t(layers_) * blocks_ * 2 * block_size_ * hidden_]);
}

std::vector<float> rope_inv_freq(const model_config& cfg) {
  const std::uint32_t hd = cfg.head_dim();
  std::vector<float> f(hd / 2);
  for (std::uint32_t i = 0; i < hd / 2; ++i)
    f[i] = static_cast<float>(std::pow(double(cfg.rope_theta), -2.0 * i / double(hd)));
  return f;
}

double relative_l2(const float* a, const float* b, std::size_t n) noexcept {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = double(a[i]) - double(b[i]);
    num += e * e;
    den += double(b[i]) * double(b[i]);
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

namespace {

// y[rows][out] = x[rows][in] * W^T, W row-major [out][in]: one pass over W for all rows.
void matmul(const float* x, std::size_t rows, const std::vector<float>& w, std::size_t in,
            std::size_t out, float* y) {
  if (rows == 1) {  // one token: matrix-vector (OpenBLAS's sgemm has no M = 1 fast path)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(out), static_cast<blasint>(in),
                1.0f, w.data(), static_cast<blasint>(in), x, 1, 0.0f, y, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows),
              static_cast<blasint>(out), static_cast<blasint>(in), 1.0f, x,
              static_cast<blasint>(in), w.data(), static_cast<blasint>(in), 0.0f, y,
              static_cast<blasint>(out));
}

void rmsnorm_row(const float* x, const float* g, std::size_t d, float eps, bool half, float* y) {
  float ss = 0;
  for (std::size_t i = 0; i < d; ++i) ss += x[i] * x[i];
  const float r = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
  for (std::size_t i = 0; i < d; ++i) {
    const float v = x[i] * r * g[i];
    y[i] = half ? round_to_half(v) : v;
  }
}

void rope_row(float* v, std::uint32_t heads, std::uint32_t hd, std::uint32_t pos,
              const std::vector<float>& inv_freq) {
  for (std::uint32_t h = 0; h < heads; ++h) {
    float* p = v + std::size_t(h) * hd;
    for (std::uint32_t i = 0; i < hd / 2; ++i) {
      const float a = static_cast<float>(pos) * inv_freq[i];
      const float c = std::cos(a), s = std::sin(a);
      const float x0 = p[2 * i], x1 = p[2 * i + 1];
      p[2 * i] = x0 * c - x1 * s;
      p[2 * i + 1] = x0 * s + x1 * c;
    }
  }
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// A dot product with 8 independent partial sums, so the compiler can vectorise it without
// reassociating (a single running sum is a serial chain of dependent adds).
float dot(const float* a, const float* b, std::uint32_t n) {
  float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::uint32_t k = 0; k < 8; ++k) p[k] += a[i + k] * b[i + k];
  float s = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <class F>
void parallel_for(std::size_t n, unsigned threads, F&& f) {
  threads = static_cast<unsigned>(std::min<std::size_t>(std::max(1u, threads), n));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) f(i, 0u);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  // Interleaved: item i goes to worker i % threads (prefill rows grow in cost with position).
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::size_t i = t; i < n; i += threads) f(i, t);
    });
  for (std::size_t i = 0; i < n; i += threads) f(i, 0u);
  for (auto& th : pool) th.join();
}

}  // namespace

cpu_model::cpu_model(const model_weights& w, paged_kv_cache& kv, cpu_forward_options opt)
    : w_(w), kv_(kv), opt_(opt), inv_freq_(rope_inv_freq(w.cfg)) {
  if (kv.layers() != w.cfg.layers || kv.hidden() != w.cfg.hidden)
    throw std::invalid_argument("cpu forward: the KV cache was made for another model shape");
}

void cpu_model::attention(const forward_batch& b, std::uint32_t layer) {
  const model_config& c = w_.cfg;
  const std::uint32_t d = c.hidden, hd = c.head_dim(), heads = c.heads, bs = b.block_size;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::size_t T = tok_seq_.size();
  const unsigned nthreads = std::max(1u, opt_.threads);
  // Per worker: scores for up to the longest context.
  std::uint32_t max_ctx = 0;
  for (const auto& s : b.seqs) max_ctx = std::max(max_ctx, s.past + s.n_new);
  std::vector<float> scores(std::size_t(nthreads) * max_ctx);
  parallel_for(T * heads, nthreads, [&](std::size_t item, unsigned worker) {
    const std::size_t t = item / heads;
    const std::uint32_t h = static_cast<std::uint32_t>(item % heads);
    const forward_seq& s = b.seqs[tok_seq_[t]];
    const std::uint32_t pos = tok_pos_[t];
    const float* q = qkv_.data() + t * 3 * d + std::size_t(h) * hd;
    float* sc = scores.data() + std::size_t(worker) * max_ctx;
    float m = -INFINITY;
    for (std::uint32_t j = 0; j <= pos; ++j) {
      const float* k = kv_.at(layer, 0, s.blocks[j / bs], j % bs) + std::size_t(h) * hd;
      sc[j] = dot(q, k, hd) * scale;
      m = std::max(m, sc[j]);
    }
    float sum = 0;
    for (std::uint32_t j = 0; j <= pos; ++j) {
      sc[j] = std::exp(sc[j] - m);
      sum += sc[j];
    }
    float* o = o_.data() + t * d + std::size_t(h) * hd;
    std::fill(o, o + hd, 0.0f);
    for (std::uint32_t j = 0; j <= pos; ++j) {
      const float* v = kv_.at(layer, 1, s.blocks[j / bs], j % bs) + std::size_t(h) * hd;
      const float wj = sc[j];
      for (std::uint32_t i = 0; i < hd; ++i) o[i] += wj * v[i];
    }
    const float inv = 1.0f / sum;
    for (std::uint32_t i = 0; i < hd; ++i)
      o[i] = opt_.fp16_activations ? round_to_half(o[i] * inv) : o[i] * inv;
  });
}

void cpu_model::forward(const forward_batch& b, std::vector<std::int32_t>& next,
                        std::vector<float>* logits) {
  const model_config& c = w_.cfg;
  const std::size_t d = c.hidden, f = c.ffn, V = c.vocab;
  const bool half = opt_.fp16_activations;
  if (b.block_size != kv_.block_size())
    throw std::invalid_argument("cpu forward: batch block size " + std::to_string(b.block_size) +
                                " != cache block size " + std::to_string(kv_.block_size()));
  tok_seq_.clear();
  tok_pos_.clear();
  std::size_t sampled = 0;
  for (std::size_t i = 0; i < b.seqs.size(); ++i) {
    const forward_seq& s = b.seqs[i];
    const std::uint64_t need = (std::uint64_t(s.past) + s.n_new + b.block_size - 1) / b.block_size;
    if (s.n_new == 0 || s.num_blocks < need)
      throw std::invalid_argument("cpu forward: sequence " + std::to_string(i) +
                                  " has no new tokens or too few blocks");
    for (std::uint32_t k = 0; k < need; ++k)
      if (s.blocks[k] >= kv_.num_blocks())
        throw std::invalid_argument("cpu forward: block id out of range");
    for (std::uint32_t k = 0; k < s.n_new; ++k) {
      if (s.tokens[k] < 0 || std::uint32_t(s.tokens[k]) >= c.vocab)
        throw std::invalid_argument("cpu forward: token id out of range");
      tok_seq_.push_back(static_cast<std::uint32_t>(i));
      tok_pos_.push_back(s.past + k);
    }
    sampled += s.sample ? 1 : 0;
  }
  const std::size_t T = tok_seq_.size();
  h_.resize(T * d);
  x_.resize(T * d);
  qkv_.resize(T * 3 * d);
  o_.resize(T * d);
  tmp_.resize(T * d);
  up_.resize(T * f);
  for (std::size_t t = 0, n = 0; n < b.seqs.size(); ++n)
    for (std::uint32_t k = 0; k < b.seqs[n].n_new; ++k, ++t) {
      const float* e = w_.embedding.data() + std::size_t(b.seqs[n].tokens[k]) * d;
      std::copy(e, e + d, h_.data() + t * d);
    }
  for (std::uint32_t l = 0; l < c.layers; ++l) {
    const layer_weights& lw = w_.layers[l];
    for (std::size_t t = 0; t < T; ++t)
      rmsnorm_row(h_.data() + t * d, lw.attn_norm.data(), d, c.norm_eps, half, x_.data() + t * d);
    matmul(x_.data(), T, lw.wqkv, d, 3 * d, qkv_.data());
    for (std::size_t t = 0; t < T; ++t) {
      float* q = qkv_.data() + t * 3 * d;
      rope_row(q, c.heads, c.head_dim(), tok_pos_[t], inv_freq_);
      rope_row(q + d, c.heads, c.head_dim(), tok_pos_[t], inv_freq_);
      const forward_seq& s = b.seqs[tok_seq_[t]];
      const std::uint32_t pos = tok_pos_[t], blk = s.blocks[pos / b.block_size],
                          slot = pos % b.block_size;
      float* kd = kv_.at(l, 0, blk, slot);
      float* vd = kv_.at(l, 1, blk, slot);
      for (std::size_t i = 0; i < d; ++i) {
        kd[i] = half ? round_to_half(q[d + i]) : q[d + i];
        vd[i] = half ? round_to_half(q[2 * d + i]) : q[2 * d + i];
      }
    }
    attention(b, l);
    matmul(o_.data(), T, lw.wo, d, d, tmp_.data());
    for (std::size_t i = 0; i < T * d; ++i) h_[i] += tmp_[i];
    for (std::size_t t = 0; t < T; ++t)
      rmsnorm_row(h_.data() + t * d, lw.mlp_norm.data(), d, c.norm_eps, half, x_.data() + t * d);
    matmul(x_.data(), T, lw.w_up, d, f, up_.data());
    for (auto& u : up_) u = half ? round_to_half(silu(u)) : silu(u);
    matmul(up_.data(), T, lw.w_down, f, d, tmp_.data());
    for (std::size_t i = 0; i < T * d; ++i) h_[i] += tmp_[i];
  }
  // LM head on the sampled sequences' last tokens only.
  next.assign(b.seqs.size(), -1);
  if (sampled == 0) {
    if (logits) logits->clear();
    return;
  }
  rows_.resize(sampled * d);
  std::size_t r = 0, t_end = 0;
  for (const auto& s : b.seqs) {
    t_end += s.n_new;
    if (!s.sample) continue;
    rmsnorm_row(h_.data() + (t_end - 1) * d, w_.final_norm.data(), d, c.norm_eps, half,
                rows_.data() + r * d);
    ++r;
  }
  std::vector<float>& out = logits ? *logits : logits_;
  out.resize(sampled * V);
  matmul(rows_.data(), sampled, w_.lm_head, d, V, out.data());
  r = 0;
  for (std::size_t i = 0; i < b.seqs.size(); ++i)
    if (b.seqs[i].sample) next[i] = argmax(out.data() + (r++) * V, V);
}

std::vector<float> reference_logits(const model_weights& w,
                                    const std::vector<std::int32_t>& tokens) {
  const model_config& c = w.cfg;
  const std::size_t d = c.hidden, f = c.ffn, V = c.vocab, hd = c.head_dim(), n = tokens.size();
  const std::vector<float> inv_freq = rope_inv_freq(c);
  // Contiguous cache: [layer][position][d] for K and for V.
  std::vector<double> K(c.layers * n * d), Vc(c.layers * n * d);
  std::vector<float> out(n * V);
  std::vector<double> h(d), x(d), q(d), k(d), v(d), o(d), u(f), sc(n);
  auto norm = [&](const std::vector<double>& in, const std::vector<float>& g) {
    double ss = 0;
    for (double a : in) ss += a * a;
    const double r = 1.0 / std::sqrt(ss / double(d) + double(c.norm_eps));
    for (std::size_t i = 0; i < d; ++i) x[i] = in[i] * r * g[i];
  };
  auto matvec = [](const std::vector<float>& W, std::size_t row0, std::size_t rows,
                   std::size_t cols, const std::vector<double>& in, double* y) {
    for (std::size_t i = 0; i < rows; ++i) {
      double acc = 0;
      for (std::size_t j = 0; j < cols; ++j) acc += double(W[(row0 + i) * cols + j]) * in[j];
      y[i] = acc;
    }
  };
  auto rope = [&](std::vector<double>& vec, std::size_t pos) {
    for (std::size_t hh = 0; hh < c.heads; ++hh)
      for (std::size_t i = 0; i < hd / 2; ++i) {
        // The angle as every backend forms it (a float product), then exact trigonometry.
        const double a = double(static_cast<float>(pos) * inv_freq[i]);
        double& x0 = vec[hh * hd + 2 * i];
        double& x1 = vec[hh * hd + 2 * i + 1];
        const double y0 = x0 * std::cos(a) - x1 * std::sin(a);
        const double y1 = x0 * std::sin(a) + x1 * std::cos(a);
        x0 = y0;
        x1 = y1;
      }
  };
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t i = 0; i < d; ++i) h[i] = w.embedding[std::size_t(tokens[p]) * d + i];
    for (std::size_t l = 0; l < c.layers; ++l) {
      const layer_weights& lw = w.layers[l];
      norm(h, lw.attn_norm);
      matvec(lw.wqkv, 0, d, d, x, q.data());
      matvec(lw.wqkv, d, d, d, x, k.data());
      matvec(lw.wqkv, 2 * d, d, d, x, v.data());
      rope(q, p);
      rope(k, p);
      std::copy(k.begin(), k.end(), K.begin() + std::ptrdiff_t((l * n + p) * d));
      std::copy(v.begin(), v.end(), Vc.begin() + std::ptrdiff_t((l * n + p) * d));
      for (std::size_t hh = 0; hh < c.heads; ++hh) {
        double m = -INFINITY;
        for (std::size_t j = 0; j <= p; ++j) {
          double dot = 0;
          for (std::size_t i = 0; i < hd; ++i)
            dot += q[hh * hd + i] * K[(l * n + j) * d + hh * hd + i];
          sc[j] = dot / std::sqrt(double(hd));
          m = std::max(m, sc[j]);
        }
        double sum = 0;
        for (std::size_t j = 0; j <= p; ++j) sum += (sc[j] = std::exp(sc[j] - m));
        for (std::size_t i = 0; i < hd; ++i) {
          double acc = 0;
          for (std::size_t j = 0; j <= p; ++j) acc += sc[j] * Vc[(l * n + j) * d + hh * hd + i];
          o[hh * hd + i] = acc / sum;
        }
      }
      std::vector<double> t(d);
      matvec(lw.wo, 0, d, d, o, t.data());
      for (std::size_t i = 0; i < d; ++i) h[i] += t[i];
      norm(h, lw.mlp_norm);
      matvec(lw.w_up, 0, f, d, x, u.data());
      for (auto& a : u) a = a / (1.0 + std::exp(-a));
      matvec(lw.w_down, 0, d, f, u, t.data());
      for (std::size_t i = 0; i < d; ++i) h[i] += t[i];
    }
    norm(h, w.final_norm);
    std::vector<double> lg(V);
    matvec(w.lm_head, 0, V, d, x, lg.data());
    for (std::size_t i = 0; i < V; ++i) out[p * V + i] = static_cast<float>(lg[i]);
  }
  return out;
}

}  // namespace batching::compute
