// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_EXAMPLES_TRACE_REPORT_SLA_REPORT_HPP
#define TOKCHRON_EXAMPLES_TRACE_REPORT_SLA_REPORT_HPP

/// \file
/// The SLA parts of `tokchron-report`: `--slo SPEC` (verdicts with confidence, exit 3 on a
/// fail, 4 when undecided), `--goodput ttft:1.5s,tpot:100ms` (goodput and attainment under each
/// profile's rule) and the `audit CLAIMS.json` subcommand (Little's-law checks of claimed
/// figures, exit 3 when inconsistent). `register_sla()` adds them to `options()` and
/// `commands()`; the summary command keeps its behaviour when neither option is given.

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report.hpp"
#include "tokchron/sla/consistency.hpp"
#include "tokchron/sla/evaluator.hpp"
#include "tokchron/sla/goodput.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"

namespace tokchron_report {

/// What --slo, --slo-confidence and --goodput ask for.
struct sla_settings {
  tc::sla objectives;
  std::optional<tc::request_slo> goodput;
  tc::evaluation_options eval;
  [[nodiscard]] bool any() const { return !objectives.objectives.empty() || goodput; }
};

/// Reads the SLA options out of `args`. Throws usage_error.
inline sla_settings sla_settings_from(const arguments& args) {
  sla_settings s;
  if (const auto it = args.values.find("slo"); it != args.values.end())
    for (const std::string& spec : it->second) {
      try {
        tc::sla one = tc::sla::parse(spec);
        for (auto& o : one.objectives) s.objectives.objectives.push_back(o);
      } catch (const std::invalid_argument& e) {
        throw usage_error(std::string("--slo: ") + e.what());
      }
    }
  if (auto v = args.get("goodput")) {
    try {
      s.goodput = tc::request_slo::parse(*v);
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string("--goodput: ") + e.what());
    }
  }
  if (auto v = args.get("slo-confidence")) {
    char* end = nullptr;
    const double c = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(c >= 0.5 && c < 1))
      throw usage_error("--slo-confidence must be in [0.5, 1)");
    s.eval.confidence = c;
  }
  return s;
}

/// The SLO distributions of `in` under profile `p`: the canonical metrics (ITL per token) for
/// the canonical profile, else the profile's per-request values and its pooled ITL samples.
inline tc::slo_distributions<> slo_distributions_of(const loaded_inputs& in, const tc::profile& p) {
  tc::slo_distributions<> d;
  const bool canonical = &p == &tc::profiles::canonical;
  for (const auto& tl : in.timelines) {
    if (canonical) {
      d.add(tl);
      continue;
    }
    if (!tl.finished()) continue;
    const tc::profiled_request r = tc::evaluate(
        p, tl, [&](double gap, std::uint64_t n) noexcept { d.add(tc::slo_metric::itl, gap, n); });
    d.add(r);
    if (r.completed && r.itl) d.add(tc::slo_metric::itl, *r.itl);
  }
  return d;
}

