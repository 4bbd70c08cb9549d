// SPDX-License-Identifier: MIT
#include "report/options.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>

#include "cli/option_once.hpp"
#include "report/commands.hpp"

namespace tokchron_report {

std::string exit_code_table() {
  return "exit codes:\n"
         "  0  the report was written; every input line was read\n"
         "  1  malformed lines were skipped (the report was written, the lines listed),\n"
         "     or some of several input files could not be read (the report of the others\n"
         "     was written, each named on stderr and counted as unreadable_files),\n"
         "     or no input could be read or held no valid request (no report),\n"
         "     or traces could not be put on one clock (anchored and unanchored files;\n"
         "     join: no clock anchor and no --clock-offset; no report),\n"
         "     or the pictures could not be written (--plot; the report was written)\n"
         "  2  usage error (unknown option, bad value, an option the command does not take)\n"
         "  3  an objective failed (--slo), or claims are inconsistent (audit)\n"
         "  4  no objective failed, but one is undecided (too few samples)\n"
         "  when several apply: 3, else 4, else 1\n";
}

const std::vector<option_spec>& options() {
  static const std::vector<option_spec> all = {
      {"profile",
       true,
       "NAME|all|A,B",
       "profile(s) to report (default canonical); 'all' gives one column per profile",
       {"summary"}},
      {"percentiles",
       true,
       "LIST",
       "percentiles in percent, e.g. 50,90,95,99,99.9 (default 50,90,95,99)",
       {"summary", "join"}},
      {"inclusion",
       true,
       "completed|scheduled|all",
       "which requests the statistics and token totals count, family by family, as a server's "
       "live metrics under the same live_options::inclusion count them: completed (stop, "
       "length), scheduled (reached the engine or produced a token, whatever the outcome), all; "
       "default: scheduled for canonical (the live metrics' default), and for a tool's profile "
       "the requests its tool counts as completed",
       {"summary"}},
      {"gpus", true, "N", "GPUs that served the run: adds per-GPU throughputs", {"summary"}},
      {"format",
       true,
       "table|json|csv",
       "output format (default table; audit: table or json)",
       {"summary", "join", "audit"}},
      {"input",
       true,
       "auto|trace|vllm",
       "input kind: tokchron JSONL trace or vLLM --save-detailed JSON (default auto)",
       {"summary"}},
      {"duration",
       true,
       "SECONDS",
       "override the run duration (default: from the events)",
       {"summary"}},
      {"threads",
       true,
       "N",
       "threads: one reads while another evaluates (default: the machine's cores; 1: one)",
       {"summary"}},
      {"max-line-bytes",
       true,
       "N",
       "longest trace line (a vLLM result file: the whole file) accepted (default 16777216); "
       "a longer one stops the read (exit 1)",
       {"summary", "join"}},
      {"quiet",
       false,
       "",
       "do not list skipped lines on stderr (still counted)",
       {"summary", "join"}},
      {"plot",
       true,
       "DIR",
       "also draw the pictures (gnuplot: data, scripts, SVG/PNG) and DIR/index.html (summary: "
       "with the --slo thresholds and --goodput limits; join: each request's split)",
       {"summary", "join"}},
      {"slo",
       true,
       "SPEC",
       "objective(s) to judge, e.g. 'p95(ttft) < 1.5s' (repeatable); exit 3 if one fails, 4 if "
       "one is undecided",
       {"summary"},
       true},
      {"slo-confidence",
       true,
       "C",
       "one-sided confidence of each verdict's bounds (default 0.95; needs --slo)",
       {"summary"}},
      {"goodput",
       true,
       "LIMITS",
       "per-request limits, e.g. ttft:1.5s,tpot:100ms: goodput and attainment",
       {"summary"}},
      {"server",
       true,
       "FILE",
       "the server's trace (batching-executor serve --trace-out) to join the client traces with",
       {"join"}},
      {"clock-offset",
       true,
       "SECONDS",
       "server time + SECONDS = client time, instead of the traces' clock anchors",
       {"join"}},
      {"help", false, "", "print this help", {"summary", "join", "audit"}},
  };
  return all;
}

arguments parse_arguments(const std::vector<std::string>& argv) {
  arguments a;
  tokchron_cli::option_once once;
  std::size_t i = 0;
  if (!argv.empty())
    for (const command& c : commands())
      if (argv[0] == c.name) {
        a.command = c.name;
        i = 1;
      }
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      for (++i; i < argv.size(); ++i) a.files.push_back(argv[i]);
      break;
    }
    if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      std::string name = arg.substr(2), val;
      bool has_val = false;
      if (const auto eq = name.find('='); eq != std::string::npos) {
        val = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_val = true;
      }
      const auto spec = std::find_if(options().begin(), options().end(),
                                     [&](const option_spec& o) { return o.name == name; });
      if (spec == options().end()) throw usage_error("unknown option --" + name);
      if (std::find(spec->commands.begin(), spec->commands.end(), a.command) ==
          spec->commands.end())
        throw usage_error("--" + name + " does not apply to the " + a.command + " command");
      if (spec->takes_value && !has_val) {
        if (i + 1 >= argv.size()) throw usage_error("--" + name + " needs a value");
        val = argv[++i];
      } else if (!spec->takes_value && has_val) {
        throw usage_error("--" + name + " takes no value");
      }
      if (!spec->repeatable)
        if (auto repeated = once.note(name, val)) throw usage_error(*repeated);
      a.values[name].push_back(val);
    } else {
      a.files.push_back(arg);
    }
  }
  return a;
}

