// SPDX-License-Identifier: MIT
#include "loadgen/distribution.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tokchron_loadgen {
namespace {

[[noreturn]] void bad(std::string_view spec, const std::string& why) {
  throw std::invalid_argument("distribution '" + std::string(spec) + "': " + why);
}

// A number, with an optional ms/s suffix when it is a time.
double number(std::string_view spec, std::string_view text, quantity q) {
  std::string s(text);
  double scale = 1.0;
  if (q == quantity::seconds) {
    if (s.size() > 2 && s.compare(s.size() - 2, 2, "ms") == 0) {
      scale = 1e-3;
      s.resize(s.size() - 2);
    } else if (s.size() > 1 && s.back() == 's') {
      s.pop_back();
    }
  }
  if (s.empty()) bad(spec, "missing number");
  const auto v = parse_decimal(s);
  if (!v) bad(spec, "'" + std::string(text) + "' is not a number");
  return *v * scale;
}

std::vector<double> numbers(std::string_view spec, std::string_view args, quantity q,
                            std::size_t want) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (pos <= args.size()) {
    const std::size_t comma = args.find(',', pos);
    const std::string_view part =
        args.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    out.push_back(number(spec, part, q));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (out.size() != want)
    bad(spec, "expected " + std::to_string(want) + " number" + (want > 1 ? "s" : "") +
                  " after ':', got " + std::to_string(out.size()));
  return out;
}

double minimum(quantity q) { return q == quantity::seconds ? 0.0 : 1.0; }

// A length spec's bound: at most max_length.
void check_length(std::string_view spec, double v, quantity q) {
  if (q != quantity::seconds && v > max_length)
    bad(spec, "a length must be at most " + std::to_string(max_length) + " tokens");
}

// Reads one line of at most `max` bytes (without its '\n') into `line`; false at the end of the
// input. Returns true with `too_long` set, having read `max` bytes, for a longer line.
bool read_line(std::istream& in, std::string& line, std::size_t max, bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* sb = in.rdbuf();
  for (;;) {
    const int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) return !line.empty();
    if (c == '\n') return true;
    if (line.size() == max) {
      too_long = true;
      return true;
    }
    line.push_back(static_cast<char>(c));
  }
}

// The first 40 bytes of `v`, for a message.
std::string shown(std::string_view v) {
  return v.size() <= 40 ? std::string(v) : std::string(v.substr(0, 40)) + "...";
}

}  // namespace

distribution distribution::fixed(double v, quantity q) {
  distribution d;
  d.q_ = q;
  d.kind_ = kind::fixed;
  d.a_ = d.mean_ = q == quantity::seconds ? v : std::round(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d.a_);
  d.spec_ = q == quantity::seconds && v == 0 ? std::string("none") : std::string(buf);
  return d;
}

distribution distribution::parse(std::string_view spec, quantity q) {
  distribution d;
  d.q_ = q;
  d.spec_ = std::string(spec);
  const double lo = minimum(q);
  if (spec.empty()) bad(spec, "empty");
  if (q == quantity::seconds && spec == "none") return d;
  const std::size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  const std::string_view args =
      colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1);
  if (colon == std::string_view::npos || name == "fixed") {
    const double v = number(spec, colon == std::string_view::npos ? spec : args, q);
    if (v < lo) bad(spec, "must be at least " + std::to_string(static_cast<int>(lo)));
    if (q != quantity::seconds && v != std::floor(v)) bad(spec, "a length must be an integer");
    check_length(spec, v, q);
    d.kind_ = kind::fixed;
    d.a_ = d.mean_ = v;
    return d;
  }
  if (name == "uniform") {
    const auto v = numbers(spec, args, q, 2);
    if (v[0] < lo || v[1] < v[0]) bad(spec, "need minimum <= a <= b");
    check_length(spec, v[1], q);
    d.kind_ = kind::uniform;
    d.a_ = q == quantity::seconds ? v[0] : std::ceil(v[0]);
    d.b_ = q == quantity::seconds ? v[1] : std::floor(v[1]);
    if (d.b_ < d.a_) bad(spec, "no integer in the range");
    d.mean_ = 0.5 * (d.a_ + d.b_);
    return d;
  }
  if (name == "normal") {
    const auto v = numbers(spec, args, q, 2);
    if (v[1] < 0 || v[0] < lo) bad(spec, "need mean >= minimum and sd >= 0");
    check_length(spec, v[0], q);
    d.kind_ = kind::normal;
    d.a_ = d.mean_ = v[0];
    d.b_ = v[1];
    return d;
  }
  if (name == "lognormal") {
    const auto v = numbers(spec, args, q, 2);
    if (v[0] <= 0 || v[1] < 0) bad(spec, "need mean > 0 and sd >= 0");
    check_length(spec, v[0], q);
    d.kind_ = kind::lognormal;
    const double s2 = std::log1p((v[1] * v[1]) / (v[0] * v[0]));
    d.a_ = std::log(v[0]) - 0.5 * s2;
    d.b_ = std::sqrt(s2);
    d.mean_ = v[0];
    return d;
  }
  if (name == "exp" || name == "exponential") {
    const auto v = numbers(spec, args, q, 1);
    if (v[0] < 0) bad(spec, "mean must be >= 0");
    check_length(spec, v[0], q);
    d.kind_ = kind::exponential;
    d.a_ = d.mean_ = v[0];
    return d;
  }
  if (name == "trace") {
    if (args.empty()) bad(spec, "missing file name");
    d.kind_ = kind::empirical;
    d.values_ = parse_trace_values(std::string(args), q);
    d.mean_ = std::accumulate(d.values_.begin(), d.values_.end(), 0.0) /
              static_cast<double>(d.values_.size());
    return d;
  }
  bad(spec,
      "unknown kind '" + std::string(name) + "' (fixed, uniform, normal, lognormal, exp, trace)");
}

