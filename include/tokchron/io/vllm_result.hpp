// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_IO_VLLM_RESULT_HPP
#define TOKCHRON_IO_VLLM_RESULT_HPP

/// \file
/// vLLM's `vllm bench serve --save-result --save-detailed` JSON as trace records (an adaptor:
/// needs nlohmann-json), whose vllm-profile summary recomputes the file's summary fields.
/// Thread safety: free functions on their arguments only.

#include <cstdint>
#include <istream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokchron/config.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/io/trace_json_reader.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// A vLLM `--save-result --save-detailed` file as trace records.
// NOLINTNEXTLINE(bugprone-exception-escape): the implicit moves are nlohmann::json's (noexcept)
struct vllm_result {
  /// One record per request, on a clock where every request is sent at 0: the first chunk at
  /// `ttfts[i]`, one chunk per `itls[i]` gap, `usage_output_tokens` = `output_lens[i]`,
  /// `prompt_tokens` = `input_lens[i]`, failed when `errors[i]` is non-empty. Each chunk carries
  /// one token (the file does not say how vLLM's chunks bundled them), so only the vllm profile
  /// reproduces the file's numbers.
  std::vector<trace_record> records;
  /// The file's `duration` (seconds): the run's duration, which the records cannot give.
  std::optional<double> duration;
  /// Every other top-level field of the file (the summary vLLM printed), for comparison.
  nlohmann::json summary;
};

namespace detail {
/// A token count of a vLLM result (`input_lens[i]`, `output_lens[i]`): a JSON integer from 0 to
/// 2^64 - 1. Empty, with `why` set, otherwise.
[[nodiscard]] inline std::optional<std::uint64_t> vllm_length(const nlohmann::json& v,
                                                              const char*& why) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  why = v.is_number_integer() ? " is negative" : " must be an integer";
  return std::nullopt;
}
}  // namespace detail

/// Reads a vLLM result file. Throws std::invalid_argument naming the field when it is not one
/// (missing per-request lists, lists of different lengths, wrong types: a length that is not a
/// non-negative integer, an `errors` entry that is not a string, a `duration` that is not a
/// number, a time outside the time range of clock.hpp).
[[nodiscard]] inline vllm_result read_vllm_result(std::istream& in) {
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  detail::trace_json j;
  std::optional<trace_error> err;
  auto bad = [](const std::string& what) {
    TOKCHRON_THROW(std::invalid_argument, ("tokchron: vLLM result: " + what).c_str());
  };
  if (!detail::parse_json_text(text, 1, j, err)) bad(err->message);
  if (!j.is_object()) bad("the file must hold a JSON object");
  for (const char* key : {"ttfts", "itls", "input_lens", "output_lens"})
    if (!j.contains(key) || !j[key].is_array())
      bad(std::string("field ") + key +
          " is missing or not a list (was the run saved with --save-detailed?)");
  const auto& ttfts = j["ttfts"];
  const auto& itls = j["itls"];
  const auto& in_lens = j["input_lens"];
  const auto& out_lens = j["output_lens"];
  const std::size_t n = ttfts.size();
  if (itls.size() != n || in_lens.size() != n || out_lens.size() != n)
    bad("fields ttfts, itls, input_lens and output_lens must have one entry per request");
  const detail::trace_json* errors = nullptr;
  if (j.contains("errors") && !j["errors"].is_null()) {
    if (!j["errors"].is_array()) bad("field errors must be a list");
    errors = &j["errors"];
    if (errors->size() != n) bad("field errors must have one entry per request");
  }
  vllm_result out;
  out.records.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string idx = "[" + std::to_string(i) + "]";
    trace_record r;
    r.id = std::to_string(i);
    r.send = 0;
    if (!ttfts[i].is_number()) bad("field ttfts" + idx + " must be a number");
    if (!itls[i].is_array()) bad("field itls" + idx + " must be a list");
    const char* why = "";
    const auto in_len = detail::vllm_length(in_lens[i], why);
    if (!in_len) bad("field input_lens" + idx + why);
    const auto out_len = detail::vllm_length(out_lens[i], why);
    if (!out_len) bad("field output_lens" + idx + why);
    if (errors && !(*errors)[i].is_string()) bad("field errors" + idx + " must be a string");
    const bool failed = errors && !(*errors)[i].get_ref<const std::string&>().empty();
    r.ok = !failed;
    if (failed) r.error = (*errors)[i].get<std::string>();
    r.prompt_tokens = *in_len;
    r.usage_output_tokens = *out_len;
    // vLLM's own N: the usage-only chunk's count, else its re-encode of the text.
    r.usage_from = usage_source::usage_chunk;
    if (!failed) {
      double t = ttfts[i].get<double>();
      r.chunks.push_back(trace_chunk{t, 1, chunk_kind::text});
      for (std::size_t k = 0; k < itls[i].size(); ++k) {
        if (!itls[i][k].is_number())
          bad("field itls" + idx + "[" + std::to_string(k) + "] must be a number");
        t += itls[i][k].get<double>();
        r.chunks.push_back(trace_chunk{t, 1, chunk_kind::text});
      }
    }
    if (auto issue = validate(r))
      bad("request " + std::to_string(i) + ": " + issue->field + " " + issue->message);
    out.records.push_back(std::move(r));
  }
  if (j.contains("duration") && !j["duration"].is_null()) {
    if (!j["duration"].is_number()) bad("field duration must be a number (seconds)");
    out.duration = j["duration"].get<double>();
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "ttfts" || k == "itls" || k == "input_lens" || k == "output_lens" || k == "errors" ||
        k == "generated_texts")
      continue;
    out.summary[k] = it.value();
  }
  return out;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_IO_VLLM_RESULT_HPP
