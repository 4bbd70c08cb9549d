// SPDX-License-Identifier: MIT
// Doctests of the functions tokchron-report is made of (tokchron_report_lib, report.hpp).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../../tests/live/helpers.hpp"  // a scraped family's point by name and labels
#include "report/report.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/scrape.hpp"

namespace tr = tokchron_report;

namespace {
const std::string data = std::string(TOKCHRON_SOURCE_DIR) + "/tests/data/traces/";
}

TEST_CASE("report: command lines") {
  const auto a = tr::parse_arguments({"--profile=all", "--gpus", "4", "x.jsonl", "--", "--y"});
  CHECK(a.command == "summary");
  CHECK(*a.get("profile") == "all");
  CHECK(*a.get("gpus") == "4");
  CHECK(a.files == std::vector<std::string>{"x.jsonl", "--y"});
  CHECK(tr::parse_arguments({"summary", "f"}).files == std::vector<std::string>{"f"});
  CHECK_THROWS_AS((void)tr::parse_arguments({"--nope"}), tr::usage_error);
  CHECK_THROWS_AS((void)tr::parse_arguments({"--gpus"}), tr::usage_error);
  CHECK_THROWS_AS((void)tr::parse_arguments({"--quiet=1"}), tr::usage_error);
  CHECK_THROWS_AS((void)tr::settings_from(tr::parse_arguments({"--gpus", "0"})), tr::usage_error);
  CHECK_THROWS_AS((void)tr::settings_from(tr::parse_arguments({"--format", "xml"})),
                  tr::usage_error);
  CHECK_THROWS_AS((void)tr::settings_from(tr::parse_arguments({"--percentiles", "5,x"})),
                  tr::usage_error);
  CHECK(tr::select_profiles("all").size() == tokchron::all_profiles().size());
  CHECK(tr::select_profiles("vllm,mlperf").size() == 2);
  CHECK_THROWS_AS((void)tr::select_profiles("vllm,nope"), tr::usage_error);
}

TEST_CASE("report: JSON keys follow the documented schema, in order") {
  const auto in = tr::load_inputs({data + "separating.jsonl"});
  tr::report_settings s;
  s.profiles = tr::select_profiles("vllm");
  s.percentiles = {50, 99.9};
  const auto j = tr::to_json(tr::summarize_all(in, s));
  REQUIRE(j.is_object());
  const std::vector<std::string> head{"profile",
                                      "completed",
                                      "failed",
                                      "requests_by_reason",
                                      "inclusion",
                                      "duration",
                                      "request_throughput",
                                      "output_throughput",
                                      "total_token_throughput",
                                      "metrics"};
  auto it = j.begin();
  for (const auto& k : head) {
    REQUIRE(it != j.end());
    CHECK(it.key() == k);
    ++it;
  }
  const std::vector<std::string> stats{"count", "mean", "median", "std",
                                       "min",   "max",  "p50",    "p99.9"};
  for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
    auto st = j["metrics"][m].begin();
    for (const auto& k : stats) CHECK((st++).key() == k);
  }
  s.profiles = tr::select_profiles("all");
  CHECK(tr::to_json(tr::summarize_all(in, s)).size() ==
        tokchron::all_profiles().size());  // an array
}

TEST_CASE("report: exit codes and messages") {
  std::ostringstream out, err;
  CHECK(tr::run({"--format", "json", data + "separating.jsonl"}, out, err) == tr::exit_ok);
  CHECK(err.str().empty());
  out.str("");
  CHECK(tr::run({data + "malformed.jsonl"}, out, err) == tr::exit_skipped_lines);
  CHECK(err.str().find("line 4: field chunks[1][1]") != std::string::npos);
  CHECK(!out.str().empty());  // the good lines are still reported
  err.str("");
  CHECK(tr::run({"--quiet", data + "malformed.jsonl"}, out, err) == tr::exit_skipped_lines);
  CHECK(err.str().find("line 4") == std::string::npos);
  CHECK(err.str().find("skipped 7 malformed lines of 10") != std::string::npos);
  CHECK(tr::run({}, out, err) == tr::exit_usage);
  CHECK(tr::run({"--profile", "x", "f"}, out, err) == tr::exit_usage);
  CHECK(tr::run({data + "missing.jsonl"}, out, err) == tr::exit_input);
  CHECK(tr::run({data + "all_bad.jsonl"}, out, err) == tr::exit_input);
  CHECK(tr::run({"--help"}, out, err) == tr::exit_ok);
}

