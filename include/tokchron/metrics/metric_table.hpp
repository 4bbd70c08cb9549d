// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_METRIC_TABLE_HPP
#define TOKCHRON_METRICS_METRIC_TABLE_HPP

/// \file
/// The one metric vocabulary: `metric_id` names every per-request metric tokchron computes, and
/// `metric_table` describes each one (its name, unit, Prometheus base name, vLLM histogram name,
/// help text and the other spellings the SLO grammar accepts). The per-request record
/// (`request_metrics`, canonical or as a profile sees it), SLO objectives, evaluators and every
/// exporter read names and units from here; counts are `metric_count`, derived from the table.
///
/// One spelling per metric, everywhere: a field of `request_metrics`, an
/// SLO text (`p95(e2e) < 1s`), a CSV column and a JSON key all use `metric_info::name`. The SLO
/// parser also accepts other tools' spellings and short forms (vLLM's `e2el`, `queue`,
/// `prefill`, `decode`, `tokens_per_s`, ...) as aliases, printed back as the one name. Standard
/// library only; everything is constexpr. Thread safety: immutable data.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tokchron/config.hpp"
#include "tokchron/metrics/metric_id.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// What a metric's values count.
enum class metric_unit : std::uint8_t {
  seconds,            ///< a time (Prometheus base unit; SLO thresholds take s, ms, us, ns, min)
  tokens_per_second,  ///< a rate (SLO thresholds take tok/s, tokens/s, /s or nothing)
  ratio,              ///< a unitless number (SLO thresholds take no unit)
};

/// How a `metric_unit` is written: `symbol` for people (test messages, tables), `ucum` where UCUM
/// units are required (OTLP).
struct unit_spelling {
  std::string_view symbol;  ///< "s", "tok/s", or nothing for a ratio
  std::string_view ucum;    ///< "s", "{token}/s", "1"
};

/// The spellings of unit `u`.
[[nodiscard]] constexpr unit_spelling spelling(metric_unit u) noexcept {
  switch (u) {
    case metric_unit::seconds: return {"s", "s"};
    case metric_unit::tokens_per_second: return {"tok/s", "{token}/s"};
    case metric_unit::ratio: break;
  }
  return {"", "1"};
}

/// One row of `metric_table`. Build rows with `metric_info::row(...)` and the `with_*` setters.
struct metric_info {
  metric_id id = metric_id::ttft;
  /// The one spelling: fields, SLO text, CSV columns and JSON keys ("e2e", "queue_time").
  std::string_view name;
  metric_unit unit = metric_unit::seconds;
  /// The stem of Prometheus family names: prefix + stem + "_seconds" for times
  /// (`tokchron_queue_seconds`, `tokchron_run_queue_seconds`); see `prometheus_name`.
  std::string_view prometheus_stem;
  /// vLLM's `/metrics` histogram of the same quantity, empty when vLLM has none.
  std::string_view vllm_name;
  /// `serving_metrics` keeps a histogram of it.
  bool served = false;
  /// One sentence, used as the HELP text of exported families.
  std::string_view help;
  /// Other spellings the SLO grammar accepts (other tools', short forms); empty slots unused.
  std::array<std::string_view, 3> aliases{};

  /// True for metrics measured in seconds.
  [[nodiscard]] constexpr bool is_time() const noexcept { return unit == metric_unit::seconds; }

  /// A copy with `member` set to `value` (the setters below).
  template <class T>
  [[nodiscard]] constexpr metric_info with(T metric_info::*member, T value) const noexcept {
    metric_info m = *this;
    m.*member = value;
    return m;
  }
  /// A row with the Prometheus stem equal to the name and nothing else set.
  [[nodiscard]] static constexpr metric_info row(metric_id id, std::string_view name,
                                                 metric_unit unit) noexcept {
    metric_info m;
    m.id = id;
    m.name = name;
    m.unit = unit;
    m.prometheus_stem = name;
    return m;
  }
  [[nodiscard]] constexpr metric_info with_prometheus_stem(std::string_view s) const noexcept {
    return with(&metric_info::prometheus_stem, s);
  }
  /// Also marks the metric `served`: `serving_metrics` exports what vLLM exports.
  [[nodiscard]] constexpr metric_info served_as(std::string_view vllm) const noexcept {
    return with(&metric_info::vllm_name, vllm).with(&metric_info::served, true);
  }
  [[nodiscard]] constexpr metric_info with_help(std::string_view h) const noexcept {
    return with(&metric_info::help, h);
  }
  [[nodiscard]] constexpr metric_info with_aliases(std::string_view a, std::string_view b = {},
                                                   std::string_view c = {}) const noexcept {
    return with(&metric_info::aliases, std::array<std::string_view, 3>{a, b, c});
  }
};

