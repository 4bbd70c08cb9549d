// SPDX-License-Identifier: MIT
#include "cuda/cuda_backend.hpp"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cuda/check.cuh"
#include "cuda/kernels.cuh"
#include "model/half.hpp"

namespace batching {

std::optional<std::string> cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error state for later calls
    return std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" +
           cudaGetErrorString(e) + ")";
  }
  if (n == 0) return std::string("no CUDA device");
  return std::nullopt;
}

namespace compute {

namespace {

// A device array of T, freed on destruction. Grow-only `ensure`.
template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  ~device_buffer() {
    if (p_) cudaFree(p_);  // no throw from a destructor; a failure here leaks, nothing worse
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  void reset(std::size_t n) {
    if (p_) BX_CUDA(cudaFree(p_));
    p_ = nullptr;
    n_ = 0;
    if (n) BX_CUDA(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)));
    n_ = n;
  }
  void ensure(std::size_t n) {
    if (n > n_) reset(std::max(n, n_ + n_ / 2));
  }
  void upload(const T* host, std::size_t n, cudaStream_t s) {
    ensure(n);
    BX_CUDA(cudaMemcpyAsync(p_, host, n * sizeof(T), cudaMemcpyHostToDevice, s));
  }
  [[nodiscard]] T* get() const noexcept { return p_; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

std::vector<__half> to_half(const std::vector<float>& v) {
  std::vector<__half> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    __half_raw raw;
    raw.x = float_to_half(v[i]);  // bit-exact with __float2half_rn
    h[i] = __half(raw);
  }
  return h;
}

// y[rows][out] (fp32) = x[rows][in] (fp16) * W^T, W row-major [out][in] (fp16). In cuBLAS's
// column-major view y^T (out x rows) = W (as [in x out] column-major)^T * x^T.
void gemm(cublasHandle_t blas, const __half* xin, int n_rows, const __half* w, int in, int out,
          float* y) {
  const float one = 1.0f, zero = 0.0f;
  BX_CUBLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, out, n_rows, in, &one, w, CUDA_R_16F, in,
                         xin, CUDA_R_16F, in, &zero, y, CUDA_R_32F, out, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT));
}

// A stream, a cuBLAS handle on it and two events, released on destruction.
struct stream_set {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  stream_set() {
    try {
      BX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      BX_CUBLAS(cublasCreate(&blas));
      BX_CUBLAS(cublasSetStream(blas, stream));
      BX_CUDA(cudaEventCreate(&start));
      BX_CUDA(cudaEventCreate(&stop));
    } catch (...) {
      release();  // what was created before the failure
      throw;
    }
  }
  ~stream_set() { release(); }
  void release() noexcept {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (blas) cublasDestroy(blas);
    if (stream) cudaStreamDestroy(stream);
    start = stop = nullptr;
    blas = nullptr;
    stream = nullptr;
  }
  stream_set(const stream_set&) = delete;
  stream_set& operator=(const stream_set&) = delete;
  // Seconds between the events, once `stop` has completed.
  double elapsed() {
    BX_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    BX_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return ms / 1e3;
  }
};

struct device_layer {
  device_buffer<float> attn_norm, mlp_norm;
  device_buffer<__half> wqkv, wo, w_up, w_down;
};

}  // namespace

struct cuda_model::impl {
  model_config cfg;
  int device = 0;
  std::unique_ptr<stream_set> streams;  // created once the device is selected
  cudaStream_t stream = nullptr;        // streams->stream
  cublasHandle_t blas = nullptr;        // streams->blas
  cudaEvent_t start = nullptr, stop = nullptr;
  float last_ms = 0;
  std::string name;
  // Weights.
  device_buffer<__half> embedding, lm_head;
  device_buffer<float> final_norm, inv_freq;
  std::vector<device_layer> layers;
  // KV cache.
  device_buffer<__half> kv;
  std::uint32_t kv_blocks = 0, block_size = 0;
  // Step inputs: [token | pos | table | blocks | sample rows] packed in one int32 array.
  std::vector<std::int32_t> host_meta;
  device_buffer<std::int32_t> meta;
  std::int32_t* pinned_next = nullptr;
  std::size_t pinned_cap = 0;
  // Activations.
  device_buffer<float> h, qkv, tmp, up, logits;
  device_buffer<__half> x, o, u, rows;
  device_buffer<std::int32_t> next;

