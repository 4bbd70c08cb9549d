// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_BUILTIN_PROFILES_HPP
#define TOKCHRON_METRICS_BUILTIN_PROFILES_HPP

/// \file
/// The built-in compatibility profiles: each public benchmark tool's definitions of TTFT, TPOT,
/// ITL, E2E, output tokens, duration, throughput, percentiles and goodput, stated as data; the
/// engine that applies them (`evaluate`) and the choices are in metrics/profile.hpp.
///
/// Each profile constant starts from `canonical` and sets, by name, only the fields where the tool
/// differs from tokchron's definitions, so a reviewer reads each tool's departures against its
/// source; a variant of another tool's profile (its description starts "As X, but") starts from
/// X instead and sets what differs from X. Adding a tool is adding one constant (and listing it in
/// `profiles::all`), never editing the engine. The choices and their sources are in
/// docs/library/definitions.md; each profile's `description` says, in one paragraph, what the tool
/// does and where tokchron has to use a stand-in (tokchron has timestamps and token counts, not
/// text: a tool that re-encodes the output text to count tokens gets the reported usage count when
/// the timeline has one, else the sum of the chunks' token counts).
///
/// Thread safety: profiles are immutable constants.

#include <array>
#include <string_view>

#include "tokchron/config.hpp"
#include "tokchron/metrics/profile.hpp"
#include "tokchron/quantile/estimator.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace profiles {
/// tokchron's own definitions (docs/library/definitions.md): from the intended arrival, chunks
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
  p.requests_usage = true;
  p.usage_sources = usage_bit(usage_source::usage_chunk) | usage_bit(usage_source::content_chunk) |
                    usage_bit(usage_source::body) | usage_bit(usage_source::server);
  p.stops_at_done = false;
  p.failed_output_is_chunks = false;
  p.ttft_zero_without_response = false;
  p.gap_from_any_chunk = false;
  p.tpot_needs_two_responses = false;
  p.swaps_mean_median_e2e = false;
  p.extra_metrics = metric_bit(metric_id::ttfa) | metric_bit(metric_id::reasoning_time) |
                    metric_bit(metric_id::ttst) | metric_bit(metric_id::icl) |
                    metric_bit(metric_id::prefill_tps) |
                    metric_bit(metric_id::uncached_prefill_tps) |
                    metric_bit(metric_id::spec_acceptance);
  p.ttst = ttst_rule::second_token;
  p.icl_needs_positive_gaps = false;
  p.arithmetic = tool_arithmetic::double_seconds;
  p.ttft_needs_two_tokens = false;
  p.guidellm_statistics = false;
  return p;
}();

/// `vllm bench serve` (vllm/benchmarks/serve.py, lib/endpoint_request_func.py).
inline constexpr profile vllm = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "vllm";
  p.tool = "vLLM `vllm bench serve` (vllm/benchmarks/serve.py, lib/endpoint_request_func.py)";
  p.description =
      "From the send; every chunk with a choices entry counts, empty text included (usage-only "
      "chunks do not); E2E ends at the last such chunk; N = usage.completion_tokens when non-zero "
      "and read from a chunk without choices (`elif usage := data.get(\"usage\")`: a usage "
      "object on a content chunk is never read), else a tokenizer re-encode (stand-in: the chunk "
      "token sum); it reads on after `[DONE]`, so a failure after it fails the request; TPOT = "
      "(E2E - TTFT)/(N - 1), "
      "left out for N <= 1; ITL per chunk, pooled: a multi-token chunk is one sample; linear "
      "percentiles, population std; failed requests left out; goodput counts TPOT as 0 for N <= 1; "
      "sets stream_options.include_usage; duration from the benchmark start (else the earliest "
      "intended arrival) to the last finish. Checked against vllm/benchmarks/serve.py and "
      "lib/endpoint_request_func.py, vllm-project/vllm@02cfb534df56.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::choices;
  p.needs_first_response = true;
  p.end = e2e_end::last_counted_chunk;
  p.output_tokens = token_source::usage_nonzero_else_chunks;
  p.usage_sources = usage_bit(usage_source::usage_chunk);
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.itl = itl_grain::per_chunk;
  p.goodput = goodput_rule::all_met_missing_zero;
  p.default_percentiles = "99";
  p.extra_metrics = 0;  // none of ttfa, reasoning_time, ttst, icl, prefill_tps, ...
  return p;
}();

