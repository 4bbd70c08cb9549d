// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_EXAMPLES_TRACE_REPORT_REPORT_HPP
#define TOKCHRON_EXAMPLES_TRACE_REPORT_REPORT_HPP

/// \file
/// The library behind `tokchron-report`: command-line parsing into a generic option map, input
/// loading (tokchron JSONL traces and vLLM result files), summaries under one or more profiles,
/// and the table / JSON / CSV writers. `main.cpp` only dispatches to a `command`.
///
/// Extending the tool: add an `option_spec` to `options()` and read it with `args.get(name)` in
/// a command; add a subcommand by appending a `command` to `commands()`. Exit codes are those
/// of `exit_code`.

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "plot.hpp"  // examples/plot: --plot
#include "tokchron/io/trace.hpp"
#include "tokchron/io/trace_json.hpp"
#include "tokchron/metrics/profiles.hpp"
#include "tokchron/metrics/run_summary.hpp"

namespace tokchron_report {

namespace tc = tokchron;
using ojson = nlohmann::ordered_json;

/// The tool's exit codes.
enum exit_code : int {
  exit_ok = 0,             ///< every input line was read and the report was written
  exit_skipped_lines = 1,  ///< the report was written, but malformed lines were skipped
  exit_usage = 2,          ///< bad command line (unknown option, bad value, no input)
  exit_input = 1,          ///< an input could not be read, or held no valid request
  exit_slo_fail = 3,       ///< an objective (--slo) failed, or an audit found inconsistencies
  exit_slo_undecided = 4,  ///< no objective failed, but one could not be decided
};

/// An error in the command line: printed with the usage and exit code 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// An input that cannot be used at all: exit code 1.
struct input_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A long option: `--name VALUE` (or `--name=VALUE`) when `takes_value`, else a flag.
struct option_spec {
  std::string name;
  bool takes_value;
  std::string value_name;
  std::string help;
};

/// The options every command understands. A later component adds its own here.
inline std::vector<option_spec>& options() {
  static std::vector<option_spec> all = {
      {"profile", true, "NAME|all|A,B",
       "profile(s) to report (default canonical); 'all' gives one column per profile"},
      {"percentiles", true, "LIST", "percentiles in percent, e.g. 50,90,95,99,99.9 (default)"},
      {"gpus", true, "N", "GPUs that served the run: adds per-GPU throughputs"},
      {"format", true, "table|json|csv", "output format (default table)"},
      {"input", true, "auto|trace|vllm",
       "input kind: tokchron JSONL trace or vLLM --save-detailed JSON (default auto)"},
      {"duration", true, "SECONDS", "override the run duration (default: from the events)"},
      {"threads", true, "N",
       "threads: one reads while another evaluates (default: the machine's cores; 1: one)"},
      {"quiet", false, "", "do not list skipped lines on stderr (still counted)"},
      {"plot", true, "DIR",
       "also draw the pictures (gnuplot: data, scripts, SVG/PNG) and DIR/index.html"},
      {"help", false, "", "print this help"},
  };
  return all;
}

/// A parsed command line: the command, option values by name (repeatable), and the files.
struct arguments {
  std::string command = "summary";
  std::map<std::string, std::vector<std::string>> values;
  std::vector<std::string> files;