/// The metric table, in `metric_id` order.
inline constexpr metric_info metric_table[] = {
    metric_info::row(metric_id::ttft, "ttft", metric_unit::seconds)
        .served_as("vllm:time_to_first_token_seconds")
        .with_help("Time to first token from arrival (tokchron canonical ttft)."),
    metric_info::row(metric_id::ttft_from_send, "ttft_from_send", metric_unit::seconds)
        .with_help("Time to first token from the actual send."),
    metric_info::row(metric_id::ttft_from_scheduled, "ttft_from_scheduled", metric_unit::seconds)
        .with_help("Time to first token from the first scheduling."),
    metric_info::row(metric_id::tpot, "tpot", metric_unit::seconds)
        .served_as("vllm:request_time_per_output_token_seconds")
        .with_help("Time per output token after the first, per request (canonical tpot)."),
    metric_info::row(metric_id::itl, "itl", metric_unit::seconds)
        .served_as("vllm:inter_token_latency_seconds")
        .with_help("Inter-token latency, one sample per output token after the first."),
    metric_info::row(metric_id::e2e, "e2e", metric_unit::seconds)
        .served_as("vllm:e2e_request_latency_seconds")
        .with_help("End-to-end request latency from arrival to finish.")
        .with_aliases("e2el", "e2e_latency", "latency"),
    metric_info::row(metric_id::queue_time, "queue_time", metric_unit::seconds)
        .with_prometheus_stem("queue")
        .served_as("vllm:request_queue_time_seconds")
        .with_help("Time from arrival (or queueing) to first scheduling.")
        .with_aliases("queue"),
    metric_info::row(metric_id::prefill_time, "prefill_time", metric_unit::seconds)
        .with_prometheus_stem("prefill")
        .served_as("vllm:request_prefill_time_seconds")
        .with_help("Time from first scheduling to the first token.")
        .with_aliases("prefill"),
    metric_info::row(metric_id::decode_time, "decode_time", metric_unit::seconds)
        .with_prometheus_stem("decode")
        .served_as("vllm:request_decode_time_seconds")
        .with_help("Time from the first to the last token.")
        .with_aliases("decode"),
    metric_info::row(metric_id::normalized_latency, "normalized_latency", metric_unit::seconds)
        .with_help("End-to-end latency divided by the output tokens."),
    metric_info::row(metric_id::output_rate, "output_rate", metric_unit::tokens_per_second)
        .with_help("Per-request output rate: output tokens / end-to-end latency.")
        .with_aliases("tokens_per_s", "tps", "user_rate"),
    metric_info::row(metric_id::fluidity, "fluidity", metric_unit::ratio)
        .with_help("Etalon fluidity-index per request, in [0, 1].")
        .with_aliases("fluidity_index"),
    metric_info::row(metric_id::ttfa, "ttfa", metric_unit::seconds)
        .with_help("Time to first answer (non-reasoning) token from arrival.")
        .with_aliases("ttfo", "time_to_first_output", "time_to_first_answer_token"),
    metric_info::row(metric_id::reasoning_time, "reasoning_time", metric_unit::seconds)
        .with_help("Time from the first reasoning token to the first answer token.")
        .with_aliases("thinking_time"),
    metric_info::row(metric_id::ttst, "ttst", metric_unit::seconds)
        .with_help("Time to second token: its arrival minus the first token's.")
        .with_aliases("time_to_second_token"),
    metric_info::row(metric_id::icl, "icl", metric_unit::seconds)
        .with_help("Inter-chunk latency, one sample per gap between token-carrying chunks.")
        .with_aliases("inter_chunk_latency"),
    metric_info::row(metric_id::prefill_tps, "prefill_tps", metric_unit::tokens_per_second)
        .with_help("Prefill throughput per request: prompt tokens / ttft.")
        .with_aliases("prefill_throughput", "prefill_throughput_per_user"),
    metric_info::row(metric_id::uncached_prefill_tps, "uncached_prefill_tps",
                     metric_unit::tokens_per_second)
        .with_help("Prefill throughput over uncached prompt tokens: (prompt - cached) / ttft."),
    metric_info::row(metric_id::spec_acceptance, "spec_acceptance", metric_unit::ratio)
        .with_help("Speculative decoding acceptance rate per request: accepted / drafted.")
        .with_aliases("acceptance_rate", "spec_acceptance_rate"),
};

