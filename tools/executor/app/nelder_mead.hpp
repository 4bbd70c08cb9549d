// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_NELDER_MEAD_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_NELDER_MEAD_HPP

/// \file
/// A derivative-free minimiser: the Nelder-Mead simplex method (Nelder and Mead, "A simplex
/// method for function minimization", Computer Journal 7, 1965) with the standard coefficients
/// (reflection 1, expansion 2, contraction 1/2, shrink 1/2) as in Lagarias et al., "Convergence
/// properties of the Nelder-Mead simplex method in low dimensions" (SIAM J. Optim. 9, 1998).
/// The simulator's objective is piecewise smooth and noisy in its last digits (the scheduler
/// makes discrete choices), so no gradient is taken. The search stops when the simplex's values
/// differ by less than `f_tol` (absolute) and its vertices by less than `x_tol` in every
/// coordinate, or after `max_evals` evaluations. Restarting from the best point (`restarts`)
/// guards against a simplex that collapsed early, a known failure of the method.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace batching {

struct nelder_mead_options {
  double f_tol = 1e-6, x_tol = 1e-4;
  std::size_t max_evals = 400;
  std::size_t restarts = 1;
};

struct nelder_mead_result {
  std::vector<double> x;
  double f = 0;
  std::size_t evals = 0;
  bool converged = false;
};

/// Minimises `f` from `x0`, the first simplex `x0` and `x0 + step_i e_i`. `f` may return +inf for
/// an infeasible point (it is then never chosen over a finite one). Throws
/// `std::invalid_argument` when `x0` and `step` differ in size or `x0` is empty.
inline nelder_mead_result nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                      std::vector<double> x0, const std::vector<double>& step,
                                      const nelder_mead_options& o = {}) {
  const std::size_t n = x0.size();
  if (n == 0 || step.size() != n)
    throw std::invalid_argument("nelder_mead: x0 and step must be non-empty and of one size");
  nelder_mead_result r;
  auto eval = [&](const std::vector<double>& x) {
    ++r.evals;
    const double v = f(x);
    return std::isnan(v) ? HUGE_VAL : v;
  };
  std::vector<double> best = x0;
  double best_f = eval(x0);
  for (std::size_t round = 0; round <= o.restarts && r.evals < o.max_evals; ++round) {
    std::vector<std::vector<double>> p(n + 1, best);
    std::vector<double> fv(n + 1, best_f);
    for (std::size_t i = 0; i < n; ++i) {
      p[i + 1][i] += step[i];
      fv[i + 1] = eval(p[i + 1]);
    }
    std::vector<std::size_t> idx(n + 1);
    bool done = false;
    while (r.evals < o.max_evals) {
      std::iota(idx.begin(), idx.end(), std::size_t(0));
      std::sort(idx.begin(), idx.end(),
                [&](std::size_t a, std::size_t b) { return fv[a] < fv[b]; });
      const std::size_t lo = idx.front(), hi = idx.back(), nh = idx[n - 1];
      double spread = 0;
      for (std::size_t i = 0; i <= n; ++i)
        for (std::size_t k = 0; k < n; ++k) spread = std::max(spread, std::abs(p[i][k] - p[lo][k]));
      if (std::abs(fv[hi] - fv[lo]) <= o.f_tol && spread <= o.x_tol) {
        done = true;
        break;
      }
      std::vector<double> c(n, 0.0);  // centroid of all but the worst
      for (std::size_t i = 0; i <= n; ++i)
        if (i != hi)
          for (std::size_t k = 0; k < n; ++k) c[k] += p[i][k] / double(n);
      auto along = [&](double t) {  // c + t (c - worst)
        std::vector<double> x(n);
        for (std::size_t k = 0; k < n; ++k) x[k] = c[k] + t * (c[k] - p[hi][k]);
        return x;
      };
      const std::vector<double> xr = along(1.0);
      const double fr = eval(xr);
      if (fr < fv[lo]) {
        const std::vector<double> xe = along(2.0);
        const double fe = eval(xe);
        if (fe < fr) {
          p[hi] = xe;
          fv[hi] = fe;
        } else {
          p[hi] = xr;
          fv[hi] = fr;
        }
        continue;
      }
      if (fr < fv[nh]) {
        p[hi] = xr;
        fv[hi] = fr;
        continue;
      }
      const bool outside = fr < fv[hi];
      const std::vector<double> xc = along(outside ? 0.5 : -0.5);
      const double fc = eval(xc);
      if (fc < (outside ? fr : fv[hi])) {
        p[hi] = xc;
        fv[hi] = fc;
        continue;
      }
      for (std::size_t i = 0; i <= n; ++i) {  // shrink towards the best
        if (i == lo) continue;
        for (std::size_t k = 0; k < n; ++k) p[i][k] = p[lo][k] + 0.5 * (p[i][k] - p[lo][k]);
        fv[i] = eval(p[i]);
      }
    }
    const auto lo = static_cast<std::size_t>(std::min_element(fv.begin(), fv.end()) - fv.begin());
    const bool improved = fv[lo] < best_f - o.f_tol;
    if (fv[lo] <= best_f) {
      best = p[lo];
      best_f = fv[lo];
    }
    r.converged = done;
    if (done && !improved && round > 0) break;  // a restart found nothing better
  }
  r.x = best;
  r.f = best_f;
  return r;
}

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_NELDER_MEAD_HPP