namespace detail {
inline ojson bound_json(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

inline ojson verdict_json(const tc::verdict& v) {
  ojson j;
  j["objective"] = v.target.to_string();
  j["status"] = std::string(tc::to_string(v.status));
  j["measured"] = value(v.measured);
  j["margin"] = value(v.margin);
  j["lower"] = bound_json(v.lower);
  j["upper"] = bound_json(v.upper);
  j["confidence"] = v.confidence;
  j["samples"] = v.samples;
  if (v.misses) j["misses"] = *v.misses;
  if (v.more_samples_needed) j["more_samples_needed"] = *v.more_samples_needed;
  if (v.more_samples_if_no_misses) j["more_samples_if_no_misses"] = *v.more_samples_if_no_misses;
  if (!v.reason.empty()) j["reason"] = std::string(v.reason);
  return j;
}

/// The worse of two exit codes: fail (3) over undecided (4) over pass (0).
inline int worse(int a, int b) {
  if (a == exit_slo_fail || b == exit_slo_fail) return exit_slo_fail;
  if (a == exit_slo_undecided || b == exit_slo_undecided) return exit_slo_undecided;
  return exit_ok;
}
}  // namespace detail

/// The summary command with --slo / --goodput: the report, then each profile's verdicts (JSON:
/// `"slo"` in each profile's object; goodput and attainment are report rows / keys). Returns 3
/// when an objective fails, else 4 when one is undecided, else the summary's code.
inline int run_sla_summary(const arguments& args, std::ostream& out, std::ostream& err) {
  report_settings s = settings_from(args);
  const sla_settings sla = sla_settings_from(args);
  if (args.files.empty()) throw usage_error("no input file (use - for stdin)");
  s.keep_requests = sla.goodput.has_value();
  const loaded_inputs in = load_inputs(args.files, args.get("input").value_or("auto"));
  if (in.requests == 0) {
    report_skipped(in, err, args.has("quiet"));
    throw input_error("no valid request in the input");
  }
  auto summaries = summarize_all(in, s);
  std::vector<tc::sla_verdict> verdicts(s.profiles.size());
  int code = exit_ok;
  for (std::size_t i = 0; i < s.profiles.size(); ++i) {
    auto& sum = summaries[i];
    if (sla.goodput) {
      const tc::goodput_result g = tc::goodput(sum, *sla.goodput, *s.profiles[i]);
      sum.extra.emplace_back("goodput", g.goodput());
      sum.extra.emplace_back("attainment", g.attainment());
    }
    if (!sla.objectives.objectives.empty()) {
      verdicts[i] = slo_distributions_of(in, *s.profiles[i]).evaluate(sla.objectives, sla.eval);
      code = detail::worse(code, verdicts[i].exit_code());
      if (s.format == "csv")  // one row per objective: 1 pass, 0 fail, empty undecided
        for (const auto& v : verdicts[i].verdicts)
          sum.extra.emplace_back(
              "slo:" + v.target.to_string(),
              v.decided() ? std::optional<double>(v.passed() ? 1.0 : 0.0) : std::nullopt);
    }
    sum.requests_detail.clear();
    sum.requests_detail.shrink_to_fit();
  }
  if (s.format == "json") {
    ojson j = to_json(summaries);
    if (!sla.objectives.objectives.empty()) {
      auto put = [&](ojson& one, const tc::sla_verdict& v) {
        ojson a = ojson::array();
        for (const auto& x : v.verdicts) a.push_back(detail::verdict_json(x));
        one["slo"] = {{"status", std::string(tc::to_string(v.overall()))},
                      {"verdicts", std::move(a)}};
      };
      if (j.is_array())
        for (std::size_t i = 0; i < j.size(); ++i) put(j[i], verdicts[i]);
      else
        put(j, verdicts.front());
    }
    out << j.dump(2) << '\n';
  } else {
    write_report(out, summaries, s.format);
    if (s.format == "table" && !sla.objectives.objectives.empty())
      for (std::size_t i = 0; i < s.profiles.size(); ++i)
        out << "\nSLO (" << summaries[i].profile << "): " << tc::to_string(verdicts[i].overall())
            << '\n'
            << verdicts[i].to_string();
  }
  const int skipped = report_skipped(in, err, args.has("quiet"));
  return code != exit_ok ? code : skipped;
}

/// Reads the claims of `path`: one report (an object), an array of them, or an object with
/// `"reports": [...]`. Keys are those of `tc::claims` (plus `name`); other non-numeric keys
/// are ignored, unknown numeric keys warned about. Throws input_error.
inline std::vector<tc::claims> read_claims(const std::string& path, std::ostream& err) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw input_error("cannot open " + path);
    in = &file;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*in);
  } catch (const nlohmann::json::exception& e) {
    throw input_error(path + ": " + e.what());
  }
  std::vector<const nlohmann::json*> reports;
  if (doc.is_object() && doc.contains("reports")) {
    if (!doc["reports"].is_array()) throw input_error(path + ": \"reports\" is not an array");
    for (const auto& r : doc["reports"]) reports.push_back(&r);
  } else if (doc.is_array()) {
    for (const auto& r : doc) reports.push_back(&r);
  } else {
    reports.push_back(&doc);
  }
  std::vector<tc::claims> out;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const nlohmann::json& r = *reports[i];
    if (!r.is_object())
      throw input_error(path + ": report " + std::to_string(i + 1) + " is not an object");
    tc::claims c;
    c.name = "report " + std::to_string(i + 1);
    for (const auto& [key, val] : r.items()) {
      if (key == "name" && val.is_string()) {
        c.name = val.get<std::string>();
      } else if (val.is_number()) {
        if (c.field(key) == nullptr)
          err << "tokchron-report: " << path << ": ignoring unknown claim '" << key << "'\n";
        else if (!c.set(key, val.get<double>()))
          throw input_error(path + ": " + c.name + ": claim '" + key +
                            "' must be a finite number >= 0");
      }
    }
    out.push_back(std::move(c));
  }
  if (out.empty()) throw input_error(path + ": no report");
  return out;
}

