// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_IO_TRACE_JSON_HPP
#define TOKCHRON_IO_TRACE_JSON_HPP

/// \file
/// JSON for request traces (an adaptor: needs nlohmann-json, Debian nlohmann-json3-dev).
///
///  - `parse_trace_line` / `read_trace`: tokchron's JSON Lines trace format (README "Trace
///    format"). A malformed line gives a `trace_error` naming its line and field (a JSON path
///    such as `chunks[3][1]`) and is skipped; reading never stops at a bad line.
///  - `to_json_line` / `write_trace_line`: one record as one line, times printed so that they
///    read back bit for bit.
///  - `read_vllm_result`: vLLM's `vllm bench serve --save-result --save-detailed` JSON, turned
///    into records whose vllm-profile summary recomputes the file's summary fields.
///
/// Parsing a line is O(its length) and allocates the record. Thread safety: free functions on
/// their arguments only.

#include <cmath>
#include <cstdint>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokchron/config.hpp"
#include "tokchron/io/trace.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// A line that could not be read: where, which field, and why.
struct trace_error {
  std::size_t line = 0;  ///< 1-based line number in its input
  std::string field;     ///< JSON path of the offending field ("" when the line is not JSON)
  std::string message;

  /// "line 3: field chunks[2][1]: must be a non-negative integer"
  [[nodiscard]] std::string to_string() const {
    std::string s = "line " + std::to_string(line) + ": ";
    if (!field.empty()) s += "field " + field + ": ";
    return s + message;
  }
};

/// The outcome of parsing one line: a record, an error, or neither (a blank line).
struct trace_line_result {
  std::optional<trace_record> record;
  std::optional<trace_error> error;
};

namespace detail {
using trace_json = nlohmann::json;

struct trace_reader {
  std::size_t line;
  std::optional<trace_error> error;

