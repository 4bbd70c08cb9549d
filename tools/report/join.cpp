// SPDX-License-Identifier: MIT
#include "report/join.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <utility>

#include "plot/join_plot.hpp"  // tools/plot: --plot
#include "report/options.hpp"
#include "report/writers.hpp"
#include "tokchron/export/json.hpp"

namespace tokchron_report {

std::string client_id_of_server_id(const std::string& id) {
  for (const char* prefix : {"chatcmpl-", "cmpl-"}) {
    const std::string p(prefix);
    if (id.size() > p.size() && id.compare(0, p.size(), p) == 0) return id.substr(p.size());
  }
  return id;
}

namespace {

double seconds(tc::trace_clock::time_point t) { return tc::to_seconds(t.time_since_epoch()); }

/// Index of each id that occurs once; ids seen twice map to npos.
std::map<std::string, std::size_t> unique_ids(const std::vector<std::string>& ids, bool server) {
  constexpr std::size_t dup = static_cast<std::size_t>(-1);
  std::map<std::string, std::size_t> out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto [it, inserted] = out.emplace(server ? client_id_of_server_id(ids[i]) : ids[i], i);
    if (!inserted) it->second = dup;
  }
  return out;
}

// Keeps up to join_examples + 1 different ids (the one past the examples says there are more).
void note_example(std::vector<std::string>& v, const std::string& id) {
  if (v.size() <= join_examples && std::find(v.begin(), v.end(), id) == v.end()) v.push_back(id);
}

join_clock relate_clocks(const loaded_inputs& client, const loaded_inputs& server,
                         std::optional<double> offset) {
  join_clock c;
  if (offset) {
    c.server_to_client = *offset;
    c.source = "--clock-offset";
    return c;
  }
  const auto& cr = client.clocks.reference;
  const auto& sr = server.clocks.reference;
  if (!cr || !sr)
    throw input_error(std::string("the client and server clocks cannot be related: the ") +
                      (!cr ? "client" : "server") +
                      " trace has no clock anchor (clock_mono, clock_wall_ns, clock_gap_ns); give "
                      "--clock-offset SECONDS (server time + SECONDS = client time)");
  c.server_to_client = tc::clock_shift(*sr, *cr);
  c.error = sr->error() + cr->error() + client.clocks.error();
  c.source = "anchors";
  return c;
}

}  // namespace

