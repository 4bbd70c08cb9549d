// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#include "scrape.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "client.hpp"
#include "tokchron/export/promql.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/quantile/exact.hpp"

namespace tokchron_bench {

namespace {

[[noreturn]] void bad(std::size_t line, const std::string& field, const std::string& why) {
  throw std::invalid_argument("line " + std::to_string(line) + ": " + field + ": " + why);
}

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

std::string_view read_name(std::string_view& s, std::size_t line, const std::string& field,
                           bool colons = true) {
  std::size_t i = 0;
  while (i < s.size() && (name_char(s[i]) && (colons || s[i] != ':')) &&
         (i > 0 || name_start(s[i])))
    ++i;
  if (i == 0) bad(line, field, "expected a name, found '" + std::string(s.substr(0, 20)) + "'");
  const std::string_view n = s.substr(0, i);
  s.remove_prefix(i);
  return n;
}

void skip_blanks(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

std::string_view read_token(std::string_view& s) {
  skip_blanks(s);
  std::size_t i = 0;
  while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
  const std::string_view t = s.substr(0, i);
  s.remove_prefix(i);
  return t;
}

double read_value(std::string_view t, std::size_t line, const std::string& field) {
  if (t.empty()) bad(line, field, "missing");
  if (t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (t == "+Inf" || t == "Inf") return std::numeric_limits<double>::infinity();
  if (t == "-Inf") return -std::numeric_limits<double>::infinity();
  const std::string s(t);
  // Decimal floats only: no hex, no "inf"/"nan" spellings strtod would take.
  if (s.find_first_not_of("0123456789+-.eE") != std::string::npos)
    bad(line, field, "'" + s + "' is not a number");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) bad(line, field, "'" + s + "' is not a number");
  return v;
}

// The family a sample belongs to and the family's type ("" when untyped).
std::pair<std::string, std::string> family_of(const exposition& e, const std::string& name) {
  if (const auto t = e.types.find(name); t != e.types.end()) return {name, t->second};
  for (const char* suffix : {"_bucket", "_sum", "_count", "_total", "_created"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      if (const auto t = e.types.find(base); t != e.types.end()) return {base, t->second};
    }
  }
  return {name, ""};
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string series_key(const std::string& name,
                       const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string k = name;
  if (labels.empty()) return k;
  k += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) k += ',';
    k += labels[i].first + "=\"";
    for (const char c : labels[i].second) {
      if (c == '\\' || c == '"') k += '\\';
      if (c == '\n') {
        k += "\\n";
        continue;
      }
      k += c;
    }
    k += '"';
  }
  return k + '}';
}

exposition parse_exposition(std::string_view text) {
  exposition e;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    skip_blanks(line);
    if (line.empty()) continue;
    if (line.front() == '#') {
      line.remove_prefix(1);
      const std::string_view word = read_token(line);
      if (word == "EOF") break;
      if (word != "TYPE") continue;  // HELP, UNIT and comments
      skip_blanks(line);
      const std::string name(read_name(line, line_no, "TYPE name"));
      const std::string type(read_token(line));
      static const std::set<std::string> known{"counter",        "gauge",   "histogram",
                                               "summary",        "untyped", "unknown",
                                               "gaugehistogram", "info",    "stateset"};
      if (!known.count(type)) bad(line_no, "TYPE of " + name, "unknown type '" + type + "'");
      if (!e.types.emplace(name, type).second) bad(line_no, "TYPE of " + name, "given twice");
      continue;
    }
    metric_sample m;
    m.name = std::string(read_name(line, line_no, "metric name"));
    if (!line.empty() && line.front() == '{') {
      line.remove_prefix(1);
      for (;;) {
        skip_blanks(line);
        if (!line.empty() && line.front() == '}') {
          line.remove_prefix(1);
          break;
        }
        const std::string label(read_name(line, line_no, "label name of " + m.name, false));
        skip_blanks(line);
        if (line.empty() || line.front() != '=')
          bad(line_no, "label " + label + " of " + m.name, "expected '='");
        line.remove_prefix(1);
        skip_blanks(line);
        if (line.empty() || line.front() != '"')
          bad(line_no, "label " + label + " of " + m.name, "expected a quoted value");
        line.remove_prefix(1);
        std::string value;
        bool closed = false;
        while (!line.empty()) {
          const char c = line.front();
          line.remove_prefix(1);
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\') {
            if (line.empty()) break;
            const char x = line.front();
            line.remove_prefix(1);
            if (x == 'n')
              value += '\n';
            else if (x == '\\' || x == '"')
              value += x;
            else
              bad(line_no, "label " + label + " of " + m.name,
                  std::string("unknown escape '\\") + x + "'");
            continue;
          }
          value += c;
        }
        if (!closed) bad(line_no, "label " + label + " of " + m.name, "unterminated value");
        for (const auto& l : m.labels)
          if (l.first == label) bad(line_no, "label " + label + " of " + m.name, "given twice");
        m.labels.emplace_back(label, std::move(value));
        skip_blanks(line);
        if (!line.empty() && line.front() == ',')
          line.remove_prefix(1);
        else if (line.empty() || line.front() != '}')
          bad(line_no, "labels of " + m.name, "expected ',' or '}'");
      }
    }
    if (!line.empty() && line.front() != ' ' && line.front() != '\t')
      bad(line_no, "metric name", "unexpected '" + std::string(1, line.front()) + "'");
    m.value = read_value(read_token(line), line_no, "value of " + m.name);
    skip_blanks(line);
    if (!line.empty() && line.front() != '#') {  // a timestamp, then perhaps an exemplar
      (void)read_value(read_token(line), line_no, "timestamp of " + m.name);
      skip_blanks(line);
      if (!line.empty() && line.front() != '#')
        bad(line_no, "sample of " + m.name, "unexpected '" + std::string(line) + "'");
    }
    std::sort(m.labels.begin(), m.labels.end());
    std::string key = series_key(m.name, m.labels);
    if (e.samples.count(key)) bad(line_no, "series " + key, "given twice");
    e.samples.emplace(std::move(key), std::move(m));
  }
  return e;
}