TEST_CASE("report: the pipelined reader hands on what the plain reader does, in order") {
  const std::vector<std::string> files{data + "separating.jsonl", data + "malformed.jsonl"};
  std::vector<std::string> plain, piped;
  const auto a = tr::read_inputs(files, "auto", [&](tokchron::trace_timeline&& tl) {
    plain.push_back(std::to_string(tl.store().chunk_count()) + "@" +
                    std::to_string(tl.arrival()->time_since_epoch().count()));
  });
  const auto b = tr::read_inputs_pipelined(files, "auto", [&](tokchron::trace_timeline&& tl) {
    piped.push_back(std::to_string(tl.store().chunk_count()) + "@" +
                    std::to_string(tl.arrival()->time_since_epoch().count()));
  });
  CHECK(plain.size() > 5);
  CHECK(piped == plain);
  CHECK(b.lines == a.lines);
  CHECK(b.requests == a.requests);
  CHECK(b.errors.size() == a.errors.size());

  // Many batches: a generated trace larger than the batch and queue sizes.
  const std::string big = std::string(TOKCHRON_BINARY_DIR) + "/pipelined.jsonl";
  {
    std::ifstream src(data + "separating.jsonl");
    const std::string one((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
    std::ofstream out(big);
    for (int i = 0; i < 2000; ++i) out << one;
  }
  std::size_t n_plain = 0, n_piped = 0;
  tr::report_settings s;
  s.profiles = tr::select_profiles("all");
  s.threads = 1;
  tr::input_stats st1, st2;
  const auto one_thread = tr::to_json(tr::summarize_files({big}, "auto", s, st1)).dump();
  s.threads = 2;
  const auto two_threads = tr::to_json(tr::summarize_files({big}, "auto", s, st2)).dump();
  CHECK(one_thread == two_threads);  // same summaries, bit for bit
  CHECK(st1.requests == st2.requests);
  (void)tr::read_inputs({big}, "auto", [&](tokchron::trace_timeline&&) { ++n_plain; });
  (void)tr::read_inputs_pipelined({big}, "auto", [&](tokchron::trace_timeline&&) { ++n_piped; });
  CHECK(n_piped == n_plain);

  // A file that cannot be read after a good one: the good one's requests first, then the error.
  std::size_t before_error = 0;
  CHECK_THROWS_AS(
      (void)tr::read_inputs_pipelined({big, data + "missing.jsonl"}, "auto",
                                      [&](tokchron::trace_timeline&&) { ++before_error; }),
      tr::input_error);
  CHECK(before_error == n_plain);

  // The consumer fails part-way: the reader stops and the consumer's exception comes out.
  std::size_t taken = 0;
  CHECK_THROWS_AS((void)tr::read_inputs_pipelined({big}, "auto",
                                                  [&](tokchron::trace_timeline&&) {
                                                    if (++taken == 1500)
                                                      throw std::logic_error("x");
                                                  }),
                  std::logic_error);
  CHECK(taken == 1500);
  std::remove(big.c_str());
}

namespace {
/// A file under the build directory with `text`; its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(TOKCHRON_BINARY_DIR) + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("TR6: every option a command does not take is refused, never dropped") {
  // Every option x command pair: the option's own list says where it applies; elsewhere the
  // command line is refused naming the option and the command.
  for (const tr::command& c : tr::commands())
    for (const tr::option_spec& o : tr::options()) {
      std::vector<std::string> argv{c.name, "--" + o.name};
      if (o.takes_value) argv.push_back("v");
      argv.push_back("f");
      const bool applies =
          std::find(o.commands.begin(), o.commands.end(), c.name) != o.commands.end();
      CAPTURE(c.name);
      CAPTURE(o.name);
      if (applies) {
        CHECK_NOTHROW((void)tr::parse_arguments(argv));
      } else {
        try {
          (void)tr::parse_arguments(argv);
          FAIL("accepted");
        } catch (const tr::usage_error& e) {
          CHECK(contains(e.what(), "--" + o.name + " does not apply to the " + c.name));
        }
      }
    }
  std::ostringstream out, err;
  CHECK(tr::run({"audit", "--plot", "dir", "c.json"}, out, err) == tr::exit_usage);
  CHECK(contains(err.str(), "--plot does not apply to the audit command"));
  // An option that needs another.
  CHECK_THROWS_AS((void)tr::sla_settings_from(tr::parse_arguments({"--slo-confidence", "0.9"})),
                  tr::usage_error);
  // The help lists the exit codes, the same table the code uses.
  CHECK(contains(tr::usage(), tr::exit_code_table()));
  CHECK(contains(tr::exit_code_table(), "1  malformed lines were skipped"));
}

TEST_CASE("TR5: a second value of a one-value option is refused, --slo repeats") {
  CHECK_THROWS_WITH_AS((void)tr::parse_arguments({"--percentiles", "50", "--percentiles", "99"}),
                       doctest::Contains("--percentiles is given twice"), tr::usage_error);
  CHECK_THROWS_AS((void)tr::parse_arguments({"--format=json", "--format=csv"}), tr::usage_error);
  CHECK_THROWS_AS((void)tr::parse_arguments({"--quiet", "--quiet"}), tr::usage_error);
  const auto a = tr::parse_arguments({"--slo", "p95(ttft) < 1s", "--slo", "p99(tpot) < 1s", "f"});
  CHECK(tr::sla_settings_from(a).objectives.objectives.size() == 2);
  CHECK_THROWS_AS((void)tr::select_profiles("vllm,vllm"), tr::usage_error);
}

TEST_CASE("TR4: each percentile has its own exact key") {
  // 1e-300 and 2e-300 would both print as p0.00000000000000000: refused, naming the value.
  CHECK_THROWS_WITH_AS((void)tr::parse_report_percentiles("1e-300,2e-300"),
                       doctest::Contains("1e-300 cannot be named exactly"), tr::usage_error);
  CHECK_THROWS_WITH_AS((void)tr::parse_report_percentiles("50,50.0"),
                       doctest::Contains("50 is given twice"), tr::usage_error);
  // -0 is 0, named p0 (not p-0).
  const auto p = tr::parse_report_percentiles("-0,99.99");
  REQUIRE(p.size() == 2);
  CHECK(!std::signbit(p[0]));
  CHECK(tokchron::percentile_key(p[0]) == "p0");
  std::ostringstream out, err;
  CHECK(tr::run({"--percentiles", "-0,50", "--format", "csv", data + "separating.jsonl"}, out,
                err) == tr::exit_ok);
  CHECK(contains(out.str(), "ttft.p0,"));
  CHECK(!contains(out.str(), "p-0"));
}

TEST_CASE("TR3: a missing or unreadable file among good ones is named, counted, left out") {
  // issue 34: one missing file among several used to abort the whole report.
  const std::string good = data + "separating.jsonl", missing = data + "missing.jsonl";
  std::ostringstream ref, ref_err;
  REQUIRE(tr::run({"--format", "json", good}, ref, ref_err) == tr::exit_ok);
  for (const std::string format : {"table", "csv", "json"}) {
    for (const bool slo : {false, true}) {  // the streamed and the kept path (--goodput)
      std::ostringstream out, err;
      std::vector<std::string> args{"--format", format};
      if (slo) args.insert(args.end(), {"--goodput", "ttft:100s"});
      args.insert(args.end(), {missing, good, data, good});
      CAPTURE(format);
      CAPTURE(slo);
      CHECK(tr::run(args, out, err) == tr::exit_unreadable_files);
      CHECK(contains(err.str(), "cannot open " + missing + ": "));
      CHECK(contains(err.str(), "cannot open " + data + ": is a directory"));
      if (format == "json") {
        const auto j = nlohmann::json::parse(out.str());
        CHECK(j["unreadable_files"] == 2);
        CHECK(j["requests"] == 2 * nlohmann::json::parse(ref.str())["requests"].get<int>());
      } else {
        CHECK(contains(out.str(), format == "csv" ? "unreadable_files,2\n" : "unreadable_files"));
      }
    }
  }
  // none readable: nothing reported
  std::ostringstream out, err;
  CHECK(tr::run({missing, data}, out, err) == tr::exit_input);
  CHECK(out.str().empty());
  CHECK(contains(err.str(), "none of the 2 input files could be read (nothing was reported)"));
  err.str("");
  CHECK(tr::run({missing}, out, err) == tr::exit_input);
  CHECK(out.str().empty());
  CHECK(contains(err.str(), "cannot open " + missing));
  // audit: the readable claims files are audited, the missing one named and counted
  const std::string claims =
      std::string(TOKCHRON_SOURCE_DIR) + "/tests/data/claims/consistent.json";
  err.str("");
  CHECK(tr::run({"audit", "--format", "json", claims, missing}, out, err) ==
        tr::exit_unreadable_files);
  const auto a = nlohmann::json::parse(out.str());
  CHECK(a["consistent"] == true);
  CHECK(a["unreadable_files"].size() == 1);
  CHECK(contains(err.str(), "cannot open " + missing));
  std::ostringstream t, terr;
  CHECK(tr::run({"audit", claims, missing}, t, terr) == tr::exit_unreadable_files);
  CHECK(contains(t.str(), "unreadable file: " + missing));
}

TEST_CASE("TR2: a line longer than --max-line-bytes stops the read, naming the line") {
  const std::string path =
      write_temp("long_line.jsonl", R"({"send":0,"chunks":[[1,1]]})"
                                    "\n" +
                                        std::string(200, ' ') + R"({"send":0,"chunks":[[1,1]]})");
  std::ostringstream out, err;
  CHECK(tr::run({"--max-line-bytes", "100", path}, out, err) == tr::exit_input);
  CHECK(contains(err.str(), "long_line.jsonl: line 2 is longer than 100 bytes"));
  CHECK(out.str().empty());
  err.str("");
  CHECK(tr::run({"--max-line-bytes", "1000", path}, out, err) == tr::exit_ok);
  std::remove(path.c_str());
#if defined(__linux__)
  // /dev/zero is one endless line: the default limit (16 MiB) ends it.
  out.str("");
  err.str("");
  CHECK(tr::run({"--threads", "1", "/dev/zero"}, out, err) == tr::exit_input);
  CHECK(contains(err.str(), "/dev/zero: line 1 is longer than 16777216 bytes"));
#endif
  // A vLLM result file is one JSON document: the same limit bounds it.
  out.str("");
  err.str("");
  CHECK(tr::run({"--max-line-bytes", "100", "--input", "vllm", data + "vllm_result.json"}, out,
                err) == tr::exit_input);
  CHECK(contains(err.str(), "vllm_result.json: a vLLM result file is one JSON document"));
  CHECK(tr::run({"--input", "vllm", data + "vllm_result.json"}, out, err) == tr::exit_ok);
  CHECK_THROWS_AS((void)tr::settings_from(tr::parse_arguments({"--max-line-bytes", "0"})),
                  tr::usage_error);
}

TEST_CASE("TR1: malformed lines are counted, the first 20 kept for the message") {
  std::string text = R"({"send":0,"chunks":[[1,1]]})"
                     "\n";
  for (int i = 0; i < 25; ++i) text += "garbage\n";
  const std::string path = write_temp("garbage25.jsonl", text);
  const auto st = tr::read_inputs({path}, "auto", [](tokchron::trace_timeline&&) {});
  CHECK(st.malformed == 25);
  CHECK(st.errors.size() == tr::kept_errors);
  CHECK(st.errors.back().line == 21);
  std::ostringstream out, err;
  CHECK(tr::run({path}, out, err) == tr::exit_skipped_lines);
  CHECK(contains(err.str(), "line 21:"));
  CHECK(!contains(err.str(), "line 22:"));
  CHECK(contains(err.str(), "... and 5 more malformed lines"));
  CHECK(contains(err.str(), "skipped 25 malformed lines of 26"));
  std::remove(path.c_str());
}

namespace {
/// A /proc/self/status field in kB, or -1.
long status_kb(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.compare(0, field.size() + 1, field + ":") == 0)
      return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  return -1;
}
}  // namespace

TEST_CASE("TR1: 10^6 garbage lines stay under 50 MB") {
  const std::string path = std::string(TOKCHRON_BINARY_DIR) + "/garbage1m.jsonl";
  {
    std::ofstream f(path, std::ios::binary);
    const std::string block = [] {
      std::string b;
      for (int i = 0; i < 1000; ++i) b += "{\"send\":1,\"chunks\":\"not an array\"}\n";
      return b;
    }();
    for (int i = 0; i < 1000; ++i) f << block;
  }
  // The peak resident size of this process is reset (Linux: clear_refs 5) and read back after
  // the run: the growth is what reading the file cost.
  const bool reset = static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5");
  const long before = status_kb("VmRSS");
  const auto st = tr::read_inputs({path}, "auto", [](tokchron::trace_timeline&&) {});
  const long peak = status_kb("VmHWM");
  std::remove(path.c_str());
  CHECK(st.malformed == 1000000);
  CHECK(st.errors.size() == tr::kept_errors);
  CHECK(st.lines == 1000000);
#if defined(__SANITIZE_ADDRESS__)
  const bool measurable = false;  // ASan's quarantine keeps freed blocks resident
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  const bool measurable = false;
#else
  const bool measurable = true;
#endif
#else
  const bool measurable = true;
#endif
  if (reset && before > 0 && peak > 0 && measurable) {
    MESSAGE("resident before " << before << " kB, peak during the read " << peak << " kB");
    CHECK(peak - before < 50 * 1024);
  } else {
    MESSAGE("peak resident size not measurable here; only the counts were checked");
  }
}

TEST_CASE("report: --plot with --slo and --goodput draws the thresholds, names trace ids") {
  const std::string dir = std::string(TOKCHRON_BINARY_DIR) + "/slo_plot";
  std::filesystem::remove_all(dir);
  std::ostringstream out, err;
  const int rc = tr::run({"--slo", "p95(ttft) < 200ms", "--goodput", "tpot:50ms", "--plot", dir,
                          data + "separating.jsonl"},
                         out, err);
  CHECK((rc == tr::exit_ok || rc == tr::exit_slo_undecided));
  CHECK(contains(err.str(), "plot: wrote"));
  CHECK(std::filesystem::is_regular_file(dir + "/index.html"));
  CHECK(contains(slurp(dir + "/latency_ttft.gp"), "SLO p95(ttft) < 200ms"));
  CHECK(contains(slurp(dir + "/latency_tpot.gp"), "SLO max(tpot) <= 50ms"));
  CHECK(contains(out.str(), "goodput"));
  // The token timeline names requests by their trace ids, not by position.
  const std::string timeline = slurp(dir + "/timeline.gp");
  CHECK((contains(timeline, "(bundled)") || contains(timeline, "(one-token)") ||
         contains(timeline, "(ttft-zero)") || contains(timeline, "(usage-zero)") ||
         contains(timeline, "(failed)")));
  CHECK(!contains(timeline, "(request "));
  std::filesystem::remove_all(dir);
  // Pictures that cannot be written: the report is, then exit 1 with the reason.
  const std::string file = write_temp("plot_not_a_dir", "x");
  out.str("");
  err.str("");
  CHECK(tr::run({"--plot", file + "/sub", data + "separating.jsonl"}, out, err) == tr::exit_input);
  CHECK(contains(out.str(), "ttft"));
  CHECK(contains(err.str(), "plot: cannot create"));
  std::remove(file.c_str());
}

TEST_CASE("TR7: audit refuses a known claim of the wrong type, naming it") {
  for (const char* bad : {R"({"rps":"1e9"})", R"({"rps":true})", R"({"rps":null})",
                          R"({"rps":[1]})", R"({"name":5,"rps":1})"}) {
    CAPTURE(bad);
    const std::string path = write_temp("claims_bad.json", bad);
    std::ostringstream out, err;
    CHECK(tr::run({"audit", path}, out, err) == tr::exit_input);
    CHECK((contains(err.str(), "claim 'rps' must be a number, not") ||
           contains(err.str(), "field 'name' must be a string")));
    CHECK(out.str().empty());
    std::remove(path.c_str());
  }
  // A label that is not a claim is still ignored; an unknown number is warned about.
  const std::string ok = write_temp("claims_ok.json", R"({"model":"x","rpz":3,"rps":1})");
  std::ostringstream out, err;
  CHECK(tr::run({"audit", ok}, out, err) == tr::exit_ok);
  CHECK(contains(err.str(), "ignoring unknown claim 'rpz'"));
  std::remove(ok.c_str());
}

TEST_CASE("TR8: the concurrency cap says 'within' when it holds, 'exceeds' when not") {
  const std::string path =
      write_temp("claims_cap.json", R"([{"name":"a","concurrency":2.706,"users":4},)"
                                    R"({"name":"b","concurrency":9,"users":4}])");
  std::ostringstream out, err;
  CHECK(tr::run({"audit", path}, out, err) == tr::exit_slo_fail);
  CHECK(contains(out.str(), "ok           concurrency_cap: concurrency 2.706 is within the 4"));
  CHECK(contains(out.str(), "INCONSISTENT concurrency_cap: concurrency 9 exceeds the 4"));
  CHECK(!contains(out.str(), "2.706 exceeds"));
  std::remove(path.c_str());
}

TEST_CASE("TR9: requests with zero E2E are counted where tokens/s leaves them") {
  const std::string path =
      write_temp("zero_e2e.jsonl", R"({"id":"z","send":1,"chunks":[[1,3]],"end":1})"
                                   "\n"
                                   R"({"id":"n","send":0,"chunks":[[0.5,2]],"end":1})"
                                   "\n");
  std::ostringstream out, err;
  CHECK(tr::run({"--format", "json", path}, out, err) == tr::exit_ok);
  const auto j = nlohmann::json::parse(out.str());
  CHECK(j["metrics"]["output_rate"]["count"] == 1);
  CHECK(j["metrics"]["output_rate"]["invalid"] == 1);
  CHECK(contains(err.str(), "canonical: 1 completed request has no output_rate value"));
  out.str("");
  CHECK(tr::run({path}, out, err) == tr::exit_ok);
  CHECK(contains(out.str(), "output_rate.invalid"));
  std::remove(path.c_str());
}

TEST_CASE("report: --inclusion counts, family by family, what live_metrics counts") {
  // Every outcome: completed (stop, length), failed and timed out after tokens, aborted after
  // scheduling without a token, abandoned and rejected while queued, a server that never
  // reports scheduling.
  const std::string path = std::string(TOKCHRON_BINARY_DIR) + "/inclusion_outcomes.jsonl";
  {
    std::ofstream f(path);
    f << R"({"id":"stop","arrival":0,"send":0,"queued":0.01,"scheduled":0.02,"prompt_tokens":10,"chunks":[[0.05,2],[0.07,1],[0.1,3]],"end":0.1,"ok":true})"
         "\n"
      << R"({"id":"length","arrival":0.01,"send":0.01,"scheduled":0.03,"prompt_tokens":7,"chunks":[[0.06,1],[0.09,1]],"end":0.09,"finish_reason":"length","ok":true})"
         "\n"
      << R"({"id":"unreported","arrival":0.02,"send":0.02,"prompt_tokens":5,"chunks":[[0.08,1]],"end":0.08,"ok":true})"
         "\n"
      << R"({"id":"error","arrival":0.03,"send":0.03,"scheduled":0.04,"prompt_tokens":9,"chunks":[[0.07,1],[0.11,2]],"end":0.12,"ok":false,"error":"boom"})"
         "\n"
      << R"({"id":"timeout","arrival":0.04,"send":0.04,"scheduled":0.05,"prompt_tokens":3,"chunks":[[0.2,1]],"end":0.3,"finish_reason":"timed_out","ok":false})"
         "\n"
      << R"({"id":"abort-running","arrival":0.05,"send":0.05,"scheduled":0.06,"prompt_tokens":11,"chunks":[],"end":0.09,"finish_reason":"aborted","ok":false})"
         "\n"
      << R"({"id":"abort-queued","arrival":0.06,"send":0.06,"prompt_tokens":13,"chunks":[],"end":0.07,"finish_reason":"aborted","ok":false})"
         "\n"
      << R"({"id":"rejected","arrival":0.07,"send":0.07,"prompt_tokens":17,"chunks":[],"end":0.07,"finish_reason":"rejected","ok":false})"
         "\n";
  }
  const auto in = tr::load_inputs({path});
  REQUIRE(in.timelines.size() == 8);
  for (const auto policy :
       {tokchron::inclusion_policy::completed, tokchron::inclusion_policy::scheduled,
        tokchron::inclusion_policy::all}) {
    CAPTURE(tokchron::to_string(policy));
    tokchron::live_options o = tokchron::tokchron_live_options();
    o.inclusion = policy;
    tokchron::live_metrics live(std::move(o));
    for (const auto& tl : in.timelines) REQUIRE(live.record(tl) == tokchron::record_status::ok);
    const tokchron::metrics_snapshot text = tokchron::scrape(live);
    tr::report_settings s;
    s.profiles = tr::select_profiles("canonical");
    s.inclusion = policy;
    const auto sum = tr::summarize_all(in, s).at(0);
    REQUIRE(sum.inclusion == policy);
    const std::pair<const char*, const tokchron::distribution*> families[] = {
        {"tokchron_ttft_seconds", &sum.ttft},
        {"tokchron_itl_seconds", &sum.itl},
        {"tokchron_tpot_seconds", &sum.tpot},
        {"tokchron_e2e_seconds", &sum.e2e},
        {"tokchron_queue_seconds", &sum.queue_time},
        {"tokchron_prefill_seconds", &sum.prefill_time},
        {"tokchron_decode_seconds", &sum.decode_time},
        {"tokchron_request_prompt_tokens", &sum.prompt_lengths},
        {"tokchron_request_output_tokens", &sum.output_lengths}};
    for (const auto& family : families) {
      const char* const name = family.first;  // not a structured binding: CAPTURE captures it
      const tokchron::distribution* const d = family.second;
      CAPTURE(name);
      const tokchron::histogram_data& h = live_test::hist(text, name);
      CHECK(h.count == d->count);
      const double want = d->count ? *d->mean * static_cast<double>(d->count) : 0.0;
      // The same samples summed in another order, and mean x count: within (2 n + 4) units of
      // rounding.
      CHECK(std::fabs(h.sum - want) <=
            static_cast<double>(2 * d->count + 4) * 0x1p-53 * std::fabs(want));
    }
    CHECK(live_test::value(text, "tokchron_prompt_tokens") ==
          static_cast<double>(sum.input_tokens));
    CHECK(live_test::value(text, "tokchron_output_tokens") ==
          static_cast<double>(sum.output_tokens));
    for (std::size_t r = 0; r < tokchron::finish_reason_count; ++r) {
      const std::string reason(tokchron::to_string(static_cast<tokchron::finish_reason>(r)));
      CAPTURE(reason);
      CHECK(sum.requests_by_reason[r] ==
            1 + (reason == "stop" ? 1 : 0) + (reason == "aborted" ? 1 : 0));
      CHECK(live_test::value(text, "tokchron_requests", {{"outcome", reason}}) ==
            static_cast<double>(sum.requests_by_reason[r]));
    }
  }
  // The populations differ as documented: TTFT of every request with a token under
  // scheduled, of the completed ones under completed; prompt tokens of the never-scheduled.
  tr::report_settings s;
  s.profiles = tr::select_profiles("canonical");
  auto run = [&](tokchron::inclusion_policy p) {
    s.inclusion = p;
    return tr::summarize_all(in, s).at(0);
  };
  CHECK(run(tokchron::inclusion_policy::completed).ttft.count == 3);
  CHECK(run(tokchron::inclusion_policy::completed).itl.count == 8);  // every request's chunks
  CHECK(run(tokchron::inclusion_policy::scheduled).ttft.count == 5);
  CHECK(run(tokchron::inclusion_policy::scheduled).e2e.count == 6);
  CHECK(run(tokchron::inclusion_policy::scheduled).input_tokens == 10 + 7 + 5 + 9 + 3);
  CHECK(run(tokchron::inclusion_policy::all).e2e.count == 8);
  CHECK(run(tokchron::inclusion_policy::all).input_tokens == 75);
  // The default: scheduled for canonical, the tool's completed requests for a tool's profile.
  s.inclusion.reset();
  s.profiles = tr::select_profiles("canonical,vllm");
  const auto both = tr::summarize_all(in, s);
  CHECK(both.at(0).inclusion == tokchron::inclusion_policy::scheduled);
  CHECK_FALSE(both.at(1).inclusion.has_value());
  CHECK(both.at(1).e2e.count == 3);
  CHECK(tr::settings_from(tr::parse_arguments({"--inclusion", "all", "x"})).inclusion ==
        tokchron::inclusion_policy::all);
  CHECK_THROWS_AS((void)tr::settings_from(tr::parse_arguments({"--inclusion", "some", "x"})),
                  tr::usage_error);
}

TEST_CASE("report: CSV and table print integers as integers") {
  tokchron::run_summary s;
  s.profile = "canonical";
  s.requests = 400;
  s.completed = 1234567;
  s.duration = 2.5;
  std::ostringstream csv, table;
  tr::write_csv(csv, {s});
  tr::write_table(table, {s});
  CHECK(csv.str().find("\nrequests,400\n") != std::string::npos);
  CHECK(csv.str().find("\ncompleted,1234567\n") != std::string::npos);
  CHECK(csv.str().find("\nduration_s,2.5\n") != std::string::npos);
  CHECK(csv.str().find("e+") == std::string::npos);
  CHECK(table.str().find("1234567") != std::string::npos);
}