std::string usage() {
  std::ostringstream os;
  os << "usage: tokchron-report [COMMAND] [OPTIONS] FILE...\n"
        "Reads request traces (tokchron JSONL, or a vLLM --save-detailed result) and prints\n"
        "latency and throughput metrics as each benchmark tool defines them.\n\ncommands:\n";
  for (const command& c : commands())
    os << "  " << c.name << std::string(c.name.size() < 9 ? 9 - c.name.size() : 1, ' ') << c.help
       << '\n';
  // Each command's options; any other option given to it is refused.
  for (const command& c : commands()) {
    os << "\n" << c.name << " options:\n";
    for (const option_spec& o : options()) {
      if (std::find(o.commands.begin(), o.commands.end(), c.name) == o.commands.end()) continue;
      const std::string lhs = "--" + o.name + (o.takes_value ? " " + o.value_name : "");
      os << "  " << lhs << std::string(lhs.size() < 28 ? 28 - lhs.size() : 1, ' ') << o.help
         << '\n';
    }
  }
  os << "\nAn option given twice is refused, naming it and both values; --slo is a list.\n";
  os << "\nprofiles:";
  for (const tc::profile* p : tc::all_profiles()) os << ' ' << p->name;
  os << "\n\n" << exit_code_table();
  return os.str();
}

std::vector<const tc::profile*> select_profiles(const std::string& spec) {
  std::vector<const tc::profile*> out;
  if (spec == "all") {
    for (const tc::profile* p : tc::all_profiles()) out.push_back(p);
    return out;
  }
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string name = spec.substr(pos, comma - pos);
    const tc::profile* p = tc::find_profile(name);
    if (!p) {
      std::string known;
      for (const tc::profile* q : tc::all_profiles()) known += " " + std::string(q->name);
      throw usage_error("unknown profile '" + name + "' (known:" + known + ", all)");
    }
    if (std::find(out.begin(), out.end(), p) != out.end())
      throw usage_error("--profile names '" + name + "' twice");
    out.push_back(p);
    pos = comma + 1;
  }
  return out;
}

std::vector<double> parse_report_percentiles(const std::string& spec) {
  std::vector<double> out;
  try {
    out = tc::parse_percentiles(spec);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("--percentiles: ") + e.what());
  }
  std::set<std::string> keys;
  for (double& p : out) {
    if (p == 0) p = 0.0;  // -0 is 0 (and is named p0, not p-0)
    const std::string key = tc::percentile_key(p);
    if (std::strtod(key.c_str() + 1, nullptr) != p) {
      std::ostringstream os;
      os.precision(17);
      os << p;
      throw usage_error("--percentiles: " + os.str() +
                        " cannot be named exactly in the report (it would print as " + key +
                        "); use at most 17 decimals");
    }
    if (!keys.insert(key).second)
      throw usage_error("--percentiles: " + key.substr(1) + " is given twice");
  }
  return out;
}

unsigned report_settings::default_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

std::optional<long long> integer_in(const std::string& text, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi) return std::nullopt;
  return v;
}

report_settings settings_from(const arguments& args) {
  report_settings s;
  if (auto v = args.get("profile")) s.profiles = select_profiles(*v);
  if (auto v = args.get("percentiles")) s.percentiles = parse_report_percentiles(*v);
  if (auto v = args.get("inclusion")) {
    s.inclusion = tc::parse_inclusion(*v);
    if (!s.inclusion) throw usage_error("--inclusion must be completed, scheduled or all");
  }
  if (auto v = args.get("gpus")) {
    const auto g = integer_in(*v, 1, 1000000);
    if (!g) throw usage_error("--gpus must be a positive integer");
    s.gpus = static_cast<unsigned>(*g);
  }
  if (auto v = args.get("duration")) {
    char* end = nullptr;
    const double d = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(std::isfinite(d) && d > 0))
      throw usage_error("--duration must be a positive number of seconds");
    s.duration = d;
  }
  if (auto v = args.get("threads")) {
    const auto t = integer_in(*v, 1, 1024);
    if (!t) throw usage_error("--threads must be an integer from 1 to 1024");
    s.threads = static_cast<unsigned>(*t);
  }
  if (auto v = args.get("max-line-bytes")) {
    const auto m = integer_in(*v, 1, std::int64_t{1} << 40);
    if (!m) throw usage_error("--max-line-bytes must be an integer from 1 to 2^40");
    s.max_line_bytes = static_cast<std::size_t>(*m);
  }
  if (auto v = args.get("format")) {
    if (*v != "table" && *v != "json" && *v != "csv")
      throw usage_error("--format must be table, json or csv");
    s.format = *v;
  }
  if (auto v = args.get("input")) {
    if (*v != "auto" && *v != "trace" && *v != "vllm")
      throw usage_error("--input must be auto, trace or vllm");
    s.input = *v;
  }
  return s;
}

}  // namespace tokchron_report
