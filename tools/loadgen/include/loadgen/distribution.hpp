// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_LOADGEN_DISTRIBUTION_HPP
#define TOKCHRON_TOOLS_LOADGEN_DISTRIBUTION_HPP

/// \file
/// Seeded distributions of prompt/output lengths and think times, parsed from one-word specs.
///
/// | spec                 | meaning                                                          |
/// |----------------------|------------------------------------------------------------------|
/// | `300`, `fixed:300`   | always 300                                                       |
/// | `uniform:75,225`     | lengths: an integer in [75, 225]; times: a real in [75, 225)     |
/// | `normal:300,90`      | mean 300, sd 90, redrawn below the minimum (1 token, 0 s)        |
/// | `lognormal:150,60`   | log-normal with *this* mean and sd (not those of the log)        |
/// | `exp:25`             | exponential with mean 25 (think times)                           |
/// | `trace:FILE`         | drawn uniformly from the values in FILE (see `parse_trace_values`)|
/// | `none`, `0`          | always 0 (think times)                                           |
/// Times are seconds; a number may carry an `ms` or `s` suffix (`exp:500ms`). Numbers are
/// decimal (`parse_decimal`); a length is at most `max_length` tokens (draws of the unbounded
/// kinds are cut there), so a prompt and its output always add up within 32 bits.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/random.hpp"

namespace tokchron_loadgen {

/// What a distribution describes: which minimum applies and which trace field is read.
enum class quantity : std::uint8_t { prompt_length, output_length, seconds };

/// The longest prompt or output, in tokens (a billion: far past any model's context).
inline constexpr std::uint32_t max_length = 1000000000;
/// The longest line of a trace file, in bytes (a JSON Lines record with its every chunk).
inline constexpr std::size_t max_trace_line = std::size_t(1) << 24;
/// The most values a trace file may hold (8 bytes each in memory).
inline constexpr std::size_t max_trace_values = 10000000;

/// One seeded distribution. Copyable; `sample` draws from the caller's `rng`.
class distribution {
 public:
  enum class kind : std::uint8_t { fixed, uniform, normal, lognormal, exponential, empirical };

  distribution() = default;
  /// Parses `spec` (table above). Throws `std::invalid_argument` naming the bad part, or for a
  /// trace file the line and field.
  static distribution parse(std::string_view spec, quantity q);
  static distribution fixed(double v, quantity q);

  /// One draw: lengths are integers >= 1, times reals >= 0.
  [[nodiscard]] double sample(rng& r) const noexcept;
  /// A length draw as an integer.
  [[nodiscard]] std::uint32_t sample_length(rng& r) const noexcept {
    return static_cast<std::uint32_t>(sample(r));
  }
  /// The distribution's mean (exact for every kind; the sample mean for `empirical`, and
  /// ignoring the redraw truncation for `normal`).
  [[nodiscard]] double mean() const noexcept;
  /// The largest value a draw can take (infinite for normal, lognormal, exponential).
  [[nodiscard]] double max() const noexcept;
  /// The smallest value a draw can take.
  [[nodiscard]] double min() const noexcept;
  /// The spec it was parsed from.
  [[nodiscard]] const std::string& spec() const noexcept { return spec_; }
  [[nodiscard]] kind type() const noexcept { return kind_; }

 private:
  kind kind_ = kind::fixed;
  quantity q_ = quantity::seconds;
  double a_ = 0, b_ = 0;  // fixed: a; uniform: [a, b]; normal: mean, sd; lognormal: mu, sigma
  double mean_ = 0;
  std::vector<double> values_;  // empirical
  std::string spec_ = "0";
};

/// A finite decimal number as the whole of `text` ("300", "-1.5", "2e3"), read as
/// `std::from_chars` reads it: no leading `+` or space, no hex, no inf or nan. Empty otherwise.
[[nodiscard]] std::optional<double> parse_decimal(std::string_view text) noexcept;

/// Parses a time in seconds: a number with an optional `s` or `ms` suffix ("2", "1.5s",
/// "500ms"). Throws `std::invalid_argument` naming the text.
[[nodiscard]] double parse_seconds(std::string_view text);

/// Reads the values of a trace file for `q`: one number a line (blank lines and lines starting
/// with `#` skipped), or JSON Lines in the tokchron-report trace format, from which a prompt
/// length is `prompt_tokens` and an output length is `usage_output_tokens` or else the sum of
/// the `chunks`' token counts. A length is a decimal integer in [0, max_length] (0 reads as 1:
/// an empty response still takes a decode step); a time a decimal number >= 0. Lines are at most
/// `max_trace_line` bytes, values at most `max_trace_values`. Throws `std::invalid_argument`
/// with "FILE:LINE: field 'F': why (value 'V')".
[[nodiscard]] std::vector<double> parse_trace_values(const std::string& path, quantity q);

}  // namespace tokchron_loadgen

#endif  // TOKCHRON_TOOLS_LOADGEN_DISTRIBUTION_HPP
