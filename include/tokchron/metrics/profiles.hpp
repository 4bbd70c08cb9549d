// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_PROFILES_HPP
#define TOKCHRON_METRICS_PROFILES_HPP

/// \file
/// The built-in compatibility profiles: each public benchmark tool's definitions of TTFT, TPOT,
/// ITL, E2E, output tokens, duration, throughput, percentiles and goodput, stated as data; the
/// engine that applies them (`evaluate`) and the choices are in metrics/profile.hpp.
///
/// Each profile constant sets every field of `profile` by name, except a variant of another
/// tool's profile (its description starts "As X, but"): that one starts from X and sets what
/// differs. Adding a tool is adding one constant (and listing it in `profiles::all`), never editing
/// the engine. The choices and their sources are in docs/definitions.md; each profile's
/// `description` says, in one paragraph, what the tool does and where tokchron has to use a
/// stand-in (tokchron has timestamps and token counts, not text: a tool that re-encodes the output
/// text to count tokens gets the reported usage count when the timeline has one, else the sum of
/// the chunks' token counts).
///
/// Thread safety: profiles are immutable constants.

#include <array>
#include <string_view>

#include "tokchron/config.hpp"
#include "tokchron/metrics/profile.hpp"
#include "tokchron/quantile/estimator.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace profiles {
/// tokchron's own definitions (docs/definitions.md): from the intended arrival, chunks
/// that carry tokens, E2E to the finish, TPOT = (tN - t1)/(N - 1), per-token ITL.
inline constexpr profile canonical = [] {
  profile p{};
  p.name = "canonical";
  p.tool = "tokchron (metrics/canonical.hpp)";
  p.description =
      "From the intended arrival (coordinated omission stays visible); a chunk counts when it "
      "carries a token; E2E ends at the finish; N = chunk token sum; TPOT = (tN - t1)/(N - 1), "
      "none for N < 2; ITL per token (N - 1 samples, mean = TPOT); linear percentiles, population "
      "std.";
  p.origin = latency_origin::arrival;
  p.token_chunks = chunk_rule::tokens;
  p.zero_ttft_is_unset = false;
  p.needs_first_response = false;
  p.end = e2e_end::finish;
  p.output_tokens = token_source::chunk_tokens;
  p.tpot_numerator = tpot_span::token_span;
  p.tpot_small_n = small_n_rule::excluded;
  p.tpot_rounding = ns_rounding::none;
  p.itl = itl_grain::per_token_with_first;
  p.percentile_method = quantile_method::linear;
  p.std_ddof = profile::population_std;
  p.duration = duration_rule::origin_to_finish;
  p.request_rate = rps_rule::completed;
  p.user_rate = user_rate_rule::tokens_over_e2e;
  p.goodput = goodput_rule::all_met_missing_ignored;
  p.default_percentiles = "50,90,95,99";
  return p;
}();

/// `vllm bench serve` (vllm/benchmarks/serve.py, lib/endpoint_request_func.py).
inline constexpr profile vllm = [] {
  profile p{};
  p.name = "vllm";
  p.tool = "vLLM `vllm bench serve` (vllm/benchmarks/serve.py, lib/endpoint_request_func.py)";
  p.description =
      "From the send; every chunk with a choices entry counts, empty text included (usage-only "
      "chunks do not); E2E ends at the last such chunk; N = usage.completion_tokens when non-zero, "
      "else a tokenizer re-encode (stand-in: the chunk token sum); TPOT = (E2E - TTFT)/(N - 1), "
      "left out for N <= 1; ITL per chunk, pooled: a multi-token chunk is one sample; linear "
      "percentiles, population std; failed requests left out; goodput counts TPOT as 0 for N <= 1.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::choices;
  p.zero_ttft_is_unset = false;
  p.needs_first_response = true;
  p.end = e2e_end::last_counted_chunk;
  p.output_tokens = token_source::usage_nonzero_else_chunks;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::excluded;
  p.tpot_rounding = ns_rounding::none;
  p.itl = itl_grain::per_chunk;
  p.percentile_method = quantile_method::linear;
  p.std_ddof = profile::population_std;
  p.duration = duration_rule::origin_to_finish;
  p.request_rate = rps_rule::completed;
  p.user_rate = user_rate_rule::tokens_over_e2e;
  p.goodput = goodput_rule::all_met_missing_zero;
  p.default_percentiles = "99";
  return p;
}();