join_result join_traces(const loaded_inputs& client, const loaded_inputs& server,
                        const std::vector<double>& percentiles,
                        std::optional<double> clock_offset) {
  join_result r;
  r.client_requests = client.timelines.size();
  r.server_requests = server.timelines.size();
  r.client_clocks = client.clocks;
  r.clock = relate_clocks(client, server, clock_offset);
  r.client_malformed = client.malformed;
  r.server_malformed = server.malformed;
  const auto cids = unique_ids(client.names, false);
  const auto sids = unique_ids(server.names, true);
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  const double shift = r.clock.server_to_client;
  double low = -HUGE_VAL, high = HUGE_VAL;  // the shifts the split requests allow
  for (std::size_t i = 0; i < client.timelines.size(); ++i) {
    const std::string& id = client.names[i];
    if (cids.at(id) == none) {  // the id repeats on the client side
      ++r.client_duplicate_ids;
      note_example(r.duplicate_id_examples, id);
      continue;
    }
    const auto it = sids.find(id);
    if (it == sids.end()) {
      ++r.client_only;
      note_example(r.client_only_ids, id);
      continue;
    }
    if (it->second == none) {  // unique here, but the server has the id twice
      ++r.client_ambiguous;
      note_example(r.ambiguous_id_examples, id);
      continue;
    }
    ++r.matched;
    const auto& c = client.timelines[i];
    const auto& s = server.timelines[it->second];
    if (!c.succeeded() || !s.succeeded() || !c.send_time() || !s.send_time()) {
      ++r.failed;
      continue;
    }
    joined_request q;
    q.id = client.names[i];
    const double c_send = seconds(*c.send_time());
    const double s_arrival = seconds(*s.send_time()) + shift;
    q.to_server = s_arrival - c_send;
    low = std::max(low, c_send - seconds(*s.send_time()));
    if (c.finish_time() && s.finish_time()) {
      high = std::min(high, seconds(*c.finish_time()) - seconds(*s.finish_time()));
      const double s_end = seconds(*s.finish_time()) + shift;
      q.client_e2e = seconds(*c.finish_time()) - c_send;
      q.server_e2e = s_end - s_arrival;
      q.e2e_return = seconds(*c.finish_time()) - s_end;
    }
    if (c.first_token_time() && s.first_token_time()) {
      high = std::min(high, seconds(*c.first_token_time()) - seconds(*s.first_token_time()));
      const double s_first = seconds(*s.first_token_time()) + shift;
      q.client_ttft = seconds(*c.first_token_time()) - c_send;
      q.server_ttft = s_first - s_arrival;
      q.ttft_return = seconds(*c.first_token_time()) - s_first;
      if (s.first_scheduled()) {
        const double s_sched = seconds(*s.first_scheduled()) + shift;
        q.server_queue = s_sched - s_arrival;
        q.server_prefill = s_first - s_sched;
      }
    } else {
      ++r.no_first_token;
    }
    r.requests.push_back(std::move(q));
  }
  for (std::size_t j = 0; j < server.timelines.size(); ++j) {
    const std::string id = client_id_of_server_id(server.names[j]);
    const auto own = sids.at(id);
    const auto partner = cids.find(id);
    if (own == none) {
      ++r.server_duplicate_ids;
      note_example(r.duplicate_id_examples, id);
    } else if (partner == cids.end()) {
      ++r.server_only;
      note_example(r.server_only_ids, server.names[j]);
    } else if (partner->second == none) {
      ++r.server_ambiguous;
      note_example(r.ambiguous_id_examples, id);
    }  // else matched (counted with the client's side)
  }
  r.duplicate_ids = r.client_duplicate_ids + r.server_duplicate_ids;
  if (!r.requests.empty()) {
    join_clock_check k;
    k.low = low;
    k.high = high;
    if (low > high)
      k.off_by = (low - high) / 2;
    else if (shift < low)
      k.off_by = low - shift;
    else if (shift > high)
      k.off_by = shift - high;
    r.clock_check = k;
  }
  struct part_def {
    const char* name;
    const char* help;
    std::optional<double> joined_request::*member;
    bool clock_sensitive;
  };
  static const part_def defs[] = {
      {"client_ttft", "client TTFT: client first token - client send", &joined_request::client_ttft,
       false},
      {"to_server", "server arrival - client send", &joined_request::to_server, true},
      {"server_ttft", "server first token - server arrival (queue + prefill)",
       &joined_request::server_ttft, false},
      {"server_queue", "server first scheduled - server arrival", &joined_request::server_queue,
       false},
      {"server_prefill", "server first token - server first scheduled",
       &joined_request::server_prefill, false},
      {"ttft_return", "client first token - server first token", &joined_request::ttft_return,
       true},
      {"client_e2e", "client E2E: client end - client send", &joined_request::client_e2e, false},
      {"server_e2e", "server end - server arrival", &joined_request::server_e2e, false},
      {"e2e_return", "client end - server end", &joined_request::e2e_return, true},
  };
  for (const part_def& d : defs) {
    std::vector<double> v;
    join_part p;
    p.name = d.name;
    p.help = d.help;
    for (const joined_request& q : r.requests)
      if (const auto& x = q.*d.member) {
        v.push_back(*x);
        if (*x < 0) {
          ++p.negative;
          if (d.clock_sensitive && r.clock.error && *x < -*r.clock.error) ++p.beyond_error;
          if (!d.clock_sensitive) ++p.beyond_error;  // one clock: never negative
        }
      }
    if (v.empty() &&
        (d.member == &joined_request::server_queue || d.member == &joined_request::server_prefill))
      continue;  // the server trace has no `scheduled`
    p.d = tc::make_distribution(std::move(v), tc::profiles::canonical, percentiles, true);
    r.parts.push_back(std::move(p));
  }
  return r;
}