  ~impl() {
    if (pinned_next) cudaFreeHost(pinned_next);
  }

  void gemm(const __half* xin, int n_rows, const __half* w, int in, int out, float* y) {
    compute::gemm(blas, xin, n_rows, w, in, out, y);
  }
};

cuda_model::cuda_model(const model_weights& w, int device) : p_(std::make_unique<impl>()) {
  if (auto why = cuda_unavailable_reason()) throw no_gpu_error("cuda backend: " + *why);
  const model_config& c = w.cfg;
  c.validate();
  if (c.head_dim() > 256) throw std::invalid_argument("cuda backend: head dim over 256");
  impl& m = *p_;
  m.cfg = c;
  m.device = device;
  BX_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop{};
  BX_CUDA(cudaGetDeviceProperties(&prop, device));
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", double(prop.totalGlobalMem) / 1073741824.0);
  m.name = std::string(prop.name) + ", " + mem;
  m.streams = std::make_unique<stream_set>();
  m.stream = m.streams->stream;
  m.blas = m.streams->blas;
  m.start = m.streams->start;
  m.stop = m.streams->stop;
  // Weight upload: on the compute stream, each copy synchronised before the next. Before, the
  // weights went with plain cudaMemcpy on the legacy default stream, while every kernel runs on
  // `stream`, created cudaStreamNonBlocking, which does not wait for the legacy stream; and a
  // cudaMemcpy from pageable host memory may return once the data is staged, before the DMA to
  // the device has landed (CUDA Runtime API, "API synchronization behavior"), so the first
  // step's kernels could read weights still in flight. Synchronising is what makes it correct
  // whatever the source memory (pageable or pinned, whose return semantics differ) and whichever
  // stream the kernels use: when `copy` returns the bytes are on the device and the host buffer
  // (often a temporary) may go, and a failed copy is reported by the constructor, not by the
  // first step. Using the compute stream keeps the backend on one stream (no legacy-stream
  // implicit synchronisation involved).
  auto copy = [&](void* dst, const void* src, std::size_t bytes) {
    BX_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, m.stream));
    BX_CUDA(cudaStreamSynchronize(m.stream));
  };
  auto up_half = [&](device_buffer<__half>& d, const std::vector<float>& v) {
    const auto h = to_half(v);
    d.reset(h.size());
    copy(d.get(), h.data(), h.size() * sizeof(__half));
  };
  auto up_float = [&](device_buffer<float>& d, const std::vector<float>& v) {
    d.reset(v.size());
    copy(d.get(), v.data(), v.size() * sizeof(float));
  };
  up_half(m.embedding, w.embedding);
  up_half(m.lm_head, w.lm_head);
  up_float(m.final_norm, w.final_norm);
  up_float(m.inv_freq, rope_inv_freq(c));
  m.layers = std::vector<device_layer>(c.layers);
  for (std::uint32_t l = 0; l < c.layers; ++l) {
    up_float(m.layers[l].attn_norm, w.layers[l].attn_norm);
    up_float(m.layers[l].mlp_norm, w.layers[l].mlp_norm);
    up_half(m.layers[l].wqkv, w.layers[l].wqkv);
    up_half(m.layers[l].wo, w.layers[l].wo);
    up_half(m.layers[l].w_up, w.layers[l].w_up);
    up_half(m.layers[l].w_down, w.layers[l].w_down);
  }
}

cuda_model::~cuda_model() = default;

void cuda_model::reserve_kv(std::uint32_t num_blocks, std::uint32_t block_size) {
  if (num_blocks == 0 || block_size == 0)
    throw std::invalid_argument("cuda backend: num_blocks and block_size must be > 0");
  impl& m = *p_;
  m.kv.reset(std::size_t(m.cfg.layers) * num_blocks * 2 * block_size * m.cfg.hidden);
  m.kv_blocks = num_blocks;
  m.block_size = block_size;
}

