// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_SLA_CONSISTENCY_HPP
#define TOKCHRON_SLA_CONSISTENCY_HPP

/// \file
/// Claim audits: queueing-theory checks (Little's law and its relatives) that flag a performance
/// report whose figures cannot all be true.
///
/// Input is any subset of claimed figures (`claims`); each check runs when the figures it needs
/// are present, and gives a `finding` with the claimed value, the value the other claims imply,
/// and the factor of disagreement (>= 1). A check fails when the factor exceeds
/// `audit_options::tolerance` (claims are rounded and runs are not perfectly steady), or
/// tolerance x `proxy_slack` when a percentile had to stand in for a mean (P95 TPOT for the
/// mean TPOT, P95 TTFT for the mean TTFT).
///
/// The checks (each a law of the figures it names):
///  - `token_mix`: total_tps = output_tps (prompt + output) / output; rps = output_tps / output;
///  - `decode_rate`: output_tps <= gpus x max_batch_size / mean TPOT (each decoding slot yields
///    one token per TPOT);
///  - `hardware_floor`: mean TPOT >= weight_bytes / memory bandwidth (every decode step reads
///    the weights);
///  - `littles_law`: concurrency = rps x mean E2E;
///  - `closed_loop`: rps = users / (mean E2E + think time) (interactive response-time law);
///  - `queueing_ttft`: mean TTFT >= mean queue wait >= (users - rps x think - gpus x
///    max_batch_size) / rps;
///  - `concurrency_cap`: concurrency <= users (closed loop); its message says "exceeds" only
///    when the claim is above the users, "is within" otherwise.
///
/// Derived figures (output_tps from total_tps and the token lengths, rps from output_tps, mean
/// E2E from TTFT + (output - 1) TPOT) are used when not claimed, and each finding says which
/// figures it used. `max_batch_size` is per GPU (replica); throughputs are for all GPUs.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Claimed figures of one performance report (any subset). Seconds, tokens and tokens/s.
struct claims {
  std::string name;                      ///< a label for the report ("batch 8")
  std::optional<double> output_tps;      ///< output tokens per second (all GPUs)
  std::optional<double> total_tps;       ///< prompt + output tokens per second
  std::optional<double> rps;             ///< completed requests per second
  std::optional<double> mean_tpot_s;     ///< mean time per output token
  std::optional<double> p95_tpot_s;      ///< P95 time per output token
  std::optional<double> mean_ttft_s;     ///< mean time to first token
  std::optional<double> p95_ttft_s;      ///< P95 time to first token
  std::optional<double> mean_e2e_s;      ///< mean end-to-end latency
  std::optional<double> concurrency;     ///< mean requests in flight
  std::optional<double> max_batch_size;  ///< most requests decoding at once, per GPU
  std::optional<double> users;           ///< closed-loop users (each waits for its answer)
  std::optional<double> think_time_s;    ///< a user's pause between answer and next request
  std::optional<double> mean_prompt_tokens;
  std::optional<double> mean_output_tokens;
  std::optional<double> gpus;                          ///< GPUs (replicas) serving the load
  std::optional<double> weight_bytes;                  ///< model weight bytes per replica
  std::optional<double> memory_bandwidth_bytes_per_s;  ///< per GPU

  /// The claim keys, as claim files spell them (same names as the members).
  static constexpr std::string_view keys[] = {"output_tps",
                                              "total_tps",
                                              "rps",
                                              "mean_tpot_s",
                                              "p95_tpot_s",
                                              "mean_ttft_s",
                                              "p95_ttft_s",
                                              "mean_e2e_s",
                                              "concurrency",
                                              "max_batch_size",
                                              "users",
                                              "think_time_s",
                                              "mean_prompt_tokens",
                                              "mean_output_tokens",
                                              "gpus",
                                              "weight_bytes",
                                              "memory_bandwidth_bytes_per_s"};

  /// The member a key names, or nullptr for an unknown key.
  [[nodiscard]] std::optional<double>* field(std::string_view key) noexcept {
    std::optional<double>* f[] = {&output_tps,
                                  &total_tps,
                                  &rps,
                                  &mean_tpot_s,
                                  &p95_tpot_s,
                                  &mean_ttft_s,
                                  &p95_ttft_s,
                                  &mean_e2e_s,
                                  &concurrency,
                                  &max_batch_size,
                                  &users,
                                  &think_time_s,
                                  &mean_prompt_tokens,
                                  &mean_output_tokens,
                                  &gpus,
                                  &weight_bytes,
                                  &memory_bandwidth_bytes_per_s};
    for (std::size_t i = 0; i < sizeof f / sizeof f[0]; ++i)
      if (keys[i] == key) return f[i];
    return nullptr;
  }
  /// Sets claim `key` to `value`. Returns false (and changes nothing) for an unknown key or a
  /// value that is negative or not finite.
  bool set(std::string_view key, double value) noexcept {
    std::optional<double>* f = field(key);
    if (f == nullptr || !std::isfinite(value) || value < 0) return false;
    *f = value;
    return true;
  }
};

