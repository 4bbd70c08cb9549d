// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_REPORT_JOIN_HPP
#define TOKCHRON_TOOLS_REPORT_JOIN_HPP

/// \file
/// Both views of one request (`tokchron-report join`, docs/tools/tokchron-report.md): a client
/// trace (tokchron-bench --trace-out) and a server trace (batching-executor serve --trace-out)
/// joined by request id, each request's client TTFT and E2E split into the time before the
/// server saw it, the server's part and the way back.
///
/// For one request, with the server's times moved onto the client's clock:
///
///     client TTFT = to_server + server_ttft + ttft_return
///       to_server   = server arrival - client send
///       server_ttft = server first token - server arrival  (queue + prefill;
///                     server_queue + server_prefill when the server trace has `scheduled`)
///       ttft_return = client first token - server first token
///     client E2E  = to_server + server_e2e + e2e_return
///       server_e2e  = server end - server arrival
///       e2e_return  = client end - server end
///
/// The sums hold exactly whatever the clock shift: the shift moves to_server and the returns by
/// the same amount in opposite directions. A wrong shift shows as a negative to_server or
/// return; negative values are counted and reported, never clamped.

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "report/inputs.hpp"
#include "report/options.hpp"
#include "tokchron/metrics/distribution.hpp"

namespace tokchron_report {

/// How the two clocks are related.
struct join_clock {
  /// Seconds to add to a server time to put it on the client's clock.
  double server_to_client = 0;
  /// The bound on its error (seconds), not counting the wall clocks' disagreement; empty when
  /// the offset was given (`--clock-offset`: its error is the caller's).
  std::optional<double> error;
  std::string source;  ///< "anchors" or "--clock-offset"
};

/// One split part: its name, what it is, and its distribution over the split requests.
struct join_part {
  std::string name;
  std::string help;
  tc::distribution d;
  std::size_t negative = 0;      ///< samples below zero
  std::size_t beyond_error = 0;  ///< of those, below -error (the clocks' bound is wrong)
};

/// One joined request's parts (seconds); empty when not defined for it.
struct joined_request {
  std::string id;
  std::optional<double> client_ttft, to_server, server_ttft, ttft_return, server_queue,
      server_prefill;
  std::optional<double> client_e2e, server_e2e, e2e_return;
};

/// What the split requests say about the clock shift: each request bounds it (the server's
/// arrival cannot be before the client's send, its first token and end not after the
/// client's), so the shift lies in [low, high] when the pairs are right and the clocks steady.
struct join_clock_check {
  double low = 0, high = 0;  ///< the shift every split request allows (low > high: none does)
  /// How far the shift used is outside [low, high] (0 inside), seconds; when low > high, at
  /// least (low - high) / 2 whatever shift is used.
  double off_by = 0;
};

/// The join of client and server traces. Every request of each side is in exactly one of
/// matched, only (no partner), duplicate_ids (its id repeats on its own side) and ambiguous
/// (its id is unique on its side but repeats on the other): nothing is paired by guess.
struct join_result {
  std::size_t client_requests = 0, server_requests = 0;
  std::size_t matched = 0;
  std::size_t client_only = 0;    ///< client requests no server request has the id of
  std::size_t server_only = 0;    ///< server requests no client request has the id of (warm-up...)
  std::size_t duplicate_ids = 0;  ///< client_duplicate_ids + server_duplicate_ids
  std::size_t client_duplicate_ids = 0, server_duplicate_ids = 0;  ///< ids repeated on that side
  std::size_t client_ambiguous = 0, server_ambiguous = 0;  ///< ids repeated on the other side
  std::size_t failed = 0;          ///< matched, but failed on either side (not split)
  std::size_t no_first_token = 0;  ///< matched and ok, but without a first token on a side
  std::size_t client_malformed = 0, server_malformed = 0;  ///< lines skipped (truncated, ...)
  /// Up to `join_examples` + 1 different ids of each kind of unpaired request, for the
  /// messages (which name the first `join_examples`, and "..." when there is one more).
  std::vector<std::string> client_only_ids, server_only_ids, duplicate_id_examples,
      ambiguous_id_examples;
  std::vector<std::string> unreadable_files;  ///< client files that could not be read (left out)
  join_clock clock;
  std::optional<join_clock_check> clock_check;  ///< empty when no request was split
  clock_alignment client_clocks;         ///< the client traces' own alignment (several hosts)
  std::vector<joined_request> requests;  ///< the split ones, in client order
  std::vector<join_part> parts;
};

/// How many ids of each kind of unpaired request a join names.
inline constexpr std::size_t join_examples = 5;

/// The server id's client id: the id without serve's `cmpl-` / `chatcmpl-` prefix.
[[nodiscard]] std::string client_id_of_server_id(const std::string& id);

/// Joins `client` and `server` (read with `load_inputs`) and summarises each part at
/// `percentiles` (canonical profile). `clock_offset`: server-to-client seconds given by the
/// user; else the traces' clock anchors relate the clocks. Throws input_error when neither
/// relates them.
[[nodiscard]] join_result join_traces(const loaded_inputs& client, const loaded_inputs& server,
                                      const std::vector<double>& percentiles,
                                      std::optional<double> clock_offset = std::nullopt);

/// The `join` command: `join --server FILE [--clock-offset S] [--format] [--percentiles]
/// [--plot DIR] CLIENT...`.
int run_join_command(const arguments& args, std::ostream& out, std::ostream& err);

}  // namespace tokchron_report

#endif  // TOKCHRON_TOOLS_REPORT_JOIN_HPP
