// SPDX-License-Identifier: MIT
#include "distribution.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>
#include <string>

namespace batching {
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
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
    bad(spec, "'" + std::string(text) + "' is not a number");
  return v * scale;
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
    d.kind_ = kind::fixed;
    d.a_ = d.mean_ = v;
    return d;
  }
  if (name == "uniform") {
    const auto v = numbers(spec, args, q, 2);
    if (v[0] < lo || v[1] < v[0]) bad(spec, "need minimum <= a <= b");
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
    d.kind_ = kind::normal;
    d.a_ = d.mean_ = v[0];
    d.b_ = v[1];
    return d;
  }
  if (name == "lognormal") {
    const auto v = numbers(spec, args, q, 2);
    if (v[0] <= 0 || v[1] < 0) bad(spec, "need mean > 0 and sd >= 0");
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
    if (integer && x > 4e9) x = 4e9;  // fits uint32 with room
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

double parse_seconds(std::string_view text) {
  try {
    return number(text, text, quantity::seconds);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("time '" + std::string(text) +
                                "' is not a number of seconds (e.g. 2, 1.5s, 500ms)");
  }
}

std::vector<double> parse_trace_values(const std::string& path, quantity q) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("trace '" + path + "': cannot open");
  std::vector<double> out;
  std::string line;
  std::size_t lineno = 0;
  auto fail = [&](const std::string& field, const std::string& why) {
    throw std::invalid_argument(path + ":" + std::to_string(lineno) + ": field '" + field +
                                "': " + why);
  };
  const double lo = minimum(q);
  while (std::getline(in, line)) {
    ++lineno;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
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
        if (!j["prompt_tokens"].is_number_unsigned()) fail("prompt_tokens", "not an integer >= 0");
        v = j["prompt_tokens"].get<double>();
      } else if (q == quantity::output_length) {
        if (j.contains("usage_output_tokens")) {
          if (!j["usage_output_tokens"].is_number_unsigned())
            fail("usage_output_tokens", "not an integer >= 0");
          v = j["usage_output_tokens"].get<double>();
        } else {
          if (!j.contains("chunks") || !j["chunks"].is_array())
            fail("chunks", "missing (and no usage_output_tokens)");
          for (const auto& c : j["chunks"]) {
            if (!c.is_array() || c.size() < 2 || !c[1].is_number_unsigned())
              fail("chunks", "each chunk must be [time, tokens, kind?]");
            v += c[1].get<double>();
          }
        }
      } else {
        fail("(line)", "a think-time trace is one number of seconds a line");
      }
    } else {
      char* end = nullptr;
      v = std::strtod(line.c_str() + first, &end);
      while (end && (*end == ' ' || *end == '\t' || *end == '\r')) ++end;
      if (end == line.c_str() + first || (end && *end != '\0') || !std::isfinite(v))
        fail("(value)", "not a number");
    }
    if (v < lo) {
      if (q == quantity::seconds)
        fail("(value)", "negative time");
      else
        v = lo;  // an empty response still occupies one decode step
    }
    out.push_back(v);
  }
  if (out.empty()) throw std::invalid_argument("trace '" + path + "': no values");
  return out;
}

}  // namespace batching