  [[nodiscard]] bool has(const std::string& name) const { return values.count(name) > 0; }
  /// The last value given for `name`, or empty.
  [[nodiscard]] std::optional<std::string> get(const std::string& name) const {
    const auto it = values.find(name);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
};

struct command;
/// The subcommands. The first positional argument selects one when it names one; otherwise the
/// command is `summary`.
inline std::vector<command>& commands();

/// Parses `argv[1..argc)`. Throws usage_error.
inline arguments parse_arguments(const std::vector<std::string>& argv);

/// What was read from the inputs, besides the requests themselves.
struct input_stats {
  std::vector<tc::trace_error> errors;   ///< malformed lines (skipped)
  std::vector<std::string> error_files;  ///< the file of each error
  std::size_t lines = 0;                 ///< lines read (vLLM file: requests)
  std::size_t requests = 0;              ///< requests handed on
  std::optional<double> duration;        ///< from a vLLM result file
  bool vllm = false;
};

/// Streams every request of `files` (`-` is stdin; one run across files) to
/// `on_timeline(tc::trace_timeline&&)`, without holding the files in memory. A trace's
/// malformed lines are collected in the stats and skipped. `kind` is auto (a file whose first
/// line has no `chunks` but which has `ttfts` and `itls` is a vLLM result), trace or vllm.
/// Throws input_error when a file cannot be read or a vLLM file is invalid, usage_error for an
/// unknown kind.
template <class OnTimeline>
input_stats read_inputs(const std::vector<std::string>& files, const std::string& kind,
                        OnTimeline&& on_timeline) {
  if (kind != "auto" && kind != "trace" && kind != "vllm")
    throw usage_error("--input must be auto, trace or vllm");
  input_stats st;
  std::vector<char> buf(std::size_t{1} << 20);
  tc::trace_record rec;
  std::optional<tc::trace_error> err;
  for (const std::string& f : files) {
    std::ifstream file;
    std::istream* in = &std::cin;
    if (f != "-") {
      file.open(f, std::ios::binary);
      if (!file) throw input_error("cannot open " + f);
      in = &file;
    }
    // The first block decides the kind; lines are then cut from successive blocks.
    std::string pending;
    in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in->bad()) throw input_error("cannot read " + f);
    pending.assign(buf.data(), static_cast<std::size_t>(in->gcount()));
    const std::string_view head(pending);
    const std::string_view first_line = head.substr(0, head.find('\n'));
    const bool vllm = kind == "vllm" ||
                      (kind == "auto" && first_line.find("\"chunks\"") == std::string_view::npos &&
                       head.find("\"ttfts\"") != std::string_view::npos &&
                       head.find("\"itls\"") != std::string_view::npos);
    if (vllm) {
      if (files.size() != 1)
        throw input_error("a vLLM result file is a whole run: give it alone (" + f + ")");
      std::ostringstream rest;
      rest << pending << in->rdbuf();
      std::istringstream whole(rest.str());
      tc::vllm_result r;
      try {
        r = tc::read_vllm_result(whole);
      } catch (const std::invalid_argument& e) {
        throw input_error(f + ": " + e.what());
      }
      st.vllm = true;
      st.duration = r.duration;
      st.lines += r.records.size();
      for (const auto& one : r.records) {
        ++st.requests;
        on_timeline(tc::to_timeline(one));
      }
      continue;
    }
    std::size_t line_no = 0;
    auto take_lines = [&](bool at_eof) {
      std::size_t pos = 0;
      for (;;) {
        std::size_t nl = pending.find('\n', pos);
        if (nl == std::string::npos) {
          if (!at_eof || pos >= pending.size()) break;
          nl = pending.size();
        }
        ++line_no;
        if (tc::parse_trace_line(std::string_view(pending).substr(pos, nl - pos), line_no, rec,
                                 err)) {
          ++st.requests;
          on_timeline(tc::to_timeline(rec));
        } else if (err) {
          st.errors.push_back(std::move(*err));
          st.error_files.push_back(f);
        }
        pos = nl + 1;
      }
      pending.erase(0, std::min(pos, pending.size()));
    };
    for (;;) {
      take_lines(false);
      if (!*in) break;
      in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (in->bad()) throw input_error("cannot read " + f);
      pending.append(buf.data(), static_cast<std::size_t>(in->gcount()));
    }
    take_lines(true);
    st.lines += line_no;
  }
  return st;
}

/// As `read_inputs`, but the files are read and parsed on a second thread while
/// `on_timeline` runs on this one, in the same order; the timelines are handed over in batches
/// (at most a few thousand requests in flight). An exception from either side is rethrown here
/// once the reader has stopped, after the requests read before it were handed on, as
/// `read_inputs` would. Without a second thread it is `read_inputs`.
/// `on_read(const tc::trace_timeline&)`, when given, runs on the reading thread for each
/// request just before it is handed over (work that thread can take on).
template <class OnTimeline, class OnRead = void (*)(const tc::trace_timeline&)>
input_stats read_inputs_pipelined(
    const std::vector<std::string>& files, const std::string& kind, OnTimeline&& on_timeline,
    OnRead&& on_read = [](const tc::trace_timeline&) {}) {
  constexpr std::size_t batch_size = 512, max_batches = 8;
  using batch = std::vector<tc::trace_timeline>;
  struct channel {
    std::mutex m;
    std::condition_variable cv;
    std::deque<batch> full;
    bool done = false, stop = false;
    std::exception_ptr error;
  } ch;
  struct stopped {};  // unwinds the reader when this side has stopped
  input_stats st;
  auto read = [&] {
    batch b;
    auto hand_over = [&] {
      std::unique_lock<std::mutex> lock(ch.m);
      ch.cv.wait(lock, [&] { return ch.full.size() < max_batches || ch.stop; });
      if (ch.stop) throw stopped{};
      ch.full.push_back(std::move(b));
      lock.unlock();
      ch.cv.notify_all();
      b = batch();
    };
    std::exception_ptr error;
    try {
      st = read_inputs(files, kind, [&](tc::trace_timeline&& tl) {
        on_read(static_cast<const tc::trace_timeline&>(tl));
        if (b.empty()) b.reserve(batch_size);
        b.push_back(std::move(tl));
        if (b.size() == batch_size) hand_over();
      });
    } catch (const stopped&) {
      b.clear();  // this side has stopped: nothing more to hand on
    } catch (...) {
      error = std::current_exception();  // the requests read before it are still handed on
    }
    try {
      if (!b.empty()) hand_over();
    } catch (const stopped&) {
    } catch (...) {
      if (!error) error = std::current_exception();
    }
    {
      const std::lock_guard<std::mutex> lock(ch.m);
      ch.error = error;
      ch.done = true;
    }
    ch.cv.notify_all();
  };
  std::thread reader;
  try {
    reader = std::thread(read);
  } catch (const std::system_error&) {  // no second thread: read here
    return read_inputs(files, kind, [&](tc::trace_timeline&& tl) {
      on_read(static_cast<const tc::trace_timeline&>(tl));
      on_timeline(std::move(tl));
    });
  }
  try {
    for (;;) {
      batch b;
      {
        std::unique_lock<std::mutex> lock(ch.m);
        ch.cv.wait(lock, [&] { return !ch.full.empty() || ch.done; });
        if (ch.full.empty()) break;
        b = std::move(ch.full.front());
        ch.full.pop_front();
      }
      ch.cv.notify_all();
      for (auto& tl : b) on_timeline(std::move(tl));
    }
  } catch (...) {
    {
      const std::lock_guard<std::mutex> lock(ch.m);
      ch.stop = true;
    }
    ch.cv.notify_all();
    reader.join();
    throw;
  }
  reader.join();
  if (ch.error) std::rethrow_exception(ch.error);
  return st;
}

/// The requests of `files`, kept in memory (see `read_inputs`).
struct loaded_inputs : input_stats {
  std::vector<tc::trace_timeline> timelines;
};
inline loaded_inputs load_inputs(const std::vector<std::string>& files,
                                 const std::string& kind = "auto") {
  loaded_inputs out;
  std::vector<tc::trace_timeline> tls;
  static_cast<input_stats&>(out) =
      read_inputs(files, kind, [&](tc::trace_timeline&& tl) { tls.push_back(std::move(tl)); });
  out.timelines = std::move(tls);
  return out;
}

/// The profiles named by a --profile value: a name, a comma-separated list, or `all`.
/// Throws usage_error naming an unknown profile.
inline std::vector<const tc::profile*> select_profiles(const std::string& spec) {
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
    out.push_back(p);
    pos = comma + 1;
  }
  return out;
}

