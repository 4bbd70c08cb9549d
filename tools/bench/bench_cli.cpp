// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#include "bench_cli.hpp"

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cli/option_once.hpp"
#include "client.hpp"
#include "loadgen/options.hpp"
#include "loadgen/random.hpp"
#include "otel_export.hpp"
#include "report/commands.hpp"
#include "report/inputs.hpp"
#include "report/sla.hpp"
#include "report/summaries.hpp"
#include "scrape.hpp"
#include "sessions.hpp"
#include "sweep.hpp"
#include "tls.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/sla/capacity.hpp"
#include "workloads.hpp"

namespace tokchron_bench {

namespace {

struct usage_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The workload options (tools/loadgen, batching-executor's too) that describe a client's load
// (the rest shape what only a simulated server does with a request).
const std::vector<std::string>& workload_options() {
  static const std::vector<std::string> names{
      "users",    "think_time", "rate",   "burstiness",   "prompt_len", "output_len",
      "duration", "ramp_up",    "warmup", "max_requests", "seed",       "shared_prefix"};
  return names;
}

struct own_option {
  std::string name, value, help;
  bool report = false;  // handed to tokchron-report
  bool repeatable = false;
};

const std::vector<own_option>& own_options() {
  static const std::vector<own_option> o{
      {"url", "URL", "the server: http[s]://HOST[:PORT][/PREFIX] (default http://127.0.0.1:8000)"},
      {"endpoint", "NAME", "completions (default) or chat"},
      {"model", "NAME", "the model name sent in each request (default: model)"},
      {"api_key", "KEY", "sent as Authorization: Bearer KEY"},
      {"header", "'NAME: VALUE'",
       "another request header (repeatable); headers the client owns are refused", false, true},
      {"ca_cert", "FILE",
       "https: trust the certificates in FILE (PEM) instead of the system's store"},
      {"tls_verify", "on|off",
       "https: check the server's certificate and name (default on; off: take any)"},
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
      {"sweep_points", "N",
       "--rate sweep: the open-loop rates run after the synchronous and throughput points "
       "(default 8; GuideLLM's --rate N+2)"},
      {"repeat", "K", "run each point K times; the summary gives t intervals (default 1)"},
      {"confidence", "C", "the level of --repeat's intervals, in (0, 1) (default 0.95)"},
      {"id_prefix", "STR",
       "put STR before every request id (X-Request-Id, trace), e.g. host1-, so that several "
       "clients' requests to one server can be joined"},
      {"trace_out", "FILE",
       "write the measured requests as a tokchron trace (JSON Lines); one file per run: "
       "with --sweep or --rate sweep, FILE gets .NAME=V before its extension, with --repeat "
       "also .runK after that tag (.run=K without a sweep)"},
      {"otlp", "FILE",
       "write OpenTelemetry's GenAI client metrics of the measured requests (operation "
       "duration, token usage, time to first chunk, time per output chunk) as OTLP/JSON; "
       "one file per run, named as --trace-out's"},
      {"otlp_provider", "NAME",
       "--otlp: the gen_ai.provider.name attribute (default openai: the API spoken)"},
      {"scrape", "URL",
       "read the server's Prometheus metrics (e.g. http://HOST:PORT/metrics) before and after "
       "each run and report what changed beside the client's numbers"},
      {"replay", "FILE",
       "send the requests of a recorded trace at their recorded times with their recorded "
       "lengths (tokchron's trace, Mooncake's JSON Lines, BurstGPT's CSV)"},
      {"replay_format", "NAME",
       "the --replay file's format: auto (default), tokchron, mooncake "
       "or burstgpt"},
      {"replay_speed", "X",
       "--replay: the recorded gaps divided by X (default 1; 2: twice as fast)"},
      {"prefix_groups", "N",
       "request i's prompt starts with the --shared-prefix tokens of group i mod N (default 1 "
       "with --shared-prefix), then words of its own"},
      {"sessions", "FILE",
       "multi-turn sessions from FILE (JSON Lines: AIPerf multi_turn, vLLM conversations, or a "
       "turn a line with session_id); each turn carries the conversation with the live replies"},
      {"session_turns", "DIST",
       "synthetic sessions of DIST turns (e.g. fixed:4), user messages of --prompt-len words"},
      {"turn_think", "DIST",
       "sessions: think time between a reply's end and the next turn (default fixed:0; a file "
       "turn's delay wins)"},
      {"session_header", "NAME",
       "sessions: the affinity header naming the session (default x-session-id; none: not sent)"},
      {"max_sessions", "N", "sessions: start at most N sessions (default: every session, 0)"},
      {"session_log", "FILE",
       "sessions: one JSON line per turn sent (session, turn, request id, user words, reply)"},
      {"progress", "WHEN", "auto (default: on a terminal), always or never"},
      {"give_up", "SECONDS",
       "stop sending when no stream received a byte for this long while requests failed "
       "(default 30; 0: never); the run then exits 6"},
      {"profile", "NAMES", "report profiles (default all)", true},
      {"slo", "SPEC", "an objective, e.g. 'p99(ttft) < 500ms' (repeatable)", true, true},
      {"goodput", "LIMITS", "goodput limits, e.g. ttft:500ms,tpot:50ms", true},
      {"percentiles", "LIST", "reported percentiles (default 50,90,95,99)", true},
      {"format", "FORMAT", "table (default), csv or json", true},
      {"plot", "DIR", "write the report's pictures to DIR", true},
  };
  return o;
}

std::string usage() {
  std::ostringstream o;
  o << "usage: tokchron-bench [OPTIONS]\n\n"
       "Load-tests an OpenAI-compatible server with streamed requests and prints "
       "tokchron-report's\n"
       "report of what the client measured (every profile, --slo verdicts, goodput).\n\nTarget, "
       "client and report:\n";
  for (const auto& x : own_options())
    o << "  --" << std::left << std::setw(26)
      << (tokchron_loadgen::option_dashes(x.name) + " " + x.value) << x.help << '\n';
  o << "\nLoad (as batching-executor's load generator):\n";
  for (const auto& x : tokchron_loadgen::workload_options())
    if (std::count(workload_options().begin(), workload_options().end(),
                   tokchron_loadgen::option_name(x.name)))
      o << "  --" << std::left << std::setw(26)
        << (tokchron_loadgen::option_dashes(x.name) + " " + x.value_name) << x.help << '\n';
  o << "\nAn option given twice is refused, naming it and both values (--slo is a list; one "
       "--sweep).\n";
  o << "\nExit codes: those of tokchron-report (0 ok, 1 no usable request, 3 an objective failed,\n"
       "4 undecided), 2 for a bad command line, 5 when the report was written but some requests\n"
       "failed (counted by kind on standard error, each reason in the trace), 6 when the run\n"
       "stopped sending early (--give-up).\n";
  return o.str();
}

double seconds_of(const std::string& opt, const std::string& v) {
  try {
    const double s = tokchron_loadgen::parse_seconds(v);
    if (!(s >= 0) || s > 1e7 || (s > 0 && s < 1e-9))
      throw std::invalid_argument(
          "must be 0 or in [1e-9, 1e7] seconds (under 1 ns would be 0: no limit)");
    return s;
  } catch (const std::invalid_argument& e) {
    throw usage_error("--" + tokchron_loadgen::option_dashes(opt) + " '" + v + "': " + e.what());
  }
}

clock::duration as_duration(double s) {
  return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s));
}

// The load of a run: the workload and its warm-up.
struct load_config {
  tokchron_loadgen::workload load;
  double warmup_s = 0;
};
void set_option(load_config& c, std::string_view name, std::string_view value) {
  tokchron_loadgen::set_workload_option(c.load, c.warmup_s, name, value);
}

struct settings {
  load_config run;
  std::string url = "http://127.0.0.1:8000", endpoint = "completions", model = "model", api_key;
  timeouts limits;
  unsigned threads = 1;
  bool keep_alive = false, busy_poll = false;
  receive_time rx_time = receive_time::kernel;
  std::string sweep_name;
  std::vector<std::string> sweep_values;
  std::string trace_out, progress = "auto", id_prefix, scrape;
  std::string otlp, otlp_provider = "openai";
  clock::duration give_up = std::chrono::seconds(30);
  std::vector<std::pair<std::string, std::string>> headers;
  tls_options tls;
  std::vector<std::string> report_args;
  std::string replay;  // the trace to replay (empty: the load generator's draws)
  std::optional<replay_format> replay_as;
  double replay_speed = 1;
  std::uint32_t prefix_groups = 0;  // 0: no --prefix-groups
  bool duration_given = false;
  // Sessions (sessions.hpp): the file, or synthetic sessions of `session_turns` turns.
  std::string sessions, session_log;
  std::optional<tokchron_loadgen::distribution> session_turns;
  tokchron_loadgen::distribution turn_think =
      tokchron_loadgen::distribution::fixed(0, tokchron_loadgen::quantity::seconds);
  std::string session_header = "x-session-id";
  std::uint64_t max_sessions = 0;
  bool rate_sweep = false;  // --rate sweep (sweep.hpp)
  unsigned sweep_points = 8, repeat = 1;
  double confidence = 0.95;
};

// An integer option in [1, most].
unsigned count_of(const std::string& opt, const std::string& v, unsigned most) {
  const auto d = tokchron_loadgen::parse_decimal(v);
  if (!d || !(*d >= 1) || *d > most || *d != static_cast<double>(static_cast<unsigned>(*d)))
    throw usage_error("--" + tokchron_loadgen::option_dashes(opt) + " '" + v +
                      "': must be an integer in [1, " + std::to_string(most) + "]");
  return static_cast<unsigned>(*d);
}

// A positive decimal number (--replay-speed).
double positive_of(const std::string& opt, const std::string& v, double most) {
  const auto d = tokchron_loadgen::parse_decimal(v);
  if (!d || !(*d > 0) || *d > most)
    throw usage_error("--" + tokchron_loadgen::option_dashes(opt) + " '" + v +
                      "': must be a number in (0, " + std::to_string(static_cast<long long>(most)) +
                      "]");
  return *d;
}

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
    name = tokchron_loadgen::option_name(name);
    if (!has_value) {
      if (i + 1 >= argv.size())
        throw usage_error("--" + tokchron_loadgen::option_dashes(name) + " needs a value");
      value = argv[++i];
    }
    const auto own = std::find_if(own_options().begin(), own_options().end(),
                                  [&](const own_option& o) { return o.name == name; });
    const bool load = std::count(workload_options().begin(), workload_options().end(), name) > 0;
    if (own == own_options().end() && !load)
      throw usage_error("unknown option --" + tokchron_loadgen::option_dashes(name));
    // An option given twice is refused (cli/option_once.hpp); --slo is a list. One --sweep.
    if (own != own_options().end()
            ? !own->repeatable &&
                  bool(repeated = once.note(tokchron_loadgen::option_dashes(name), value))
            : bool(repeated = once.note(tokchron_loadgen::option_dashes(name), value)))
      throw usage_error(*repeated);
    if (load && name == "rate" && value == "sweep") {
      s.rate_sweep = true;
      continue;
    }
    if (load) {
      try {
        set_option(s.run, name, value);
      } catch (const std::invalid_argument& e) {
        throw usage_error(e.what());
      }
      continue;
    }
    if (own->report) {
      s.report_args.push_back("--" + tokchron_loadgen::option_dashes(name));
      s.report_args.push_back(value);
    } else if (name == "url") {
      s.url = value;
    } else if (name == "endpoint") {
      s.endpoint = value;
    } else if (name == "model") {
      s.model = value;
    } else if (name == "api_key") {
      s.api_key = value;
    } else if (name == "header") {
      try {
        s.headers.push_back(parse_header(value));
      } catch (const std::invalid_argument& e) {
        throw usage_error(e.what());
      }
    } else if (name == "ca_cert") {
      s.tls.ca_file = value;
    } else if (name == "tls_verify") {
      if (value != "on" && value != "off")
        throw usage_error("--tls-verify '" + value + "': expected on or off");
      s.tls.verify = value == "on";
    } else if (name == "connect_timeout") {
      s.limits.connect = as_duration(seconds_of(name, value));
    } else if (name == "request_timeout") {
      s.limits.request = as_duration(seconds_of(name, value));
    } else if (name == "idle_timeout") {
      s.limits.idle = as_duration(seconds_of(name, value));
    } else if (name == "give_up") {
      s.give_up = as_duration(seconds_of(name, value));
    } else if (name == "threads") {
      if (value.empty() || value.size() > 3 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          std::stoi(value) < 1 || std::stoi(value) > 256)
        throw usage_error("--threads '" + value + "': must be an integer in [1, 256]");
      s.threads = static_cast<unsigned>(std::stoi(value));
    } else if (name == "keep_alive" || name == "busy_poll") {
      if (value != "on" && value != "off")
        throw usage_error("--" + tokchron_loadgen::option_dashes(name) + " '" + value +
                          "': expected on or off");
      (name == "keep_alive" ? s.keep_alive : s.busy_poll) = value == "on";
    } else if (name == "receive_time") {
      if (value != "kernel" && value != "read")
        throw usage_error("--receive-time '" + value + "': expected kernel or read");
      s.rx_time = value == "kernel" ? receive_time::kernel : receive_time::read;
    } else if (name == "sweep") {
      const auto eq = value.find('=');
      if (eq == std::string::npos || eq + 1 >= value.size())
        throw usage_error("--sweep '" + value + "': expected NAME=V1,V2,...");
      s.sweep_name = tokchron_loadgen::option_name(value.substr(0, eq));
      if (!std::count(workload_options().begin(), workload_options().end(), s.sweep_name))
        throw usage_error("--sweep: '" + s.sweep_name + "' is not a load option");
      std::stringstream list(value.substr(eq + 1));
      for (std::string v; std::getline(list, v, ',');) {
        load_config probe = s.run;  // each value is checked before anything runs
        try {
          set_option(probe, s.sweep_name, v);
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
    } else if (name == "scrape") {
      try {
        (void)parse_scrape_url(value);
      } catch (const std::invalid_argument& e) {
        throw usage_error(e.what());
      }
      s.scrape = value;
    } else if (name == "sweep_points") {
      s.sweep_points = count_of(name, value, 100);
    } else if (name == "repeat") {
      s.repeat = count_of(name, value, 1000);
    } else if (name == "confidence") {
      const auto d = tokchron_loadgen::parse_decimal(value);
      if (!d || !(*d > 0 && *d < 1))
        throw usage_error("--confidence '" + value + "': must be a number in (0, 1)");
      s.confidence = *d;
    } else if (name == "trace_out") {
      s.trace_out = value;
    } else if (name == "otlp") {
      s.otlp = value;
    } else if (name == "otlp_provider") {
      s.otlp_provider = value;
    } else if (name == "replay") {
      s.replay = value;
    } else if (name == "replay_format") {
      if (value != "auto" && !(s.replay_as = replay_format_named(value)))
        throw usage_error("--replay-format '" + value +
                          "': expected auto, tokchron, mooncake or burstgpt");
    } else if (name == "replay_speed") {
      s.replay_speed = positive_of(name, value, 1e6);
    } else if (name == "prefix_groups") {
      const auto d = tokchron_loadgen::parse_decimal(value);
      if (!d || *d < 1 || *d > max_prefix_groups ||
          *d != static_cast<double>(static_cast<std::uint32_t>(*d)))
        throw usage_error("--prefix-groups '" + value + "': must be an integer in [1, " +
                          std::to_string(max_prefix_groups) + "]");
      s.prefix_groups = static_cast<std::uint32_t>(*d);
    } else if (name == "sessions") {
      s.sessions = value;
    } else if (name == "session_log") {
      s.session_log = value;
    } else if (name == "session_turns" || name == "turn_think") {
      try {
        const auto d = tokchron_loadgen::distribution::parse(
            value, name == "turn_think" ? tokchron_loadgen::quantity::seconds
                                        : tokchron_loadgen::quantity::output_length);
        if (name == "turn_think")
          s.turn_think = d;
        else
          s.session_turns = d;
      } catch (const std::invalid_argument& e) {
        throw usage_error("--" + tokchron_loadgen::option_dashes(name) + " '" + value +
                          "': " + e.what());
      }
    } else if (name == "session_header") {
      if (value == "none") {
        s.session_header.clear();
      } else {
        // A header name by --header's rules (a ':' would end the name early: refused first).
        if (value.find(':') != std::string::npos)
          throw usage_error("--session-header '" + value + "': a header name holds no ':'");
        try {
          s.session_header = parse_header(value + ": x").first;
        } catch (const std::invalid_argument& e) {
          const std::string why = e.what();
          throw usage_error("--session-header '" + value + "': " + why.substr(why.find("': ") + 3));
        }
      }
    } else if (name == "max_sessions") {
      const auto d = tokchron_loadgen::parse_decimal(value);
      if (!d || *d < 1 || *d > 1e12 || *d != std::floor(*d))
        throw usage_error("--max-sessions '" + value + "': must be an integer in [1, 1e12]");
      s.max_sessions = static_cast<std::uint64_t>(*d);
    } else if (name == "progress") {
      if (value != "auto" && value != "always" && value != "never")
        throw usage_error("--progress '" + value + "': expected auto, always or never");
      s.progress = value;
    }
  }
  if (!once.seen("profile")) s.report_args.insert(s.report_args.begin(), {"--profile", "all"});
  s.duration_given = once.seen("duration");
  if (s.run.load.shared_prefix > max_replay_length)
    throw usage_error("--shared-prefix: at most " + std::to_string(max_replay_length) + " tokens");
  if (s.prefix_groups > 0 && s.run.load.shared_prefix == 0)
    throw usage_error("--prefix-groups needs --shared-prefix (the length of each group's prefix)");
  if (s.rate_sweep) {
    // The sweep chooses the arrivals of every point: synchronous, throughput (--users), rates.
    for (const char* o : {"sweep", "think-time", "replay"})
      if (once.seen(o))
        throw usage_error(std::string("--") + o +
                          " does not go with --rate sweep (the sweep sets each point's arrivals)");
  } else if (once.seen("sweep-points")) {
    throw usage_error("--sweep-points goes with --rate sweep");
  }
  if (!s.replay.empty()) {
    // The trace gives the arrivals and the lengths; these would be ignored, so they are refused.
    for (const char* o : {"users", "think-time", "rate", "burstiness", "prompt-len", "output-len",
                          "ramp-up", "shared-prefix", "prefix-groups", "sweep"})
      if (once.seen(o))
        throw usage_error(std::string("--") + o +
                          " does not go with --replay (the trace gives the arrivals and lengths)");
    // Without --duration the whole trace is sent.
    if (!s.duration_given) s.run.load.duration_s = tokchron_loadgen::max_arrival_s;
  } else if (once.seen("replay-format") || once.seen("replay-speed")) {
    throw usage_error("--replay-format and --replay-speed go with --replay");
  }
  if (!s.sessions.empty() || s.session_turns) {
    if (!s.sessions.empty() && s.session_turns)
      throw usage_error("--session-turns makes synthetic sessions; --sessions reads them: one");
    if (s.endpoint != "chat")
      throw usage_error("sessions need --endpoint chat (a conversation is chat messages)");
    for (const char* o : {"replay", "shared-prefix", "prefix-groups", "max-requests"})
      if (once.seen(o))
        throw usage_error(std::string("--") + o +
                          " does not go with sessions (--max-sessions counts sessions)");
    // Without --duration a sessions file is run whole (within the longest run a workload
    // takes: under 1e7 s).
    if (!s.sessions.empty() && !s.duration_given) s.run.load.duration_s = 9.99e6;
  } else {
    for (const char* o : {"turn-think", "session-header", "max-sessions", "session-log"})
      if (once.seen(o))
        throw usage_error(std::string("--") + o + " goes with --sessions or --session-turns");
  }
  try {
    const target t = parse_target(s.url, s.endpoint, s.model);
    if (!t.tls && (once.seen("ca-cert") || once.seen("tls-verify")))
      throw usage_error("--ca-cert and --tls-verify apply to an https:// --url");
    if (!s.tls.verify && !s.tls.ca_file.empty())
      throw usage_error(
          "--ca-cert with --tls-verify off: a certificate that is not checked needs "
          "no CA");
    if (t.tls) tls_client probe(s.tls);  // a CA file that cannot be read is refused here
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  if (!s.api_key.empty())
    for (const auto& h : s.headers) {
      std::string lower = h.first;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "authorization")
        throw usage_error("--header " + h.first + " and --api-key both set Authorization");
    }
  if (s.run.warmup_s >= s.run.load.duration_s)
    throw usage_error("--warmup must be shorter than --duration");
  if (s.otlp.empty() && once.seen("otlp-provider"))
    throw usage_error("--otlp-provider goes with --otlp");
  if (!s.otlp.empty() && (s.otlp == s.trace_out || s.otlp == s.session_log))
    throw usage_error("--otlp " + s.otlp + " is also the " +
                      (s.otlp == s.trace_out ? "--trace-out" : "--session-log") + " file");
  return s;
}

std::string point_path(const std::string& file, const std::string& name, const std::string& v) {
  const auto slash = file.rfind('/');
  const auto dot = file.rfind('.');
  const std::string tag = "." + name + "=" + v;
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return file + tag;
  return file.substr(0, dot) + tag + file.substr(dot);
}

// The attributes of --otlp's points: the operation of the endpoint, the provider, the model
// and the server's address and port; the provider's attribute name as
// OTEL_SEMCONV_STABILITY_OPT_IN asks (live/presets.hpp otel_genai_semconv_from).
genai_client_target genai_target(const target& t, const std::string& provider) {
  genai_client_target g;
  g.operation = t.endpoint == endpoint_kind::chat ? "chat" : "text_completion";
  g.provider = provider;
  g.model = t.model;
  g.address = t.host;
  g.port = std::stoll(t.port);  // parse_target: a port number
  const char* opt_in = std::getenv("OTEL_SEMCONV_STABILITY_OPT_IN");
  g.version = tokchron::otel_genai_semconv_from(opt_in != nullptr ? opt_in : "");
  return g;
}

// Writes --otlp's file (`f`, opened before the run, at `path`) of a run that started at
// `started`, its resource naming the run (`run`: NAME=V of a sweep point or repetition, empty
// for a lone run); false (said on `err`) when it cannot.
bool write_otlp(const genai_client_metrics& m, std::ofstream& f, const std::string& path,
                const std::string& run, std::chrono::system_clock::time_point started,
                std::ostream& err) {
  const auto ns = [](std::chrono::system_clock::time_point t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  f << m.otlp_json(ns(started), ns(std::chrono::system_clock::now()), run);
  f.close();
  if (!f) {
    err << "tokchron-bench: cannot write " << path << '\n';
    return false;
  }
  return true;
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
    p.parameters = {{tokchron_loadgen::option_dashes(s.sweep_name), points[i]}};
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
    out << "  choice: " << pts[*plan.best].name << ' '
        << tokchron_loadgen::option_dashes(s.sweep_name) << '=' << points[*plan.best] << " at "
        << std::fixed << std::setprecision(1) << pts[*plan.best].throughput << std::defaultfloat
        << " output tok/s\n";
  out << plan.to_string(pts);
  return true;
}

// What a run's measured requests came to, gathered as each ends (the run keeps no request):
// one verdict each (a request with a reason failed; the trace, the report and the exit code
// say the same), the finish reasons the server sent, failures by kind and reason, what the
// streams carried, and the events the client could not time apart.
struct run_summary {
  static constexpr std::size_t max_reasons = 1000;  // distinct reasons kept; the rest counted
  std::uint64_t measured = 0, failed = 0;
  std::map<std::string, std::uint64_t> reasons, kinds, finish_words;
  std::set<std::string> unknown_words;
  std::uint64_t other_reasons = 0;
  std::uint64_t reads = 0, stamped = 0;
  tc::exact_quantiles<double> waits;  // each request's longest wait in the kernel, us
  // Completed requests that streamed no text: tool-call deltas only, text only in another
  // choice, nothing (a role chunk, usage).
  std::uint64_t tool_only = 0, other_choice_only = 0, nothing = 0;
  // Events that shared a read, in how many requests; token gaps and those inside one read;
  // requests whose last token came in the read of their [DONE].
  std::uint64_t events = 0, shared = 0, shared_requests = 0, gaps = 0, gaps_one_read = 0,
                last_with_done = 0;
  // Requests that opened a connection: the TCP connect's and the TLS handshake's times (ms),
  // and the handshakes that resumed a session.
  std::uint64_t new_connections = 0, handshakes = 0, resumed = 0;
  tc::exact_quantiles<double> connects, handshake_ms;
  // The prompt tokens the server counted, and those it said its prefix cache served (requests
  // whose usage gave both).
  std::uint64_t usage_prompt = 0, usage_cached = 0, usage_requests = 0;
  // Each sent request's send lag: its send minus its intended send (its arrival), ms.
  tc::exact_quantiles<double> lags;

  void add(const request_outcome& o) {
    ++measured;
    if (const auto a = o.tl.arrival(), sent = o.tl.send_time(); a && sent)
      (void)lags.add(tc::to_seconds(*sent - *a) * 1e3);
    if (!o.error.empty()) {
      ++failed;
      ++kinds[failure_name(o.failure)];
      if (reasons.size() < max_reasons || reasons.count(o.error))
        ++reasons[o.error];
      else
        ++other_reasons;
    }
    if (o.error.empty() || o.failure == failure_kind::server_finish) {
      const std::string word = o.finish_word.empty() ? std::string("(none given)") : o.finish_word;
      if (finish_words.size() < max_reasons || finish_words.count(word))
        ++finish_words[word];
      else
        ++finish_words["(other words)"];
      if (!o.finish_word_known && unknown_words.size() < 20) unknown_words.insert(o.finish_word);
    }
    reads += o.reads;
    stamped += o.kernel_timed_reads;
    if (o.kernel_timed_reads > 0) (void)waits.add(tc::to_seconds(o.longest_read_wait) * 1e6);
    const stream_content& c = o.content;
    if (o.error.empty() && c.text == 0 && c.reasoning == 0) {
      if (c.tool_calls > 0)
        ++tool_only;
      else if (c.other_choice > 0)
        ++other_choice_only;
      else
        ++nothing;
    }
    events += c.events;
    shared += c.shared_read;
    shared_requests += c.shared_read > 0 ? 1 : 0;
    gaps += c.token_gaps;
    gaps_one_read += c.token_gaps_in_one_read;
    last_with_done += c.last_token_with_done ? 1 : 0;
    if (o.new_connection) {
      ++new_connections;
      (void)connects.add(tc::to_seconds(o.connect_time) * 1e3);
      if (o.handshake_time.count() > 0) {
        ++handshakes;
        resumed += o.tls_resumed ? 1 : 0;
        (void)handshake_ms.add(tc::to_seconds(o.handshake_time) * 1e3);
      }
    }
    if (const auto p = o.tl.prompt_tokens(), k = o.tl.cached_prompt_tokens(); p && k) {
      usage_prompt += *p;
      usage_cached += *k;
      ++usage_requests;
    }
  }

  // What the prompts of a replay or of prefix groups shared, and what the server's cache served.
  void print_prompts(std::ostream& err, const prefix_counts& c) const {
    const auto pct = [](std::uint64_t part, std::uint64_t whole) {
      std::ostringstream o;
      o << std::fixed << std::setprecision(1)
        << 100.0 * static_cast<double>(part) / static_cast<double>(whole ? whole : 1) << '%';
      return o.str();
    };
    err << "tokchron-bench: prompts: " << c.prompts << " requests sent " << c.prompt_tokens
        << " prompt tokens (one word a token); " << c.reusable_tokens << " of them ("
        << pct(c.reusable_tokens, c.prompt_tokens)
        << ") repeat a block or prefix an earlier request of the run sent: the most a prefix "
           "cache could serve\n";
    if (usage_requests > 0)
      err << "tokchron-bench: the server's usage: " << usage_cached << " of " << usage_prompt
          << " prompt tokens (" << pct(usage_cached, usage_prompt) << ") served from its cache, in "
          << usage_requests << " measured requests that reported cached tokens\n";
  }

  void print(std::ostream& err, receive_time rx, const load_result& r) const {
    const auto share = [](std::uint64_t part, std::uint64_t whole) {
      std::ostringstream o;
      o << std::fixed << std::setprecision(1)
        << 100.0 * static_cast<double>(part) / static_cast<double>(whole ? whole : 1) << '%';
      return o.str();
    };
    err << "tokchron-bench: " << measured << " requests: " << measured - failed << " completed, "
        << failed << " failed\n";
    if (!finish_words.empty()) {
      err << "tokchron-bench: finish reasons the server sent:";
      for (const auto& [word, n] : finish_words) {
        const server_finish f = classify_finish_reason(word);
        err << ' ' << word << ' ' << n << (f.completed ? "" : " (did not complete: failed)");
      }
      err << '\n';
      for (const auto& w : unknown_words)
        err << "tokchron-bench: finish reason '" << w
            << "' is not one tokchron-bench knows: those requests are taken as completed\n";
    }
    const auto ms = [](const tc::exact_quantiles<double>& q) {
      std::ostringstream o;
      o << std::fixed << std::setprecision(2) << "median "
        << *q.quantile(0.5, tc::quantile_method::nearest_rank) << " ms, P99 "
        << *q.quantile(0.99, tc::quantile_method::nearest_rank) << " ms";
      return o.str();
    };
    if (!lags.empty())
      err << "tokchron-bench: send lag (each request's send minus its intended send): " << ms(lags)
          << ", max " << std::fixed << std::setprecision(2)
          << *lags.quantile(1.0, tc::quantile_method::nearest_rank) << " ms\n"
          << std::defaultfloat;
    if (new_connections > 0) {
      err << "tokchron-bench: " << new_connections << " requests opened a connection: TCP connect "
          << ms(connects);
      if (handshakes > 0)
        err << "; TLS handshake " << ms(handshake_ms) << ", " << resumed << " of " << handshakes
            << " resumed a session";
      err << " (inside TTFT from the send under every profile; a request on a kept-alive "
             "connection has neither)\n";
    }
    if (rx == receive_time::kernel && stamped < reads)
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
    if (shared > 0)
      err << "tokchron-bench: " << shared << " of " << events << " SSE events ("
          << share(shared, events) << ") shared a read with another event, in " << shared_requests
          << " requests: each has that read's time; " << gaps_one_read << " of " << gaps
          << " gaps between token chunks (" << share(gaps_one_read, gaps)
          << ") fell inside one read and are recorded as 0 (ITL samples not measured; they "
             "lower ITL and TPOT, and a token's TTFT or E2E is late by up to the gap when it "
             "shared the next event's read); "
          << last_with_done << " requests' last token came in the read of their [DONE]\n";
    if (tool_only + other_choice_only + nothing > 0)
      err << "tokchron-bench: " << tool_only + other_choice_only + nothing
          << " completed requests streamed no text: " << tool_only << " tool-call deltas only, "
          << other_choice_only << " text only in a choice other than index 0 (not measured), "
          << nothing
          << " nothing but role or usage chunks; they have no token chunk, so TTFT, "
             "TPOT and ITL are undefined for them under every profile that times token "
             "chunks (the vllm profile times every chunk with choices, as vLLM's benchmark "
             "does)\n";
    if (r.backoffs > 0)
      err << "tokchron-bench: " << r.backoffs << " fast failures held their users back before "
          << "the next request (backoff with jitter, "
          << std::chrono::duration<double>(r.backoff_total).count() << " s in all)\n";
    if (failed > 0) {
      std::vector<std::pair<std::uint64_t, std::string>> top;
      for (const auto& [why, n] : reasons) top.emplace_back(n, why);
      std::sort(top.rbegin(), top.rend());
      err << "tokchron-bench: " << failed << " of " << measured << " requests failed, by kind:";
      for (const auto& [kind, n] : kinds) err << ' ' << kind << ' ' << n;
      err << "\ntokchron-bench: failed requests by reason:\n";
      for (std::size_t i = 0; i < top.size() && i < 5; ++i)
        err << "  " << top[i].first << "  " << top[i].second << '\n';
      if (top.size() > 5 || other_reasons > 0)
        err << "  ... and " << (top.size() > 5 ? top.size() - 5 : 0) + (other_reasons ? 1 : 0)
            << " more reasons (each request's in the trace)\n";
    }
    if (!r.gave_up.empty())
      err << "tokchron-bench: the run stopped sending before its end: " << r.gave_up << '\n';
  }
};

// The worse of two exit codes: an objective that failed (3), then one undecided (4), then no
// usable request (1), then a run that stopped early (6), then failed requests (5).
int worse(int a, int b) {
  for (const int code : {3, 4, 1, exit_gave_up, exit_failed_requests})
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
  // The trace to replay, read whole before anything is sent (a malformed line stops it here).
  std::shared_ptr<const replay_plan> plan;
  if (!s.replay.empty()) {
    std::ifstream in(s.replay);
    if (!in) {
      err << "tokchron-bench: --replay: cannot read " << s.replay << '\n';
      return 2;
    }
    try {
      plan = std::make_shared<const replay_plan>(read_replay(in, s.replay, s.replay_as));
    } catch (const replay_error& e) {
      err << "tokchron-bench: --replay: " << e.what() << '\n';
      return 2;
    }
    err << "tokchron-bench: replaying " << s.replay << " (" << replay_format_name(plan->format)
        << "): " << plan->requests.size() << " requests over "
        << static_cast<double>(plan->requests.back().at_ns) / 1e9 << " s as recorded";
    if (plan->no_output > 0)
      err << "; " << plan->no_output << " recorded without output tokens are not sent";
    err << '\n';
  }
  // The sessions file, read whole before anything is sent.
  std::shared_ptr<const session_plan> sessions;
  if (!s.sessions.empty()) {
    std::ifstream in(s.sessions);
    if (!in) {
      err << "tokchron-bench: --sessions: cannot read " << s.sessions << '\n';
      return 2;
    }
    try {
      sessions = std::make_shared<const session_plan>(read_sessions(in, s.sessions));
    } catch (const session_error& e) {
      err << "tokchron-bench: --sessions: " << e.what() << '\n';
      return 2;
    }
    err << "tokchron-bench: sessions from " << s.sessions << ": " << sessions->sessions.size()
        << " sessions, " << sessions->turns << " turns\n";
  }
  std::ofstream session_log;
  if (!s.session_log.empty()) {
    session_log.open(s.session_log);
    if (!session_log) {
      err << "tokchron-bench: cannot write " << s.session_log << '\n';
      return 1;
    }
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
  if (!s.tls.verify && s.url.rfind("https://", 0) == 0)
    err << "tokchron-bench: --tls-verify off: the server's certificate and name are not "
           "checked\n";
  std::uint64_t next_request_id = 0;  // request ids continue from one sweep point to the next
  std::string format = "table";
  std::optional<tc::request_slo> goodput_limits;  // --goodput, for the steady-state windows
  for (std::size_t i = 0; i + 1 < s.report_args.size(); i += 2) {
    if (s.report_args[i] == "--format") format = s.report_args[i + 1];
    if (s.report_args[i] == "--goodput") try {
        goodput_limits = tc::request_slo::parse(s.report_args[i + 1]);
      } catch (const std::invalid_argument&) {  // tokchron-report refuses it with the reason
      }
  }
  const bool json = format == "json";
  std::vector<point_runs> by_point;     // each point's runs' windows, for the summary
  std::vector<std::string> run_labels;  // each run's point (and run number), for the planner
  int fatal = 1;                        // the exit code of a run that could not be made
  // One run: its requests, its trace (NAME=V, the file's and the pictures' tag; empty: none),
  // its report and its steady-state window; empty when the run could not be made (exit 1).
  const auto run_point = [&](load_config rc, const std::string& tag_name,
                             const std::string& tag_value,
                             const std::string& heading) -> std::optional<window_metrics> {
    if (!heading.empty()) out << "== " << heading << " ==\n";
    load_options lo;
    lo.tgt = parse_target(s.url, s.endpoint, s.model);
    lo.tgt.api_key = s.api_key;
    lo.tgt.headers = s.headers;
    lo.tls = s.tls;
    lo.work = rc.load;
    lo.warmup_s = rc.warmup_s;
    lo.limits = s.limits;
    lo.threads = s.threads;
    lo.keep_alive = s.keep_alive;
    lo.busy_poll = s.busy_poll;
    lo.rx_time = s.rx_time;
    lo.first_request_id = next_request_id;
    lo.id_prefix = s.id_prefix;
    lo.give_up = s.give_up;
    std::shared_ptr<prefix_counts> prefixes;  // what the prompts shared (replay, prefix groups)
    if (plan || rc.load.shared_prefix > 0) {
      // The words of this run's shared blocks and prefixes are its own (keyed by its first
      // request number, which no other run of a sweep or --repeat has, and the id prefix, as
      // synthetic prompts are): a later run would otherwise send an earlier one's prompts, and
      // a server's prefix cache would serve them (its runs are measured as independent ones).
      const std::uint64_t words_seed =
          tokchron_loadgen::mix_seed(prompt_seed(rc.load.seed, s.id_prefix), next_request_id);
      workload_hooks h;
      if (plan) {
        replay_settings rs;
        rs.speed = s.replay_speed;
        if (s.duration_given) rs.until_s = rc.load.duration_s;
        rs.max_requests = rc.load.max_requests;
        rs.seed = words_seed;
        h = replay_hooks(plan, rs);
      } else {
        h = prefix_group_hooks(std::max<std::uint32_t>(1, s.prefix_groups), words_seed);
      }
      lo.schedule = std::move(h.schedule);
      lo.body = std::move(h.body);
      prefixes = h.counts;
    }
    session_hooks sh;
    if (sessions || s.session_turns) {
      session_settings ss;
      ss.plan = sessions;
      ss.work = rc.load;
      if (s.session_turns) ss.turns = *s.session_turns;
      ss.think = s.turn_think;
      ss.header = s.session_header;
      ss.max_sessions = s.max_sessions;
      ss.id_prefix = s.id_prefix;
      ss.first_session = next_request_id;
      ss.warmup_s = rc.warmup_s;
      if (session_log.is_open()) ss.log = &session_log;
      try {
        sh = make_session_hooks(ss);
      } catch (const std::invalid_argument& e) {
        err << "tokchron-bench: " << e.what() << '\n';
        fatal = 2;
        return std::nullopt;
      }
      lo.schedule = sh.schedule;
      lo.body = sh.body;
      lo.headers = sh.headers;
      lo.on_outcome = sh.on_outcome;
      lo.keep_reply = sh.keep_reply;
    }
    const bool show = s.progress == "always" || (s.progress == "auto" && terminal);
    if (show)
      lo.on_progress = [&err](const progress& p) {
        err << "\r" << std::fixed << std::setprecision(1) << p.elapsed_s << " s: sent " << p.sent
            << ", finished " << p.finished << ", failed " << p.failed << ", in flight "
            << p.in_flight << "   " << std::flush;
      };
    // The trace file of this point: each measured request is written as it ends, so the run
    // keeps only the requests in flight.
    std::string path =
        s.trace_out.empty()
            ? std::string()
            : (tag_value.empty() ? s.trace_out : point_path(s.trace_out, tag_name, tag_value));
    if (path.empty()) {
      char tmpl[] = "/tmp/tokchron-bench-XXXXXX";
      const int fd = mkstemp(tmpl);
      if (fd < 0) {
        err << "tokchron-bench: cannot create a temporary trace file\n";
        return std::nullopt;
      }
      close(fd);
      path = tmpl;
      temporaries.push_back(path);
    }
    traces.push_back(path);
    std::ofstream trace_file(path);
    if (!trace_file) {
      err << "tokchron-bench: cannot write " << path << '\n';
      return std::nullopt;
    }
    run_summary sum;
    std::optional<tc::clock_anchor> anchor;  // read at the first request's end (trace-format.md)
    // The server's metrics before the run (a server that cannot be scraped stops it early).
    std::optional<exposition> scraped_before;
    const auto scrape_now = [&]() {
      return parse_exposition(
          fetch_exposition(parse_scrape_url(s.scrape), std::chrono::milliseconds(10000)));
    };
    if (!s.scrape.empty()) try {
        scraped_before = scrape_now();
      } catch (const std::exception& e) {
        err << "tokchron-bench: --scrape: " << e.what() << '\n';
        return std::nullopt;
      }
    client_counts client;  // every request sent, warm-up ones too, as the server counts them
    // --otlp: the point's file, opened before anything is sent (one per point and repetition,
    // named as the trace's).
    std::optional<genai_client_metrics> genai;
    std::ofstream otlp_file;
    const std::string otlp_path =
        tag_value.empty() ? s.otlp : point_path(s.otlp, tag_name, tag_value);
    if (!s.otlp.empty()) {
      otlp_file.open(otlp_path);
      if (!otlp_file) {
        err << "tokchron-bench: cannot write " << otlp_path << '\n';
        return std::nullopt;
      }
      genai.emplace(genai_target(lo.tgt, s.otlp_provider));
    }
    const auto started = std::chrono::system_clock::now();
    lo.on_end = [&](request_outcome&& o, clock::time_point zero) {
      if (scraped_before) add_client(client, o, zero);
      if (!o.measured) return;
      if (genai) genai->add(o);
      if (!anchor) anchor = tc::read_clock_anchor<clock>(zero);
      sum.add(o);
      tc::trace_record rec = to_trace(o, zero, *anchor);
      // Every line says where the measured run starts (the warm-up's end, on the trace's clock
      // whose 0 is the schedule's), as batching-executor's trace does: the report's durations
      // start there rather than at the first measured request's intended send
      // (docs/library/trace-format.md, "The benchmark start").
      rec.benchmark_start = lo.warmup_s;
      tc::write_trace_line(trace_file, rec);
    };
    load_result r;
    try {
      r = run_load(lo);
    } catch (const std::exception& e) {
      err << "tokchron-bench: " << e.what() << '\n';
      return std::nullopt;
    }
    if (show) err << '\n';
    if (sh.finish) sh.finish();
    std::optional<scrape_change> scraped;
    if (scraped_before) try {
        scraped = difference(*scraped_before, scrape_now());
      } catch (const std::exception& e) {  // the run's own report is still written
        err << "tokchron-bench: --scrape after the run: " << e.what() << '\n';
      }
    next_request_id += r.sent;
    trace_file.close();
    if (!trace_file) {
      err << "tokchron-bench: cannot write " << path << '\n';
      return std::nullopt;
    }
    if (genai &&
        !write_otlp(*genai, otlp_file, otlp_path,
                    tag_value.empty() ? std::string() : tag_name + "=" + tag_value, started, err))
      return std::nullopt;
    sum.print(err, s.rx_time, r);
    if (prefixes) sum.print_prompts(err, *prefixes);
    std::vector<std::string> args = s.report_args;
    if (!tag_value.empty())  // each point's pictures in a folder of their own: DIR/NAME=V
      for (std::size_t i = 0; i + 1 < args.size(); i += 2)
        if (args[i] == "--plot") args[i + 1] += "/" + tag_name + "=" + tag_value;
    args.push_back(path);
    // The run's steady-state window, read back from its trace (sweep.hpp).
    window_metrics window;
    try {
      window = measure_window(tokchron_report::load_inputs({path}).timelines, goodput_limits);
    } catch (const std::exception& e) {
      err << "tokchron-bench: steady state: " << e.what() << '\n';
    }
    // The server's change and the window sit beside the report: after the table (the window of
    // a CSV report on standard error), inside the JSON document.
    std::ostringstream report;
    int rc_report = tokchron_report::run(args, json ? report : out, err);
    if (json) {
      nlohmann::json doc = nlohmann::json::parse(report.str(), nullptr, false);
      // One profile's report is an object, several profiles' an array of them (each gets the
      // run's figures, as each gets its "slo").
      const auto add = [&](nlohmann::json& one) {
        if (scraped) one["server_metrics"] = change_json(s.scrape, *scraped);
        one["steady_state"] = window_json(window);
        if (sh.stats) one["sessions"] = nlohmann::json::parse(sessions_json(*sh.stats));
        if (!tag_value.empty()) one["sweep_point"] = {{"name", tag_name}, {"value", tag_value}};
      };
      if (doc.is_object() || doc.is_array()) {
        if (doc.is_object()) add(doc);
        for (auto& one : doc)
          if (doc.is_array() && one.is_object()) add(one);
        out << doc.dump(2) << '\n';
      } else {
        out << report.str();
      }
    } else {
      if (scraped) print_change(out, s.scrape, *scraped, client);
      if (sh.stats) print_sessions(out, *sh.stats);
      print_window(format == "table" ? out : err, window);
    }
    if (rc_report == 0 && !r.gave_up.empty()) rc_report = exit_gave_up;
    if (rc_report == 0 && sum.failed > 0) rc_report = exit_failed_requests;
    worst = worse(worst, rc_report);
    return window;
  };
  // Each point run --repeat times, the seed counting up from the workload's (so the interval
  // covers the workload's draws as well as the server's and the machine's noise).
  const auto run_repeated = [&](const load_config& base, const std::string& name,
                                const std::string& value, const std::string& heading) -> bool {
    point_runs p;
    p.label = value.empty() ? std::string("run") : value;
    if (base.load.mode == tokchron_loadgen::arrival_mode::open) p.offered = base.load.rate;
    for (unsigned k = 1; k <= s.repeat; ++k) {
      load_config rc = base;
      std::string tag_name = name, tag_value = value, head = heading;
      if (s.repeat > 1) {
        set_option(rc, "seed", std::to_string((base.load.seed + k - 1) % (1ULL << 32)));
        if (value.empty()) {
          tag_name = "run";
          tag_value = std::to_string(k);
        } else {
          tag_value += ".run" + std::to_string(k);
        }
        head += (head.empty() ? "" : ", ") + std::string("run ") + std::to_string(k) + " of " +
                std::to_string(s.repeat);
      }
      const std::optional<window_metrics> w = run_point(rc, tag_name, tag_value, head);
      if (!w) return false;
      p.runs.push_back(*w);
      run_labels.push_back(tag_value);
    }
    by_point.push_back(std::move(p));
    return true;
  };
  const auto mean_rate = [](const point_runs& p) {
    double sum = 0;
    std::size_t n = 0;
    for (const auto& w : p.runs)
      if (w.request_rate) {
        sum += *w.request_rate;
        ++n;
      }
    return n ? sum / static_cast<double>(n) : 0.0;
  };
  if (s.rate_sweep) {
    // GuideLLM's sweep (sweep.hpp): the synchronous point (one user), the throughput point
    // (--users, no think time), then --sweep-points open-loop rates up to the throughput's.
    s.sweep_name = "rate";
    load_config sync = s.run, most = s.run;
    set_option(sync, "users", "1");
    set_option(most, "users", std::to_string(s.run.load.users));
    for (auto* rc : {&sync, &most}) set_option(*rc, "think_time", "none");
    if (!run_repeated(sync, "rate", "synchronous", "rate = synchronous (1 user)")) return fatal;
    if (!run_repeated(most, "rate", "throughput",
                      "rate = throughput (" + std::to_string(s.run.load.users) + " users)"))
      return fatal;
    std::vector<double> rates;
    try {
      rates = sweep_rates(mean_rate(by_point[0]), mean_rate(by_point[1]), s.sweep_points);
    } catch (const std::invalid_argument& e) {
      err << "tokchron-bench: --rate sweep: " << e.what() << '\n';
      return worse(worst, 1);
    }
    err << "tokchron-bench: --rate sweep: synchronous " << std::fixed << std::setprecision(3)
        << mean_rate(by_point[0]) << " requests/s, throughput " << mean_rate(by_point[1])
        << " requests/s (steady state); " << std::defaultfloat << rates.size()
        << " rates between\n";
    for (const double rate : rates) {
      std::ostringstream v;
      v << std::setprecision(6) << rate;
      load_config rc = s.run;
      set_option(rc, "rate", v.str());
      if (!run_repeated(rc, "rate", v.str(), "rate = " + v.str())) return fatal;
    }
  } else {
    for (const std::string& v : points) {
      load_config rc = s.run;
      if (!v.empty()) set_option(rc, s.sweep_name, v);
      if (!run_repeated(rc, s.sweep_name, v,
                        v.empty() ? std::string()
                                  : tokchron_loadgen::option_dashes(s.sweep_name) + " = " + v))
        return fatal;
    }
  }
  if (by_point.size() > 1 || s.repeat > 1)
    print_summary(format == "table" ? out : err,
                  s.rate_sweep             ? "Rate sweep"
                  : s.sweep_values.empty() ? "Repeated runs"
                                           : "Sweep",
                  by_point, s.confidence);
  if (session_log.is_open() && !session_log.flush()) {
    err << "tokchron-bench: cannot write " << s.session_log << '\n';
    worst = worse(worst, 1);
  }
  // Over a sweep the report ends with the planner's pick (JSON output stays one document per
  // point: the planner then goes to standard error).
  if (!s.sweep_values.empty() || s.rate_sweep)
    if (!write_capacity_plan(json ? err : out, err, s, run_labels, traces)) worst = worse(worst, 1);
  return worst;
}

}  // namespace tokchron_bench
