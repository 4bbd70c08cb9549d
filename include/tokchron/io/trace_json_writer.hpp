// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_IO_TRACE_JSON_WRITER_HPP
#define TOKCHRON_IO_TRACE_JSON_WRITER_HPP

/// \file
/// Writing request traces (an adaptor: needs nlohmann-json, Debian nlohmann-json3-dev):
/// `to_json_line` / `write_trace_line` give one record as one line of tokchron's JSON Lines
/// trace format, its fields in the order of the field table (`detail::trace_fields`,
/// io/trace.hpp), times printed so that they read back bit for bit. Thread safety: free
/// functions on their arguments only.

#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokchron/config.hpp"
#include "tokchron/io/trace.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
/// Adds `v`, the value of the field `name`, to `j`: optional values only when set, strings and
/// preemption lists only when not empty, everything else (send, chunks, ok) always.
inline void write_trace_field(nlohmann::ordered_json& j, const char* name, const std::string& v,
                              bool) {
  if (!v.empty()) j[name] = v;
}
inline void write_trace_field(nlohmann::ordered_json& j, const char* name, double v, bool) {
  j[name] = v;
}
inline void write_trace_field(nlohmann::ordered_json& j, const char* name, bool v, bool) {
  j[name] = v;
}
template <class T>
void write_trace_field(nlohmann::ordered_json& j, const char* name, const std::optional<T>& v,
                       bool) {
  if (!v) return;
  if constexpr (std::is_enum_v<T>)
    j[name] = std::string(to_string(*v));
  else
    j[name] = *v;
}
inline void write_trace_field(nlohmann::ordered_json& j, const char* name,
                              const std::vector<double>& v, bool required) {
  if (required || !v.empty()) j[name] = v;
}
inline void write_trace_field(nlohmann::ordered_json& j, const char* name,
                              const std::vector<trace_chunk>& v, bool) {
  auto chunks = nlohmann::ordered_json::array();
  for (const trace_chunk& c : v) {
    auto a = nlohmann::ordered_json::array({c.time, c.tokens});
    if (c.kind != chunk_kind::text) a.push_back(std::string(to_string(c.kind)));
    chunks.push_back(std::move(a));
  }
  j[name] = std::move(chunks);
}
}  // namespace detail

/// One record as one JSON line (no newline). Optional fields are written only when set. Text
/// fields (`id`, `error`) that are not valid UTF-8 (an id or a quoted reason cut inside a
/// character, a Latin-1 error body) are written with each invalid byte replaced by U+FFFD
/// (nlohmann-json's `error_handler_t::replace`), so writing never throws on the bytes of a
/// record and the line is valid JSON; valid text is written unchanged.
[[nodiscard]] inline std::string to_json_line(const trace_record& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  detail::for_each_trace_field([&](const auto& fd, std::size_t) {
    const std::string name(fd.name);
    detail::write_trace_field(j, name.c_str(), r.*fd.member, fd.required);
  });
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

/// Writes `r` as one line (with its newline) to `out`.
inline void write_trace_line(std::ostream& out, const trace_record& r) {
  out << to_json_line(r) << '\n';
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_IO_TRACE_JSON_WRITER_HPP