  bool fail(std::string field, std::string message) {
    if (!error) error = trace_error{line, std::move(field), std::move(message)};
    return false;
  }
  bool number(const trace_json& v, const std::string& field, double& out) {
    if (!v.is_number()) return fail(field, "must be a number (seconds)");
    out = v.get<double>();
    return true;
  }
  bool count(const trace_json& v, const std::string& field, std::uint64_t max, std::uint64_t& out) {
    if (v.is_number_unsigned()) {
      out = v.get<std::uint64_t>();
    } else if (v.is_number_integer()) {
      return fail(field, "must be a non-negative integer");
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      if (!(d >= 0 && d == std::floor(d) && d <= static_cast<double>(max)))
        return fail(field, "must be a non-negative integer");
      out = static_cast<std::uint64_t>(d);
    } else {
      return fail(field, "must be a non-negative integer");
    }
    if (out > max) return fail(field, "is too large");
    return true;
  }
  bool opt_number(const trace_json& obj, const char* key, std::optional<double>& out) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return true;
    double v = 0;
    if (!number(*it, key, v)) return false;
    out = v;
    return true;
  }
  bool opt_count(const trace_json& obj, const char* key, std::optional<std::uint64_t>& out) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return true;
    std::uint64_t v = 0;
    if (!count(*it, key, std::numeric_limits<std::uint64_t>::max(), v)) return false;
    out = v;
    return true;
  }

  bool chunk(const trace_json& c, std::size_t i, trace_chunk& out) {
    const std::string f = "chunks[" + std::to_string(i) + "]";
    if (!c.is_array() || c.size() < 2 || c.size() > 3)
      return fail(f, "must be [time, tokens] or [time, tokens, kind]");
    if (!number(c[0], f + "[0]", out.time)) return false;
    std::uint64_t t = 0;
    if (!count(c[1], f + "[1]", std::numeric_limits<std::uint32_t>::max(), t)) return false;
    out.tokens = static_cast<std::uint32_t>(t);
    out.kind = chunk_kind::text;
    if (c.size() == 3) {
      if (!c[2].is_string())
        return fail(f + "[2]", "must be \"text\", \"empty\", \"usage\" or \"done\"");
      const auto k = parse_chunk_kind(c[2].get_ref<const std::string&>());
      if (!k) return fail(f + "[2]", "must be \"text\", \"empty\", \"usage\" or \"done\"");
      out.kind = *k;
    }
    return true;
  }

  bool record(const trace_json& j, trace_record& r) {
    if (!j.is_object()) return fail("", "a trace line must be a JSON object");
    if (const auto it = j.find("id"); it != j.end() && !it->is_null()) {
      if (it->is_string())
        r.id = it->get<std::string>();
      else if (it->is_number_integer())
        r.id = it->dump();
      else
        return fail("id", "must be a string");
    }
    const auto send = j.find("send");
    if (send == j.end() || send->is_null()) return fail("send", "is required");
    if (!number(*send, "send", r.send)) return false;
    if (!opt_number(j, "arrival", r.arrival) || !opt_number(j, "queued", r.queued) ||
        !opt_number(j, "scheduled", r.scheduled) || !opt_number(j, "end", r.end) ||
        !opt_count(j, "prompt_tokens", r.prompt_tokens) ||
        !opt_count(j, "usage_output_tokens", r.usage_output_tokens))
      return false;
    const auto chunks = j.find("chunks");
    if (chunks == j.end() || chunks->is_null()) return fail("chunks", "is required");
    if (!chunks->is_array()) return fail("chunks", "must be an array");
    r.chunks.resize(chunks->size());
    for (std::size_t i = 0; i < chunks->size(); ++i)
      if (!chunk((*chunks)[i], i, r.chunks[i])) return false;
    if (const auto it = j.find("preempted"); it != j.end() && !it->is_null()) {
      if (!it->is_array()) return fail("preempted", "must be an array of times");
      r.preempted.resize(it->size());
      for (std::size_t i = 0; i < it->size(); ++i)
        if (!number((*it)[i], "preempted[" + std::to_string(i) + "]", r.preempted[i])) return false;
    }
    if (const auto it = j.find("ok"); it != j.end() && !it->is_null()) {
      if (!it->is_boolean()) return fail("ok", "must be true or false");
      r.ok = it->get<bool>();
    }
    if (const auto it = j.find("error"); it != j.end() && !it->is_null()) {
      if (!it->is_string()) return fail("error", "must be a string");
      r.error = it->get<std::string>();
    }
    if (const auto it = j.find("finish_reason"); it != j.end() && !it->is_null()) {
      const auto reason =
          it->is_string() ? parse_finish_reason(it->get_ref<const std::string&>()) : std::nullopt;
      if (!reason)
        return fail("finish_reason",
                    "must be one of stop, length, aborted, error, timed_out, rejected");
      r.reason = reason;
    }
    if (auto issue = validate(r)) return fail(issue->field, issue->message);
    return true;
  }
};

[[nodiscard]] inline bool blank(std::string_view s) noexcept {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  return true;
}

/// Parses JSON text; on a syntax error fills `error` (with the byte offset) and returns false.
inline bool parse_json_text(std::string_view text, std::size_t line, trace_json& out,
                            std::optional<trace_error>& error) {
#if TOKCHRON_HAS_EXCEPTIONS
  try {
    out = trace_json::parse(text.begin(), text.end());
    return true;
  } catch (const trace_json::parse_error& e) {
    std::string what = e.what();
    const auto colon = what.find("parse error");
    if (colon != std::string::npos) what = what.substr(colon);
    error = trace_error{line, "", "not valid JSON: " + what};
    return false;
  }
#else
  out = trace_json::parse(text.begin(), text.end(), nullptr, false);
  if (out.is_discarded()) {
    error = trace_error{line, "", "not valid JSON"};
    return false;
  }
  return true;
#endif
}
}  // namespace detail

/// Parses one line of a JSON Lines trace. A blank line gives neither record nor error.
[[nodiscard]] inline trace_line_result parse_trace_line(std::string_view line,
                                                        std::size_t line_no = 1) {
  trace_line_result out;
  if (detail::blank(line)) return out;
  detail::trace_json j;
  if (!detail::parse_json_text(line, line_no, j, out.error)) return out;
  detail::trace_reader rd{line_no, std::nullopt};
  trace_record r;
  if (rd.record(j, r))
    out.record = std::move(r);
  else
    out.error = std::move(rd.error);
  return out;
}

