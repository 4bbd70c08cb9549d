// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#include "bench_cli.hpp"

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "client.hpp"
#include "report/commands.hpp"
#include "report/inputs.hpp"
#include "report/sla.hpp"
#include "report/summaries.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/sla/capacity.hpp"

// The executor's command line (tools/executor/app/cli.hpp): its workload options
// (--users, --rate, --prompt-len, ...) are parsed by the same setters here.
#include "executor/app/cli.hpp"

namespace tokchron_bench {

namespace {

struct usage_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The executor's options that describe the load (the rest configure its scheduler and backend).
const std::vector<std::string>& workload_options() {
  static const std::vector<std::string> names{
      "users",    "think_time", "rate",   "burstiness",   "prompt_len", "output_len",
      "duration", "ramp_up",    "warmup", "max_requests", "seed"};
  return names;
}

struct own_option {
  std::string name, value, help;
  bool report = false;  // handed to tokchron-report
  bool repeatable = false;
};

const std::vector<own_option>& own_options() {
  static const std::vector<own_option> o{
      {"url", "URL", "the server: http://HOST[:PORT][/PREFIX] (default http://127.0.0.1:8000)"},
      {"endpoint", "NAME", "completions (default) or chat"},
      {"model", "NAME", "the model name sent in each request (default: model)"},
      {"api_key", "KEY", "sent as Authorization: Bearer KEY"},
      {"connect_timeout", "SECONDS", "connecting may take this long (default 10; 0: no limit)"},
      {"request_timeout", "SECONDS", "a request may take this long in all (default 0: no limit)"},
      {"idle_timeout", "SECONDS", "the stream may be silent this long (default 60; 0: no limit)"},
      {"threads", "N", "I/O threads, each with its own event loop (default 1)"},
      {"keep_alive", "on|off",
       "keep connections open between requests (default off: a connection per request)"},
      {"busy_poll", "on|off",
       "I/O threads poll instead of sleeping: no wake-up delay, a busy core each (default off)"},
      {"receive_time", "kernel|read",
       "when an SSE event arrived: the kernel's receive stamp of its bytes (default; the read's "
       "time where the kernel gives none) or the time the client read them"},
      {"sweep", "NAME=V1,V2,...", "run once per value of a load option (e.g. rate=2,4,8)"},
      {"id_prefix", "STR",
       "put STR before every request id (X-Request-Id, trace), e.g. host1-, so that several "
       "clients' requests to one server can be joined"},
      {"trace_out", "FILE",
       "write the measured requests as a tokchron trace (JSON Lines); "
       "with --sweep, FILE gets .NAME=V before its extension"},
      {"progress", "WHEN", "auto (default: on a terminal), always or never"},
      {"profile", "NAMES", "report profiles (default all)", true},
      {"slo", "SPEC", "an objective, e.g. 'p99(ttft) < 500ms' (repeatable)", true, true},
      {"goodput", "LIMITS", "goodput limits, e.g. ttft:500ms,tpot:50ms", true},
      {"percentiles", "LIST", "reported percentiles (default 50,90,95,99)", true},
      {"format", "FORMAT", "table (default), csv or json", true},
      {"plot", "DIR", "write the report's pictures to DIR", true},
  };
  return o;
}

std::string underscores(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}
std::string dashes(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

std::string usage() {
  std::ostringstream o;
  o << "usage: tokchron-bench [OPTIONS]\n\n"
       "Load-tests an OpenAI-compatible server with streamed requests and prints "
       "tokchron-report's\n"
       "report of what the client measured (every profile, --slo verdicts, goodput).\n\nTarget, "
       "client and report:\n";
  for (const auto& x : own_options())
    o << "  --" << std::left << std::setw(26) << (dashes(x.name) + " " + x.value) << x.help << '\n';
  o << "\nLoad (as batching-executor's load generator):\n";
  for (const auto& x : batching::run_options())
    if (std::count(workload_options().begin(), workload_options().end(), underscores(x.name)))
      o << "  --" << std::left << std::setw(26) << (dashes(x.name) + " " + x.value_name) << x.help
        << '\n';
  o << "\nAn option given twice is refused, naming it and both values (--slo is a list; one "
       "--sweep).\n";
  o << "\nExit codes: those of tokchron-report (0 ok, 1 no usable request, 3 an objective failed,\n"
       "4 undecided), 2 for a bad command line, 5 when the report was written but some requests\n"
       "failed (counted by kind on standard error, each reason in the trace).\n";
  return o.str();
}

double seconds_of(const std::string& opt, const std::string& v) {
  try {
    const double s = batching::parse_seconds(v);
    if (!(s >= 0) || s > 1e7) throw std::invalid_argument("must be in [0, 1e7] seconds");
    return s;
  } catch (const std::invalid_argument& e) {
    throw usage_error("--" + dashes(opt) + " '" + v + "': " + e.what());
  }
}

clock::duration as_duration(double s) {
  return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s));
}

struct settings {
  batching::run_config run;
  std::string url = "http://127.0.0.1:8000", endpoint = "completions", model = "model", api_key;
  timeouts limits;
  unsigned threads = 1;
  bool keep_alive = false, busy_poll = false;
  receive_time rx_time = receive_time::kernel;
  std::string sweep_name;
  std::vector<std::string> sweep_values;
  std::string trace_out, progress = "auto", id_prefix;
  std::vector<std::string> report_args;
};

settings parse(const std::vector<std::string>& argv) {
  settings s;
  s.run.load.duration_s = 60;
  tokchron_cli::option_once once;
  std::optional<std::string> repeated;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") throw usage_error("");
    if (a.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + a + "'");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    name = underscores(name);
    if (!has_value) {
      if (i + 1 >= argv.size()) throw usage_error("--" + dashes(name) + " needs a value");
      value = argv[++i];
    }
    const auto own = std::find_if(own_options().begin(), own_options().end(),
                                  [&](const own_option& o) { return o.name == name; });
    const bool load = std::count(workload_options().begin(), workload_options().end(), name) > 0;
    if (own == own_options().end() && !load) throw usage_error("unknown option --" + dashes(name));
    // An option given twice is refused (report/option_once.hpp); --slo is a list. One --sweep.
    if (own != own_options().end()
            ? !own->repeatable && bool(repeated = once.note(dashes(name), value))
            : bool(repeated = batching::note_option(once, name, value)))
      throw usage_error(*repeated);
    if (load) {
      try {
        batching::set_option(s.run, name, value);
      } catch (const std::invalid_argument& e) {
        throw usage_error(e.what());
      }
      continue;
    }
    if (own->report) {
      s.report_args.push_back("--" + dashes(name));
      s.report_args.push_back(value);
    } else if (name == "url") {
      s.url = value;
    } else if (name == "endpoint") {
      s.endpoint = value;
    } else if (name == "model") {
      s.model = value;
    } else if (name == "api_key") {
      s.api_key = value;
    } else if (name == "connect_timeout") {
      s.limits.connect = as_duration(seconds_of(name, value));
    } else if (name == "request_timeout") {
      s.limits.request = as_duration(seconds_of(name, value));
    } else if (name == "idle_timeout") {
      s.limits.idle = as_duration(seconds_of(name, value));
    } else if (name == "threads") {
      if (value.empty() || value.size() > 3 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          std::stoi(value) < 1 || std::stoi(value) > 256)
        throw usage_error("--threads '" + value + "': must be an integer in [1, 256]");
      s.threads = static_cast<unsigned>(std::stoi(value));
    } else if (name == "keep_alive" || name == "busy_poll") {
      if (value != "on" && value != "off")
        throw usage_error("--" + dashes(name) + " '" + value + "': expected on or off");
      (name == "keep_alive" ? s.keep_alive : s.busy_poll) = value == "on";
    } else if (name == "receive_time") {
      if (value != "kernel" && value != "read")
        throw usage_error("--receive-time '" + value + "': expected kernel or read");
      s.rx_time = value == "kernel" ? receive_time::kernel : receive_time::read;
    } else if (name == "sweep") {
      const auto eq = value.find('=');
      if (eq == std::string::npos || eq + 1 >= value.size())
        throw usage_error("--sweep '" + value + "': expected NAME=V1,V2,...");
      s.sweep_name = underscores(value.substr(0, eq));
      if (!std::count(workload_options().begin(), workload_options().end(), s.sweep_name))
        throw usage_error("--sweep: '" + s.sweep_name + "' is not a load option");
      std::stringstream list(value.substr(eq + 1));
      for (std::string v; std::getline(list, v, ',');) {
        batching::run_config probe = s.run;  // each value is checked before anything runs
        try {
          batching::set_option(probe, s.sweep_name, v);
        } catch (const std::invalid_argument& e) {
          throw usage_error(std::string("--sweep: ") + e.what());
        }
        s.sweep_values.push_back(v);
      }
    } else if (name == "id_prefix") {
      try {
        check_id_prefix(value);
      } catch (const std::invalid_argument& e) {
        throw usage_error(e.what());
      }
      s.id_prefix = value;
    } else if (name == "trace_out") {
      s.trace_out = value;
    } else if (name == "progress") {
      if (value != "auto" && value != "always" && value != "never")
        throw usage_error("--progress '" + value + "': expected auto, always or never");
      s.progress = value;
    }
  }
  if (!once.seen("profile")) s.report_args.insert(s.report_args.begin(), {"--profile", "all"});
  try {
    (void)parse_target(s.url, s.endpoint, s.model);
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  if (s.run.warmup_s >= s.run.load.duration_s)
    throw usage_error("--warmup must be shorter than --duration");
  return s;
}

std::string point_path(const std::string& file, const std::string& name, const std::string& v) {
  const auto slash = file.rfind('/');
  const auto dot = file.rfind('.');
  const std::string tag = "." + name + "=" + v;
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return file + tag;
  return file.substr(0, dot) + tag + file.substr(dot);
}

// The capacity planner over a sweep (tokchron::plan_capacity, as `batching-executor --sweep`
// uses it): each point's output throughput and its --slo verdicts under the canonical profile,
// judged by tokchron-report's own code on the point's trace (the SLA options as the report
// read them). Nothing is printed without --slo. Returns false when a trace cannot be read.
bool write_capacity_plan(std::ostream& out, std::ostream& err, const settings& s,
                         const std::vector<std::string>& points,
                         const std::vector<std::string>& traces) {
  namespace tr = tokchron_report;
  std::vector<std::string> args = s.report_args;
  args.push_back(traces.front());
  tr::sla_settings sla;
  tr::report_settings rs;
  try {
    const tr::arguments a = tr::parse_arguments(args);
    sla = tr::sla_settings_from(a);
    rs = tr::settings_from(a);
  } catch (const std::exception& e) {  // the report said so already, with the usage
    err << "tokchron-bench: capacity planner: " << e.what() << '\n';
    return false;
  }
  if (sla.objectives.objectives.empty()) return true;
  rs.profiles = {&tc::profiles::canonical};
  rs.keep_requests = false;
  std::vector<tc::load_point> pts;
  for (std::size_t i = 0; i < points.size(); ++i) {
    tc::load_point p;
    p.name = "#" + std::to_string(i + 1);
    p.parameters = {{dashes(s.sweep_name), points[i]}};
    try {
      const tr::loaded_inputs in = tr::load_inputs({traces[i]});
      if (in.timelines.empty()) throw std::runtime_error("no valid request in " + traces[i]);
      p.throughput = tr::summarize_all(in, rs).front().output_throughput.value_or(0.0);
      p.verdicts =
          tr::slo_distributions_of(in, tc::profiles::canonical).evaluate(sla.objectives, sla.eval);
    } catch (const std::exception& e) {
      err << "tokchron-bench: capacity planner: " << e.what() << '\n';
      return false;
    }
    pts.push_back(std::move(p));
  }
  const tc::capacity_plan plan = tc::plan_capacity(pts);
  out << "\nCapacity planner (most output tokens/s that meets the SLA, canonical profile):\n";
  if (plan.best)
    out << "  choice: " << pts[*plan.best].name << ' ' << dashes(s.sweep_name) << '='
        << points[*plan.best] << " at " << std::fixed << std::setprecision(1)
        << pts[*plan.best].throughput << std::defaultfloat << " output tok/s\n";
  out << plan.to_string(pts);
  return true;
}

// The worse of two exit codes: an objective that failed (3), then one undecided (4), then no
// usable request (1), then failed requests (5).
int worse(int a, int b) {
  for (const int code : {3, 4, 1, exit_failed_requests})
    if (a == code || b == code) return code;
  return a != 0 ? a : b;
}

}  // namespace