/// vLLM's `benchmarks/benchmark_serving.py` of mid-2024 to early 2025 (backend_request_func.py),
/// completions endpoint.
inline constexpr profile vllm_legacy = [] {
  profile p = vllm;  // the fields not set below are vllm's
  p.name = "vllm_legacy";
  p.tool = "vLLM legacy benchmarks/benchmark_serving.py (backend_request_func.py), completions";
  p.description =
      "As vllm, but only chunks with non-empty text count, `ttft == 0.0` means unmeasured, E2E "
      "ends at the `[DONE]` line (stand-in when the trace has none: the finish), N is always a "
      "re-encode of the text (stand-in: the chunk token sum; usage is never read, and no "
      "stream_options.include_usage is sent, so usage-only chunks are absent: fed one, its "
      "`choices[0]` raises); a successful request without text keeps its default TTFT 0.0, which "
      "enters the TTFT list; the summary prints the median E2E as mean_e2el_ms and the mean as "
      "median_e2el_ms (calculate_metrics in every stored copy with E2EL, from mid-2024 until the "
      "fix in the version stored at vllm-project/vllm@0049e29c41fd).";
  p.token_chunks = chunk_rule::nonempty_text;
  p.zero_ttft_is_unset = true;
  p.needs_first_response = false;
  p.end = e2e_end::done_chunk;
  p.output_tokens = token_source::chunk_tokens;
  p.requests_usage = false;
  p.ttft_zero_without_response = true;
  p.swaps_mean_median_e2e = true;
  return p;
}();

/// The same legacy vLLM benchmark against the chat endpoint
/// (async_request_openai_chat_completions).
inline constexpr profile vllm_legacy_chat = [] {
  profile p = vllm_legacy;  // the fields not set below are vllm_legacy's
  p.name = "vllm_legacy_chat";
  p.tool = "vLLM legacy benchmarks/benchmark_serving.py (backend_request_func.py), chat";
  p.description =
      "As vllm_legacy, but the chat loop sets most_recent_timestamp for every chunk but `[DONE]`, "
      "outside its `if delta.get(\"content\")` test: an empty chunk in mid-stream restarts the "
      "next ITL gap (the completions loop does not).";
  p.gap_from_any_chunk = true;
  return p;
}();

/// SGLang `bench_serving` against an OpenAI-compatible endpoint (python/sglang/benchmark/), current
/// version (backends/oai_chat_client.py, oai_client.py).
inline constexpr profile sglang_openai = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "sglang_openai";
  p.tool = "SGLang bench_serving, OpenAI backends (python/sglang/benchmark/backends/, metrics.py)";
  p.description =
      "From the send; chunks with non-empty text count, `ttft == 0.0` means unmeasured; E2E ends "
      "at the last non-empty SSE line, usage and `[DONE]` included; TPOT = (E2E - TTFT)/(N - 1) "
      "for N > 1; ITL per chunk; linear percentiles, population std; concurrency = sum E2E / "
      "duration. N is the usage count when any chunk carried usage (it reads `usage` of every "
      "data line, usage-only or not, and of a non-streamed body; a count the server kept is not "
      "read); otherwise the requested output length, for which a trace stands in with the chunk "
      "token sum; it reads on after `[DONE]` (`pass`), so a failure after it fails the request; a "
      "successful request without text keeps TTFT 0.0 in the TTFT list. It sets no "
      "stream_options.include_usage itself but reads a usage-only chunk (choices=[]) a server "
      "sends (python/sglang/benchmark/backends/oai_chat_client.py, sgl-project/sglang@"
      "55c7579cc538; the older python/sglang/bench_serving.py@0033168f0f58 raised on one, "
      "`data[\"choices\"][0]`).";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::nonempty_text;
  p.zero_ttft_is_unset = true;
  p.end = e2e_end::last_chunk;
  p.output_tokens = token_source::usage_else_chunks;
  p.usage_sources = usage_bit(usage_source::usage_chunk) | usage_bit(usage_source::content_chunk) |
                    usage_bit(usage_source::body);
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.itl = itl_grain::per_chunk;
  p.goodput = goodput_rule::none;
  p.default_percentiles = "99";
  p.ttft_zero_without_response = true;
  p.extra_metrics = 0;  // none of ttfa, reasoning_time, ttst, icl, prefill_tps, ...
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
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "genai_perf";
  p.tool = "GenAI-Perf (genai_perf/profile_data_parser/llm_profile_data_parser.py)";
  p.description =
      "From the request time; empty responses are removed first (only non-empty text counts) and a "
      "request with none is dropped; E2E ends at the last non-empty response; N = re-encode of the "
      "text (stand-in: usage when reported, else the chunk token sum); ITL = TPOT = round((E2E - "
      "TTFT)/(N - 1)) in integer ns, one value per request only `if num_responses > 1 and "
      "total_output_token > 1` (all tokens in one response: none); duration = max(last response) - "
      "min(request), whatever the benchmark start; RPS counts every request; linear percentiles "
      "p1..p99, population std; sends no stream_options.include_usage (usage-only chunks absent, "
      "usage never read: N stand-in is the chunk token sum). "
      "genai_perf/profile_data_parser/llm_profile_data_parser.py, triton-inference-server/"
      "perf_analyzer@f7f17bf3f654.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::nonempty_text;
  p.needs_first_response = true;
  p.end = e2e_end::last_counted_chunk;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_rounding = ns_rounding::nearest_even;
  p.itl = itl_grain::per_request_tpot;
  p.duration = duration_rule::origin_to_e2e_end;
  p.request_rate = rps_rule::all_requests;
  p.default_percentiles = "1,5,10,25,50,75,90,95,99";
  p.requests_usage = false;
  p.tpot_needs_two_responses = true;
  p.extra_metrics = 0;  // none of ttfa, reasoning_time, ttst, icl, prefill_tps, ...
  return p;
}();

