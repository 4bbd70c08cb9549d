// SPDX-License-Identifier: MIT
// tokchron-requires: boost
#ifndef TOKCHRON_QUANTILE_ACCUMULATORS_HPP
#define TOKCHRON_QUANTILE_ACCUMULATORS_HPP

/// \file
/// `log_histogram` as a Boost.Accumulators feature, for code bases built on
/// `boost::accumulators::accumulator_set`:
///
/// ```cpp
/// namespace ba = boost::accumulators;
/// namespace ta = tokchron::accumulators;
/// ba::accumulator_set<double, ba::stats<ta::tag::log_histogram_quantile>> acc(
///     ta::log_histogram_relative_accuracy = 0.001);          // default 1 %
/// acc(0.042);
/// double p99 = ba::quantile(acc, ba::quantile_probability = 0.99);  // Boost's own extractor
/// const tokchron::log_histogram& h = ta::log_histogram(acc);       // merge, export, serialise
/// ```
///
/// `tag::log_histogram` records into a `tokchron::log_histogram` (result: a const reference
/// to it); `tag::log_histogram_quantile` depends on it and is a
/// `boost::accumulators::tag::quantile` feature, so Boost's `quantile` extractor reads it (quantile
/// by numpy's linear method, error bound as `log_histogram`; NaN when empty). Thread safety: as
/// `accumulator_set`.

#include <limits>
#include <optional>

#include <boost/accumulators/framework/accumulator_base.hpp>
#include <boost/accumulators/framework/depends_on.hpp>
#include <boost/accumulators/framework/extractor.hpp>
#include <boost/accumulators/framework/parameters/accumulator.hpp>
#include <boost/accumulators/framework/parameters/sample.hpp>
#include <boost/accumulators/statistics/parameters/quantile_probability.hpp>
#include <boost/accumulators/statistics_fwd.hpp>
#include <boost/mpl/placeholders.hpp>
#include <boost/parameter/keyword.hpp>

#include "tokchron/config.hpp"
#include "tokchron/quantile/log_histogram.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace accumulators {

/// Named parameter: the histogram's relative accuracy (alpha), default 0.01.
// NOLINTNEXTLINE(misc-definitions-in-headers): Boost.Parameter's keyword objects are meant so
BOOST_PARAMETER_KEYWORD(tag, log_histogram_relative_accuracy)

namespace tag {
struct log_histogram;
}  // namespace tag

namespace impl {
/// Accumulator implementation: records every sample into a log_histogram.
template <class Sample>
struct log_histogram_impl : boost::accumulators::accumulator_base {
  using result_type = const ::tokchron::log_histogram&;

  template <class Args>
  explicit log_histogram_impl(const Args& args)
      : histogram_(args[log_histogram_relative_accuracy | 0.01]) {}
  template <class Args>
  void operator()(const Args& args) noexcept {
    histogram_.add(static_cast<double>(args[boost::accumulators::sample]));
  }
  result_type result(boost::accumulators::dont_care) const noexcept { return histogram_; }

 private:
  ::tokchron::log_histogram histogram_;
};

/// Accumulator implementation: the quantile at `quantile_probability` of the log_histogram.
template <class Sample>
struct log_histogram_quantile_impl : boost::accumulators::accumulator_base {
  using result_type = double;

  explicit log_histogram_quantile_impl(boost::accumulators::dont_care) noexcept {}
  template <class Args>
  result_type result(const Args& args) const {
    const ::tokchron::log_histogram& h = boost::accumulators::find_accumulator<tag::log_histogram>(
                                             args[boost::accumulators::accumulator])
                                             .result(args);
    const std::optional<double> q = h.quantile(args[boost::accumulators::quantile_probability]);
    return q ? *q : std::numeric_limits<double>::quiet_NaN();
  }
};
}  // namespace impl

namespace tag {
/// The feature: a tokchron::log_histogram of the samples.
struct log_histogram : boost::accumulators::depends_on<> {
  using impl = accumulators::impl::log_histogram_impl<boost::mpl::_1>;
};
/// The feature: quantiles of it, readable through boost::accumulators::quantile.
struct log_histogram_quantile : boost::accumulators::depends_on<log_histogram> {
  using impl = accumulators::impl::log_histogram_quantile_impl<boost::mpl::_1>;
};
}  // namespace tag

namespace extract {
/// `log_histogram(acc)`: the recorded histogram.
inline const boost::accumulators::extractor<tag::log_histogram> log_histogram = {};
/// `log_histogram_quantile(acc, quantile_probability = q)`.
inline const boost::accumulators::extractor<tag::log_histogram_quantile> log_histogram_quantile =
    {};
}  // namespace extract
using extract::log_histogram;
using extract::log_histogram_quantile;

}  // namespace accumulators

TOKCHRON_END_NAMESPACE

namespace boost {
namespace accumulators {
/// Boost's customisation point: log_histogram_quantile is a quantile feature.
template <>
struct feature_of<::tokchron::accumulators::tag::log_histogram_quantile>
    : feature_of<tag::quantile> {};
}  // namespace accumulators
}  // namespace boost

#endif  // TOKCHRON_QUANTILE_ACCUMULATORS_HPP