/// What the summary command computes, from the parsed options.
struct report_settings {
  std::vector<const tc::profile*> profiles{&tc::profiles::canonical};
  std::vector<double> percentiles{50, 90, 95, 99};
  std::optional<unsigned> gpus;
  std::optional<double> duration;
  std::string format = "table";
  bool keep_requests = false;  ///< keep each request's values (goodput needs them)
  /// Threads: one reads while another evaluates, and the distributions are shared out (1: one).
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
};

namespace detail {
/// `text` as a decimal integer in [lo, hi], or empty.
inline std::optional<long> integer_in(const std::string& text, long lo, long hi) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi) return std::nullopt;
  return v;
}
}  // namespace detail

/// Reads the summary options out of `args`. Throws usage_error.
inline report_settings settings_from(const arguments& args) {
  report_settings s;
  if (auto v = args.get("profile")) s.profiles = select_profiles(*v);
  if (auto v = args.get("percentiles")) {
    try {
      s.percentiles = tc::parse_percentiles(*v);
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string("--percentiles: ") + e.what());
    }
  }
  if (auto v = args.get("gpus")) {
    const auto g = detail::integer_in(*v, 1, 1000000);
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
    const auto t = detail::integer_in(*v, 1, 1024);
    if (!t) throw usage_error("--threads must be an integer from 1 to 1024");
    s.threads = static_cast<unsigned>(*t);
  }
  if (auto v = args.get("format")) {
    if (*v != "table" && *v != "json" && *v != "csv")
      throw usage_error("--format must be table, json or csv");
    s.format = *v;
  }
  return s;
}