/// NVIDIA AIPerf (aiperf/metrics/types/*).
inline constexpr profile aiperf = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "aiperf";
  p.tool = "AIPerf (aiperf/metrics/types/*)";
  p.description =
      "From the request start; a response is an SSE message whose content or reasoning is "
      "non-empty (an empty chunk parses to None and is skipped; kinds text and reasoning); TTFT "
      "and E2E end at the first and last such responses; N = re-encode of output and reasoning "
      "text (stand-in: the chunk token sum, reasoning included: OSL); ITL = TPOT = (E2E - "
      "TTFT)/(N - 1) as a float, none for N < 2; Time to First Output (ttfa) = the first response "
      "with non-empty content - the request start; TTST = responses[1] - responses[0]; ICL = the "
      "gaps between consecutive responses, none for a request with a gap <= 0 (ValueError); "
      "prefill throughput = ISL / TTFT; reasoning token count = re-encode of the reasoning text "
      "(stand-in: the reasoning chunks' token sum), none without reasoning; a failed request has "
      "none of them; duration = max response - min request, whatever the benchmark start; RPS = "
      "valid requests / duration; a missing metric makes a request not good. Sends no "
      "stream_options.include_usage: a usage-only chunk (empty choices) would make `choices[0]` "
      "raise, so it is treated as absent. aiperf/parsers/openai_parsers.py, "
      "aiperf/parsers/inference_result_parser.py, aiperf/metrics/types/ (ttst_metric.py, "
      "inter_chunk_latency_metric.py, prefill_throughput.py, reasoning_token_count.py) at "
      "ai-dynamo/aiperf@db4f6397d11e; time_to_first_output_metric.py at "
      "ai-dynamo/aiperf@6b702008c853.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::content_or_reasoning;
  p.needs_first_response = true;
  p.end = e2e_end::last_counted_chunk;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.itl = itl_grain::per_request_tpot;
  p.duration = duration_rule::origin_to_e2e_end;
  p.goodput = goodput_rule::all_met_missing_fails;
  p.default_percentiles = "1,5,10,25,50,75,90,95,99";
  p.requests_usage = false;
  p.extra_metrics = metric_bit(metric_id::ttfa) | metric_bit(metric_id::ttst) |
                    metric_bit(metric_id::icl) | metric_bit(metric_id::prefill_tps);
  p.ttst = ttst_rule::second_response;
  p.icl_needs_positive_gaps = true;
  return p;
}();

