// SPDX-License-Identifier: MIT
#include "report/writers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ostream>

#include "tokchron/export/csv.hpp"
#include "tokchron/export/json.hpp"

namespace tokchron_report {
namespace {

/// A flat (row name, value per summary) view shared by the table and CSV writers.
struct row {
  std::string name;
  std::vector<std::optional<double>> values;
  bool latency = false;  ///< seconds: shown in ms in the table
};

std::vector<row> rows_of(const std::vector<tc::run_summary>& all) {
  std::vector<row> rows;
  auto add = [&](std::string name, bool latency, auto get) {
    row r{std::move(name), {}, latency};
    for (const auto& s : all) r.values.push_back(get(s));
    rows.push_back(std::move(r));
  };
  using S = tc::run_summary;
  auto u = [](std::uint64_t v) { return std::optional<double>(static_cast<double>(v)); };
  add("requests", false, [&](const S& s) { return u(s.requests); });
  add("completed", false, [&](const S& s) { return u(s.completed); });
  add("failed", false, [&](const S& s) { return u(s.failed); });
  for (std::size_t r = 0; r < tc::finish_reason_count; ++r)  // every reason, as /metrics counts
    add("requests." + std::string(tc::to_string(static_cast<tc::finish_reason>(r))), false,
        [&](const S& s) { return u(s.requests_by_reason[r]); });
  add("duration_s", false, [](const S& s) { return s.duration; });
  add("request_throughput", false, [](const S& s) { return s.request_throughput; });
  add("output_throughput", false, [](const S& s) { return s.output_throughput; });
  add("total_token_throughput", false, [](const S& s) { return s.total_token_throughput; });
  if (!all.empty() && all.front().gpus) {
    add("request_throughput_per_gpu", false,
        [](const S& s) { return s.request_throughput_per_gpu; });
    add("output_throughput_per_gpu", false, [](const S& s) { return s.output_throughput_per_gpu; });
    add("total_token_throughput_per_gpu", false,
        [](const S& s) { return s.total_token_throughput_per_gpu; });
  }
  add("mean_concurrency", false, [](const S& s) { return s.mean_concurrency; });
  add("time_weighted_concurrency", false, [](const S& s) { return s.time_weighted_concurrency; });
  add("peak_concurrency", false, [&](const S& s) { return u(s.peak_concurrency); });
  auto dist = [&](const std::string& metric, bool latency, auto get, bool only_when_present) {
    if (only_when_present &&
        std::none_of(all.begin(), all.end(), [&](const S& s) { return get(s).count > 0; }))
      return;
    add(metric + ".count", false, [&](const S& s) { return u(get(s).count); });
    if (std::any_of(all.begin(), all.end(), [&](const S& s) { return get(s).invalid > 0; }))
      add(metric + ".invalid", false, [&](const S& s) { return u(get(s).invalid); });
    add(metric + ".mean", latency, [&](const S& s) { return get(s).mean; });
    add(metric + ".median", latency, [&](const S& s) { return get(s).median; });
    add(metric + ".std", latency, [&](const S& s) { return get(s).stddev; });
    add(metric + ".min", latency, [&](const S& s) { return get(s).min; });
    add(metric + ".max", latency, [&](const S& s) { return get(s).max; });
    if (all.empty()) return;
    for (std::size_t i = 0; i < get(all.front()).percentiles.size(); ++i)
      add(metric + "." + tc::percentile_key(get(all.front()).percentiles[i].percent), latency,
          [&](const S& s) { return get(s).percentiles[i].value; });
  };
  for (const tc::metric_id id : S::kept)  // the metric table's names
    dist(
        std::string(tc::to_string(id)), tc::is_time_metric(id),
        [id](const S& s) -> const tc::distribution& { return *s.of(id); },
        S::needs_server_events(id));
  for (const tc::metric_id id : S::kept_when_measured)  // reasoning, caching, speculative, ...
    dist(
        std::string(tc::to_string(id)), tc::is_time_metric(id),
        [id](const S& s) -> const tc::distribution& { return *s.of(id); }, true);
  dist(
      "prompt_len", false, [](const S& s) -> const tc::distribution& { return s.prompt_lengths; },
      true);
  dist(
      "output_len", false, [](const S& s) -> const tc::distribution& { return s.output_lengths; },
      false);
  dist(
      "reasoning_len", false,
      [](const S& s) -> const tc::distribution& { return s.reasoning_lengths; }, true);
  for (std::size_t i = 0; !all.empty() && i < all.front().extra.size(); ++i)
    add(all.front().extra[i].first, false, [&](const S& s) {
      return i < s.extra.size() ? s.extra[i].second : std::optional<double>();
    });
  return rows;
}

/// `v` with `significant` digits, or (0) the shortest form that reads back exactly; an integer
/// below 2^53 in full, with no exponent (`400`, not `4e+02`).
std::string format_number(double v, int significant = 6) {
  char buf[64];
  if (const auto i = tc::integer_text(v)) return *i;
  if (significant > 0) {
    std::snprintf(buf, sizeof buf, "%.*g", significant, v);
    return buf;
  }
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

/// The population of each summary's statistics, as the table and the CSV name it.
std::vector<std::string> inclusion_row(const std::vector<tc::run_summary>& all) {
  std::vector<std::string> out{"inclusion"};
  for (const auto& s : all)
    out.emplace_back(s.inclusion ? std::string(tc::to_string(*s.inclusion)) : "profile");
  return out;
}

}  // namespace

ojson to_json(const std::vector<tc::run_summary>& all) {
  auto one = [](const tc::run_summary& s) {
    ojson j = tc::summary_json(s);
    ojson w = ojson::array();
    for (const auto& x : tc::profile_warnings(s))
      w.push_back(ojson{{"quirk", x.quirk}, {"count", x.count}, {"message", x.message}});
    j["warnings"] = std::move(w);
    return j;
  };
  if (all.size() == 1) return one(all.front());
  ojson a = ojson::array();
  for (const auto& s : all) a.push_back(one(s));
  return a;
}

void write_warnings(std::ostream& out, const std::vector<tc::run_summary>& all,
                    const char* prefix) {
  for (const auto& s : all)
    for (const auto& w : tc::profile_warnings(s)) out << prefix << w.message << '\n';
}

void write_table(std::ostream& out, const std::vector<tc::run_summary>& all) {
  const auto rows = rows_of(all);
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> width(all.size() + 1, 0);
  std::vector<std::string> head{"metric"};
  for (const auto& s : all) head.push_back(s.profile);
  cells.push_back(head);
  cells.push_back(inclusion_row(all));
  for (const auto& r : rows) {
    std::vector<std::string> line{r.latency ? r.name + " (ms)" : r.name};
    for (const auto& v : r.values)
      line.push_back(v ? format_number(r.latency ? *v * 1e3 : *v) : "-");
    cells.push_back(std::move(line));
  }
  for (const auto& line : cells)
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      if (c == 0)
        out << line[c] << std::string(width[c] - line[c].size(), ' ');
      else
        out << "  " << std::string(width[c] - line[c].size(), ' ') << line[c];
    }
    out << '\n';
  }
}