namespace {

std::string ms(const std::optional<double>& v) {
  if (!v) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << *v * 1e3;
  return os.str();
}

void write_join_table(std::ostream& out, const join_result& r,
                      const std::vector<double>& percentiles) {
  out << "requests: " << r.client_requests << " client, " << r.server_requests << " server; "
      << r.matched << " matched, " << r.client_only << " client only, " << r.server_only
      << " server only, " << r.duplicate_ids << " with a duplicate id (" << r.client_duplicate_ids
      << " client, " << r.server_duplicate_ids << " server), "
      << r.client_ambiguous + r.server_ambiguous << " whose id repeats on the other side ("
      << r.client_ambiguous << " client, " << r.server_ambiguous << " server); " << r.failed
      << " failed, " << r.no_first_token << " without a first token; " << r.requests.size()
      << " split\n";
  if (r.client_malformed || r.server_malformed)
    out << "malformed lines skipped: " << r.client_malformed << " client, " << r.server_malformed
        << " server\n";
  if (!r.unreadable_files.empty()) {
    out << "unreadable client files: " << r.unreadable_files.size() << " (left out):";
    for (const auto& f : r.unreadable_files) out << ' ' << f;
    out << '\n';
  }
  std::ostringstream c;
  c << std::setprecision(12) << "clock: client time = server time " << std::showpos
    << r.clock.server_to_client << std::noshowpos << " s (" << r.clock.source << ")";
  if (r.clock.error)
    c << ", error <= " << *r.clock.error * 1e6
      << " us plus the wall clocks' disagreement (0 on one host)";
  out << c.str() << '\n';
  if (r.clock_check) {
    std::ostringstream k;
    k << std::setprecision(12) << "clock check: the split requests allow a shift in ["
      << r.clock_check->low << ", " << r.clock_check->high << "] s; ";
    if (r.clock_check->low > r.clock_check->high)
      k << "none fits them all (wrong pairs or drifting clocks), off by at least "
        << r.clock_check->off_by << " s";
    else if (r.clock_check->off_by > 0)
      k << "the shift used is off by at least " << r.clock_check->off_by << " s";
    else
      k << "the shift used is inside";
    out << k.str() << '\n';
  }
  out << '\n';
  std::vector<std::string> head = {"part (ms)", "count", "mean", "min"};
  for (double p : percentiles) head.push_back(tc::percentile_key(p));
  head.insert(head.end(), {"max", "negative"});
  std::vector<std::vector<std::string>> rows{head};
  for (const join_part& p : r.parts) {
    std::vector<std::string> row = {p.name, std::to_string(p.d.count), ms(p.d.mean), ms(p.d.min)};
    for (double q : percentiles) row.push_back(ms(p.d.at(q)));
    row.push_back(ms(p.d.max));
    row.push_back(std::to_string(p.negative));
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> w(head.size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i == 0)
        out << std::left << std::setw(static_cast<int>(w[i])) << row[i];
      else
        out << "  " << std::right << std::setw(static_cast<int>(w[i])) << row[i];
    }
    out << '\n';
  }
  out << "\nclient_ttft = to_server + server_ttft + ttft_return; "
         "client_e2e = to_server + server_e2e + e2e_return\n";
}

// The request counts, named as the JSON's `requests` object and the CSV's rows name them.
struct request_count {
  const char* json;
  const char* csv;
  std::size_t n;
};
std::vector<request_count> request_counts(const join_result& r) {
  return {{"client", "requests_client", r.client_requests},
          {"server", "requests_server", r.server_requests},
          {"matched", "matched", r.matched},
          {"client_only", "client_only", r.client_only},
          {"server_only", "server_only", r.server_only},
          {"duplicate_ids", "duplicate_ids", r.duplicate_ids},
          {"client_duplicate_ids", "client_duplicate_ids", r.client_duplicate_ids},
          {"server_duplicate_ids", "server_duplicate_ids", r.server_duplicate_ids},
          {"client_ambiguous", "client_ambiguous", r.client_ambiguous},
          {"server_ambiguous", "server_ambiguous", r.server_ambiguous},
          {"failed", "failed", r.failed},
          {"no_first_token", "no_first_token", r.no_first_token},
          {"split", "split", r.requests.size()},
          {"client_malformed_lines", "client_malformed_lines", r.client_malformed},
          {"server_malformed_lines", "server_malformed_lines", r.server_malformed}};
}