/// Anyscale llmperf (token_benchmark_ray.py, openai_chat_completions_client.py).
inline constexpr profile llmperf = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "llmperf";
  p.tool = "llmperf (token_benchmark_ray.py, openai_chat_completions_client.py)";
  p.description =
      "From the start; the first chunk with non-empty content gives TTFT (`if not ttft`: 0 means "
      "unset); E2E ends at the end of the stream; ITL per request = (TTFT + the later gaps) / the "
      "number of chunks (every data line but `[DONE]`): TTFT is included and a chunk is taken for "
      "a token, the role chunk included; no TPOT; N = re-encode (stand-in: the chunk token sum); "
      "pandas linear percentiles, sample std (ddof 1); per-user rate N / E2E. Sends no "
      "stream_options.include_usage: a usage-only chunk would raise on `choices[0]` and error "
      "the request, so it is treated as absent (not counted in tokens_received). "
      "A response without content keeps `ttft = 0`, which enters the TTFT statistics. "
      "src/llmperf/ray_clients/openai_chat_completions_client.py, token_benchmark_ray.py, "
      "ray-project/llmperf@f1d6bed47e45.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::nonempty_text;
  p.zero_ttft_is_unset = true;
  p.tpot_numerator = tpot_span::none;
  p.itl = itl_grain::per_request_including_ttft;
  p.std_ddof = profile::sample_std;
  p.goodput = goodput_rule::none;
  p.default_percentiles = "25,50,75,90,95,99";
  p.requests_usage = false;
  p.ttft_zero_without_response = true;
  p.extra_metrics = 0;  // none of ttfa, reasoning_time, ttst, icl, prefill_tps, ...
  return p;
}();

/// NVIDIA trtllm-bench (tensorrt_llm/bench/dataclasses/statistics.py).
inline constexpr profile trtllm_bench = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "trtllm_bench";
  p.tool = "trtllm-bench (tensorrt_llm/bench/dataclasses/statistics.py)";
  p.description =
      "From the start; engine responses only (no usage or [DONE] chunk exists for it): the first "
      "output carrying tokens gives TTFT, E2E ends at the last one (else the finish); N = exact "
      "token ids (the chunk token sum); TPOT = (end - first)/(N - 1), 0 when N <= 1 and the zeros "
      "are included; a completed answer with no token gets TTFT 0 and TPOT 0; no ITL; "
      "percentiles sorted[int(n p)] without interpolation; no std; average concurrency = sum E2E "
      "/ duration. It aborts the run on any failed request (_raise_for_failed_tasks, `assert "
      "finished == len(requests)`); the profile follows its intent: completed requests only. The "
      "duration is max(end_timestamp) - min(start_timestamp) over those records (total_latency_ns "
      "in StatsKeeper.generate_statistics_summary), start_timestamp being the submission (the "
      "send): from the first completed request's send to the last completed one's end, whatever "
      "the benchmark start. tensorrt_llm/bench/dataclasses/statistics.py, "
      "tensorrt_llm/bench/benchmark/utils/asynchronous.py (NVIDIA/TensorRT-LLM 0.20-1.0; "
      "asynchronous.py at NVIDIA/TensorRT-LLM@00c7a534e57e), "
      "tensorrt_llm/bench/dataclasses/reporting.py (NVIDIA/TensorRT-LLM@0249976575050).";
  p.origin = latency_origin::send;
  p.end = e2e_end::last_token_chunk;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::zero;
  p.itl = itl_grain::none;
  p.percentile_method = quantile_method::lower;
  p.std_ddof = profile::no_std;
  p.duration = duration_rule::completed_to_end;
  p.goodput = goodput_rule::none;
  p.requests_usage = false;
  p.ttft_zero_without_response = true;
  p.extra_metrics = 0;  // none of ttfa, reasoning_time, ttst, icl, prefill_tps, ...
  return p;
}();

/// TensorRT-LLM's C++ gptManagerBenchmark (benchmarks/cpp/gptManagerBenchmark.cpp).
inline constexpr profile gpt_manager_benchmark = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "gpt_manager_benchmark";
  p.tool = "gptManagerBenchmark (benchmarks/cpp/gptManagerBenchmark.cpp)";
  p.description =
      "From the start (steady_clock); TTFT at the first response (the first chunk carrying "
      "tokens); E2E ends at the final response (the last chunk carrying tokens, else the finish); "
      "N = engine output length (the chunk token sum); every latency is "
      "duration<float, milli>, TPOT = that of (end - first token) / float(N - 1) for N > 1, and a "
      "mean is std::accumulate(..., 0.F) / size() in float, summed in trace order (the tool's "
      "unordered_map order is undefined); the duration is float ms too, and seq and token "
      "throughput count / (ms / 1000) in float; N = 1 gives no TPOT (versions that call "
      "avgGenT2TLatency.value() on the empty optional crash: the profile follows the intent); no "
      "ITL; nearest-rank percentiles sorted[ceil(p n) - 1]; no std; user tokens/s = 1 / TPOT. "
      "benchmarks/cpp/gptManagerBenchmark.cpp (NVIDIA/TensorRT-LLM 0.10-0.16).";
  p.origin = latency_origin::send;
  p.end = e2e_end::last_token_chunk;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.itl = itl_grain::none;
  p.percentile_method = quantile_method::nearest_rank;
  p.std_ddof = profile::no_std;
  p.user_rate = user_rate_rule::inverse_tpot;
  p.goodput = goodput_rule::none;
  p.default_percentiles = "50,90,99";
  p.requests_usage = false;
  p.extra_metrics = 0;  // none of ttfa, reasoning_time, ttst, icl, prefill_tps, ...
  p.arithmetic = tool_arithmetic::float_ms;
  return p;
}();

