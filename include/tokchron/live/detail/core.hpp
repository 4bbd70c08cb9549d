// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_DETAIL_CORE_HPP
#define TOKCHRON_LIVE_DETAIL_CORE_HPP

/// \file
/// Internals of `live/`: the declarations through which `basic_live_metrics` (live/recorder.hpp)
/// reaches its shared state, which is opaque here. The state, the shards and the definitions of
/// these functions are in live/detail/state.hpp. Two class templates with one instantiation
/// each (`live_core<>`, `live_writer<>`), so that with `TOKCHRON_SEPARATE_INSTANTIATION` a hot
/// file sees only these declarations and the one file including tokchron/record_instantiate.hpp
/// compiles the definitions, whatever clock the recorder uses. Not part of the API, but for
/// the two label types of `basic_live_metrics::series` (`live_label`, `live_label_value`),
/// defined here because the declarations below take them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/live/options_fwd.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// One label of a live series, by name: `{"model_name", "llama-3-8b"}` (live/recorder.hpp's
/// `series` by name).
struct live_label {
  std::string_view name;   ///< one of the options' `label_names`
  std::string_view value;  ///< its value
};

/// One label value of the positional `series({...})`: anything a `std::string_view` can be made
/// from. (A type of its own, so that `series({{"name", "value"}, ...})` picks the by-name form,
/// also under C++20, where a string_view can be made from two pointers.)
struct live_label_value {
  template <class T, class = decltype(std::string_view(std::declval<const T&>()))>
  live_label_value(const T& v) noexcept : value(v) {}  // NOLINT(google-explicit-constructor)
  std::string_view value;
};