float cuda_model::last_step_ms() const noexcept { return p_->last_ms; }
std::string cuda_model::device_name() const { return p_->name; }

void cuda_model::forward(const forward_batch& b, std::vector<std::int32_t>& next,
                         std::vector<float>* logits) {
  impl& m = *p_;
  const model_config& c = m.cfg;
  const int d = static_cast<int>(c.hidden), f = static_cast<int>(c.ffn),
            V = static_cast<int>(c.vocab);
  if (m.kv_blocks == 0) throw std::runtime_error("cuda backend: reserve_kv before forward");
  if (b.block_size != m.block_size)
    throw std::invalid_argument("cuda forward: batch block size != cache block size");
  // Host side: validate and pack the step's metadata.
  std::size_t T = 0, table_len = 0, sampled = 0;
  for (std::size_t i = 0; i < b.seqs.size(); ++i) {
    const forward_seq& s = b.seqs[i];
    const std::uint64_t need = (std::uint64_t(s.past) + s.n_new + b.block_size - 1) / b.block_size;
    if (s.n_new == 0 || s.num_blocks < need)
      throw std::invalid_argument("cuda forward: sequence " + std::to_string(i) +
                                  " has no new tokens or too few blocks");
    for (std::uint32_t k = 0; k < need; ++k)
      if (s.blocks[k] >= m.kv_blocks)
        throw std::invalid_argument("cuda forward: block id out of range");
    for (std::uint32_t k = 0; k < s.n_new; ++k)
      if (s.tokens[k] < 0 || std::uint32_t(s.tokens[k]) >= c.vocab)
        throw std::invalid_argument("cuda forward: token id out of range");
    T += s.n_new;
    table_len += need;
    sampled += s.sample ? 1 : 0;
  }
  auto& meta = m.host_meta;
  meta.assign(3 * T + table_len + sampled, 0);
  std::int32_t *tok = meta.data(), *pos = tok + T, *table = pos + T, *blocks = table + T,
               *rows = blocks + table_len;
  {
    std::size_t t = 0, off = 0, r = 0;
    for (const forward_seq& s : b.seqs) {
      const std::uint32_t need = (s.past + s.n_new + b.block_size - 1) / b.block_size;
      for (std::uint32_t k = 0; k < need; ++k) blocks[off + k] = std::int32_t(s.blocks[k]);
      for (std::uint32_t k = 0; k < s.n_new; ++k, ++t) {
        tok[t] = s.tokens[k];
        pos[t] = std::int32_t(s.past + k);
        table[t] = std::int32_t(off);
      }
      if (s.sample) rows[r++] = std::int32_t(t - 1);
      off += need;
    }
  }
  const int Ti = static_cast<int>(T), S = static_cast<int>(sampled);
  cudaStream_t st = m.stream;
  BX_CUDA(cudaSetDevice(m.device));
  BX_CUDA(cudaEventRecord(m.start, st));
  m.meta.upload(meta.data(), meta.size(), st);
  const std::int32_t* dm = m.meta.get();
  cuda::token_index ti{dm, dm + T, dm + 2 * T, dm + 3 * T, Ti};
  const std::int32_t* d_rows = dm + 3 * T + table_len;
  cuda::kv_view kv{m.kv.get(), int(m.kv_blocks), int(m.block_size), d};
  m.h.ensure(T * d);
  m.x.ensure(T * d);
  m.qkv.ensure(T * 3 * d);
  m.o.ensure(T * d);
  m.tmp.ensure(T * d);
  m.up.ensure(T * f);
  m.u.ensure(T * f);
  cuda::embed(m.embedding.get(), ti, d, m.h.get(), st);
  for (std::uint32_t l = 0; l < c.layers; ++l) {
    const device_layer& L = m.layers[l];
    cuda::rmsnorm_half(m.h.get(), nullptr, Ti, L.attn_norm.get(), d, c.norm_eps, m.x.get(), st);
    m.gemm(m.x.get(), Ti, L.wqkv.get(), d, 3 * d, m.qkv.get());
    cuda::rope_and_store(m.qkv.get(), ti, m.inv_freq.get(), int(c.heads), int(c.head_dim()), kv,
                         int(l), st);
    cuda::attention(m.qkv.get(), ti, kv, int(l), int(c.heads), int(c.head_dim()), m.o.get(), st);
    m.gemm(m.o.get(), Ti, L.wo.get(), d, d, m.tmp.get());
    cuda::add_inplace(m.h.get(), m.tmp.get(), T * d, st);
    cuda::rmsnorm_half(m.h.get(), nullptr, Ti, L.mlp_norm.get(), d, c.norm_eps, m.x.get(), st);
    m.gemm(m.x.get(), Ti, L.w_up.get(), d, f, m.up.get());
    cuda::silu_half(m.up.get(), T * f, m.u.get(), st);
    m.gemm(m.u.get(), Ti, L.w_down.get(), f, d, m.tmp.get());
    cuda::add_inplace(m.h.get(), m.tmp.get(), T * d, st);
  }
  next.assign(b.seqs.size(), -1);
  if (S > 0) {
    m.rows.ensure(sampled * d);
    m.logits.ensure(sampled * V);
    m.next.ensure(sampled);
    cuda::rmsnorm_half(m.h.get(), d_rows, S, m.final_norm.get(), d, c.norm_eps, m.rows.get(), st);
    m.gemm(m.rows.get(), S, m.lm_head.get(), d, V, m.logits.get());
    cuda::argmax_rows(m.logits.get(), S, V, m.next.get(), st);
    if (sampled > m.pinned_cap) {
      if (m.pinned_next) BX_CUDA(cudaFreeHost(m.pinned_next));
      m.pinned_next = nullptr;
      m.pinned_cap = 0;
      BX_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m.pinned_next),
                             std::max<std::size_t>(sampled, 256) * sizeof(std::int32_t)));
      m.pinned_cap = std::max<std::size_t>(sampled, 256);
    }
    BX_CUDA(cudaMemcpyAsync(m.pinned_next, m.next.get(), sampled * sizeof(std::int32_t),
                            cudaMemcpyDeviceToHost, st));
  }
  BX_CUDA(cudaEventRecord(m.stop, st));
  BX_CUDA(cudaEventSynchronize(m.stop));  // the tokens are on the host from here
  BX_CUDA(cudaEventElapsedTime(&m.last_ms, m.start, m.stop));
  for (std::size_t i = 0, r = 0; i < b.seqs.size(); ++i)
    if (b.seqs[i].sample) next[i] = m.pinned_next[r++];
  if (logits) {  // after the step (synchronised above), on the step's stream
    logits->resize(sampled * V);
    if (S > 0) {
      BX_CUDA(cudaMemcpyAsync(logits->data(), m.logits.get(), sampled * V * sizeof(float),
                              cudaMemcpyDeviceToHost, st));
      BX_CUDA(cudaStreamSynchronize(st));
    }
  }
}

