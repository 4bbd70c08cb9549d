// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_SESSIONS_HPP
#define TOKCHRON_TOOLS_BENCH_SESSIONS_HPP

/// \file
/// tokchron-bench's multi-turn sessions (docs/tools/workloads-sessions.md): conversations whose
/// every turn is a chat request carrying the conversation so far (the earlier turns' user
/// messages and the server's live replies, the text the client received), then the turn's new
/// user message, sent a think time after the previous reply ended, with a session-affinity
/// header naming the conversation.
/// - `read_sessions` reads a sessions file (JSON Lines: AIPerf's `multi_turn` records, vLLM's
///   multi-turn conversations one a line, or one turn a line grouped by `session_id`);
/// - `session_hooks` makes the hooks of `run_load` that run them (or synthetic sessions), and
///   gathers the per-turn and per-session statistics (`session_stats`) as the turns end.
///
/// The arrival process starts sessions, not requests: open loop (`--rate`), sessions start at
/// the load generator's arrivals; closed loop (`--users N`), each user runs one session at a
/// time, its next session a `--think-time` after the previous one ended. A session holds its
/// user across its turns. A turn due at or after `--duration` is not sent (the session is cut
/// by the run's end). A turn that fails (any request failure) stops its session: no later turn
/// is sent, for it would carry no reply.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/quantile/exact.hpp"

namespace tokchron_bench {

/// The most bytes of text a conversation may hold (its user messages and replies): a turn
/// whose request would carry more is not sent, and the session stops (counted). 8 MiB is about
/// two million tokens of English, past any context window served today; it bounds the client's
/// memory at this much per session in flight.
inline constexpr std::size_t max_session_bytes = std::size_t{8} << 20;
/// The longest session id (it is sent as a header value; `batching-executor serve` and vLLM
/// keep 128 characters of a request id).
inline constexpr std::size_t max_session_id = 128;
/// Turns reported one by one; later turns share the last row ("turn 33+").
inline constexpr std::uint32_t session_turn_rows = 32;
/// The longest user message in words (`input_length`, a `--prompt-len` draw).
inline constexpr std::uint32_t max_turn_words = 1u << 20;

/// One user turn of a sessions file.
struct session_turn {
  std::uint64_t text_at = 0;  ///< its text in `session_plan::text` (when `has_text`)
  std::uint32_t text_size = 0;
  bool has_text = false;
  std::uint32_t words = 0;          ///< without text: this many generated words
  std::uint32_t output_tokens = 0;  ///< `max_tokens` (0: a `--output-len` draw)
  /// Think time before this turn, after the previous reply ended (seconds; empty: a
  /// `--turn-think` draw). A first turn's delay is ignored (the arrival process starts it).
  std::optional<double> delay_s;
  std::uint64_t line = 0;
};

/// One conversation of a sessions file.
struct session_spec {
  std::string id;  ///< the affinity header's value
  std::uint64_t line = 0;
  std::uint64_t system_at = 0;  ///< a system message in `session_plan::text` (when `has_system`)
  std::uint32_t system_size = 0;
  bool has_system = false;
  std::vector<session_turn> turns;
};

/// A sessions file read whole: its sessions in order of first appearance.
struct session_plan {
  std::string text;  ///< every message's text, one after another
  std::vector<session_spec> sessions;
  std::uint64_t lines = 0, turns = 0;
};

/// A malformed sessions file: `FILE: line N: field F: why`.
struct session_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Reads a sessions file (see docs/tools/workloads-sessions.md for the formats). Throws
/// `session_error` at the first malformed line, naming `name`, the line and the field. Memory:
/// the file's text and a few words a turn; nothing is allocated by a number the file states.
[[nodiscard]] session_plan read_sessions(std::istream& in, const std::string& name);

/// How sessions are run.
struct session_settings {
  /// The sessions to run (null: synthetic sessions of `turns` turns, `work.prompt` words of
  /// user message and `work.output` tokens of reply each turn).
  std::shared_ptr<const session_plan> plan;
  /// The sessions' arrivals (`work.mode`, `rate`, `burstiness`, `users`, `think` between a
  /// user's sessions, `ramp_up_s`, `duration_s`, `seed`) and the turns' lengths (`prompt`: a
  /// generated user message's words, `output`: `max_tokens`).
  tokchron_loadgen::workload work;
  tokchron_loadgen::distribution turns =
      tokchron_loadgen::distribution::fixed(1, tokchron_loadgen::quantity::output_length);
  /// Think time between a reply's end and the next turn's send (seconds).
  tokchron_loadgen::distribution think =
      tokchron_loadgen::distribution::fixed(0, tokchron_loadgen::quantity::seconds);
  /// The affinity header's name (empty: none sent).
  std::string header = "x-session-id";
  std::uint64_t max_sessions = 0;  ///< sessions started at most (0: no limit but the file's)
  /// Synthetic sessions are named `id_prefix` + "session-" + (`first_session` + k).
  std::string id_prefix;
  std::uint64_t first_session = 0;
  double warmup_s = 0;  ///< sessions starting before this are not measured
  /// The most bytes of text a conversation may hold (a test sets less).
  std::size_t max_bytes = max_session_bytes;
  /// With `log`, one JSON line per turn sent: session, turn, request id, words of its user
  /// message, whether it completed, its reply's bytes, and why the session stopped there.
  std::ostream* log = nullptr;
};

/// What the sessions of a run came to (measured sessions: started at or after the warm-up).
struct session_stats {
  std::uint64_t started = 0;    ///< sessions whose first turn was sent
  std::uint64_t completed = 0;  ///< every turn completed
  std::uint64_t failed = 0;     ///< stopped by a failed turn
  std::uint64_t too_long = 0;   ///< stopped at `session_settings::max_bytes`
  std::size_t max_bytes = 0;    ///< that limit
  std::uint64_t cut = 0;        ///< cut by the run's end (a turn due at or after --duration)
  std::uint64_t turns = 0;      ///< turns sent
  /// Completed sessions' durations: the first turn's send to the last turn's end (seconds).
  tc::exact_quantiles<double> duration_s;
  /// Turns per completed session.
  tc::exact_quantiles<double> turns_per_session;
  /// Row r: turn r + 1 (the last row every later turn), canonical profile; empty rows unused.
  std::vector<std::optional<tc::run_summarizer<timeline>>> by_turn;
  std::vector<std::uint64_t> turn_failed;  ///< failed turns by row
};

/// The hooks of `run_load` that run sessions (`schedule`, `body`, `headers`, `on_outcome`, and
/// `keep_reply` to set: `session_settings::max_bytes`), and the statistics they fill (read them
/// after the run, with `finish_sessions`). Needs the chat endpoint.
struct session_hooks {
  std::function<std::unique_ptr<tokchron_loadgen::arrival_source>()> schedule;
  std::function<std::string(const target&, const tokchron_loadgen::arrival&)> body;
  std::function<std::vector<std::pair<std::string, std::string>>(const tokchron_loadgen::arrival&)>
      headers;
  std::function<void(request_outcome&)> on_outcome;
  std::size_t keep_reply = 0;
  std::shared_ptr<session_stats> stats;
  /// Counts the sessions still open when the run ended as cut (call once, after `run_load`).
  std::function<void()> finish;
};
[[nodiscard]] session_hooks make_session_hooks(const session_settings& s);

/// The session statistics as text (after the report's table).
void print_sessions(std::ostream& out, const session_stats& s);
/// ... and as JSON (the report document's `sessions`), written with `nlohmann::ordered_json`.
[[nodiscard]] std::string sessions_json(const session_stats& s);

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_SESSIONS_HPP
