// SPDX-License-Identifier: MIT
#include <cfloat>
#include <cmath>

#include "cuda/check.cuh"
#include "cuda/kernels.cuh"

namespace batching::compute::cuda {

namespace {

constexpr int warp = 32;

__device__ float warp_sum(float v) {
  for (int o = warp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over a block of `blockDim.x` threads (a multiple of 32, <= 1024); every thread gets it.
__device__ float block_sum(float v) {
  __shared__ float part[32];
  const int lane = threadIdx.x % warp, w = threadIdx.x / warp, nw = blockDim.x / warp;
  v = warp_sum(v);
  __syncthreads();  // `part` may still be read from a previous call
  if (lane == 0) part[w] = v;
  __syncthreads();
  v = lane < nw ? part[lane] : 0.0f;
  return warp_sum(v);
}

__global__ void embed_kernel(const __half* emb, token_index ti, int d, float* h) {
  const int t = blockIdx.x;
  const __half* row = emb + (std::size_t)ti.token[t] * d;
  for (int i = threadIdx.x; i < d; i += blockDim.x)
    h[(std::size_t)t * d + i] = __half2float(row[i]);
}

__global__ void rmsnorm_kernel(const float* in, const std::int32_t* rows, const float* gamma, int d,
                               float eps, __half* out) {
  const int r = blockIdx.x;
  const float* x = in + (std::size_t)(rows ? rows[r] : r) * d;
  float ss = 0;
  for (int i = threadIdx.x; i < d; i += blockDim.x) ss += x[i] * x[i];
  ss = block_sum(ss);
  const float inv = 1.0f / sqrtf(ss / (float)d + eps);
  for (int i = threadIdx.x; i < d; i += blockDim.x)
    out[(std::size_t)r * d + i] = __float2half_rn(x[i] * inv * gamma[i]);
}

__global__ void rope_store_kernel(float* qkv, token_index ti, const float* inv_freq, int heads,
                                  int hd, kv_view kv, int layer) {
  const int t = blockIdx.x, d = heads * hd, half_hd = hd / 2;
  const int pos = ti.pos[t];
  const int block = ti.blocks[ti.table[t] + pos / kv.block_size], slot = pos % kv.block_size;
  float* q = qkv + (std::size_t)t * 3 * d;
  float* k = q + d;
  const float* v = q + 2 * d;
  __half* kd = kv.data + kv.offset(layer, 0, block, slot);
  __half* vd = kv.data + kv.offset(layer, 1, block, slot);
  for (int p = threadIdx.x; p < d / 2; p += blockDim.x) {
    const int head = p / half_hd, i = p % half_hd, j = head * hd + 2 * i;
    float s, c;
    sincosf((float)pos * inv_freq[i], &s, &c);
    const float q0 = q[j], q1 = q[j + 1], k0 = k[j], k1 = k[j + 1];
    q[j] = q0 * c - q1 * s;
    q[j + 1] = q0 * s + q1 * c;
    const float r0 = k0 * c - k1 * s, r1 = k0 * s + k1 * c;
    k[j] = r0;
    k[j + 1] = r1;
    kd[j] = __float2half_rn(r0);
    kd[j + 1] = __float2half_rn(r1);
    vd[j] = __float2half_rn(v[j]);
    vd[j + 1] = __float2half_rn(v[j + 1]);
  }
}

constexpr int max_dims_per_lane = 8;  // head_dim <= 256

// One warp per (token, head): lane l owns dims l, l + 32, ...; positions are visited in order
// with an online (running max) softmax, so one pass reads each K and V row once.
__global__ void attention_kernel(const float* qkv, token_index ti, kv_view kv, int layer, int heads,
                                 int hd, __half* o) {
  const int t = blockIdx.x, head = blockIdx.y, lane = threadIdx.x;
  const int d = heads * hd, pos = ti.pos[t];
  const std::int32_t* table = ti.blocks + ti.table[t];
  const float* q = qkv + (std::size_t)t * 3 * d + head * hd;
  const float scale = 1.0f / sqrtf((float)hd);
  float qr[max_dims_per_lane], acc[max_dims_per_lane];
  const int nd = (hd - lane + warp - 1) / warp;  // dims this lane owns
#pragma unroll
  for (int k = 0; k < max_dims_per_lane; ++k) {
    qr[k] = k < nd ? q[lane + k * warp] : 0.0f;
    acc[k] = 0.0f;
  }
  float m = -FLT_MAX, l = 0.0f;
  for (int j = 0; j <= pos; ++j) {
    const int block = table[j / kv.block_size], slot = j % kv.block_size;
    const __half* kr = kv.data + kv.offset(layer, 0, block, slot) + head * hd;
    const __half* vr = kv.data + kv.offset(layer, 1, block, slot) + head * hd;
    float dot = 0.0f;
#pragma unroll
    for (int k = 0; k < max_dims_per_lane; ++k)
      if (k < nd) dot += qr[k] * __half2float(kr[lane + k * warp]);
    const float s = warp_sum(dot) * scale;
    const float m_new = fmaxf(m, s);
    const float corr = expf(m - m_new), p = expf(s - m_new);
    l = l * corr + p;
#pragma unroll
    for (int k = 0; k < max_dims_per_lane; ++k)
      if (k < nd) acc[k] = acc[k] * corr + p * __half2float(vr[lane + k * warp]);
    m = m_new;
  }
  __half* out = o + (std::size_t)t * d + head * hd;
#pragma unroll
  for (int k = 0; k < max_dims_per_lane; ++k)
    if (k < nd) out[lane + k * warp] = __float2half_rn(acc[k] / l);
}

__global__ void silu_kernel(const float* in, std::size_t n, __half* out) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x) {
    const float x = in[i];
    out[i] = __float2half_rn(x / (1.0f + expf(-x)));
  }
}

__global__ void add_kernel(float* h, const float* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x)
    h[i] += x[i];
}

// Better: larger value, or equal value and lower index; NaN (never > anything) loses.
__device__ void take_best(float& v, int& i, float ov, int oi) {
  if (ov > v || (ov == v && oi < i) || (v != v && ov == ov)) {
    v = ov;
    i = oi;
  }
}

__global__ void argmax_kernel(const float* logits, int n, std::int32_t* out) {
  const float* row = logits + (std::size_t)blockIdx.x * n;
  float best = -INFINITY;
  int idx = n;  // none yet
  for (int i = threadIdx.x; i < n; i += blockDim.x) take_best(best, idx, row[i], i);
  for (int o = warp / 2; o > 0; o /= 2)
    take_best(best, idx, __shfl_xor_sync(0xffffffffu, best, o),
              __shfl_xor_sync(0xffffffffu, idx, o));
  __shared__ float bv[32];
  __shared__ int bi[32];
  const int lane = threadIdx.x % warp, w = threadIdx.x / warp;
  if (lane == 0) {
    bv[w] = best;
    bi[w] = idx;
  }
  __syncthreads();
  if (w == 0) {
    const int nw = blockDim.x / warp;
    best = lane < nw ? bv[lane] : -INFINITY;
    idx = lane < nw ? bi[lane] : n;
    for (int o = warp / 2; o > 0; o /= 2)
      take_best(best, idx, __shfl_xor_sync(0xffffffffu, best, o),
                __shfl_xor_sync(0xffffffffu, idx, o));
    if (lane == 0) out[blockIdx.x] = idx < n ? idx : 0;  // all NaN: 0, as the CPU's argmax
  }
}

__global__ void fill_kernel(__half* out, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x) {
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (i + 1);  // splitmix64's finaliser
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    out[i] = __float2half_rn((float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
}

unsigned grid_for(std::size_t n, unsigned block) {
  const std::size_t g = (n + block - 1) / block;
  return static_cast<unsigned>(g < 65535 ? (g ? g : 1) : 65535);
}

}  // namespace

void fill_uniform_half(__half* out, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  fill_kernel<<<grid_for(n, 256), 256, 0, stream>>>(out, n, seed);
  BX_CHECK_LAUNCH();
}

void embed(const __half* embedding, token_index ti, int d, float* h, cudaStream_t stream) {
  if (ti.tokens == 0) return;
  embed_kernel<<<ti.tokens, 256, 0, stream>>>(embedding, ti, d, h);
  BX_CHECK_LAUNCH();
}

void rmsnorm_half(const float* in, const std::int32_t* rows, int n_rows, const float* gamma, int d,
                  float eps, __half* out, cudaStream_t stream) {
  if (n_rows == 0) return;
  rmsnorm_kernel<<<n_rows, 256, 0, stream>>>(in, rows, gamma, d, eps, out);
  BX_CHECK_LAUNCH();
}

void rope_and_store(float* qkv, token_index ti, const float* inv_freq, int heads, int head_dim,
                    kv_view kv, int layer, cudaStream_t stream) {
  if (ti.tokens == 0) return;
  rope_store_kernel<<<ti.tokens, 256, 0, stream>>>(qkv, ti, inv_freq, heads, head_dim, kv, layer);
  BX_CHECK_LAUNCH();
}

void attention(const float* qkv, token_index ti, kv_view kv, int layer, int heads, int head_dim,
               __half* o, cudaStream_t stream) {
  if (head_dim > warp * max_dims_per_lane)
    throw std::runtime_error("cuda backend: head dim over 256 is not supported");
  if (ti.tokens == 0) return;
  attention_kernel<<<dim3(ti.tokens, heads), warp, 0, stream>>>(qkv, ti, kv, layer, heads, head_dim,
                                                                o);
  BX_CHECK_LAUNCH();
}

void silu_half(const float* in, std::size_t n, __half* out, cudaStream_t stream) {
  if (n == 0) return;
  silu_kernel<<<grid_for(n, 256), 256, 0, stream>>>(in, n, out);
  BX_CHECK_LAUNCH();
}

void add_inplace(float* h, const float* x, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<<<grid_for(n, 256), 256, 0, stream>>>(h, x, n);
  BX_CHECK_LAUNCH();
}

void argmax_rows(const float* logits, int rows, int n, std::int32_t* out, cudaStream_t stream) {
  if (rows == 0) return;
  argmax_kernel<<<rows, 256, 0, stream>>>(logits, n, out);
  BX_CHECK_LAUNCH();
}

}  // namespace batching::compute::cuda