/// MLPerf Inference loadgen (loadgen/results.cc, logging.cc).
inline constexpr profile mlperf = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "mlperf";
  p.tool = "MLPerf Inference loadgen (loadgen/results.cc, logging.cc)";
  p.description =
      "From the scheduled (Poisson) time, so issue delay counts; TTFT at the first token; E2E ends "
      "at completion, the last engine response carrying tokens (else the finish); N reported by "
      "the system under test (the chunk token sum); all in int64 ns: TPOT = (latency - TTFT)/"
      "(n_tokens - 1); for N < 2 n_tokens is logged as an error and set to 0, so TPOT = -(latency "
      "- "
      "TTFT) stays in the array and the 1-token answer adds no token; means are int64 sums / "
      "size_t sample_count, truncated (a negative sum wraps through the unsigned division); "
      "percentiles sorted[floor(n p)]; the duration ends at the completion of the last issued "
      "query (final_query_all_samples_done_time); samples/s = (n - 1)/duration; the run passes "
      "iff P99 TTFT and P99 TPOT are within the model's limits. loadgen/logging.cc "
      "(RecordSampleCompletion), results.cc (ProcessTokenLatencies), loadgen.cc, "
      "mlcommons/inference@b66003e10e2d.";
  p.end = e2e_end::last_token_chunk;
  p.tpot_numerator = tpot_span::e2e_minus_ttft;
  p.tpot_small_n = small_n_rule::negative;
  p.tpot_rounding = ns_rounding::truncate;
  p.itl = itl_grain::none;
  p.percentile_method = quantile_method::lower;
  p.std_ddof = profile::no_std;
  p.duration = duration_rule::last_issued_to_end;
  p.request_rate = rps_rule::completed_minus_one;
  p.goodput = goodput_rule::percentile_limits;
  p.default_percentiles = "50,90,95,97,99,99.9";
  p.requests_usage = false;
  p.extra_metrics = 0;  // none of ttfa, reasoning_time, ttst, icl, prefill_tps, ...
  p.arithmetic = tool_arithmetic::int64_ns;
  return p;
}();

