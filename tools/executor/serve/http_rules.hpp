// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_SERVE_HTTP_RULES_HPP
#define TOKCHRON_TOOLS_EXECUTOR_SERVE_HTTP_RULES_HPP

/// \file
/// What `batching-executor serve` decides from a request's header alone, as HTTP/1.1 says
/// (RFC 9110 semantics, RFC 9112 message syntax): the path a request target names (origin-form
/// and absolute-form), whether its `Transfer-Encoding` can be read, and what its `Expect` asks.
/// Pure functions on the header's text, no I/O and no allocation; the session (server.cpp) and
/// the request fuzz target (tests/fuzz/serve_request_fuzz.cpp) both use them.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace batching::serve {

/// Whether `a` and `b` are the same text without regard to ASCII case, as HTTP compares
/// schemes, transfer codings and expectations (RFC 9110 sections 4.2.3, 10.1.1; RFC 9112
/// section 7). Bytes outside A-Z compare as they are (no locale).
[[nodiscard]] constexpr bool http_iequals(std::string_view a, std::string_view b) noexcept {
  constexpr auto lower = [](char c) noexcept {
    return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
  };
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

/// `s` without its leading and trailing optional whitespace (OWS: spaces and horizontal tabs,
/// RFC 9110 section 5.6.3), as around list elements and field values.
[[nodiscard]] constexpr std::string_view http_trim_ows(std::string_view s) noexcept {
  constexpr auto ows = [](char c) noexcept { return c == ' ' || c == '\t'; };
  while (!s.empty() && ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && ows(s.back())) s.remove_suffix(1);
  return s;
}

/// The path of a request target, without its query: the origin-form `/v1/models?x` gives
/// `/v1/models`; the absolute-form `http://host:8000/v1/models` (RFC 9112 section 3.2.2: a
/// server must accept it, and its authority replaces `Host`) gives `/v1/models`, and `/` when it
/// has no path; a scheme is compared without case and must be http or https. Empty for anything
/// else (the asterisk-form `*`, an authority-form, text without a scheme): no resource.
[[nodiscard]] constexpr std::string_view target_path(std::string_view target) noexcept {
  std::string_view path;
  if (!target.empty() && target.front() == '/') {
    path = target;
  } else {
    const std::size_t colon = target.find("://");
    if (colon == std::string_view::npos) return {};
    const std::string_view scheme = target.substr(0, colon);
    if (!http_iequals(scheme, "http") && !http_iequals(scheme, "https")) return {};
    const std::string_view rest = target.substr(colon + 3);
    const std::size_t end = rest.find_first_of("/?#");
    if (end == 0) return {};  // no authority
    if (end == std::string_view::npos || rest[end] != '/') return "/";
    path = rest.substr(end);
  }
  return path.substr(0, path.find_first_of("?#"));
}

/// What a request's `Transfer-Encoding` (all its field lines, joined with ", " in order) allows.
enum class transfer_verdict : std::uint8_t {
  none,             ///< no Transfer-Encoding: the body is framed by Content-Length, or empty
  chunked,          ///< `chunked` alone: read
  not_final,        ///< 400: chunked is not the final coding (or is absent); RFC 9112 6.3
  chunked_twice,    ///< 400: chunked applied more than once; RFC 9112 7.1
  http10,           ///< 400: Transfer-Encoding in an HTTP/1.0 request; RFC 9112 6.1
  not_implemented,  ///< 501: a coding before chunked that serve does not decode; RFC 9112 6.1
};

/// The verdict on a request of `version` (10, 11) whose Transfer-Encoding field lines are
/// `value`, and in `coding` the first coding serve does not implement (for the message). Only
/// `chunked` is decoded; every other coding (gzip, deflate, compress, an unknown name) before
/// it is `not_implemented`. A coding's parameters (`;q=1`) are kept out of its name; `chunked`
/// takes none, so `chunked;x=1` is not chunked. Empty list elements are ignored (RFC 9110
/// section 5.6.1); a field with no coding at all is `not_final`.
[[nodiscard]] constexpr transfer_verdict check_transfer_encoding(
    bool present, std::string_view value, unsigned version, std::string_view& coding) noexcept {
  coding = {};
  if (!present) return transfer_verdict::none;
  if (version < 11) return transfer_verdict::http10;
  std::string_view last;
  std::size_t chunked = 0;
  std::string_view unknown;
  while (true) {
    const std::size_t comma = value.find(',');
    const std::string_view element = http_trim_ows(value.substr(0, comma));
    if (!element.empty()) {
      last = element;
      if (http_iequals(element, "chunked"))
        ++chunked;
      else if (unknown.empty())
        unknown = http_trim_ows(element.substr(0, element.find(';')));
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  if (!http_iequals(last, "chunked")) {
    coding = last;
    return transfer_verdict::not_final;
  }
  if (chunked > 1) return transfer_verdict::chunked_twice;
  if (!unknown.empty()) {
    coding = unknown;
    return transfer_verdict::not_implemented;
  }
  return transfer_verdict::chunked;
}

/// What a request's `Expect` asks (RFC 9110 section 10.1.1).
enum class expect_verdict : std::uint8_t {
  none,          ///< no expectation (or HTTP/1.0, which must ignore 100-continue)
  continue_100,  ///< `100-continue`: answer 100 (Continue) before reading the body
  unsupported,   ///< any other expectation: 417 (Expectation Failed)
};
[[nodiscard]] constexpr expect_verdict check_expect(bool present, std::string_view value,
                                                    unsigned version) noexcept {
  if (!present) return expect_verdict::none;
  if (http_iequals(http_trim_ows(value), "100-continue"))
    return version >= 11 ? expect_verdict::continue_100 : expect_verdict::none;
  return expect_verdict::unsupported;
}

}  // namespace batching::serve

#endif  // TOKCHRON_TOOLS_EXECUTOR_SERVE_HTTP_RULES_HPP