double distribution::sample(rng& r) const noexcept {
  const double lo = minimum(q_);
  const bool integer = q_ != quantity::seconds;
  auto finish = [&](double x) {
    if (integer) x = std::round(x);
    if (x < lo) x = lo;
    if (integer && !(x <= max_length)) x = max_length;  // prompt + output fit in 32 bits
    return x;
  };
  switch (kind_) {
    case kind::fixed: return a_;
    case kind::uniform:
      if (integer)
        return a_ + static_cast<double>(r.below(static_cast<std::uint64_t>(b_ - a_) + 1));
      return r.uniform(a_, b_);
    case kind::normal: {
      for (int i = 0; i < 64; ++i) {  // truncated normal: redraw below the minimum
        const double x = a_ + b_ * r.normal();
        if ((integer ? std::round(x) : x) >= lo) return finish(x);
      }
      return finish(a_);
    }
    case kind::lognormal: return finish(std::exp(a_ + b_ * r.normal()));
    case kind::exponential: return finish(r.exponential(a_));
    case kind::empirical: return values_[r.below(values_.size())];
  }
  return a_;
}

double distribution::mean() const noexcept { return mean_; }

double distribution::max() const noexcept {
  switch (kind_) {
    case kind::fixed: return a_;
    case kind::uniform: return b_;
    case kind::empirical: return *std::max_element(values_.begin(), values_.end());
    default: return std::numeric_limits<double>::infinity();
  }
}

double distribution::min() const noexcept {
  switch (kind_) {
    case kind::fixed: return a_;
    case kind::uniform: return a_;
    case kind::empirical: return *std::min_element(values_.begin(), values_.end());
    default: return minimum(q_);
  }
}

std::optional<double> parse_decimal(std::string_view text) noexcept {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v, std::chars_format::general);
  if (text.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

double parse_seconds(std::string_view text) {
  try {
    return number(text, text, quantity::seconds);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("time '" + std::string(text) +
                                "' is not a number of seconds (e.g. 2, 1.5s, 500ms)");
  }
}

std::vector<double> parse_trace_values(const std::string& path, quantity q) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("trace '" + path + "': cannot open");
  std::vector<double> out;
  std::string line;
  std::size_t lineno = 0;
  auto fail = [&](const std::string& field, const std::string& why) {
    throw std::invalid_argument(path + ":" + std::to_string(lineno) + ": field '" + field +
                                "': " + why);
  };
  const bool length = q != quantity::seconds;
  // A JSON length: an integer in [0, max_length].
  auto json_length = [&](const nlohmann::json& v, const char* field) {
    // An array or object is named by its type, never printed (printing recurses on its nesting).
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max_length)
      fail(field, "not an integer in [0, " + std::to_string(max_length) + "] (value " +
                      (v.is_array()    ? std::string("an array")
                       : v.is_object() ? std::string("an object")
                                       : shown(v.dump())) +
                      ")");
    return v.get<double>();
  };
  bool too_long = false;
  while (read_line(in, line, max_trace_line, too_long)) {
    ++lineno;
    if (too_long) fail("(line)", "longer than " + std::to_string(max_trace_line) + " bytes");
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (out.size() == max_trace_values)
      fail("(line)", "more than " + std::to_string(max_trace_values) + " values");
    double v = 0;
    if (line[first] == '{') {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::parse_error& e) {
        fail("(line)", std::string("not JSON: ") + e.what());
      }
      if (q == quantity::prompt_length) {
        if (!j.contains("prompt_tokens")) fail("prompt_tokens", "missing");
        v = json_length(j["prompt_tokens"], "prompt_tokens");
      } else if (q == quantity::output_length) {
        if (j.contains("usage_output_tokens")) {
          v = json_length(j["usage_output_tokens"], "usage_output_tokens");
        } else {
          if (!j.contains("chunks") || !j["chunks"].is_array())
            fail("chunks", "missing (and no usage_output_tokens)");
          for (const auto& c : j["chunks"]) {
            if (!c.is_array() || c.size() < 2 || !c[1].is_number_unsigned())
              fail("chunks", "each chunk must be [time, tokens, kind?]");
            v += json_length(c[1], "chunks");
            if (v > max_length)
              fail("chunks", "the tokens add up to more than " + std::to_string(max_length));
          }
        }
      } else {
        fail("(line)", "a think-time trace is one number of seconds a line");
      }
    } else {
      std::string_view text(line);
      text.remove_prefix(first);
      text = text.substr(0, text.find_last_not_of(" \t\r") + 1);
      if (length) {
        std::uint64_t n = 0;
        const auto r = std::from_chars(text.data(), text.data() + text.size(), n);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size() || n > max_length)
          fail("(value)", "a length must be a decimal integer in [0, " +
                              std::to_string(max_length) + "] (value '" + shown(text) + "')");
        v = static_cast<double>(n);
      } else {
        const auto t = parse_decimal(text);
        if (!t) fail("(value)", "not a decimal number (value '" + shown(text) + "')");
        if (*t < 0) fail("(value)", "negative time (value '" + shown(text) + "')");
        v = *t;
      }
    }
    out.push_back(std::max(v, minimum(q)));  // a 0 length: an empty response takes one step
  }
  if (out.empty()) throw std::invalid_argument("trace '" + path + "': no values");
  return out;
}

}  // namespace tokchron_loadgen
