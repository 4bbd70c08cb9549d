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

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
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
      if (!(d >= 0 && d == std::floor(d))) return fail(field, "must be a non-negative integer");
      // 2^64 itself must be refused before the cast: static_cast<double>(UINT64_MAX) rounds up
      // to it, and casting it to uint64_t is undefined.
      if (!(d < 18446744073709551616.0 && d <= static_cast<double>(max)))
        return fail(field, "is too large");
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
    auto f = [i](const char* sub) { return "chunks[" + std::to_string(i) + "]" + sub; };
    if (!c.is_array() || c.size() < 2 || c.size() > 3)
      return fail(f(""), "must be [time, tokens] or [time, tokens, kind]");
    if (!c[0].is_number()) return fail(f("[0]"), "must be a number (seconds)");
    out.time = c[0].get<double>();
    std::uint64_t t = 0;
    if (!c[1].is_number_unsigned() ||
        (t = c[1].get<std::uint64_t>()) > std::numeric_limits<std::uint32_t>::max()) {
      if (!count(c[1], f("[1]"), std::numeric_limits<std::uint32_t>::max(), t)) return false;
    }
    out.tokens = static_cast<std::uint32_t>(t);
    out.kind = chunk_kind::text;
    if (c.size() == 3) {
      const auto k =
          c[2].is_string() ? parse_chunk_kind(c[2].get_ref<const std::string&>()) : std::nullopt;
      if (!k) return fail(f("[2]"), "must be \"text\", \"empty\", \"usage\" or \"done\"");
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
  } catch (const trace_json::exception& e) {  // parse_error, or out_of_range (1e400)
    std::string what = e.what();
    const auto bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
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
/// Converts the JSON number text [b, e) (already checked to be JSON number syntax) exactly as
/// std::from_chars would, quickly, when it is a plain decimal: no exponent, at most 2^53 as an
/// integer once the point is removed, at most 22 digits after the point. Then both the integer
/// and the power of ten are exact doubles, so one IEEE division rounds correctly (Clinger's
/// fast path). Returns false, leaving `out` alone, for anything else.
inline bool plain_decimal(const char* b, const char* e, double& out) noexcept {
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
  static constexpr double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = b < e && *b == '-';
  if (negative) ++b;
  std::uint64_t m = 0;
  int fraction = -1;  // digits after the point; -1 before it
  for (; b < e; ++b) {
    if (*b == '.') {
      fraction = 0;
      continue;
    }
    if (*b < '0' || *b > '9') return false;  // an exponent
    if (m > (std::uint64_t{1} << 53) / 10) return false;
    m = m * 10 + static_cast<std::uint64_t>(*b - '0');
    if (fraction >= 0) ++fraction;
  }
  if (m > (std::uint64_t{1} << 53) || fraction > 22) return false;
  const double v = static_cast<double>(m) / pow10[fraction < 0 ? 0 : fraction];
  out = negative ? -v : v;
  return true;
#else
  (void)b;
  (void)e;
  (void)out;
  return false;  // excess precision would round twice
#endif
}

/// A fast reader for the common shape of a trace line (the known fields, plain ASCII strings
/// without escapes, numbers in JSON syntax). It accepts only input nlohmann-json would read the
/// same way, and declines (returns false) anything else: unknown or repeated fields, escapes,
/// non-ASCII text, unexpected types, syntax errors. Declined lines go through nlohmann-json,
/// which then reports any error. It exists because a 100k-request trace is 240 MB of numbers.
class fast_trace_scanner {
 public:
  explicit fast_trace_scanner(std::string_view s) noexcept
      : p_(s.data()), end_(s.data() + s.size()) {}

  bool record(trace_record& r) {
    ws();
    if (!eat('{')) return false;
    unsigned seen = 0;
    ws();
    if (peek() == '}') return false;  // no send: let the full parser say so
    for (;;) {
      std::string_view key;
      ws();
      if (!string(key)) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      const int k = key_index(key);
      if (k < 0 || (seen & (1u << k))) return false;
      seen |= 1u << k;
      if (!value(k, r)) return false;
      ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      return false;
    }
    ws();
    return p_ == end_ && (seen & (1u << k_send)) && (seen & (1u << k_chunks));
  }

 private:
  enum : int {
    k_id,
    k_arrival,
    k_send,
    k_queued,
    k_scheduled,
    k_end,
    k_prompt,
    k_usage,
    k_chunks,
    k_preempted,
    k_ok,
    k_error,
    k_reason,
  };
  static int key_index(std::string_view k) noexcept {
    static constexpr std::string_view keys[] = {"id",
                                                "arrival",
                                                "send",
                                                "queued",
                                                "scheduled",
                                                "end",
                                                "prompt_tokens",
                                                "usage_output_tokens",
                                                "chunks",
                                                "preempted",
                                                "ok",
                                                "error",
                                                "finish_reason"};
    for (int i = 0; i < 13; ++i)
      if (keys[i] == k) return i;
    return -1;
  }
  [[nodiscard]] char peek() const noexcept { return p_ < end_ ? *p_ : '\0'; }
  bool eat(char c) noexcept {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void ws() noexcept {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool literal(std::string_view w) noexcept {
    if (static_cast<std::size_t>(end_ - p_) < w.size() || std::string_view(p_, w.size()) != w)
      return false;
    p_ += w.size();
    return true;
  }
  bool string(std::string_view& out) noexcept {
    if (!eat('"')) return false;
    const char* b = p_;
    while (p_ < end_ && *p_ != '"') {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(b, static_cast<std::size_t>(p_ - b));
    ++p_;
    return true;
  }
  /// A JSON number; `integral` is set when it has no fraction or exponent.
  bool number(double& out, bool& integral) noexcept {
    const char* b = p_;
    const char* q = p_;
    if (q < end_ && *q == '-') ++q;
    if (q == end_) return false;
    if (*q == '0') {
      ++q;
    } else if (*q >= '1' && *q <= '9') {
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    } else {
      return false;
    }
    integral = true;
    if (q < end_ && *q == '.') {
      ++q;
      integral = false;
      if (q == end_ || *q < '0' || *q > '9') return false;
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      ++q;
      integral = false;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q == end_ || *q < '0' || *q > '9') return false;
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (!plain_decimal(b, q, out)) {  // declines exponents, long mantissas
      const auto res = std::from_chars(b, q, out);
      if (res.ec != std::errc() || res.ptr != q) return false;
    }
    p_ = q;
    return true;
  }
  bool time(double& out) noexcept {
    bool integral = false;
    return number(out, integral);
  }
  /// A non-negative integer written without fraction or exponent, at most `max`.
  bool count(std::uint64_t& out, std::uint64_t max) noexcept {
    const char* q = p_;
    std::uint64_t v = 0;
    if (q == end_ || *q < '0' || *q > '9' ||
        (*q == '0' && q + 1 < end_ && q[1] >= '0' && q[1] <= '9'))
      return false;
    for (; q < end_ && *q >= '0' && *q <= '9'; ++q) {
      const auto d = static_cast<std::uint64_t>(*q - '0');
      if (v > (max - d) / 10) return false;
      v = v * 10 + d;
    }
    if (q < end_ && (*q == '.' || *q == 'e' || *q == 'E')) return false;
    out = v;
    p_ = q;
    return true;
  }
  bool opt_time(std::optional<double>& out) noexcept {
    if (literal("null")) return true;
    double v = 0;
    if (!time(v)) return false;
    out = v;
    return true;
  }
  bool opt_count(std::optional<std::uint64_t>& out) noexcept {
    if (literal("null")) return true;
    std::uint64_t v = 0;
    if (!count(v, std::numeric_limits<std::uint64_t>::max())) return false;
    out = v;
    return true;
  }
  bool chunks(std::vector<trace_chunk>& out) {
    if (!eat('[')) return false;
    ws();
    if (eat(']')) return true;
    for (;;) {
      ws();
      if (!eat('[')) return false;
      trace_chunk c;
      ws();
      if (!time(c.time)) return false;
      ws();
      if (!eat(',')) return false;
      ws();
      std::uint64_t t = 0;
      if (!count(t, std::numeric_limits<std::uint32_t>::max())) return false;
      c.tokens = static_cast<std::uint32_t>(t);
      ws();
      if (eat(',')) {
        ws();
        std::string_view k;
        if (!string(k)) return false;
        const auto kind = parse_chunk_kind(k);
        if (!kind) return false;
        c.kind = *kind;
        ws();
      }
      if (!eat(']')) return false;
      out.push_back(c);
      ws();
      if (eat(',')) continue;
      return eat(']');
    }
  }
  bool times(std::vector<double>& out) {
    if (!eat('[')) return false;
    ws();
    if (eat(']')) return true;
    for (;;) {
      ws();
      double t = 0;
      if (!time(t)) return false;
      out.push_back(t);
      ws();
      if (eat(',')) continue;
      return eat(']');
    }
  }
  bool value(int k, trace_record& r) {
    std::string_view sv;
    switch (k) {
      case k_id:
        if (literal("null")) return true;
        if (peek() == '"') {
          if (!string(sv)) return false;
          r.id = std::string(sv);
          return true;
        }
        return false;
      case k_arrival: return opt_time(r.arrival);
      case k_send: return time(r.send);
      case k_queued: return opt_time(r.queued);
      case k_scheduled: return opt_time(r.scheduled);
      case k_end: return opt_time(r.end);
      case k_prompt: return opt_count(r.prompt_tokens);
      case k_usage: return opt_count(r.usage_output_tokens);
      case k_chunks: return chunks(r.chunks);
      case k_preempted: return literal("null") || times(r.preempted);
      case k_ok:
        if (literal("true"))
          r.ok = true;
        else if (literal("false"))
          r.ok = false;
        else
          return literal("null");
        return true;
      case k_error:
        if (literal("null")) return true;
        if (!string(sv)) return false;
        r.error = std::string(sv);
        return true;
      case k_reason: {
        if (literal("null")) return true;
        if (!string(sv)) return false;
        r.reason = parse_finish_reason(sv);
        return r.reason.has_value();
      }
    }
    return false;
  }

  const char* p_;
  const char* end_;
};

/// The nlohmann-json path: every line the fast scanner declines.
inline trace_line_result parse_trace_line_json(std::string_view line, std::size_t line_no) {
  trace_line_result out;
  trace_json j;
  if (!parse_json_text(line, line_no, j, out.error)) return out;
  trace_reader rd{line_no, std::nullopt};
  trace_record r;
  if (!rd.record(j, r)) {
    out.error = std::move(rd.error);
    return out;
  }
  if (auto issue = validate(r))
    out.error = trace_error{line_no, std::move(issue->field), std::move(issue->message)};
  else
    out.record = std::move(r);
  return out;
}
}  // namespace detail

/// Parses one line into `out`, reusing its storage (for reading large traces). Returns true
/// for a record; false for a blank line (`error` left empty) or a malformed one (`error` set).
inline bool parse_trace_line(std::string_view line, std::size_t line_no, trace_record& out,
                             std::optional<trace_error>& error) {
  error.reset();
  if (detail::blank(line)) return false;
  out.id.clear();
  out.arrival.reset();
  out.send = 0;
  out.queued.reset();
  out.scheduled.reset();
  out.preempted.clear();
  out.prompt_tokens.reset();
  out.chunks.clear();
  out.end.reset();
  out.usage_output_tokens.reset();
  out.ok = true;
  out.error.clear();
  out.reason.reset();
  if (!detail::fast_trace_scanner(line).record(out)) {
    trace_line_result r = detail::parse_trace_line_json(line, line_no);
    if (!r.record) {
      error = std::move(r.error);
      return false;
    }
    out = std::move(*r.record);
    return true;
  }
  if (auto issue = validate(out)) {
    error = trace_error{line_no, std::move(issue->field), std::move(issue->message)};
    return false;
  }
  return true;
}

/// Parses one line of a JSON Lines trace. A blank line gives neither record nor error.
[[nodiscard]] inline trace_line_result parse_trace_line(std::string_view line,
                                                        std::size_t line_no = 1) {
  trace_line_result out;
  trace_record r;
  if (parse_trace_line(line, line_no, r, out.error)) out.record = std::move(r);
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