/// vLLM's `benchmarks/benchmark_serving.py` before early 2025 (backend_request_func.py).
inline constexpr profile vllm_legacy = [] {
  profile p = vllm;  // the fields not set below are vllm's
  p.name = "vllm_legacy";
  p.tool = "vLLM legacy benchmarks/benchmark_serving.py (backend_request_func.py)";
  p.description =
      "As vllm, but chunks with empty text are skipped, `ttft == 0.0` means unmeasured, E2E ends "
      "at the `[DONE]` line (stand-in when the trace has none: the finish), and N is a tokenizer "
      "re-encode (stand-in: usage when reported, else the chunk token sum).";
  p.token_chunks = chunk_rule::nonempty_text;
  p.zero_ttft_is_unset = true;
  p.needs_first_response = false;
  p.end = e2e_end::done_chunk;
  p.output_tokens = token_source::usage_else_chunks;
  return p;
}();

/// SGLang `bench_serving` against an OpenAI-compatible endpoint (python/sglang/benchmark/).
inline constexpr profile sglang_openai = [] {
  profile p{};
  p.name = "sglang_openai";
  p.tool = "SGLang bench_serving, OpenAI backends (python/sglang/benchmark/metrics.py)";
  p.description =
      "From the send; chunks with non-empty text count, `ttft == 0.0` means unmeasured; E2E ends "
      "at the last non-empty SSE line, usage and `[DONE]` included; N = the requested length "
      "overwritten by usage (stand-in: usage when reported, else the chunk token sum); TPOT = (E2E "
      "- TTFT)/(N - 1) for N > 1; ITL per chunk; linear percentiles, population std; concurrency = "
      "sum E2E / duration.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::nonempty_text;
  p.zero_ttft_is_unset = true;
  p.needs_first_response = false;
  p.end = e2e_end::last_chunk;
  p.output_tokens = token_source::usage_else_chunks;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::excluded;
  p.tpot_rounding = ns_rounding::none;
  p.itl = itl_grain::per_chunk;
  p.percentile_method = quantile_method::linear;
  p.std_ddof = profile::population_std;
  p.duration = duration_rule::origin_to_finish;
  p.request_rate = rps_rule::completed;
  p.user_rate = user_rate_rule::tokens_over_e2e;
  p.goodput = goodput_rule::none;
  p.default_percentiles = "99";
  return p;
}();

/// SGLang `bench_serving` against the native `/generate` endpoint.
inline constexpr profile sglang_native = [] {
  profile p = sglang_openai;  // the fields not set below are sglang_openai's
  p.name = "sglang_native";
  p.tool = "SGLang bench_serving, native /generate (python/sglang/benchmark/)";
  p.description =
      "As sglang_openai, but a chunk counts when completion_tokens grew (it carries tokens), and "
      "each gap is split evenly over the chunk's new tokens: k samples of gap/k (the first chunk's "
      "extra tokens give none).";
  p.token_chunks = chunk_rule::tokens;
  p.itl = itl_grain::per_token_split;
  return p;
}();

/// NVIDIA GenAI-Perf (genai_perf/profile_data_parser/llm_profile_data_parser.py).
inline constexpr profile genai_perf = [] {
  profile p{};
  p.name = "genai_perf";
  p.tool = "GenAI-Perf (genai_perf/profile_data_parser/llm_profile_data_parser.py)";
  p.description =
      "From the request time; empty responses are removed first (only non-empty text counts) and a "
      "request with none is dropped; E2E ends at the last non-empty response; N = re-encode of the "
      "text (stand-in: usage when reported, else the chunk token sum); ITL = TPOT = round((E2E - "
      "TTFT)/(N - 1)) in integer ns, one value per request with N > 1; duration = max(last "
      "response) - min(request); RPS counts every request; linear percentiles p1..p99, population "
      "std.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::nonempty_text;
  p.zero_ttft_is_unset = false;
  p.needs_first_response = true;
  p.end = e2e_end::last_counted_chunk;
  p.output_tokens = token_source::usage_else_chunks;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::excluded;
  p.tpot_rounding = ns_rounding::nearest_even;
  p.itl = itl_grain::per_request_tpot;
  p.percentile_method = quantile_method::linear;
  p.std_ddof = profile::population_std;
  p.duration = duration_rule::origin_to_e2e_end;
  p.request_rate = rps_rule::all_requests;
  p.user_rate = user_rate_rule::tokens_over_e2e;
  p.goodput = goodput_rule::all_met_missing_ignored;
  p.default_percentiles = "1,5,10,25,50,75,90,95,99";
  return p;
}();