int run_cli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
            bool terminal) {
  settings s;
  try {
    s = parse(argv);
  } catch (const usage_error& e) {
    if (*e.what() == '\0') {
      out << usage();
      return 0;
    }
    err << "tokchron-bench: " << e.what() << "\n\n" << usage();
    return 2;
  }
  std::vector<std::string> points = s.sweep_values;
  if (points.empty()) points.emplace_back();
  int worst = 0;
  std::vector<std::string> traces, temporaries;  // each point's trace (removed at the end)
  struct remove_at_exit {
    std::vector<std::string>& files;
    ~remove_at_exit() {
      for (const auto& f : files) std::remove(f.c_str());
    }
  } cleanup{temporaries};
  std::uint64_t next_request_id = 0;  // request ids continue from one sweep point to the next
  for (const std::string& v : points) {
    batching::run_config rc = s.run;
    if (!v.empty()) {
      batching::set_option(rc, s.sweep_name, v);
      out << "== " << dashes(s.sweep_name) << " = " << v << " ==\n";
    }
    load_options lo;
    lo.tgt = parse_target(s.url, s.endpoint, s.model);
    lo.tgt.api_key = s.api_key;
    lo.work = rc.load;
    lo.warmup_s = rc.warmup_s;
    lo.limits = s.limits;
    lo.threads = s.threads;
    lo.keep_alive = s.keep_alive;
    lo.busy_poll = s.busy_poll;
    lo.rx_time = s.rx_time;
    lo.first_request_id = next_request_id;
    lo.id_prefix = s.id_prefix;
    const bool show = s.progress == "always" || (s.progress == "auto" && terminal);
    if (show)
      lo.on_progress = [&err](const progress& p) {
        err << "\r" << std::fixed << std::setprecision(1) << p.elapsed_s << " s: sent " << p.sent
            << ", finished " << p.finished << ", failed " << p.failed << ", in flight "
            << p.in_flight << "   " << std::flush;
      };
    load_result r;
    try {
      r = run_load(lo);
    } catch (const std::exception& e) {
      err << "tokchron-bench: " << e.what() << '\n';
      return 1;
    }
    if (show) err << '\n';
    next_request_id += r.requests.size();
    // Failures by reason, most frequent first (the trace keeps each one's reason).
    // With them, the reads the kernel did not stamp (timed by the read: say how many), and how
    // far the client fell behind its streams (each request's longest wait in the kernel).
    std::map<std::string, std::uint64_t> reasons;
    std::map<std::string, std::uint64_t> kinds;  // failure_name -> count
    std::uint64_t reads = 0, stamped = 0, measured = 0, failed = 0;
    tc::exact_quantiles<double> waits;
    for (const auto& o : r.requests) {
      if (!o.measured) continue;
      ++measured;
      if (!o.error.empty()) {
        ++failed;
        ++reasons[o.error];
        ++kinds[failure_name(o.failure)];
      }
      reads += o.reads;
      stamped += o.kernel_timed_reads;
      if (o.kernel_timed_reads > 0) (void)waits.add(tc::to_seconds(o.longest_read_wait) * 1e6);
    }
    if (s.rx_time == receive_time::kernel && stamped < reads)
      err << "tokchron-bench: " << reads - stamped << " of " << reads
          << " reads carried no kernel receive stamp and were timed by the read\n";
    if (const auto p50 = waits.quantile(0.5, tc::quantile_method::nearest_rank)) {
      const auto us = [](double micros) {
        std::ostringstream o;
        o << std::fixed << std::setprecision(micros < 100 ? 1 : 0) << micros << " us";
        return o.str();
      };
      err << "tokchron-bench: each request's longest wait of its bytes in the kernel before the "
             "client read them: median "
          << us(*p50) << ", P99 " << us(*waits.quantile(0.99, tc::quantile_method::nearest_rank))
          << ", max " << us(*waits.quantile(1.0, tc::quantile_method::nearest_rank))
          << " (a wait near the gap between a stream's events can give an event the next one's "
             "time)\n";
    }
    if (!reasons.empty()) {
      std::vector<std::pair<std::uint64_t, std::string>> top;
      for (const auto& [why, n] : reasons) top.emplace_back(n, why);
      std::sort(top.rbegin(), top.rend());
      err << "tokchron-bench: " << failed << " of " << measured << " requests failed, by kind:";
      for (const auto& [kind, n] : kinds) err << ' ' << kind << ' ' << n;
      err << "\ntokchron-bench: failed requests by reason:\n";
      for (std::size_t i = 0; i < top.size() && i < 5; ++i)
        err << "  " << top[i].first << "  " << top[i].second << '\n';
      if (top.size() > 5)
        err << "  ... and " << top.size() - 5 << " more reasons (each request's in the trace)\n";
    }
    std::string path = s.trace_out.empty()
                           ? std::string()
                           : (v.empty() ? s.trace_out : point_path(s.trace_out, s.sweep_name, v));
    if (path.empty()) {
      char tmpl[] = "/tmp/tokchron-bench-XXXXXX";
      const int fd = mkstemp(tmpl);
      if (fd < 0) {
        err << "tokchron-bench: cannot create a temporary trace file\n";
        return 1;
      }
      close(fd);
      path = tmpl;
      temporaries.push_back(path);
    }
    traces.push_back(path);
    {
      std::ofstream f(path);
      for (const auto& rec : to_trace(r)) tc::write_trace_line(f, rec);
      if (!f) {
        err << "tokchron-bench: cannot write " << path << '\n';
        return 1;
      }
    }
    std::vector<std::string> args = s.report_args;
    if (!v.empty())  // each point's pictures in a folder of their own: DIR/NAME=V
      for (std::size_t i = 0; i + 1 < args.size(); i += 2)
        if (args[i] == "--plot") args[i + 1] += "/" + s.sweep_name + "=" + v;
    args.push_back(path);
    int rc_report = tokchron_report::run(args, out, err);
    if (rc_report == 0 && failed > 0) rc_report = exit_failed_requests;
    worst = worse(worst, rc_report);
  }
  // Over a sweep the report ends with the planner's pick (JSON output stays one document per
  // point: the planner then goes to standard error).
  if (!s.sweep_values.empty()) {
    bool json = false;
    for (std::size_t i = 0; i + 1 < s.report_args.size(); i += 2)
      json = json || (s.report_args[i] == "--format" && s.report_args[i + 1] == "json");
    if (!write_capacity_plan(json ? err : out, err, s, points, traces)) worst = worse(worst, 1);
  }
  return worst;
}

}  // namespace tokchron_bench