scrape_target parse_scrape_url(const std::string& url) {
  // The host and port as the client's own target parser reads them; the rest is the path.
  const target t = parse_target(url, "completions", "model");
  if (t.tls)
    throw std::invalid_argument("--scrape '" + url +
                                "': the scrape speaks plain HTTP only (https:// is not supported "
                                "for --scrape)");
  scrape_target s{t.host, t.port, t.prefix.empty() ? "/metrics" : t.prefix};
  if (s.path.find_first_of(" \r\n") != std::string::npos)
    throw std::invalid_argument("--scrape '" + url + "': the path has a space or line break");
  return s;
}

std::string fetch_exposition(const scrape_target& t, std::chrono::milliseconds timeout) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  const std::string where = "http://" + t.host + ":" + t.port + t.path;
  try {
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(t.host, t.port));
    http::request<http::empty_body> req{http::verb::get, t.path, 11};
    req.set(http::field::host, t.host);
    req.set(http::field::accept, "text/plain;version=0.0.4");
    req.set(http::field::user_agent, "tokchron-bench");
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    http::read(stream, buf, parser);
    beast::error_code ec;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    if (parser.get().result_int() != 200)
      throw std::runtime_error("HTTP " + std::to_string(parser.get().result_int()));
    return std::move(parser.get().body());
  } catch (const std::exception& e) {
    throw std::runtime_error("scraping " + where + ": " + e.what());
  }
}