/// NVIDIA AIPerf (aiperf/metrics/types/*).
inline constexpr profile aiperf = [] {
  profile p{};
  p.name = "aiperf";
  p.tool = "AIPerf (aiperf/metrics/types/*)";
  p.description =
      "From the request start; every SSE message but `[DONE]` is a response (the first byte of "
      "each); E2E ends at the last response; N = re-encode of output and reasoning text (stand-in: "
      "usage when reported, else the chunk token sum); ITL = TPOT = (E2E - TTFT)/(N - 1) as a "
      "float, none for N < 2; duration as GenAI-Perf; RPS = valid requests / duration; a missing "
      "metric makes a request not good.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::any_response;
  p.zero_ttft_is_unset = false;
  p.needs_first_response = true;
  p.end = e2e_end::last_counted_chunk;
  p.output_tokens = token_source::usage_else_chunks;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::excluded;
  p.tpot_rounding = ns_rounding::none;
  p.itl = itl_grain::per_request_tpot;
  p.percentile_method = quantile_method::linear;
  p.std_ddof = profile::population_std;
  p.duration = duration_rule::origin_to_e2e_end;
  p.request_rate = rps_rule::completed;
  p.user_rate = user_rate_rule::tokens_over_e2e;
  p.goodput = goodput_rule::all_met_missing_fails;
  p.default_percentiles = "1,5,10,25,50,75,90,95,99";
  return p;
}();

/// Anyscale llmperf (token_benchmark_ray.py, openai_chat_completions_client.py).
inline constexpr profile llmperf = [] {
  profile p{};
  p.name = "llmperf";
  p.tool = "llmperf (token_benchmark_ray.py, openai_chat_completions_client.py)";
  p.description =
      "From the start; the first chunk with non-empty content gives TTFT (`if not ttft`: 0 means "
      "unset); E2E ends at the end of the stream; ITL per request = (TTFT + the later gaps) / the "
      "number of chunks (every data line but `[DONE]`): TTFT is included and a chunk is taken for "
      "a token; no TPOT; N = re-encode (stand-in: usage when reported, else the chunk token sum); "
      "pandas linear percentiles, sample std (ddof 1); per-user rate N / E2E.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::nonempty_text;
  p.zero_ttft_is_unset = true;
  p.needs_first_response = false;
  p.end = e2e_end::finish;
  p.output_tokens = token_source::usage_else_chunks;
  p.tpot_numerator = tpot_span::none;
  p.tpot_small_n = small_n_rule::excluded;
  p.tpot_rounding = ns_rounding::none;
  p.itl = itl_grain::per_request_including_ttft;
  p.percentile_method = quantile_method::linear;
  p.std_ddof = profile::sample_std;
  p.duration = duration_rule::origin_to_finish;
  p.request_rate = rps_rule::completed;
  p.user_rate = user_rate_rule::tokens_over_e2e;
  p.goodput = goodput_rule::none;
  p.default_percentiles = "25,50,75,90,95,99";
  return p;
}();

/// NVIDIA trtllm-bench (tensorrt_llm/bench/dataclasses/statistics.py).
inline constexpr profile trtllm_bench = [] {
  profile p{};
  p.name = "trtllm_bench";
  p.tool = "trtllm-bench (tensorrt_llm/bench/dataclasses/statistics.py)";
  p.description =
      "From the start; the first output carrying tokens gives TTFT; E2E ends at the end; N = exact "
      "token ids (the chunk token sum); TPOT = (end - first)/(N - 1), 0 when N <= 1 and the zeros "
      "are included; no ITL; percentiles sorted[int(n p)] without interpolation; no std; average "
      "concurrency = sum E2E / duration.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::tokens;
  p.zero_ttft_is_unset = false;
  p.needs_first_response = false;
  p.end = e2e_end::finish;
  p.output_tokens = token_source::chunk_tokens;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::zero;
  p.tpot_rounding = ns_rounding::none;
  p.itl = itl_grain::none;
  p.percentile_method = quantile_method::lower;
  p.std_ddof = profile::no_std;
  p.duration = duration_rule::origin_to_finish;
  p.request_rate = rps_rule::completed;
  p.user_rate = user_rate_rule::tokens_over_e2e;
  p.goodput = goodput_rule::none;
  p.default_percentiles = "50,90,95,99";
  return p;
}();

