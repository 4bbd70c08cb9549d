// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_SLA_CAPACITY_HPP
#define TOKCHRON_SLA_CAPACITY_HPP

/// \file
/// Capacity planning: from measured load points (a configuration's parameters, its throughput
/// and its SLA verdicts), pick the configuration with the most throughput that meets the SLA,
/// report the throughput/latency frontier, and say for every rejected point which objective it
/// misses and by how much.
///
/// \code
///   std::vector<tokchron::load_point> pts;
///   pts.push_back({"b8", {{"max_batch_size", "8"}}, out_tps_8, dist8.evaluate(sla)});
///   pts.push_back({"b16", {{"max_batch_size", "16"}}, out_tps_16, dist16.evaluate(sla)});
///   tokchron::capacity_plan plan = tokchron::plan_capacity(pts);
///   if (plan.best) use(pts[*plan.best]);
///   std::puts(plan.to_string(pts).c_str());
/// \endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// One measured configuration.
struct load_point {
  std::string name;
  /// The configuration, as name/value text pairs ("max_batch_size" = "16", "prefill_priority" =
  /// "on"); reported back, never interpreted.
  std::vector<std::pair<std::string, std::string>> parameters;
  /// What the planner maximises, in the caller's unit (output tokens/s, requests/s, ...).
  double throughput = 0;
  /// The SLA judged on this point's run (e.g. `slo_distributions::evaluate`).
  sla_verdict verdicts;
};

/// One objective a point does not meet, and by how much.
struct objective_miss {
  objective target;
  verdict_status status = verdict_status::fail;  ///< fail, or insufficient_data
  std::optional<double> measured;
  /// How far the measured value is beyond the threshold, in the metric's unit (> 0 for a fail;
  /// empty when nothing was measured; may be <= 0 when undecided).
  std::optional<double> excess;
  /// excess / |threshold| (empty when the threshold is 0).
  std::optional<double> relative_excess;
  std::string_view reason;
  /// "p95(ttft) < 1.5s: fail, measured 1.8s, over by 300ms (+20%)".
  [[nodiscard]] std::string to_string() const {
    std::ostringstream os;
    os << target.to_string() << ": " << tokchron::to_string(status);
    if (measured) os << ", measured " << target.format_value(*measured);
    if (excess) {
      os << ", " << (*excess > 0 ? "over by " : "within by ")
         << target.format_value(std::fabs(*excess));
      if (relative_excess) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " (%+.1f%%)", *relative_excess * 100);
        os << buf;
      }
    }
    if (!reason.empty()) os << " (" << reason << ")";
    return os.str();
  }
};

/// The planner's view of one point.
struct point_assessment {
  std::size_t index = 0;     ///< into the input points
  bool meets = false;        ///< every objective passes (or is undecided, if accepted)
  bool on_frontier = false;  ///< not dominated in (throughput up, frontier latency down)
  std::optional<double> frontier_latency;  ///< the frontier objective's measured value
  std::vector<objective_miss> misses;      ///< objectives not passed, in SLA order
};

/// How the planner judges points.
struct capacity_options {
  /// Accept points whose only non-passes are undecided (default: a point must pass everything).
  bool accept_undecided = false;
  /// Which objective (index into each point's verdicts) is the frontier's latency axis.
  std::size_t frontier_objective = 0;
};

/// The planner's answer.
struct capacity_plan {
  /// The point with the most throughput among those that meet the SLA (ties: lower frontier
  /// latency, then input order); empty when none does.
  std::optional<std::size_t> best;
  /// Frontier points, by ascending throughput (each better in latency than any point with more
  /// throughput, so moving along it trades one for the other).
  std::vector<std::size_t> frontier;
  /// One assessment per input point, in input order.
  std::vector<point_assessment> points;

  /// A table: one line per point with its parameters, throughput, verdict and misses.
  [[nodiscard]] std::string to_string(const std::vector<load_point>& pts) const {
    std::ostringstream os;
    for (const auto& a : points) {
      const load_point& p = pts[a.index];
      os << (best && *best == a.index ? "* " : "  ") << p.name;
      for (const auto& kv : p.parameters) os << ' ' << kv.first << '=' << kv.second;
      os << ": throughput " << detail::shortest_number(p.throughput)
         << (a.meets ? ", meets the SLA" : ", rejected") << (a.on_frontier ? ", frontier" : "")
         << '\n';
      for (const auto& m : a.misses) os << "      " << m.to_string() << '\n';
    }
    if (!best) os << "no configuration meets the SLA\n";
    return os.str();
  }
};

/// Plans capacity over `points` (see the file comment). O(P log P + P x objectives). Throws
/// std::invalid_argument for a non-finite throughput.
[[nodiscard]] inline capacity_plan plan_capacity(const std::vector<load_point>& points,
                                                 const capacity_options& opt = {}) {
  capacity_plan plan;
  plan.points.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const load_point& p = points[i];
    if (!std::isfinite(p.throughput))
      TOKCHRON_THROW(std::invalid_argument, "tokchron: a load point's throughput must be finite");
    point_assessment a;
    a.index = i;
    bool all_ok = !p.verdicts.verdicts.empty();
    for (const verdict& v : p.verdicts.verdicts) {
      if (v.status == verdict_status::pass) continue;
      if (!(v.status == verdict_status::insufficient_data && opt.accept_undecided)) all_ok = false;
      objective_miss m;
      m.target = v.target;
      m.status = v.status;
      m.measured = v.measured;
      m.reason = v.reason;
      if (v.margin) {
        m.excess = -*v.margin;
        if (v.target.threshold != 0) m.relative_excess = *m.excess / std::fabs(v.target.threshold);
      }
      a.misses.push_back(m);
    }
    a.meets = all_ok;
    if (opt.frontier_objective < p.verdicts.verdicts.size()) {
      const verdict& fv = p.verdicts.verdicts[opt.frontier_objective];
      if (fv.measured) a.frontier_latency = *fv.measured;
    }
    plan.points.push_back(std::move(a));
  }
  // Orient the latency axis so smaller is better (a `>` objective is better when larger).
  auto badness = [&](const point_assessment& a) {
    const verdict& fv = points[a.index].verdicts.verdicts[opt.frontier_objective];
    return fv.target.upper_bound() ? *a.frontier_latency : -*a.frontier_latency;
  };
  std::vector<std::size_t> order;
  for (const auto& a : plan.points)
    if (a.frontier_latency) order.push_back(a.index);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    if (points[x].throughput != points[y].throughput)
      return points[x].throughput > points[y].throughput;
    const double bx = badness(plan.points[x]), by = badness(plan.points[y]);
    if (bx != by) return bx < by;
    return x < y;
  });
  double best_bad = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    const double b = badness(plan.points[i]);
    if (b < best_bad) {
      plan.points[i].on_frontier = true;
      plan.frontier.push_back(i);
      best_bad = b;
    }
  }
  std::reverse(plan.frontier.begin(), plan.frontier.end());
  for (const auto& a : plan.points) {
    if (!a.meets) continue;
    if (!plan.best) {
      plan.best = a.index;
      continue;
    }
    const auto& cur = plan.points[*plan.best];
    const double t = points[a.index].throughput, tc = points[cur.index].throughput;
    if (t > tc) {
      plan.best = a.index;
    } else if (t == tc && a.frontier_latency && cur.frontier_latency && badness(a) < badness(cur)) {
      plan.best = a.index;
    }
  }
  return plan;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_SLA_CAPACITY_HPP