scrape_change difference(const exposition& before, const exposition& after,
                         const std::vector<double>& qs) {
  scrape_change c;
  std::map<std::string, histogram_change> hists;
  const auto earlier = [&](const std::string& key) -> std::optional<double> {
    const auto it = before.samples.find(key);
    if (it == before.samples.end()) return std::nullopt;
    return it->second.value;
  };
  for (const auto& [key, s] : after.samples) {
    const auto [family, type] = family_of(after, s.name);
    const double was = earlier(key).value_or(0);
    const bool is_hist =
        type == "histogram" &&
        (ends_with(s.name, "_bucket") || ends_with(s.name, "_sum") || ends_with(s.name, "_count"));
    if (is_hist) {
      std::vector<std::pair<std::string, std::string>> rest;
      std::optional<double> le;
      for (const auto& l : s.labels)
        if (l.first == "le")
          le = read_value(l.second, 0, "le");
        else
          rest.push_back(l);
      histogram_change& h = hists[series_key(family, rest)];
      h.family = family;
      h.series = series_key(family, rest);
      const double d = s.value >= was ? s.value - was : s.value;
      if (ends_with(s.name, "_sum"))
        h.sum = d;
      else if (ends_with(s.name, "_count"))
        h.count = d;
      else if (le && std::isfinite(*le)) {
        h.bounds.push_back(*le);
        h.cumulative.push_back(d);
      }
      continue;
    }
    const bool counter =
        (type == "counter" && !ends_with(s.name, "_created")) ||
        (type == "summary" && (ends_with(s.name, "_sum") || ends_with(s.name, "_count"))) ||
        (type.empty() && ends_with(s.name, "_total"));
    if (counter) {
      counter_change cc{key, was, s.value, s.value - was, false};
      if (s.value < was) {
        cc.increase = s.value;
        cc.reset = true;
      }
      c.counters.push_back(std::move(cc));
    } else if (type == "gauge" || type.empty()) {
      c.gauges.push_back({key, {was, s.value}});
    }
  }
  for (auto& entry : hists) {
    auto& h = entry.second;  // not a structured binding: C++17 lambdas cannot capture one
    std::vector<std::size_t> order(h.bounds.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return h.bounds[a] < h.bounds[b]; });
    std::vector<double> b, cum;
    for (const std::size_t i : order) {
      b.push_back(h.bounds[i]);
      cum.push_back(h.cumulative[i]);
    }
    h.bounds = std::move(b);
    h.cumulative = std::move(cum);
    for (const double q : qs) {
      interval_quantile iq;
      iq.q = q;
      iq.value = tc::promql_histogram_quantile(q, h.bounds, h.cumulative, h.count);
      if (iq.value) {
        const double rank = q * h.count;
        iq.lower = 0;
        iq.upper = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < h.bounds.size(); ++i) {
          if (h.cumulative[i] >= rank) {
            iq.upper = h.bounds[i];
            break;
          }
          iq.lower = h.bounds[i];
        }
      }
      h.quantiles.push_back(iq);
    }
    c.histograms.push_back(std::move(h));
  }
  return c;
}