/// vLLM project's GuideLLM (src/guidellm/schemas/request_stats.py, backends/openai/http.py,
/// schemas/statistics.py, benchmark/schemas/metrics.py).
inline constexpr profile guidellm = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "guidellm";
  p.tool = "GuideLLM (src/guidellm/schemas/request_stats.py, backends/openai/http.py)";
  p.description =
      "From request_start (the send); a streamed line counts when its delta carries content or "
      "reasoning (add_streaming_line returns 1; a usage-only line does not count but its usage is "
      "kept; it sends stream_options include_usage and continuous_usage_stats); TTFT = the first "
      "such line - request_start; E2E = request_end - request_start, request_end taken when the "
      "`[DONE]` line breaks the loop (else at the end of the stream): it reads nothing after "
      "`[DONE]`, so a request whose trace fails after its `[DONE]` chunk is a success for it "
      "(http.py:527-535, 555); N = usage completion tokens when a usage object reached its "
      "stream handler (`if usage:` on every line before `[DONE]`, usage-only or content, "
      "request_handlers.py:1197-1198, 590-591; or a non-streamed body; 0 stays 0; a count the "
      "server kept, or of unknown source without a usage chunk, is not read), else the number of "
      "counted lines (token_iterations, 'assumes each iteration is one token', "
      "request_stats.py:139-144); TPOT (time_per_output_token_ms) = (last counted "
      "line - request_start) / N: TTFT included, divided by N, none for N = 0; ITL "
      "(inter_token_latency_ms) = (last - first counted line) / (N - 1), N > 1; successful = no "
      "error and non-empty content or a usage count above 0 (post_validation): a reasoning-only "
      "answer without usage is errored, one with usage keeps TTFT 0 (`or 0.0`); an errored "
      "request's output metrics are cleared (response.py:109-117; its response is None, "
      "scheduler/worker.py:512) so its N is its counted lines whatever usage said, and that N "
      "enters the output and total tokens/s; statistics by "
      "DistributionSummary.from_values: TPOT weighted by N, ITL by N - 1 (a missing ITL enters "
      "as 0 with its weight), equal values merged, the mean and population std over w / sum(w), a "
      "percentile the first value whose float cumsum of probabilities reaches p "
      "(np.searchsorted side=left: nearest rank, one up where the cumsum falls just short); "
      "TTFOT (time_to_first_output_token_ms, tokchron's ttfa) = the first content line - "
      "request_start, 0 (`or 0.0`) for a successful answer without content; "
      "requests/s = every request, errored included, ending in the benchmark window / the window "
      "(benchmark start to the last completion); output and total tokens/s = every "
      "request's tokens (errored included) over the span from the first token event to the last, "
      "not the benchmark window (stand-in: events within 0.1 ms are not merged as its "
      "threshold=1e-4 does, which can shorten its span by up to 0.1 ms); its request concurrency "
      "mean (time-weighted, every request from request_start to request_end, over the "
      "window: metrics.py:890-904) is time_weighted_concurrency. Not produced: its input "
      "tokens/s (prompt tokens at each request's first token line, over their span: a run "
      "summary has no input-only throughput, its total tokens/s holds input and output) and "
      "its request concurrency median (a run summary keeps no concurrency distribution). "
      "src/guidellm/schemas/request_stats.py, "
      "backends/openai/http.py, backends/openai/request_handlers.py, schemas/response.py, "
      "schemas/statistics.py, benchmark/schemas/metrics.py, benchmark/outputs/console.py, "
      "vllm-project/guidellm@ee7a77457ba6.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::content_or_reasoning;
  p.end = e2e_end::done_chunk;
  p.output_tokens = token_source::usage_else_counted_chunks;
  p.usage_sources = usage_bit(usage_source::usage_chunk) | usage_bit(usage_source::content_chunk) |
                    usage_bit(usage_source::body);
  p.stops_at_done = true;
  p.failed_output_is_chunks = true;
  p.tpot_numerator = tpot_span::origin_to_last_over_n;
  p.itl = itl_grain::per_request_span;
  p.percentile_method = quantile_method::nearest_rank;  // the closest; guidellm_statistics rules
  p.request_rate = rps_rule::all_requests;
  p.goodput = goodput_rule::none;
  p.default_percentiles = "50,95";
  p.ttft_zero_without_response = true;
  p.extra_metrics = metric_bit(metric_id::ttfa);  // TTFOT, time_to_first_output_token_ms
  p.guidellm_statistics = true;
  return p;
}();