/// The summarizers of the selected profiles (durations from `s`).
inline std::vector<tc::run_summarizer<tc::trace_timeline>> make_summarizers(
    const report_settings& s) {
  tc::summary_options o;
  o.percentiles = s.percentiles;
  o.gpus = s.gpus;
  o.duration = s.duration;
  o.keep_requests = s.keep_requests;
  o.threads = s.threads;
  std::vector<tc::run_summarizer<tc::trace_timeline>> sums;
  sums.reserve(s.profiles.size());
  for (const tc::profile* p : s.profiles) sums.emplace_back(*p, o);
  std::vector<const tc::run_summarizer<tc::trace_timeline>*> earlier;
  for (auto& sum : sums) {  // profiles that pool the same ITL samples store them once
    sum.share_itl_with(earlier);
    earlier.push_back(&sum);
  }
  return sums;
}

/// The summaries of `sums` (consumed); profiles agreeing on a metric's samples share one selection.
/// A vLLM result file's duration applies unless --duration was given.
inline std::vector<tc::run_summary> finish_summaries(
    std::vector<tc::run_summarizer<tc::trace_timeline>>& sums, const report_settings& s,
    const input_stats& stats) {
  std::vector<tc::run_summary> out(sums.size());
  std::vector<tc::detail::distribution_job> jobs;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    if (!s.duration && stats.duration) sums[i].set_duration(*stats.duration);
    sums[i].collect_summary(out[i], jobs);
  }
  tc::detail::run_distribution_jobs(jobs, s.threads);
  return out;
}

/// One summary per selected profile of the requests in `files`, read in one streaming pass
/// (each request is evaluated by every profile while its chunks are in cache, then dropped).
inline std::vector<tc::run_summary> summarize_files(const std::vector<std::string>& files,
                                                    const std::string& kind,
                                                    const report_settings& s, input_stats& stats) {
  auto sums = make_summarizers(s);
  if (s.threads <= 1) {
    stats = read_inputs(files, kind, [&](tc::trace_timeline&& tl) {
      for (auto& sum : sums) sum.add(tl);
    });
    return finish_summaries(sums, s, stats);
  }
  // Two threads: the reader also evaluates up to three of the profiles that keep one value per
  // request (the cheaper ones); this thread evaluates the rest, the pooled-ITL profiles among
  // them (they share their samples, so they stay together). Three balances the two on the
  // 100k x 150 trace: each then waits for the other on fewer than a tenth of the batches.
  constexpr std::size_t reader_share = 3;
  std::vector<tc::run_summarizer<tc::trace_timeline>*> on_reader, on_consumer;
  for (auto& sum : sums) {
    const bool cheap = !tc::pools_samples(sum.profile_used().itl);
    (cheap && on_reader.size() < reader_share ? on_reader : on_consumer).push_back(&sum);
  }
  stats = read_inputs_pipelined(
      files, kind,
      [&](tc::trace_timeline&& tl) {
        for (auto* sum : on_consumer) sum->add(tl);
      },
      [&](const tc::trace_timeline& tl) {
        for (auto* sum : on_reader) sum->add(tl);
      });
  return finish_summaries(sums, s, stats);
}