namespace {

struct quantity {
  std::string key, label;
  bool histogram = false;
  std::set<std::string> names;  // families, without a counter's _total
};

const std::vector<quantity>& quantities() {
  static const std::vector<quantity> q = [] {
    const std::vector<tc::live_options> presets{
        tc::tokchron_live_options(), tc::vllm_live_options("m", 1), tc::sglang_live_options("m"),
        tc::tgi_live_options(1, 2),  tc::llamacpp_live_options(),   tc::trtllm_live_options("m")};
    std::vector<quantity> out;
    const auto counter = [&](std::string key, std::string label,
                             std::initializer_list<tc::live_source> sources) {
      quantity x{std::move(key), std::move(label), false, {}};
      for (const auto& o : presets)
        for (const auto& f : o.families)
          if (std::find(sources.begin(), sources.end(), f.source) != sources.end())
            x.names.insert(f.name);
      out.push_back(std::move(x));
    };
    const auto hist = [&](std::string key, std::string label, tc::live_histogram h) {
      quantity x{std::move(key), std::move(label), true, {}};
      for (const auto& o : presets)
        for (const auto& f : o.families)
          if (f.source == tc::live_source::histogram && f.histogram == h) x.names.insert(f.name);
      out.push_back(std::move(x));
    };
    counter("requests", "requests finished",
            {tc::live_source::requests, tc::live_source::finished});
    counter("prompt_tokens", "prompt tokens", {tc::live_source::prompt_tokens});
    counter("output_tokens", "output tokens", {tc::live_source::generation_tokens});
    counter("cached_prompt_tokens", "cached prompt tokens",
            {tc::live_source::prompt_tokens_cached});
    counter("prefix_cache_queries", "prefix cache queries",
            {tc::live_source::prefix_cache_queries});
    counter("prefix_cache_hits", "prefix cache hits", {tc::live_source::prefix_cache_hits});
    counter("preemptions", "preemptions", {tc::live_source::preemptions});
    counter("rejected", "rejected requests", {tc::live_source::rejected});
    hist("ttft", "TTFT", tc::live_histogram::ttft);
    hist("itl", "ITL", tc::live_histogram::itl);
    hist("tpot", "TPOT", tc::live_histogram::tpot);
    hist("e2e", "E2E", tc::live_histogram::e2e);
    hist("queue_time", "queue time", tc::live_histogram::queue_time);
    hist("prefill_time", "prefill time", tc::live_histogram::prefill_time);
    hist("decode_time", "decode time", tc::live_histogram::decode_time);
    return out;
  }();
  return q;
}

std::string counter_family(const std::string& series) {
  std::string n = series.substr(0, series.find('{'));
  if (ends_with(n, "_total")) n.resize(n.size() - 6);
  return n;
}

// The recognised counters' sums over their series: quantity -> (family, value).
std::map<std::string, std::pair<std::string, double>> recognised_counters(const scrape_change& c) {
  std::map<std::string, std::pair<std::string, double>> r;
  for (const auto& q : quantities()) {
    if (q.histogram) continue;
    for (const auto& cc : c.counters) {
      const std::string fam = counter_family(cc.series);
      if (!q.names.count(fam)) continue;
      auto& slot = r[q.key];
      if (!slot.first.empty() && slot.first != fam) continue;  // one family per quantity
      slot.first = fam;
      slot.second += cc.increase;
    }
  }
  return r;
}

// The recognised histograms: quantity -> the series (summed over labels when several).
std::map<std::string, histogram_change> recognised_histograms(const scrape_change& c,
                                                              const std::vector<double>& qs) {
  std::map<std::string, histogram_change> r;
  for (const auto& q : quantities()) {
    if (!q.histogram) continue;
    for (const auto& h : c.histograms) {
      if (!q.names.count(h.family)) continue;
      auto it = r.find(q.key);
      if (it == r.end()) {
        r.emplace(q.key, h);
        continue;
      }
      histogram_change& a = it->second;
      if (a.family != h.family || a.bounds != h.bounds) continue;  // one family, one layout
      a.count += h.count;
      a.sum += h.sum;
      for (std::size_t i = 0; i < a.cumulative.size(); ++i) a.cumulative[i] += h.cumulative[i];
      a.series = a.family;
    }
  }
  for (auto& [key, h] : r) {
    h.quantiles.clear();
    for (const double q : qs) {
      interval_quantile iq;
      iq.q = q;
      iq.value = tc::promql_histogram_quantile(q, h.bounds, h.cumulative, h.count);
      iq.upper = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < h.bounds.size(); ++i) {
        if (h.cumulative[i] >= q * h.count) {
          iq.upper = h.bounds[i];
          break;
        }
        iq.lower = h.bounds[i];
      }
      h.quantiles.push_back(iq);
    }
  }
  return r;
}

std::string number(double v) {
  std::ostringstream o;
  if (std::floor(v) == v && std::fabs(v) < 1e15)
    o << static_cast<long long>(v);
  else
    o << std::setprecision(6) << v;
  return o.str();
}

std::string seconds(double s) {
  std::ostringstream o;
  if (std::isinf(s)) return "+Inf";
  o << std::fixed << std::setprecision(s < 1 ? 2 : 3) << (s < 1 ? s * 1e3 : s)
    << (s < 1 ? " ms" : " s");
  return o.str();
}

}  // namespace

void add_client(client_counts& c, const request_outcome& o,
                std::chrono::steady_clock::time_point zero) {
  const tc::trace_record t = tc::to_trace_record(o.tl, zero, o.request_id, o.error);
  ++c.requests;
  c.prompt_tokens += t.prompt_tokens.value_or(0);
  std::uint64_t chunked = 0;
  for (const auto& ch : t.chunks) chunked += ch.tokens;
  c.output_tokens += t.usage_output_tokens.value_or(chunked);
  if (!o.error.empty()) return;
  ++c.ok;
  if (!t.chunks.empty()) c.ttft_s.push_back(t.chunks.front().time - t.send);
  if (t.end) c.e2e_s.push_back(*t.end - t.send);
}