/// The `audit` command: every check of every report in the claim files; exit 3 when one is
/// inconsistent.
inline int run_audit_command(const arguments& args, std::ostream& out, std::ostream& err) {
  const std::string format = args.get("format").value_or("table");
  if (format != "table" && format != "json") throw usage_error("audit: --format table or json");
  if (args.files.empty()) throw usage_error("audit: no claims file");
  std::vector<tc::audit_report> reports;
  for (const std::string& f : args.files)
    for (const tc::claims& c : read_claims(f, err)) {
      tc::audit_report r = tc::audit(c);
      r.name = c.name;
      reports.push_back(std::move(r));
    }
  bool consistent = true;
  for (const auto& r : reports) consistent = consistent && r.consistent();
  if (format == "json") {
    ojson findings = ojson::array();
    for (const auto& r : reports)
      for (const auto& f : r.findings)
        findings.push_back({{"report", r.name},
                            {"check", std::string(f.check)},
                            {"consistent", f.consistent},
                            {"claimed", f.claimed},
                            {"implied", f.implied},
                            {"factor", f.factor},
                            {"allowed", f.allowed},
                            {"message", f.message}});
    ojson j;
    j["consistent"] = consistent;
    j["findings"] = std::move(findings);
    out << j.dump(2) << '\n';
  } else {
    for (const auto& r : reports)
      out << r.name << ": " << (r.consistent() ? "consistent" : "INCONSISTENT") << '\n'
          << r.to_string() << '\n';
    out << (consistent ? "consistent\n" : "INCONSISTENT\n");
  }
  return consistent ? exit_ok : exit_slo_fail;
}

/// Adds --slo, --slo-confidence, --goodput and the audit command; the summary command goes
/// through `run_sla_summary` when --slo or --goodput is given. Call once, before `run`.
inline void register_sla() {
  auto& opts = options();
  const auto help =
      std::find_if(opts.begin(), opts.end(), [](const option_spec& o) { return o.name == "help"; });
  opts.insert(help, {{"slo", true, "SPEC",
                      "objective(s) to judge, e.g. 'p95(ttft) < 1.5s' (repeatable); exit 3 "
                      "if one fails, 4 if one is undecided"},
                     {"slo-confidence", true, "C",
                      "one-sided confidence of each verdict's bounds (default 0.95)"},
                     {"goodput", true, "LIMITS",
                      "per-request limits, e.g. ttft:1.5s,tpot:100ms: goodput and attainment"}});
  for (command& c : commands())
    if (c.name == "summary") {
      auto plain = c.run;
      c.run = [plain](const arguments& a, std::ostream& out, std::ostream& err) {
        return sla_settings_from(a).any() ? run_sla_summary(a, out, err) : plain(a, out, err);
      };
    }
  commands().push_back({"audit",
                        "check claimed figures (CLAIMS.json) against Little's law; exit 3 when "
                        "inconsistent",
                        run_audit_command});
}

}  // namespace tokchron_report

#endif  // TOKCHRON_EXAMPLES_TRACE_REPORT_SLA_REPORT_HPP