ojson join_json(const join_result& r) {
  ojson j;
  ojson counts = ojson::object();
  for (const auto& c : request_counts(r)) counts[c.json] = c.n;
  j["requests"] = std::move(counts);
  auto first = [](const std::vector<std::string>& v) {
    return std::vector<std::string>(v.begin(), v.begin() + std::min(v.size(), join_examples));
  };
  j["unpaired_examples"] = {{"client_only", first(r.client_only_ids)},
                            {"server_only", first(r.server_only_ids)},
                            {"duplicate_ids", first(r.duplicate_id_examples)},
                            {"ambiguous", first(r.ambiguous_id_examples)}};
  if (!r.unreadable_files.empty()) j["unreadable_files"] = r.unreadable_files;
  ojson c;
  c["server_to_client"] = r.clock.server_to_client;
  if (r.clock.error)
    c["error"] = *r.clock.error;
  else
    c["error"] = nullptr;
  c["source"] = r.clock.source;
  if (r.clock_check) {
    c["check"] = {{"low", r.clock_check->low},
                  {"high", r.clock_check->high},
                  {"off_by", r.clock_check->off_by}};
  }
  j["clock"] = std::move(c);
  if (r.client_clocks.aligned()) j["client_clock_alignment"] = alignment_json(r.client_clocks);
  ojson parts;
  for (const join_part& p : r.parts) {
    ojson d = tc::distribution_json(p.d);
    d["negative"] = p.negative;
    d["beyond_error"] = p.beyond_error;
    parts[p.name] = std::move(d);
  }
  j["parts"] = std::move(parts);
  return j;
}

void write_join_csv(std::ostream& out, const join_result& r,
                    const std::vector<double>& percentiles) {
  auto num = [](const std::optional<double>& v) {
    if (!v) return std::string();
    std::ostringstream os;
    os << std::setprecision(17) << *v;
    return os.str();
  };
  out << "part,count,mean,min";
  for (double p : percentiles) out << ',' << tc::percentile_key(p);
  out << ",max,negative,beyond_error\n";
  for (const join_part& p : r.parts) {
    out << p.name << ',' << p.d.count << ',' << num(p.d.mean) << ',' << num(p.d.min);
    for (double q : percentiles) out << ',' << num(p.d.at(q));
    out << ',' << num(p.d.max) << ',' << p.negative << ',' << p.beyond_error << '\n';
  }
  // The request counts, each a row of its own (the value in the count column).
  for (const auto& c : request_counts(r)) out << c.csv << ',' << c.n << '\n';
  if (r.clock_check) out << "clock_off_by_s," << num(r.clock_check->off_by) << '\n';
  if (!r.unreadable_files.empty())  // the count as a row of its own
    out << "unreadable_files," << r.unreadable_files.size() << '\n';
}

}  // namespace