/// TensorRT-LLM's C++ gptManagerBenchmark (benchmarks/cpp/gptManagerBenchmark.cpp).
inline constexpr profile gpt_manager_benchmark = [] {
  profile p{};
  p.name = "gpt_manager_benchmark";
  p.tool = "gptManagerBenchmark (benchmarks/cpp/gptManagerBenchmark.cpp)";
  p.description =
      "From the start (steady_clock); TTFT at the first token; E2E ends at the end; N = engine "
      "output length (the chunk token sum); TPOT = (end - first token)/(N - 1) for N > 1; no ITL; "
      "nearest-rank percentiles sorted[ceil(p n) - 1]; no std; user tokens/s = 1 / TPOT.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::tokens;
  p.zero_ttft_is_unset = false;
  p.needs_first_response = false;
  p.end = e2e_end::finish;
  p.output_tokens = token_source::chunk_tokens;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::excluded;
  p.tpot_rounding = ns_rounding::none;
  p.itl = itl_grain::none;
  p.percentile_method = quantile_method::nearest_rank;
  p.std_ddof = profile::no_std;
  p.duration = duration_rule::origin_to_finish;
  p.request_rate = rps_rule::completed;
  p.user_rate = user_rate_rule::inverse_tpot;
  p.goodput = goodput_rule::none;
  p.default_percentiles = "50,90,99";
  return p;
}();

/// MLPerf Inference loadgen (loadgen/results.cc, logging.cc).
inline constexpr profile mlperf = [] {
  profile p{};
  p.name = "mlperf";
  p.tool = "MLPerf Inference loadgen (loadgen/results.cc, logging.cc)";
  p.description =
      "From the scheduled (Poisson) time, so issue delay counts; TTFT at the first token; E2E ends "
      "at completion; N reported by the system under test (usage when reported, else the chunk "
      "token sum); TPOT = (latency - TTFT)/(N - 1) in integer ns, N = 1 is an error (counted as "
      "invalid); no ITL; percentiles sorted[floor(n p)]; samples/s = (n - 1)/duration; the run "
      "passes iff P99 TTFT and P99 TPOT are within the model's limits.";
  p.origin = latency_origin::arrival;
  p.token_chunks = chunk_rule::tokens;
  p.zero_ttft_is_unset = false;
  p.needs_first_response = false;
  p.end = e2e_end::finish;
  p.output_tokens = token_source::usage_else_chunks;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::invalid;
  p.tpot_rounding = ns_rounding::truncate;
  p.itl = itl_grain::none;
  p.percentile_method = quantile_method::lower;
  p.std_ddof = profile::no_std;
  p.duration = duration_rule::origin_to_finish;
  p.request_rate = rps_rule::completed_minus_one;
  p.user_rate = user_rate_rule::tokens_over_e2e;
  p.goodput = goodput_rule::percentile_limits;
  p.default_percentiles = "50,90,95,97,99,99.9";
  return p;
}();

/// Every built-in profile, canonical first. A new profile is one constant above and one entry
/// here; the count follows.
inline constexpr std::array all = {
    &canonical, &vllm,    &vllm_legacy,  &sglang_openai,         &sglang_native, &genai_perf,
    &aiperf,    &llmperf, &trtllm_bench, &gpt_manager_benchmark, &mlperf};
}  // namespace profiles

/// Every built-in profile, canonical first (`profiles::all`).
[[nodiscard]] inline const decltype(profiles::all)& all_profiles() noexcept {
  return profiles::all;
}

/// The built-in profile called `name`, or nullptr.
[[nodiscard]] inline const profile* find_profile(std::string_view name) noexcept {
  for (const profile* p : all_profiles())
    if (p->name == name) return p;
  return nullptr;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_PROFILES_HPP