namespace detail {

struct live_state;
struct live_shard;
class live_side;

/// `T`, as a name that depends on `U` (checked only when a template using it is instantiated).
template <class T, class U>
struct dependent_type {
  using type = T;
};

/// Per-series counters (indices into a block's counts).
enum live_counter : std::uint32_t {
  lc_requests = 0,  ///< six slots, by finish_reason
  lc_prompt_tokens = 6,
  lc_generation_tokens,
  lc_preemptions,
  lc_running,  ///< gauge delta, two's complement
  lc_waiting,  ///< gauge delta, two's complement
  lc_prefix_queries,
  lc_prefix_hits,
  lc_overflow_requests,
  lc_reasoning_tokens,   ///< output tokens of reasoning chunks
  lc_prompt_cached,      ///< prompt tokens served from a prefix cache (as the server reports)
  lc_prompt_computed,    ///< prompt tokens computed: prompt - cached
  lc_prompt_cache_hit,   ///< cached + recomputed (vLLM's `local_cache_hit` source)
  lc_prompt_recomputed,  ///< 1 when cached = prompt - 1 (vLLM recomputes the last token)
  lc_spec_drafts,        ///< speculative drafts (one per request and engine step)
  lc_spec_draft_tokens,  ///< tokens drafted
  lc_spec_accepted,      ///< draft tokens accepted
  lc_finished_tokens,    ///< output tokens of requests with a token, at their finish
  lc_decode_us,          ///< their decode times, whole microseconds (at least 1 each), us
  lc_decode_steps,       ///< their decode steps: N - 1 each
  lc_before_first,       ///< gauge delta, two's complement: arrived, no token, not finished
  lc_prompt_external,    ///< prompt tokens whose KV cache was transferred (vLLM's source)
  lc_kv_transfers,       ///< KV-cache transfers recorded (`kv_transfer`)
  lc_kv_bytes,           ///< their bytes
  lc_kv_tokens,          ///< their tokens
  lc_count,
};

/// Families exported only once something was recorded into them (bits of live_state::features).
enum live_feature : std::uint32_t {
  lf_cached_prompt = 1,
  lf_reasoning = 2,
  lf_speculative = 4,
  lf_kv_transfer = 8,
};

/// What the recording calls read of the options, copied once out of the state into the
/// recorder: the hot path reads no shared memory but its shard.
struct live_hot_options {
  std::uint64_t id = 0;              ///< the state's id (owner of its requests)
  std::uint32_t overflow_index = 0;  ///< the overflow series' block
  bool labelled = false;             ///< any label names
  live_rules rules;                  ///< the options' rules
  live_inclusion inclusion = live_inclusion::scheduled;
  std::uint32_t spec_offset = 0;     ///< first per-position acceptance counter of a block
  std::uint32_t spec_positions = 0;  ///< live_options::speculative_positions
  live_role role = live_role::both;  ///< live_options::role
};

/// The block index of series `s`: its own below the overflow index, else the overflow series;
/// with no label names the overflow series would have the default series' (empty) label set,
/// so it is the default series.
[[nodiscard]] inline std::uint32_t live_resolve(const live_hot_options& h,
                                                std::uint32_t s) noexcept {
  if (s < h.overflow_index) return s;
  return h.labelled ? h.overflow_index : 0;
}

/// The shared state's operations that are not on the per-event path, or that take locks-free
/// shared data: construction, labels, server-fed gauges, queries.
template <int = 0>
struct live_core {
  /// A new state for `options` (checked; std::invalid_argument otherwise) with its default
  /// series interned; one reference, the caller's.
  static live_state* create(live_options&& options);
  /// Drops one reference (nullptr: nothing).
  static void release(live_state* s) noexcept;
  static live_hot_options hot(const live_state& s) noexcept;
  static const live_options& options(const live_state& s) noexcept;
  /// The series of `n` label values (misuse and the overflow series for a bad set).
  static std::uint32_t series(live_state& s, const std::string_view* values,
                              std::size_t n) noexcept;
  /// The series of `n` labels by name, in any order: every label name of the options exactly
  /// once. Throws std::invalid_argument naming the label on a mismatch (setup path).
  static std::uint32_t named_series(live_state& s, const live_label* labels, std::size_t n);
  static std::vector<std::string> label_values(const live_state& s, std::uint32_t series);
  static void set_kv_cache_usage(live_state& s, std::uint32_t series, double fraction) noexcept;
  static void add_prefix_cache(live_state& s, std::uint32_t series, std::uint64_t queries,
                               std::uint64_t hits) noexcept;
  /// Keeps series `series`' (a resolved index) most recent KV-cache transfer (`seconds`, `bytes`)
  /// for the last-transfer gauges. Lock-free; a writer that finds another writing the same series
  /// leaves the value to it (both are recent).
  static void note_kv_transfer(live_state& s, std::uint32_t series, double seconds,
                               std::uint64_t bytes) noexcept;
  /// Counts one refused recording call.
  static void count_misuse(live_state& s) noexcept;
  static std::uint64_t misuse(const live_state& s) noexcept;
  static std::uint64_t overflowed_lookups(const live_state& s) noexcept;
  static std::uint64_t long_label_values(const live_state& s) noexcept;
};

/// One recording call's bracket on the calling thread's shard of a state: everything recorded
/// through one writer lands in one side, so a scrape sees all of it or none (live/recorder.hpp).
/// False when the thread has no shard (memory ran out; the call is counted as lost).
template <int = 0>
class live_writer {
 public:
  explicit live_writer(live_state& s) noexcept;
  ~live_writer();
  live_writer(const live_writer&) = delete;
  live_writer& operator=(const live_writer&) = delete;
  explicit operator bool() const noexcept { return side_ != nullptr; }

  /// Adds `delta` to `counter` of series `s` (see live_side::count).
  void count(std::uint32_t s, std::uint32_t counter, std::uint64_t delta) noexcept;
  /// Records `times` samples of `v` in histogram `h` of series `s`.
  void observe(std::uint32_t s, live_histogram h, double v, std::uint64_t times = 1,
               std::uint32_t reason = 0) noexcept;
  /// Counts one refused recording call in the exported misuse counter.
  void count_misuse() noexcept;
  /// Makes the families of `feature` (a live_feature) part of every scrape from now on.
  void use(std::uint32_t feature) noexcept;

 private:
  live_state* state_;
  live_shard* shard_ = nullptr;
  live_side* side_ = nullptr;
};

}  // namespace detail
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_DETAIL_CORE_HPP
