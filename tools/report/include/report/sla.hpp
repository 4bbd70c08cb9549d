// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_REPORT_SLA_HPP
#define TOKCHRON_TOOLS_REPORT_SLA_HPP

/// \file
/// The SLA parts of tokchron-report: `--slo SPEC` (verdicts with confidence, exit 3 on a fail,
/// 4 when undecided), `--goodput ttft:1.5s,tpot:100ms` (goodput and attainment under each
/// profile's rule), and the claim files of the `audit` command.

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "report/inputs.hpp"
#include "report/options.hpp"
#include "tokchron/sla/consistency.hpp"
#include "tokchron/sla/evaluator.hpp"
#include "tokchron/sla/goodput.hpp"
#include "tokchron/sla/objective.hpp"

namespace tokchron_report {

/// What --slo, --slo-confidence and --goodput ask for.
struct sla_settings {
  tc::sla objectives;
  std::optional<tc::request_slo> goodput;
  tc::evaluation_options eval;
  [[nodiscard]] bool any() const { return !objectives.objectives.empty() || goodput; }
};

/// Reads the SLA options out of `args`. Throws usage_error (also for --slo-confidence without
/// --slo).
[[nodiscard]] sla_settings sla_settings_from(const arguments& args);

/// What the pictures draw for `s`: its objectives, and each --goodput limit as the objective
/// `max(metric) <= limit` (every request within it; the CDF crosses the line at attainment).
[[nodiscard]] tc::sla drawn_objectives(const sla_settings& s);

/// The SLO distributions of `in` under profile `p`: the canonical metrics (ITL per token) for
/// the canonical profile, else the profile's per-request values and its pooled ITL samples.
[[nodiscard]] tc::slo_distributions<> slo_distributions_of(const loaded_inputs& in,
                                                           const tc::profile& p);

/// The worse of two exit codes: fail (3) over undecided (4) over pass (0).
[[nodiscard]] int worse(int a, int b);

/// Reads the claims of `path` (`-` is stdin): one report (an object), an array of them, or an
/// object with `"reports": [...]`. Keys are those of `tc::claims` plus `name`. A known claim
/// must be a finite number >= 0 and `name` a string: anything else (`"rps": "1e9"`,
/// `"rps": true`, `"rps": null`) is refused naming the report and the field. Unknown keys
/// with numbers are warned about on `err`; unknown keys with other values (labels such as
/// `"model"`) are ignored. Throws input_error.
[[nodiscard]] std::vector<tc::claims> read_claims(const std::string& path, std::ostream& err);

/// The `audit` command: every check of every report in the claim files; exit 3 when one is
/// inconsistent. JSON: `{"consistent": all, "reports": [tokchron::audit_json...]}`.
int run_audit_command(const arguments& args, std::ostream& out, std::ostream& err);

}  // namespace tokchron_report

#endif  // TOKCHRON_TOOLS_REPORT_SLA_HPP