/// Kubernetes serving working group's inference-perf (inference_perf/reportgen/base.py,
/// apis/streaming_parser.py).
inline constexpr profile inference_perf = [] {
  profile p = canonical;  // the fields not set below are canonical's
  p.name = "inference_perf";
  p.tool = "inference-perf (inference_perf/reportgen/base.py, apis/streaming_parser.py)";
  p.description =
      "With a `tokenizer:` section in its config (as its sample config.yml; without one use "
      "inference_perf_no_tokenizer, its default). From start_time (time.perf_counter() before the "
      "request, the send); a chunk counts when its "
      "choices[0] carries text or delta.content (role, usage-only and [DONE] lines do not; it "
      "sends stream_options include_usage, and an empty choices list raises IndexError, caught); "
      "the report generator re-tokenizes each chunk's content and stamps every token with the "
      "chunk's time (reportgen/base.py:513-553; stand-in: the chunk's token count); a request "
      "whose counted chunks carry fewer than 2 tokens is not streamable: no TTFT, TPOT or ITL; "
      "TTFT = the first token time - start; "
      "TPOT = (last - first token time) / (N - 1); ITL pooled per token: a k-token chunk gives its "
      "whole gap then k - 1 zeros, the first chunk k - 1 zeros; E2E = end_time - start_time, "
      "end_time taken after the stream has been read to its end: the `break` at `[DONE]` leaves "
      "only the loop over the buffered events, the outer read goes on (apis/streaming_parser.py:"
      "84-113, client/modelserver/openai_client.py:537), so E2E ends at the trace's end, and a "
      "stream that fails after `[DONE]` is a failed request (StreamInterruptedError, "
      "streaming_parser.py:114-119, openai_client.py:488-518); N = a re-tokenization "
      "of the content text (stand-in: the counted chunks' token sum; use_server_output_tokens "
      "is off by default, and usage is read only then); successful = no error; np.percentile "
      "(linear) at 0.1 ... 99.9, mean, min, max, no std; total_time = max(end_time) - "
      "min(start_time) over every request, failed included, whatever the benchmark start; "
      "requests/s and output and total tokens/s count successful ones over it "
      "(reportgen/base.py:475, 646-668). Not produced: input_tokens_per_sec (a run summary has "
      "no input-only throughput; total tokens/s holds input and output), NTPOT ((end - start) / N, "
      "0.0 for N = 0, "
      "base.py:560-565; tokchron's normalized_latency is E2E / N, none for N = 0, not summarised); "
      "schedule_delay (start_time - scheduled_time, base.py:477) and achieved_rate (requests / "
      "send duration, printed only with a stage rate, base.py:485-495), which describe the load "
      "generator's schedule, not the server's answers. "
      "inference_perf/reportgen/base.py (summarize_requests, effective_output_tokens), "
      "apis/streaming_parser.py, apis/chat.py, client/modelserver/openai_client.py, "
      "config/config.py, config/reportgen/config.py, kubernetes-sigs/inference-perf@7de5ef2ed6f7.";
  p.origin = latency_origin::send;
  p.token_chunks = chunk_rule::text_tokens;
  p.end = e2e_end::finish;
  p.output_tokens = token_source::counted_tokens;
  p.itl = itl_grain::per_token_gap_zeros;
  p.std_ddof = profile::no_std;
  p.duration = duration_rule::all_origin_to_end;
  p.goodput = goodput_rule::all_met_missing_fails;
  p.default_percentiles = "0.1,1,5,10,25,50,75,90,95,99,99.9";
  p.extra_metrics = 0;  // none of ttfa, reasoning_time, ttst, icl, prefill_tps, ...
  p.ttft_needs_two_tokens = true;
  return p;
}();

/// inference-perf without a `tokenizer:` section in its config (its default): one time stamp per
/// content chunk.
inline constexpr profile inference_perf_no_tokenizer = [] {
  profile p = inference_perf;  // the fields not set below are inference_perf's
  p.name = "inference_perf_no_tokenizer";
  p.tool = "inference-perf without a tokenizer in its config (apis/chat.py, reportgen/base.py)";
  p.description =
      "As inference_perf, but its config names no tokenizer (Config.tokenizer defaults to None, "
      "config/config.py:55-57), so the report generator does not re-tokenize chunks "
      "(reportgen/base.py:513-518, 762-766) and output_token_times are the API layer's "
      "chunk_times: one time stamp per chunk with non-empty content, whatever its token count "
      "(apis/chat.py:564-580, streaming_parser.py:106-108): a request needs 2 such chunks to be "
      "streamable (one chunk of several tokens has no TTFT), TPOT = (last - first content chunk) "
      "/ (N - 1) with N still the whole text re-tokenized by the client's tokenizer (stand-in: "
      "the content chunks' token sum), ITL = the gaps between content chunks, one per gap.";
  p.token_chunks = chunk_rule::nonempty_text;
  p.itl = itl_grain::per_chunk;
  return p;
}();

/// Every built-in profile, canonical first. A new profile is one constant above and one entry
/// here; the count follows.
inline constexpr std::array all = {&canonical,
                                   &vllm,
                                   &vllm_legacy,
                                   &vllm_legacy_chat,
                                   &sglang_openai,
                                   &sglang_native,
                                   &genai_perf,
                                   &aiperf,
                                   &llmperf,
                                   &trtllm_bench,
                                   &gpt_manager_benchmark,
                                   &mlperf,
                                   &guidellm,
                                   &inference_perf,
                                   &inference_perf_no_tokenizer};

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

#endif  // TOKCHRON_METRICS_BUILTIN_PROFILES_HPP