/// One summary per selected profile of timelines already in memory.
inline std::vector<tc::run_summary> summarize_all(const loaded_inputs& in,
                                                  const report_settings& s) {
  auto sums = make_summarizers(s);
  for (const auto& tl : in.timelines)
    for (auto& sum : sums) sum.add(tl);
  return finish_summaries(sums, s, in);
}

// --- writers ---------------------------------------------------------------------------------

namespace detail {
inline ojson value(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

inline ojson distribution_json(const tc::distribution& d) {
  ojson j;
  j["count"] = d.count;
  j["mean"] = value(d.mean);
  j["median"] = value(d.median);
  j["std"] = value(d.stddev);
  j["min"] = value(d.min);
  j["max"] = value(d.max);
  for (const auto& p : d.percentiles) j[tc::percentile_key(p.percent)] = value(p.value);
  if (d.invalid) j["invalid"] = d.invalid;
  return j;
}
}  // namespace detail

/// One summary as the report's JSON object (values in seconds; schema in the README).
inline ojson to_json(const tc::run_summary& s) {
  using detail::distribution_json;
  using detail::value;
  ojson j;
  j["profile"] = s.profile;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["duration"] = value(s.duration);
  j["request_throughput"] = value(s.request_throughput);
  j["output_throughput"] = value(s.output_throughput);
  j["total_token_throughput"] = value(s.total_token_throughput);
  ojson m;
  m["ttft"] = distribution_json(s.ttft);
  m["tpot"] = distribution_json(s.tpot);
  m["itl"] = distribution_json(s.itl);
  m["e2el"] = distribution_json(s.e2el);
  if (s.queue.count) m["queue"] = distribution_json(s.queue);
  if (s.prefill.count) m["prefill"] = distribution_json(s.prefill);
  if (s.decode.count) m["decode"] = distribution_json(s.decode);
  m["tokens_per_s"] = distribution_json(s.user_output_rate);
  j["metrics"] = std::move(m);
  j["requests"] = s.requests;
  j["input_tokens"] = s.input_tokens;
  j["output_tokens"] = s.output_tokens;
  j["mean_concurrency"] = value(s.mean_concurrency);
  j["time_weighted_concurrency"] = value(s.time_weighted_concurrency);
  j["peak_concurrency"] = s.peak_concurrency;
  if (s.gpus) {
    j["gpus"] = *s.gpus;
    j["request_throughput_per_gpu"] = value(s.request_throughput_per_gpu);
    j["output_throughput_per_gpu"] = value(s.output_throughput_per_gpu);
    j["total_token_throughput_per_gpu"] = value(s.total_token_throughput_per_gpu);
  }
  j["lengths"] = {{"prompt", distribution_json(s.prompt_lengths)},
                  {"output", distribution_json(s.output_lengths)}};
  for (const auto& [k, v] : s.extra) j[k] = value(v);
  return j;
}

/// The JSON document: one object for one profile, an array for several.
inline ojson to_json(const std::vector<tc::run_summary>& all) {
  if (all.size() == 1) return to_json(all.front());
  ojson a = ojson::array();
  for (const auto& s : all) a.push_back(to_json(s));
  return a;
}

namespace detail {
/// A flat (row name, value per summary) view shared by the table and CSV writers.
struct row {
  std::string name;
  std::vector<std::optional<double>> values;
  bool latency = false;  ///< seconds: shown in ms in the table
};

inline std::vector<row> rows_of(const std::vector<tc::run_summary>& all) {
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
  auto dist = [&](const std::string& metric, bool latency, tc::distribution S::*field,
                  bool only_when_present) {
    if (only_when_present &&
        std::none_of(all.begin(), all.end(), [&](const S& s) { return (s.*field).count > 0; }))
      return;
    add(metric + ".count", false, [&](const S& s) { return u((s.*field).count); });
    add(metric + ".mean", latency, [&](const S& s) { return (s.*field).mean; });
    add(metric + ".median", latency, [&](const S& s) { return (s.*field).median; });
    add(metric + ".std", latency, [&](const S& s) { return (s.*field).stddev; });
    add(metric + ".min", latency, [&](const S& s) { return (s.*field).min; });
    add(metric + ".max", latency, [&](const S& s) { return (s.*field).max; });
    if (all.empty()) return;
    for (std::size_t i = 0; i < (all.front().*field).percentiles.size(); ++i)
      add(metric + "." + tc::percentile_key((all.front().*field).percentiles[i].percent), latency,
          [&](const S& s) { return (s.*field).percentiles[i].value; });
  };
  dist("ttft", true, &S::ttft, false);
  dist("tpot", true, &S::tpot, false);
  dist("itl", true, &S::itl, false);
  dist("e2el", true, &S::e2el, false);
  dist("queue", true, &S::queue, true);
  dist("prefill", true, &S::prefill, true);
  dist("decode", true, &S::decode, true);
  dist("tokens_per_s", false, &S::user_output_rate, false);
  dist("prompt_len", false, &S::prompt_lengths, true);
  dist("output_len", false, &S::output_lengths, false);
  for (std::size_t i = 0; !all.empty() && i < all.front().extra.size(); ++i)
    add(all.front().extra[i].first, false, [&](const S& s) {
      return i < s.extra.size() ? s.extra[i].second : std::optional<double>();
    });
  return rows;
}

/// `v` with `significant` digits, or (0) the shortest form that reads back exactly.
inline std::string format_number(double v, int significant = 6) {
  char buf[64];
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
}  // namespace detail

/// A table: one row per value, one column per profile; latencies in milliseconds.
inline void write_table(std::ostream& out, const std::vector<tc::run_summary>& all) {
  const auto rows = detail::rows_of(all);
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> width(all.size() + 1, 0);
  std::vector<std::string> head{"metric"};
  for (const auto& s : all) head.push_back(s.profile);
  cells.push_back(head);
  for (const auto& r : rows) {
    std::vector<std::string> line{r.latency ? r.name + " (ms)" : r.name};
    for (const auto& v : r.values)
      line.push_back(v ? detail::format_number(r.latency ? *v * 1e3 : *v) : "-");
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

/// CSV: a header `metric,<profile>...` then one row per value (seconds; the shortest form that
/// reads back exactly; an empty cell when undefined).
inline void write_csv(std::ostream& out, const std::vector<tc::run_summary>& all) {
  out << "metric";
  for (const auto& s : all) out << ',' << s.profile;
  out << '\n';
  for (const auto& r : detail::rows_of(all)) {
    out << r.name;
    for (const auto& v : r.values) {
      out << ',';
      if (v) out << detail::format_number(*v, 0);
    }
    out << '\n';
  }
}

/// Writes `all` in `format` (table, json or csv).
inline void write_report(std::ostream& out, const std::vector<tc::run_summary>& all,
                         const std::string& format) {
  if (format == "json")
    out << to_json(all).dump(2) << '\n';
  else if (format == "csv")
    write_csv(out, all);
  else
    write_table(out, all);
}

/// Prints the skipped lines (unless quiet) and a count to `err`; returns the exit code for a
/// report that was written.
inline int report_skipped(const input_stats& in, std::ostream& err, bool quiet) {
  if (in.errors.empty()) return exit_ok;
  if (!quiet)
    for (std::size_t i = 0; i < in.errors.size(); ++i)
      err << "tokchron-report: " << in.error_files[i] << ": " << in.errors[i].to_string() << '\n';
  err << "tokchron-report: skipped " << in.errors.size() << " malformed line"
      << (in.errors.size() == 1 ? "" : "s") << " of " << in.lines << '\n';
  return exit_skipped_lines;
}

/// `--plot DIR`: the pictures of the requests under the selected profiles (examples/plot), with
/// the printed percentiles, GPU count and duration; a message on `err`.
inline void plot_report(const loaded_inputs& in, const report_settings& s, const arguments& args,
                        std::ostream& err) {
  tc::summary_options o;
  o.percentiles = s.percentiles;
  o.gpus = s.gpus;
  o.duration = s.duration ? s.duration : in.duration;  // as finish_summaries
  std::string files, names;  // the command names the paths given; the title only the files
  for (const auto& f : args.files) {
    files += " " + f;
    names += " " + (f == "-" ? f : std::filesystem::path(f).filename().string());
  }
  const std::string dir = *args.get("plot");
  err << plot::plot_trace(in.timelines, s.profiles, o, {}, "tokchron-report" + names,
                          "tokchron-report" + files, dir)
             .to_string(dir)
      << '\n';
}

/// The `summary` command: the run summary under each selected profile.
inline int run_summary_command(const arguments& args, std::ostream& out, std::ostream& err) {
  const report_settings s = settings_from(args);
  if (args.files.empty()) throw usage_error("no input file (use - for stdin)");
  input_stats in;
  std::optional<loaded_inputs> kept;  // --plot draws the requests after the summary
  if (args.has("plot")) kept = load_inputs(args.files, args.get("input").value_or("auto"));
  if (kept) in = *kept;
  const auto summaries =
      kept ? summarize_all(*kept, s)
           : summarize_files(args.files, args.get("input").value_or("auto"), s, in);
  if (in.requests == 0) {
    report_skipped(in, err, args.has("quiet"));
    throw input_error("no valid request in the input");
  }
  write_report(out, summaries, s.format);
  if (kept) plot_report(*kept, s, args, err);
  return report_skipped(in, err, args.has("quiet"));
}

/// A subcommand: its name, a one-line description and what it runs.
struct command {
  std::string name;
  std::string help;
  std::function<int(const arguments&, std::ostream&, std::ostream&)> run;
};

inline std::vector<command>& commands() {
  static std::vector<command> all = {
      {"summary", "the run summary under one or more profiles (the default command)",
       run_summary_command},
  };
  return all;
}

inline arguments parse_arguments(const std::vector<std::string>& argv) {
  arguments a;
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
      if (spec->takes_value && !has_val) {
        if (i + 1 >= argv.size()) throw usage_error("--" + name + " needs a value");
        val = argv[++i];
      } else if (!spec->takes_value && has_val) {
        throw usage_error("--" + name + " takes no value");
      }
      a.values[name].push_back(val);
    } else {
      a.files.push_back(arg);
    }
  }
  return a;
}

/// The usage text.
inline std::string usage() {
  std::ostringstream os;
  os << "usage: tokchron-report [COMMAND] [OPTIONS] FILE...\n"
        "Reads request traces (tokchron JSONL, or a vLLM --save-detailed result) and prints\n"
        "latency and throughput metrics as each benchmark tool defines them.\n\ncommands:\n";
  for (const command& c : commands()) os << "  " << c.name << "  " << c.help << '\n';
  os << "\noptions:\n";
  for (const option_spec& o : options()) {
    std::string lhs = "--" + o.name + (o.takes_value ? " " + o.value_name : "");
    os << "  " << lhs << std::string(lhs.size() < 28 ? 28 - lhs.size() : 1, ' ') << o.help << '\n';
  }
  os << "\nprofiles:";
  for (const tc::profile* p : tc::all_profiles()) os << ' ' << p->name;
  os << "\nexit codes: 0 ok, 1 malformed lines skipped or unreadable input, 2 usage error,\n"
        "  3 an objective failed (--slo) or claims are inconsistent (audit), 4 an objective\n"
        "  is undecided (too few samples)\n";
  return os.str();
}

/// Runs the tool on `argv[1..]`, writing the report to `out` and diagnostics to `err`; returns
/// the exit code. Never throws.
inline int run(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  try {
    const arguments a = parse_arguments(argv);
    if (a.has("help")) {
      out << usage();
      return exit_ok;
    }
    for (const command& c : commands())
      if (c.name == a.command) return c.run(a, out, err);
    throw usage_error("unknown command " + a.command);
  } catch (const usage_error& e) {
    err << "tokchron-report: " << e.what() << "\n\n" << usage();
    return exit_usage;
  } catch (const input_error& e) {
    err << "tokchron-report: " << e.what() << '\n';
    return exit_input;
  } catch (const std::exception& e) {
    err << "tokchron-report: " << e.what() << '\n';
    return exit_input;
  }
}

}  // namespace tokchron_report

#endif  // TOKCHRON_EXAMPLES_TRACE_REPORT_REPORT_HPP