double measure_device_bandwidth(int device, std::size_t bytes, int repeats) {
  if (auto why = cuda_unavailable_reason()) throw no_gpu_error("cuda: " + *why);
  if (bytes == 0) throw std::invalid_argument("cuda bandwidth: bytes must be > 0");
  BX_CUDA(cudaSetDevice(device));
  stream_set s;
  device_buffer<char> a, b;
  a.reset(bytes);
  b.reset(bytes);
  BX_CUDA(cudaMemsetAsync(a.get(), 1, bytes, s.stream));
  BX_CUDA(cudaMemsetAsync(b.get(), 2, bytes, s.stream));
  double best = 0;
  for (int r = 0; r <= std::max(1, repeats); ++r) {  // r = 0 warms up, untimed
    BX_CUDA(cudaEventRecord(s.start, s.stream));
    BX_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s.stream));
    BX_CUDA(cudaEventRecord(s.stop, s.stream));
    const double t = s.elapsed();
    if (r > 0 && t > 0) best = std::max(best, 2.0 * double(bytes) / t);
  }
  return best;
}

double measure_device_gemm_flops(int device, int n, int repeats) {
  if (auto why = cuda_unavailable_reason()) throw no_gpu_error("cuda: " + *why);
  if (n <= 0) throw std::invalid_argument("cuda gemm: n must be > 0");
  BX_CUDA(cudaSetDevice(device));
  stream_set s;
  const std::size_t nn = std::size_t(n) * std::size_t(n);
  device_buffer<__half> x, w;
  device_buffer<float> y;
  x.reset(nn);
  w.reset(nn);
  y.reset(nn);
  cuda::fill_uniform_half(x.get(), nn, 1, s.stream);
  cuda::fill_uniform_half(w.get(), nn, 2, s.stream);
  double best = 0;
  for (int r = 0; r <= std::max(1, repeats); ++r) {  // r = 0 warms up (cuBLAS's first call)
    BX_CUDA(cudaEventRecord(s.start, s.stream));
    gemm(s.blas, x.get(), n, w.get(), n, n, y.get());
    BX_CUDA(cudaEventRecord(s.stop, s.stream));
    const double t = s.elapsed();
    if (r > 0 && t > 0) best = std::max(best, 2.0 * double(n) * double(n) * double(n) / t);
  }
  return best;
}

}  // namespace compute