int run_join_command(const arguments& args, std::ostream& out, std::ostream& err) {
  const auto server_file = args.get("server");
  if (!server_file) throw usage_error("join needs --server FILE (the server's trace)");
  if (args.files.empty()) throw usage_error("join needs the client trace(s)");
  std::vector<double> percentiles{50, 90, 95, 99};
  if (auto v = args.get("percentiles")) percentiles = parse_report_percentiles(*v);
  std::string format = "table";
  if (auto v = args.get("format")) {
    if (*v != "table" && *v != "json" && *v != "csv")
      throw usage_error("--format must be table, json or csv");
    format = *v;
  }
  std::optional<double> offset;
  if (auto v = args.get("clock-offset")) {
    char* end = nullptr;
    const double d = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !std::isfinite(d))
      throw usage_error("--clock-offset must be a number of seconds");
    offset = d;
  }
  read_options ro("trace");
  if (auto v = args.get("max-line-bytes")) {
    const auto m = integer_in(*v, 1, std::int64_t{1} << 40);
    if (!m) throw usage_error("--max-line-bytes must be an integer from 1 to 2^40");
    ro.max_line_bytes = static_cast<std::size_t>(*m);
  }
  // The server's trace is needed whole; a client file that cannot be read is left out, named
  // and counted (several client files).
  if (const auto why = unreadable_reason(*server_file))
    throw input_error("cannot open " + *server_file + ": " + *why + " (nothing was reported)");
  const input_files files = readable_inputs(args.files, err);
  const loaded_inputs client = load_inputs(files.readable, ro);
  const loaded_inputs server = load_inputs({*server_file}, ro);
  const bool quiet = args.has("quiet");
  if (client.requests == 0 || server.requests == 0) {
    report_skipped(client, err, quiet);
    report_skipped(server, err, quiet);
    throw input_error(std::string("no valid request in the ") +
                      (client.requests == 0 ? "client" : "server") + " trace");
  }
  join_result r = join_traces(client, server, percentiles, offset);
  r.unreadable_files = files.unreadable;
  if (format == "json")
    out << join_json(r).dump(2) << '\n';
  else if (format == "csv")
    write_join_csv(out, r, percentiles);
  else
    write_join_table(out, r, percentiles);
  if (r.client_clocks.aligned() && !quiet) err << r.client_clocks.to_string();
  auto named = [](const std::vector<std::string>& ids) {
    std::string s;
    for (std::size_t i = 0; i < ids.size() && i < join_examples; ++i)
      s += (i == 0 ? ": " : ", ") + ids[i];
    if (ids.size() > join_examples) s += ", ...";
    return s;
  };
  if (r.client_only)
    err << "warning: " << r.client_only
        << " client requests have no server request of the same id (left out)"
        << named(r.client_only_ids) << '\n';
  if (r.server_only)
    err << "warning: " << r.server_only
        << " server requests have no client request of the same id (left out)"
        << named(r.server_only_ids) << '\n';
  if (r.duplicate_ids)
    err << "warning: " << r.duplicate_ids
        << " requests share their id with another on the same side (left out; "
        << r.client_duplicate_ids << " client, " << r.server_duplicate_ids << " server)"
        << named(r.duplicate_id_examples) << '\n';
  if (r.client_ambiguous + r.server_ambiguous)
    err << "warning: " << r.client_ambiguous + r.server_ambiguous
        << " requests have an id that repeats on the other side (left out, never paired by guess; "
        << r.client_ambiguous << " client, " << r.server_ambiguous << " server)"
        << named(r.ambiguous_id_examples) << '\n';
  if (r.client_malformed || r.server_malformed)
    err << "warning: malformed lines skipped (their requests are unpaired): " << r.client_malformed
        << " client, " << r.server_malformed << " server\n";
  if (r.clock_check) {
    const auto& k = *r.clock_check;
    const double bound = r.clock.error.value_or(0);
    if (k.low > k.high)
      err << "warning: no clock shift fits every split request (the latest send-to-arrival "
             "bound is "
          << std::setprecision(12) << k.low - k.high
          << " s past the earliest return bound): ids paired with the wrong request, or clocks "
             "that drift\n";
    else if (k.off_by > bound)
      err << "warning: the clock shift used (" << std::setprecision(12) << r.clock.server_to_client
          << " s, " << r.clock.source << ") is off by at least " << k.off_by
          << " s: the split requests put it in [" << k.low << ", " << k.high << "] s\n";
  }
  for (const join_part& p : r.parts)
    if (p.beyond_error)
      err << "warning: " << p.name << ": " << p.beyond_error
          << " values are negative beyond the clock error bound: the clocks are not related as "
             "stated (wall clocks that disagree across hosts, or a wrong --clock-offset)\n";
  if (args.has("plot")) {
    std::ostringstream text;
    write_join_table(text, r, percentiles);
    std::vector<plot::split_request> rows;
    rows.reserve(r.requests.size());
    for (const joined_request& q : r.requests)
      rows.push_back({q.id, q.to_server, q.server_ttft, q.ttft_return, q.server_e2e, q.e2e_return});
    std::string cmd = "tokchron-report join --server " + *server_file;
    for (const auto& f : args.files) cmd += " " + f;
    const std::string dir = *args.get("plot");
    // The client's and the server's own runs (canonical) beside the split.
    tc::summary_options o;
    o.percentiles = percentiles;
    std::vector<plot::run_series> runs = {
        plot::summarize_series("client", client.timelines, tc::profiles::canonical, o),
        plot::summarize_series("server", server.timelines, tc::profiles::canonical, o)};
    err << plot::plot_split(rows, std::move(runs), percentiles, "tokchron-report join", cmd,
                            text.str(), dir)
               .to_string(dir)
        << '\n';
  }
  const int a = report_skipped(client, err, quiet);
  const int b = report_skipped(server, err, quiet);
  return std::max({a, b, files.unreadable.empty() ? int(exit_ok) : int(exit_unreadable_files)});
}

}  // namespace tokchron_report
