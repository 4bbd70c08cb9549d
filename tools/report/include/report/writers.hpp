// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_REPORT_WRITERS_HPP
#define TOKCHRON_TOOLS_REPORT_WRITERS_HPP

/// \file
/// tokchron-report's writers: the table, the CSV and the JSON (the library's schema,
/// tokchron/export/json.hpp) of the summaries, and the messages about the input on stderr.

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/inputs.hpp"
#include "tokchron/metrics/run_summary.hpp"

namespace tokchron_report {

using ojson = nlohmann::ordered_json;

/// The JSON document: one `tokchron::summary_json` object for one profile, an array for
/// several; each object has `"warnings"`: the profile's quirks that affected its numbers
/// (`tokchron::profile_warnings`), as `{"quirk", "count", "message"}` objects.
[[nodiscard]] ojson to_json(const std::vector<tc::run_summary>& all);

/// A table: one row per value, one column per profile; latencies in milliseconds. The first
/// row names each profile's population (`inclusion`: completed, scheduled, all, or `profile`
/// for the requests its tool counts as completed); after failed, the requests by finish
/// reason (`requests.stop` ... `requests.rejected`). The rows of
/// the metric table's names follow the JSON (`tokchron::summary_json`): queue, prefill and
/// decode only when some request recorded them; the metrics of
/// `run_summary::kept_when_measured` (ttfa, reasoning_time, ttst, icl, prefill_tps,
/// uncached_prefill_tps, spec_acceptance) and `reasoning_len` only when some profile measured
/// them (a profile that does not shows count 0 and empty values).
void write_table(std::ostream& out, const std::vector<tc::run_summary>& all);

/// CSV: a header `metric,<profile>...`, the `inclusion` row, then one row per value as the
/// table's (seconds; integers in full, other values in the shortest form that reads back
/// exactly; an empty cell when undefined).
void write_csv(std::ostream& out, const std::vector<tc::run_summary>& all);

/// Writes `all` in `format` (table, json or csv) with each profile's warnings
/// (`tokchron::profile_warnings`): in the JSON, after the table ("warning: ..." lines), and for
/// CSV on `err` when given.
void write_report(std::ostream& out, const std::vector<tc::run_summary>& all,
                  const std::string& format, std::ostream* err = nullptr);

/// The clock alignment of several hosts' traces: `{"reference", "error", "hosts": [{"file",
/// "lines", "shift_min", "shift_max", "error"}]}` (seconds; `error` excludes the wall clocks'
/// own disagreement).
[[nodiscard]] ojson alignment_json(const clock_alignment& a);

/// Writes one line `prefix` + message per warning of every summary.
void write_warnings(std::ostream& out, const std::vector<tc::run_summary>& all, const char* prefix);

/// Prints the kept malformed lines (unless quiet), how many more were not listed, and the
/// count to `err`; returns the exit code for a report that was written (1 when lines were
/// skipped).
int report_skipped(const input_stats& in, std::ostream& err, bool quiet);

/// Says on `err`, per summary, how many completed requests have no tokens/s value (zero E2E
/// latency or no output tokens, or no TPOT under a 1/TPOT rule): they are counted in
/// `output_rate.invalid` (the JSON's `metrics.output_rate.invalid`).
void report_missing_rates(const std::vector<tc::run_summary>& all, std::ostream& err);

}  // namespace tokchron_report

#endif  // TOKCHRON_TOOLS_REPORT_WRITERS_HPP