void cuda_backend_config::set(std::string_view key, std::string_view value) {
  if (key == "kv_memory" || key == "device") {
    const std::string s(value);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0)
      throw std::invalid_argument("cuda " + std::string(key) + ": not a number >= 0: '" + s + "'");
    if (key == "kv_memory")
      kv_memory_bytes = v;
    else
      device = static_cast<int>(v);
    return;
  }
  model.set(key, value);
}

void cuda_backend_config::validate() const {
  model.validate();
  if (!(kv_memory_bytes > 0)) throw std::invalid_argument("cuda: kv_memory must be > 0");
  if (device < 0) throw std::invalid_argument("cuda: device must be >= 0");
}

cuda_backend::cuda_backend(const cuda_backend_config& cfg)
    : cfg_(cfg), book_(cfg.model.seed, cfg.model.vocab) {
  cfg_.validate();
  if (auto why = cuda_unavailable_reason()) throw no_gpu_error("cuda backend: " + *why);
  const auto w = compute::model_weights::random(cfg_.model);
  model_ = std::make_unique<compute::cuda_model>(w, cfg_.device);
  device_ = model_->device_name();
}

cuda_backend::~cuda_backend() = default;

std::string cuda_backend::name() const {
  char mb[32];
  std::snprintf(mb, sizeof mb, "%.1f", double(cfg_.model.streamed_params()) * 2 / 1e6);
  return "cuda " + cfg_.model.describe() + ", " + mb + " MB fp16 weights, " + device_;
}

std::uint32_t cuda_backend::kv_blocks(std::uint32_t block_size) const {
  const double per_block = double(block_size) * double(cfg_.model.kv_values_per_token()) * 2;
  const double n = std::floor(cfg_.kv_memory_bytes / per_block);
  if (n < 1) throw std::invalid_argument("cuda: kv_memory holds no block");
  return static_cast<std::uint32_t>(std::min(n, 2147483647.0));
}

step_result cuda_backend::step(const batch& b) {
  if (kv_block_size_ == 0) {
    model_->reserve_kv(kv_blocks(b.block_size), b.block_size);
    kv_block_size_ = b.block_size;
  } else if (kv_block_size_ != b.block_size) {
    throw std::runtime_error("cuda backend: block size changed between steps");
  }
  try {
    book_.prepare(b, fb_);
    model_->forward(fb_, next_);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("cuda backend: ") + e.what());
  }
  step_result r;
  r.elapsed = std::chrono::duration_cast<duration>(
      std::chrono::duration<double, std::milli>(model_->last_step_ms()));
  book_.commit(b, next_, r.outputs);
  return r;
}

float cuda_backend::last_step_ms() const noexcept { return model_->last_step_ms(); }

}  // namespace batching
