// SPDX-License-Identifier: MIT
#include "report/commands.hpp"

#include <exception>
#include <filesystem>
#include <optional>
#include <ostream>
#include <utility>

#include "plot/plot.hpp"  // tools/plot: --plot
#include "report/inputs.hpp"
#include "report/join.hpp"
#include "report/sla.hpp"
#include "report/summaries.hpp"
#include "report/writers.hpp"
#include "tokchron/export/json.hpp"

namespace tokchron_report {
namespace {

/// `--plot DIR`: the pictures of the requests under the selected profiles (tools/plot), with
/// the printed percentiles, GPU count and duration, the objectives and the goodput limits; a
/// message on `err`.
void plot_report(const loaded_inputs& in, const report_settings& s, const sla_settings& sla,
                 const arguments& args, std::ostream& err) {
  tc::summary_options o;
  o.percentiles = s.percentiles;
  o.gpus = s.gpus;
  o.duration = s.duration ? s.duration : in.duration;  // as the summaries
  std::string files, names;  // the command names the paths given; the title only the files
  for (const auto& f : args.files) {
    files += " " + f;
    names += " " + (f == "-" ? f : std::filesystem::path(f).filename().string());
  }
  const std::string dir = *args.get("plot");
  err << plot::plot_trace(in.timelines, in.names, s.profiles, o, drawn_objectives(sla),
                          "tokchron-report" + names, "tokchron-report" + files, dir)
             .to_string(dir)
      << '\n';
}

/// Adds goodput and attainment to each summary, and judges the objectives under each profile.
/// Returns the worse exit code of the verdicts (0 without objectives).
int judge(std::vector<tc::run_summary>& summaries, std::vector<tc::sla_verdict>& verdicts,
          const loaded_inputs& in, const report_settings& s, const sla_settings& sla) {
  int code = exit_ok;
  verdicts.assign(s.profiles.size(), {});
  for (std::size_t i = 0; i < s.profiles.size(); ++i) {
    auto& sum = summaries[i];
    if (sla.goodput) {
      const tc::goodput_result g = tc::goodput(sum, *sla.goodput, *s.profiles[i]);
      sum.extra.emplace_back("goodput", g.goodput());
      sum.extra.emplace_back("attainment", g.attainment());
    }
    if (!sla.objectives.objectives.empty()) {
      verdicts[i] = slo_distributions_of(in, *s.profiles[i]).evaluate(sla.objectives, sla.eval);
      code = worse(code, verdicts[i].exit_code());
      if (s.format == "csv")  // one row per objective: 1 pass, 0 fail, empty undecided
        for (const auto& v : verdicts[i].verdicts)
          sum.extra.emplace_back(
              "slo:" + v.target.to_string(),
              v.decided() ? std::optional<double>(v.passed() ? 1.0 : 0.0) : std::nullopt);
    }
    sum.requests_detail.clear();
    sum.requests_detail.shrink_to_fit();
  }
  return code;
}

/// The report with the verdicts: JSON puts `"slo"` (tokchron::sla_json) in each profile's
/// object, and `"clock_alignment"` when several hosts' traces were aligned; the table adds each
/// profile's verdicts below it; CSV has them as rows.
void write_judged(std::ostream& out, std::ostream& err,
                  const std::vector<tc::run_summary>& summaries,
                  const std::vector<tc::sla_verdict>& verdicts, const report_settings& s,
                  bool judged, const clock_alignment& clocks) {
  if (s.format == "json") {
    ojson j = to_json(summaries);
    if (judged) {
      if (j.is_array())
        for (std::size_t i = 0; i < j.size(); ++i) j[i]["slo"] = tc::sla_json(verdicts[i]);
      else
        j["slo"] = tc::sla_json(verdicts.front());
    }
    if (clocks.aligned()) {  // several hosts' traces on one timeline: how far to trust it
      if (j.is_array())
        for (auto& o : j) o["clock_alignment"] = alignment_json(clocks);
      else
        j["clock_alignment"] = alignment_json(clocks);
    }
    out << j.dump(2) << '\n';
    return;
  }
  write_report(out, summaries, s.format, &err);
  if (s.format == "table" && judged)
    for (std::size_t i = 0; i < s.profiles.size(); ++i)
      out << "\nSLO (" << summaries[i].profile << "): " << tc::to_string(verdicts[i].overall())
          << '\n'
          << verdicts[i].to_string();
}

}  // namespace

int run_summary_command(const arguments& args, std::ostream& out, std::ostream& err) {
  report_settings s = settings_from(args);
  const sla_settings sla = sla_settings_from(args);
  if (args.files.empty()) throw usage_error("no input file (use - for stdin)");
  const input_files files = readable_inputs(args.files, err);
  s.keep_requests = sla.goodput.has_value();
  // The objectives and the pictures need the requests after the summary: keep them.
  const bool keep = sla.any() || args.has("plot");
  read_options ro(s.input);
  ro.max_line_bytes = s.max_line_bytes;
  input_stats in;
  std::optional<loaded_inputs> kept;
  std::vector<tc::run_summary> summaries;
  if (keep) {
    kept = load_inputs(files.readable, ro);
    in = *kept;
    summaries = summarize_all(*kept, s);
  } else {
    summaries = summarize_files(files.readable, s.input, s, in);
  }
  if (!files.unreadable.empty())  // counted in every format (a row, a CSV line, a JSON key)
    for (auto& sum : summaries)
      sum.extra.emplace_back("unreadable_files", static_cast<double>(files.unreadable.size()));
  if (in.requests == 0) {
    report_skipped(in, err, args.has("quiet"));
    throw input_error("no valid request in the input");
  }
  std::vector<tc::sla_verdict> verdicts;
  const int code = kept ? judge(summaries, verdicts, *kept, s, sla) : exit_ok;
  write_judged(out, err, summaries, verdicts, s, !sla.objectives.objectives.empty(), in.clocks);
  if (in.clocks.aligned() && !args.has("quiet")) err << in.clocks.to_string();
  if (args.has("plot")) plot_report(*kept, s, sla, args, err);
  report_missing_rates(summaries, err);
  const int skipped = report_skipped(in, err, args.has("quiet"));
  if (code != exit_ok) return code;
  return files.unreadable.empty() ? skipped : exit_unreadable_files;
}

const std::vector<command>& commands() {
  static const std::vector<command> all = {
      {"summary", "the run summary under one or more profiles (the default command)",
       run_summary_command},
      {"audit",
       "check claimed figures (CLAIMS.json) against Little's law; exit 3 when inconsistent",
       run_audit_command},
      {"join",
       "join client and server traces by request id: each request's TTFT and E2E split into "
       "the way to the server, the server's part and the way back (--server FILE)",
       run_join_command},
  };
  return all;
}

int run(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
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