/// The outcome of one check.
struct finding {
  std::string_view check;  ///< "decode_rate", "littles_law", ... (see the file comment)
  bool consistent = true;
  double claimed = 0;   ///< the claimed (or derived) figure under test
  double implied = 0;   ///< what the other figures imply for it
  double factor = 1;    ///< max(claimed/implied, implied/claimed) for equalities; the
                        ///< excess ratio for bounds (1 when within the bound)
  double allowed = 1;   ///< the factor beyond which the check fails
  std::string message;  ///< the figures and the law, in words
};

/// All checks run on one report.
struct audit_report {
  std::string name;
  std::vector<finding> findings;
  /// True when every check passed (also when no check could run).
  [[nodiscard]] bool consistent() const noexcept {
    return std::all_of(findings.begin(), findings.end(),
                       [](const finding& f) { return f.consistent; });
  }
  /// One line per finding: "INCONSISTENT decode_rate: ...".
  [[nodiscard]] std::string to_string() const {
    std::string s;
    for (const auto& f : findings) {
      s += f.consistent ? "ok           " : "INCONSISTENT ";
      s += f.check;
      s += ": ";
      s += f.message;
      s += '\n';
    }
    return s;
  }
};

/// Audit settings.
struct audit_options {
  double tolerance = 1.25;  ///< largest factor of disagreement accepted
  double proxy_slack = 2;   ///< extra factor when a percentile stands in for a mean
};

namespace detail {
inline std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
inline std::string fmt_ms(double s) { return fmt_num(s * 1e3) + " ms"; }
inline std::string fmt_s(double s) { return fmt_num(s) + " s"; }
}  // namespace detail

