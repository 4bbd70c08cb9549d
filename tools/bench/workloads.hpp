// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_WORKLOADS_HPP
#define TOKCHRON_TOOLS_BENCH_WORKLOADS_HPP

/// \file
/// tokchron-bench's workloads beyond the load generator's draws (docs/tools/tokchron-bench.md,
/// "Trace replay" and "Shared prefixes"):
/// - a replay of a recorded trace (`read_replay`: tokchron's own trace, Mooncake's JSON Lines,
///   BurstGPT's CSV): each request sent at its recorded time (scaled), with its recorded prompt
///   and output lengths, and, for Mooncake, its prompt made of the recorded `hash_ids` blocks;
/// - synthetic shared prefixes (`prefix_groups`): request i's prompt starts with the prefix of
///   group i mod N.
/// Both reach `run_load` through its hooks (`load_options::schedule` and `load_options::body`),
/// made by `replay_hooks` and `prefix_group_hooks`.
///
/// Prompt text: `append_words` (client.hpp) of `block_key`s for blocks and of an `own_key` for
/// a request's own words.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "client.hpp"

namespace tokchron_bench {

/// The formats `--replay` reads.
enum class replay_format : std::uint8_t { tokchron, mooncake, burstgpt };
/// `tokchron`, `mooncake`, `burstgpt`; empty for another name.
[[nodiscard]] std::optional<replay_format> replay_format_named(std::string_view name);
[[nodiscard]] const char* replay_format_name(replay_format f) noexcept;

/// The longest prompt and output a replayed request may have (a recorded length above it is
/// refused, naming the line and field): a prompt of this many words is about 4 MiB of body.
inline constexpr std::uint32_t max_replay_length = 1u << 20;
/// Mooncake's block size: each `hash_ids` entry stands for this many prompt tokens.
inline constexpr std::uint32_t mooncake_block_tokens = 512;

/// One request of a replay.
struct replay_request {
  std::int64_t at_ns = 0;  ///< recorded time, since the trace's earliest request
  std::uint32_t prompt_tokens = 1, output_tokens = 1;
  std::uint32_t block_count = 0;  ///< its `hash_ids`, from `replay_plan::blocks[first_block]`
  std::uint64_t first_block = 0;
  std::uint64_t line = 0;  ///< its line in the file
};

/// A trace read for replay: its requests in order of recorded time (ties in file order).
struct replay_plan {
  replay_format format = replay_format::tokchron;
  std::vector<replay_request> requests;
  std::vector<std::uint64_t> blocks;  ///< every request's `hash_ids`, one after another
  std::uint64_t lines = 0;            ///< lines read (blank ones and a CSV header included)
  /// Requests the trace records with no output (BurstGPT's failures, `Response tokens` 0; a
  /// Mooncake `output_length` 0; a tokchron record with no output token): not replayed.
  std::uint64_t no_output = 0;
};

/// A malformed trace: `FILE: line N: field F: why`.
struct replay_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Reads a trace for replay; `format` empty: detected from the first line that is not blank
/// (a JSON object with `input_length` is Mooncake's, one without it tokchron's; a line
/// with a `Timestamp` column is BurstGPT's CSV header). Throws `replay_error` at the first
/// malformed line, naming `name`, the line and the field. Memory: one `replay_request` per line
/// and 8 bytes per `hash_ids` entry.
[[nodiscard]] replay_plan read_replay(std::istream& in, const std::string& name,
                                      std::optional<replay_format> format);

/// How a replay is run.
struct replay_settings {
  double speed = 1;                ///< recorded gaps divided by this
  std::optional<double> until_s;   ///< arrivals at or after this (replayed time) are not sent
  std::uint64_t max_requests = 0;  ///< 0: every request
  std::uint64_t seed = 1;          ///< mixed into the prompts' words
};

/// What the prompts of a run shared, counted as they are sent (warm-up requests included).
struct prefix_counts {
  std::uint64_t prompts = 0;
  std::uint64_t prompt_tokens = 0;
  /// Prompt tokens in a block or prefix an earlier request of the run had sent: the most a
  /// prefix cache that keeps everything could serve.
  std::uint64_t reusable_tokens = 0;
};

/// The hooks of `run_load` that replay `plan`, and the counts its prompts fill as they are sent
/// (read them after the run).
struct workload_hooks {
  std::function<std::unique_ptr<tokchron_loadgen::arrival_source>()> schedule;
  std::function<std::string(const target&, const tokchron_loadgen::arrival&)> body;
  std::shared_ptr<prefix_counts> counts = std::make_shared<prefix_counts>();
};
[[nodiscard]] workload_hooks replay_hooks(std::shared_ptr<const replay_plan> plan,
                                          const replay_settings& s);

/// Synthetic shared prefixes: request i (the load generator's id) starts with `prefix_tokens`
/// words of group i mod `groups`, then its own `prompt_tokens - prefix_tokens` words (the load
/// generator's `shared_prefix` sets both). Only `body` is set.
[[nodiscard]] workload_hooks prefix_group_hooks(std::uint32_t groups, std::uint64_t seed);

/// The most prefix groups.
inline constexpr std::uint32_t max_prefix_groups = 1000000;

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_WORKLOADS_HPP