void write_csv(std::ostream& out, const std::vector<tc::run_summary>& all) {
  out << "metric";
  for (const auto& s : all) out << ',' << s.profile;
  out << '\n';
  const auto inclusion = inclusion_row(all);
  for (std::size_t c = 0; c < inclusion.size(); ++c) out << (c ? "," : "") << inclusion[c];
  out << '\n';
  for (const auto& r : rows_of(all)) {
    out << r.name;
    for (const auto& v : r.values) {
      out << ',';
      if (v) out << format_number(*v, 0);
    }
    out << '\n';
  }
}

void write_report(std::ostream& out, const std::vector<tc::run_summary>& all,
                  const std::string& format, std::ostream* err) {
  if (format == "json") {
    out << to_json(all).dump(2) << '\n';
  } else if (format == "csv") {
    write_csv(out, all);
    if (err) write_warnings(*err, all, "tokchron-report: warning: ");
  } else {
    write_table(out, all);
    write_warnings(out, all, "warning: ");
  }
}

int report_skipped(const input_stats& in, std::ostream& err, bool quiet) {
  if (in.malformed == 0) return exit_ok;
  if (!quiet) {
    for (std::size_t i = 0; i < in.errors.size(); ++i)
      err << "tokchron-report: " << in.error_files[i] << ": " << in.errors[i].to_string() << '\n';
    if (in.malformed > in.errors.size())
      err << "tokchron-report: ... and " << in.malformed - in.errors.size()
          << " more malformed lines (only the first " << in.errors.size() << " are listed)\n";
  }
  err << "tokchron-report: skipped " << in.malformed << " malformed line"
      << (in.malformed == 1 ? "" : "s") << " of " << in.lines << '\n';
  return exit_skipped_lines;
}

void report_missing_rates(const std::vector<tc::run_summary>& all, std::ostream& err) {
  for (const auto& s : all)
    if (s.output_rate.invalid)
      err << "tokchron-report: " << s.profile << ": " << s.output_rate.invalid
          << " completed request" << (s.output_rate.invalid == 1 ? " has" : "s have")
          << " no output_rate value (zero E2E latency or no output tokens, or no TPOT under a "
             "1/TPOT rule); "
             "counted as output_rate.invalid\n";
}

ojson alignment_json(const clock_alignment& a) {
  ojson j;
  j["reference"] = a.reference_file;
  j["error"] = a.error();
  ojson hosts = ojson::array();
  for (const host_clock& h : a.hosts)
    hosts.push_back({{"file", h.file},
                     {"lines", h.lines},
                     {"shift_min", h.shift_min},
                     {"shift_max", h.shift_max},
                     {"error", h.error()}});
  j["hosts"] = std::move(hosts);
  return j;
}

}  // namespace tokchron_report