/// Runs every check whose figures are present (see the file comment). Throws
/// std::invalid_argument when the options are not >= 1.
[[nodiscard]] inline audit_report audit(const claims& c, const audit_options& opt = {}) {
  if (!(opt.tolerance >= 1 && opt.proxy_slack >= 1))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: audit tolerance and slack must be >= 1");
  using detail::fmt_ms;
  using detail::fmt_num;
  using detail::fmt_s;
  audit_report rep;
  rep.name = c.name;
  auto pos = [](const std::optional<double>& v) { return v && *v > 0; };
  auto add = [&](std::string_view check, double claimed, double implied, bool equality, bool proxy,
                 std::string message) {
    finding f;
    f.check = check;
    f.claimed = claimed;
    f.implied = implied;
    if (equality)
      f.factor = std::max(claimed / implied, implied / claimed);
    else
      f.factor = std::max(1.0, claimed / implied);  // claimed must not exceed implied
    f.allowed = opt.tolerance * (proxy ? opt.proxy_slack : 1.0);
    f.consistent = !(f.factor > f.allowed);
    f.message = std::move(message);
    f.message += " (factor " + fmt_num(f.factor) + ", allowed " + fmt_num(f.allowed) + ")";
    rep.findings.push_back(std::move(f));
  };
  const double gpus = pos(c.gpus) ? *c.gpus : 1.0;

  // Derived figures.
  std::optional<double> out_tps = c.output_tps;
  std::string out_src = "claimed";
  if (!pos(out_tps) && pos(c.total_tps) && pos(c.mean_prompt_tokens) && pos(c.mean_output_tokens)) {
    out_tps =
        *c.total_tps * *c.mean_output_tokens / (*c.mean_prompt_tokens + *c.mean_output_tokens);
    out_src = "from total_tps and the token lengths";
  } else if (!pos(out_tps) && pos(c.rps) && pos(c.mean_output_tokens)) {
    out_tps = *c.rps * *c.mean_output_tokens;
    out_src = "from rps x mean output tokens";
  }
  std::optional<double> rps = c.rps;
  std::string rps_src = "claimed";
  if (!pos(rps) && pos(out_tps) && pos(c.mean_output_tokens)) {
    rps = *out_tps / *c.mean_output_tokens;
    rps_src = "output_tps / mean output tokens";
  }
  std::optional<double> tpot = c.mean_tpot_s;
  bool tpot_proxy = false;
  if (!pos(tpot) && pos(c.p95_tpot_s)) {
    tpot = c.p95_tpot_s;
    tpot_proxy = true;
  }
  const std::string tpot_name = tpot_proxy ? "P95 TPOT (standing in for the mean)" : "mean TPOT";
  std::optional<double> ttft = c.mean_ttft_s;
  bool ttft_proxy = false;
  if (!pos(ttft) && pos(c.p95_ttft_s)) {
    ttft = c.p95_ttft_s;
    ttft_proxy = true;
  }
  std::optional<double> e2e = c.mean_e2e_s;
  bool e2e_proxy = false;
  bool e2e_derived = false;
  if (!pos(e2e) && ttft && pos(tpot) && pos(c.mean_output_tokens)) {
    e2e = *ttft + std::max(0.0, *c.mean_output_tokens - 1) * *tpot;
    e2e_proxy = ttft_proxy || tpot_proxy;
    e2e_derived = true;
  }

  // token_mix
  if (pos(c.output_tps) && pos(c.total_tps) && pos(c.mean_prompt_tokens) &&
      pos(c.mean_output_tokens)) {
    const double implied =
        *c.output_tps * (*c.mean_prompt_tokens + *c.mean_output_tokens) / *c.mean_output_tokens;
    add("token_mix", *c.total_tps, implied, true, false,
        "total_tps " + fmt_num(*c.total_tps) +
            " vs output_tps x (prompt + output) / output = " + fmt_num(implied));
  }
  if (pos(c.output_tps) && pos(c.rps) && pos(c.mean_output_tokens)) {
    const double implied = *c.output_tps / *c.mean_output_tokens;
    add("token_mix", *c.rps, implied, true, false,
        "rps " + fmt_num(*c.rps) + " vs output_tps / mean output tokens = " + fmt_num(implied));
  }
  // decode_rate
  if (pos(out_tps) && pos(c.max_batch_size) && pos(tpot)) {
    const double slots = gpus * *c.max_batch_size;
    const double implied = slots / *tpot;
    add("decode_rate", *out_tps, implied, false, tpot_proxy,
        "output " + fmt_num(*out_tps) + " tokens/s (" + out_src + ") but " + fmt_num(slots) +
            " decoding slots at a " + tpot_name + " of " + fmt_ms(*tpot) + " give at most " +
            fmt_num(implied) + " tokens/s; the claim needs a mean TPOT of " +
            fmt_ms(slots / *out_tps));
  }
  // hardware_floor
  if (pos(c.weight_bytes) && pos(c.memory_bandwidth_bytes_per_s)) {
    const double floor_s = *c.weight_bytes / *c.memory_bandwidth_bytes_per_s;
    if (pos(tpot))
      add("hardware_floor", floor_s, *tpot, false, tpot_proxy,
          tpot_name + " " + fmt_ms(*tpot) + " vs the weight-read floor of " + fmt_ms(floor_s) +
              " per decode step (weights / bandwidth)");
    if (pos(out_tps) && pos(c.max_batch_size)) {
      const double needed = gpus * *c.max_batch_size / *out_tps;
      add("hardware_floor", floor_s, needed, false, false,
          "output " + fmt_num(*out_tps) + " tokens/s with " + fmt_num(gpus * *c.max_batch_size) +
              " slots needs a TPOT of " + fmt_ms(needed) + " vs the weight-read floor of " +
              fmt_ms(floor_s));
    }
  }
  // littles_law
  if (pos(c.concurrency) && pos(rps) && pos(e2e)) {
    const double implied = *rps * *e2e;
    add("littles_law", *c.concurrency, implied, true, e2e_proxy,
        "concurrency " + fmt_num(*c.concurrency) + " vs rps " + fmt_num(*rps) + " x mean E2E " +
            fmt_s(*e2e) + (e2e_derived ? " (TTFT + (output - 1) x TPOT)" : "") + " = " +
            fmt_num(implied));
  }
  if (pos(c.concurrency) && pos(c.users)) {
    // The words follow the comparison: "exceeds" only when the claim is above the bound.
    add("concurrency_cap", *c.concurrency, *c.users, false, false,
        "concurrency " + fmt_num(*c.concurrency) +
            (*c.concurrency > *c.users ? " exceeds the " : " is within the ") + fmt_num(*c.users) +
            " closed-loop users");
  }
  const double think = c.think_time_s ? *c.think_time_s : 0.0;
  // closed_loop
  if (pos(c.users) && pos(rps) && pos(e2e) && c.think_time_s) {
    const double implied = *c.users / (*e2e + think);
    add("closed_loop", *rps, implied, true, e2e_proxy,
        "rps " + fmt_num(*rps) + " (" + rps_src +
            ") vs users / (E2E + think) = " + fmt_num(*c.users) + " / (" + fmt_s(*e2e) + " + " +
            fmt_s(think) + ") = " + fmt_num(implied) + "; the claimed rate implies a mean E2E of " +
            fmt_s(*c.users / *rps - think));
  }
  // queueing_ttft
  if (pos(c.users) && pos(rps) && pos(c.max_batch_size) && c.think_time_s && pos(ttft)) {
    const double slots = gpus * *c.max_batch_size;
    const double waiting = *c.users - *rps * think - slots;
    if (waiting > 0) {
      const double wait = waiting / *rps;
      add("queueing_ttft", wait, *ttft, false, ttft_proxy,
          fmt_num(*c.users) + " users, " + fmt_num(slots) + " slots, think " + fmt_s(think) +
              " at " + fmt_num(*rps) + " req/s leave " + fmt_num(waiting) +
              " requests queued: a mean wait of " + fmt_s(wait) + " before the first token, but " +
              (ttft_proxy ? "P95" : "mean") + " TTFT is " + fmt_s(*ttft) +
              "; consistent only if TTFT is counted from admission or users think about " +
              fmt_s(think + wait - *ttft) + " between requests");
    } else {
      add("queueing_ttft", 0, *ttft, false, false,
          "no queueing forced: " + fmt_num(*c.users) + " users fit in " + fmt_num(slots) +
              " slots at " + fmt_num(*rps) + " req/s with think " + fmt_s(think));
    }
  }
  return rep;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_SLA_CONSISTENCY_HPP