void print_change(std::ostream& out, const std::string& url, const scrape_change& c,
                  const client_counts& client) {
  const std::vector<double> qs{0.5, 0.9, 0.99};
  out << "\nServer metrics (" << url << "), change over the run:\n";
  out << "  " << std::left << std::setw(22) << "quantity" << std::setw(36) << "server"
      << "client\n";
  const auto counters = recognised_counters(c);
  const auto row = [&](const std::string& label, const std::string& server, const std::string& cl) {
    out << "  " << std::left << std::setw(22) << label << std::setw(36) << server << cl << '\n';
  };
  for (const auto& q : quantities()) {
    if (q.histogram) continue;
    const auto it = counters.find(q.key);
    if (it == counters.end()) continue;
    std::string cl;
    if (q.key == "requests")
      cl = number(static_cast<double>(client.requests)) + " (" +
           number(static_cast<double>(client.ok)) + " ok)";
    else if (q.key == "prompt_tokens")
      cl = number(static_cast<double>(client.prompt_tokens));
    else if (q.key == "output_tokens")
      cl = number(static_cast<double>(client.output_tokens));
    row(q.label, number(it->second.second) + " (" + it->second.first + ")", cl);
  }
  const auto hists = recognised_histograms(c, qs);
  const auto client_q = [](const std::vector<double>& v, double q) -> std::string {
    tc::exact_quantiles<double> e;
    for (const double x : v) (void)e.add(x);
    const auto r = e.quantile(q, tc::quantile_method::nearest_rank);
    return r ? seconds(*r) : std::string();
  };
  for (const auto& q : quantities()) {
    if (!q.histogram) continue;
    const auto it = hists.find(q.key);
    if (it == hists.end() || !(it->second.count > 0)) continue;
    const histogram_change& h = it->second;
    row(q.label + " count", number(h.count) + " (" + h.family + ")", "");
    for (const auto& iq : h.quantiles) {
      if (!iq.value) continue;
      std::ostringstream label;
      label << q.label << " P" << iq.q * 100;
      std::string cl;
      if (q.key == "ttft") cl = client_q(client.ttft_s, iq.q);
      if (q.key == "e2e") cl = client_q(client.e2e_s, iq.q);
      row(label.str(),
          seconds(*iq.value) + " in (" + seconds(iq.lower) + ", " + seconds(iq.upper) + "]", cl);
    }
  }
  std::size_t changed = 0, resets = 0;
  for (const auto& cc : c.counters) {
    changed += cc.increase != 0;
    resets += cc.reset;
  }
  out << "  (" << changed << " counter series and " << c.histograms.size()
      << " histogram series in all; the JSON report lists each";
  if (resets > 0) out << "; " << resets << " counters were reset during the run";
  out << ")\n";
}

nlohmann::json change_json(const std::string& url, const scrape_change& c) {
  const auto finite = [](double v) -> nlohmann::json {
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
  };
  nlohmann::json j;
  j["url"] = url;
  j["counters"] = nlohmann::json::object();
  for (const auto& cc : c.counters)
    j["counters"][cc.series] = {{"before", finite(cc.before)},
                                {"after", finite(cc.after)},
                                {"increase", finite(cc.increase)},
                                {"reset", cc.reset}};
  const auto hist_json = [&](const histogram_change& h) {
    nlohmann::json hj;
    hj["family"] = h.family;
    hj["count"] = finite(h.count);
    hj["sum"] = finite(h.sum);
    hj["buckets"] = nlohmann::json::array();
    for (std::size_t i = 0; i < h.bounds.size(); ++i)
      hj["buckets"].push_back({finite(h.bounds[i]), finite(h.cumulative[i])});
    hj["quantiles"] = nlohmann::json::array();
    for (const auto& q : h.quantiles)
      hj["quantiles"].push_back({{"q", q.q},
                                 {"value", q.value ? finite(*q.value) : nlohmann::json()},
                                 {"lower", finite(q.lower)},
                                 {"upper", finite(q.upper)}});
    return hj;
  };
  j["histograms"] = nlohmann::json::object();
  for (const auto& h : c.histograms) j["histograms"][h.series] = hist_json(h);
  j["gauges"] = nlohmann::json::object();
  for (const auto& [k, v] : c.gauges)
    j["gauges"][k] = {{"before", finite(v.first)}, {"after", finite(v.second)}};
  nlohmann::json rec = nlohmann::json::object();
  for (const auto& [k, v] : recognised_counters(c))
    rec[k] = {{"family", v.first}, {"increase", finite(v.second)}};
  for (const auto& [k, h] : recognised_histograms(c, {0.5, 0.9, 0.99})) rec[k] = hist_json(h);
  j["recognised"] = rec;
  return j;
}

}  // namespace tokchron_bench