/// The number of metrics (for arrays indexed by `metric_id`).
inline constexpr std::size_t metric_count = sizeof(metric_table) / sizeof(metric_table[0]);

namespace detail {
[[nodiscard]] constexpr bool metric_table_is_valid() noexcept {
  for (std::size_t i = 0; i < metric_count; ++i) {
    const metric_info& m = metric_table[i];
    if (static_cast<std::size_t>(m.id) != i || m.name.empty() || m.help.empty()) return false;
    for (std::size_t j = 0; j < i; ++j) {
      if (metric_table[j].name == m.name) return false;
      for (const auto& a : m.aliases)
        if (!a.empty() && (a == metric_table[j].name || a == m.name)) return false;
    }
  }
  return true;
}
static_assert(metric_table_is_valid(),
              "metric_table: rows in metric_id order, each with a unique name and help");

/// The number of rows satisfying `pred`.
template <class Pred>
[[nodiscard]] constexpr std::size_t count_metrics(Pred pred) noexcept {
  std::size_t n = 0;
  for (const auto& m : metric_table) n += pred(m) ? 1 : 0;
  return n;
}
}  // namespace detail

/// The row of `m`.
[[nodiscard]] constexpr const metric_info& info(metric_id m) noexcept {
  return metric_table[static_cast<std::size_t>(m)];
}
/// The metric's one spelling ("ttft", "e2e", "queue_time", "output_rate", ...).
[[nodiscard]] constexpr std::string_view to_string(metric_id m) noexcept { return info(m).name; }
/// True for metrics measured in seconds.
[[nodiscard]] constexpr bool is_time_metric(metric_id m) noexcept { return info(m).is_time(); }

/// The metric spelled `name`: its name or one of its aliases. Complexity: O(table).
[[nodiscard]] constexpr std::optional<metric_id> metric_from_name(std::string_view name) noexcept {
  for (const auto& m : metric_table) {
    if (m.name == name) return m.id;
    for (const auto& a : m.aliases)
      if (!a.empty() && a == name) return m.id;
  }
  return std::nullopt;
}

/// Calls `f(metric_id, double)` for every metric that `record` holds a value of, in table
/// order. `Record` names its fields by metric with a static `field(metric_id)` returning a
/// pointer to an `std::optional<double>` member or nullptr (`request_metrics`).
template <class Record, class F>
constexpr void for_each_metric_value(const Record& record, F&& f) {
  for (const auto& m : metric_table) {
    const auto field = Record::field(m.id);
    if (field && record.*field) f(m.id, *(record.*field));
  }
}

/// The Prometheus family base name of `m`: `prefix` + stem, plus "_seconds" for times
/// ("tokchron_" -> "tokchron_queue_seconds"). Writers add `_total`, `_bucket`, ... suffixes.
[[nodiscard]] inline std::string prometheus_name(metric_id m, std::string_view prefix) {
  std::string s(prefix);
  s += info(m).prometheus_stem;
  if (is_time_metric(m)) s += "_seconds";
  return s;
}

namespace detail {
/// "unknown metric: expected ttft, ..., output_rate or fluidity": the SLO parser's message,
/// built at compile time from the table (a parse error carries a static message).
inline constexpr std::string_view unknown_metric_prefix = "unknown metric: expected ";
[[nodiscard]] constexpr std::size_t unknown_metric_capacity() noexcept {
  std::size_t n = unknown_metric_prefix.size();
  for (const auto& m : metric_table) n += m.name.size() + 4;  // ", " or " or "
  return n;
}
struct unknown_metric_message {
  char text[unknown_metric_capacity()]{};
  std::size_t size = 0;
  constexpr unknown_metric_message() noexcept {
    for (const char c : unknown_metric_prefix) text[size++] = c;
    for (std::size_t i = 0; i < metric_count; ++i) {
      const std::string_view sep = i == 0 ? "" : (i + 1 == metric_count ? " or " : ", ");
      for (const char c : sep) text[size++] = c;
      for (const char c : metric_table[i].name) text[size++] = c;
    }
  }
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {text, size}; }
};
inline constexpr unknown_metric_message unknown_metric_text{};
}  // namespace detail

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_METRIC_TABLE_HPP