/// What `read_trace` saw.
struct trace_read_stats {
  std::size_t lines = 0;    ///< lines read, blank ones included
  std::size_t records = 0;  ///< records handed to `on_record`
  std::size_t skipped = 0;  ///< malformed lines handed to `on_error`
};

/// Reads a JSON Lines trace from `in`, calling `on_record(trace_record&&)` for each good line
/// and `on_error(const trace_error&)` for each malformed one (which is then skipped).
template <class OnRecord, class OnError>
trace_read_stats read_trace(std::istream& in, OnRecord&& on_record, OnError&& on_error) {
  trace_read_stats st;
  std::string line;
  while (std::getline(in, line)) {
    ++st.lines;
    trace_line_result r = parse_trace_line(line, st.lines);
    if (r.record) {
      ++st.records;
      on_record(std::move(*r.record));
    } else if (r.error) {
      ++st.skipped;
      on_error(*r.error);
    }
  }
  return st;
}

/// One record as one JSON line (no newline). Optional fields are written only when set.
[[nodiscard]] inline std::string to_json_line(const trace_record& r) {
  nlohmann::ordered_json j;
  if (!r.id.empty()) j["id"] = r.id;
  if (r.arrival) j["arrival"] = *r.arrival;
  j["send"] = r.send;
  if (r.queued) j["queued"] = *r.queued;
  if (r.scheduled) j["scheduled"] = *r.scheduled;
  if (!r.preempted.empty()) j["preempted"] = r.preempted;
  if (r.prompt_tokens) j["prompt_tokens"] = *r.prompt_tokens;
  auto chunks = nlohmann::ordered_json::array();
  for (const trace_chunk& c : r.chunks) {
    auto a = nlohmann::ordered_json::array({c.time, c.tokens});
    if (c.kind != chunk_kind::text) a.push_back(std::string(to_string(c.kind)));
    chunks.push_back(std::move(a));
  }
  j["chunks"] = std::move(chunks);
  if (r.end) j["end"] = *r.end;
  if (r.usage_output_tokens) j["usage_output_tokens"] = *r.usage_output_tokens;
  j["ok"] = r.ok;
  if (!r.error.empty()) j["error"] = r.error;
  if (r.reason) j["finish_reason"] = std::string(to_string(*r.reason));
  return j.dump();
}

/// Writes `r` as one line (with its newline) to `out`.
inline void write_trace_line(std::ostream& out, const trace_record& r) {
  out << to_json_line(r) << '\n';
}

/// A vLLM `--save-result --save-detailed` file as trace records.
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

/// Reads a vLLM result file. Throws std::invalid_argument naming the field when it is not one
/// (missing per-request lists, lists of different lengths, wrong types).
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
  if (j.contains("errors") && j["errors"].is_array()) {
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
    if (!in_lens[i].is_number_unsigned() && !in_lens[i].is_number_integer())
      bad("field input_lens" + idx + " must be an integer");
    if (!out_lens[i].is_number_unsigned() && !out_lens[i].is_number_integer())
      bad("field output_lens" + idx + " must be an integer");
    const bool failed =
        errors && (*errors)[i].is_string() && !(*errors)[i].get<std::string>().empty();
    r.ok = !failed;
    if (failed) r.error = (*errors)[i].get<std::string>();
    const auto in_len = in_lens[i].get<std::int64_t>();
    const auto out_len = out_lens[i].get<std::int64_t>();
    if (in_len < 0 || out_len < 0) bad("field input_lens/output_lens" + idx + " is negative");
    r.prompt_tokens = static_cast<std::uint64_t>(in_len);
    r.usage_output_tokens = static_cast<std::uint64_t>(out_len);
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
  if (j.contains("duration") && j["duration"].is_number())
    out.duration = j["duration"].get<double>();
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

#endif  // TOKCHRON_IO_TRACE_JSON_HPP
