// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_IO_TRACE_JSON_READER_HPP
#define TOKCHRON_IO_TRACE_JSON_READER_HPP

/// \file
/// Reading request traces (an adaptor: needs nlohmann-json, Debian nlohmann-json3-dev):
/// `parse_trace_line` / `read_trace` read tokchron's JSON Lines trace format. A malformed line
/// gives a `trace_error` naming its line and field (a JSON path such as `chunks[3][1]`) and is
/// skipped; reading never stops at a bad line. Lines of the common shape go through a fast
/// scanner (io/detail/trace_scanner.hpp); the rest through nlohmann-json. Both read the fields
/// of the one field table (`detail::trace_fields`, io/trace.hpp).
///
/// Parsing a line is O(its length) and allocates the record. Thread safety: free functions on
/// their arguments only.

#include <cmath>
#include <cstdint>
#include <istream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokchron/config.hpp"
#include "tokchron/io/detail/trace_scanner.hpp"
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

/// The nlohmann-json reader of one trace line: every field of the field table, by member type.
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

  // One reader per member type of the field table; `v` is present and not null.
  bool read(const trace_json& v, const trace_field<std::string>& fd, std::string& out) {
    if (v.is_string())
      out = v.get<std::string>();
    else if (fd.text == trace_text::integer_as_text && v.is_number_integer())
      out = v.dump();
    else
      return fail(std::string(fd.name), "must be a string");
    return true;
  }
  template <class F>
  bool read(const trace_json& v, const F& fd, double& out) {
    return number(v, std::string(fd.name), out);
  }
  template <class F>
  bool read(const trace_json& v, const F& fd, std::optional<double>& out) {
    double x = 0;
    if (!number(v, std::string(fd.name), x)) return false;
    out = x;
    return true;
  }
  template <class F>
  bool read(const trace_json& v, const F& fd, std::optional<std::uint64_t>& out) {
    std::uint64_t x = 0;
    if (!count(v, std::string(fd.name), std::numeric_limits<std::uint64_t>::max(), x)) return false;
    out = x;
    return true;
  }
  template <class F>
  bool read(const trace_json& v, const F& fd, std::vector<double>& out) {
    if (!v.is_array()) return fail(std::string(fd.name), "must be an array of times");
    out.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!number(v[i], std::string(fd.name) + "[" + std::to_string(i) + "]", out[i])) return false;
    return true;
  }
  template <class F>
  bool read(const trace_json& v, const F& fd, std::vector<trace_chunk>& out) {
    if (!v.is_array()) return fail(std::string(fd.name), "must be an array");
    out.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!chunk(v[i], i, out[i])) return false;
    return true;
  }
  template <class F>
  bool read(const trace_json& v, const F& fd, bool& out) {
    if (!v.is_boolean()) return fail(std::string(fd.name), "must be true or false");
    out = v.get<bool>();
    return true;
  }
  template <class F>
  bool read(const trace_json& v, const F& fd, std::optional<finish_reason>& out) {
    out = v.is_string() ? parse_finish_reason(v.get_ref<const std::string&>()) : std::nullopt;
    if (!out)
      return fail(std::string(fd.name),
                  "must be one of stop, length, aborted, error, timed_out, rejected");
    return true;
  }

  template <class F>
  bool read(const trace_json& v, const F& fd, std::optional<usage_source>& out) {
    out = v.is_string() ? parse_usage_source(v.get_ref<const std::string&>()) : std::nullopt;
    if (!out)
      return fail(std::string(fd.name), "must be one of usage_chunk, content_chunk, body, server");
    return true;
  }

  bool record(const trace_json& j, trace_record& r) {
    if (!j.is_object()) return fail("", "a trace line must be a JSON object");
    bool ok = true;
    for_each_trace_field([&](const auto& fd, std::size_t) {
      if (!ok) return;
      const auto it = j.find(fd.name);
      if (it == j.end() || it->is_null()) {
        if (fd.required) ok = fail(std::string(fd.name), "is required");
        return;
      }
      ok = read(*it, fd, r.*fd.member);
    });
    return ok;
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
  detail::reset_trace_record(out);
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

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_IO_TRACE_JSON_READER_HPP
