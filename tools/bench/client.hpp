// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_CLIENT_HPP
#define TOKCHRON_TOOLS_BENCH_CLIENT_HPP

/// \file
/// tokchron-bench's client: the target (URL, endpoint, model), the SSE stream decoder
/// (`sse.hpp`) that turns the bytes of one streamed response into a tokchron request timeline,
/// and `run_load`, which sends the arrivals of a workload (tools/loadgen: open or closed loop, as
/// batching-executor's load generator makes them) to the target over
/// HTTP/1.1 with Boost.Beast, every request an asynchronous stream on a few I/O threads (a
/// connection each, or kept-alive connections).
///
/// What each request records (`request_outcome::tl`, a steady-clock timeline keeping every
/// chunk): `arrive` at its intended send time (the load generator's schedule, so a server that
/// falls behind cannot hide its queue), `send` when the client began it (the connect), and one
/// chunk per SSE event at the moment the bytes that completed it reached the client, before they
/// were parsed (`receive_time` says which moment: by default the kernel's receive timestamp of
/// the read, so the client's own wake-up and event loop are not in it): `empty` for a choice
/// without text (the chat role chunk), `text` (1 token: a client sees chunks, not tokens),
/// `reasoning` for a chat delta with reasoning text
/// (`reasoning_content` or `reasoning`), `usage` for a usage-only chunk, `done` for `[DONE]`.
/// The usage counts go to the prompt, reported output, cached prompt and reported reasoning
/// tokens. A request fails (finish `error` or `timed_out`, with the reason in `error` and its
/// kind in `failure`) on a connect or I/O error, an HTTP status other than 200, a response the
/// HTTP parser refuses (or 64 KiB of it that does not parse), a 200 that is not
/// `text/event-stream`, an `error` object in the stream, a malformed SSE line or event or
/// impossible usage counts (`sse_decoder`), a stream that ends before `[DONE]`, or a timeout.
/// Every wait (connect, write, each read) ends by the request timeout when one is set.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loadgen/arrivals.hpp"  // the workload and its arrivals (tools/loadgen)
#include "sse.hpp"               // the SSE decoder, the timeline type, endpoint_kind, failure_kind
#include "tokchron/io/clock_anchor.hpp"
#include "tokchron/io/trace.hpp"

namespace tokchron_bench {

/// Where the requests go. `parse_target` builds one.
struct target {
  std::string host = "127.0.0.1";
  std::string port = "8000";
  std::string prefix;  ///< the URL's path before /v1/... (usually empty)
  bool tls = false;    ///< an https:// URL
  endpoint_kind endpoint = endpoint_kind::completions;
  std::string model;
  std::string api_key;  ///< sent as `Authorization: Bearer KEY` when not empty
  /// More request headers (`--header`), each checked by `parse_header`, sent in this order.
  std::vector<std::pair<std::string, std::string>> headers;

  /// The request path: PREFIX/v1/completions or PREFIX/v1/chat/completions.
  [[nodiscard]] std::string path() const;
};

/// Reads `http://HOST[:PORT][/PREFIX]` or `https://HOST[:PORT][/PREFIX]` (default ports 80 and
/// 443) and an endpoint name, `completions` or `chat`. Throws `std::invalid_argument` naming the
/// bad part.
[[nodiscard]] target parse_target(const std::string& url, const std::string& endpoint,
                                  const std::string& model);

/// Reads a `--header` value, `Name: value`: the name an HTTP token (RFC 9110 section 5.1), the
/// value without CR, LF, NUL or another control character but tab (section 5.5), whitespace
/// around it dropped. Refuses, naming the reason, a header the client must own: the message's
/// framing and connection (`Host`, `Content-Length`, `Transfer-Encoding`, `Connection`,
/// `Keep-Alive`, `TE`, `Trailer`, `Upgrade`, `Proxy-Connection`, `Expect`), what the body and
/// the stream are (`Content-Type`, `Content-Encoding`, `Accept`, `Accept-Encoding`: the client
/// sends JSON and reads an uncompressed event stream), and `X-Request-Id` (the client's id of
/// each request; `--id-prefix` sets its start). Throws `std::invalid_argument`.
[[nodiscard]] std::pair<std::string, std::string> parse_header(const std::string& spec);

/// The longest `load_options::id_prefix`: with the 20 digits of the largest number the id stays
/// within the 128 characters a server keeps of an X-Request-Id (as `batching-executor serve`).
inline constexpr std::size_t max_id_prefix = 64;

/// Checks a request id prefix: at most `max_id_prefix` characters of printable ASCII other than
/// space, `"` and `\` (an HTTP header value and a JSON string as they are, an id that servers
/// keep). Throws `std::invalid_argument` saying what is wrong.
void check_id_prefix(const std::string& prefix);

/// Prompt text. The server's tokenizer is not at hand, so a prompt of n tokens is n words, each
/// a common English word that common tokenizers (GPT-2, cl100k, Llama 3, Qwen 2) hold as one
/// token with its leading space, and that batching-executor's `serve` counts as one token (a
/// whitespace-separated word); the server's `usage.prompt_tokens`, which the trace records, says
/// what it counted (a chat template and a BOS token add their own). `append_words` writes a key
/// (64 bits, mixed) as 16 words of one 16-word alphabet (hexadecimal digits), then `the` for
/// every further word. Alphabet 0 makes blocks (a `hash_ids` entry, a prefix group); alphabet 1
/// a request's own words, so they never continue a block. One key gives the same bytes; two
/// different keys differ within their first 16 words (the mix is a bijection), and agree in
/// their first k words with probability 16^-k (a prompt shorter than 16 words may equal
/// another). The first word gets a leading space when `space_first`.
void append_words(std::string& out, std::uint64_t key, unsigned alphabet, std::uint32_t n,
                  bool space_first);
/// The keys of blocks (`block_key`) and of requests' own words (`own_key`): the seed mixed in,
/// so two runs with different seeds share nothing.
[[nodiscard]] std::uint64_t block_key(std::uint64_t seed, std::uint64_t id) noexcept;
[[nodiscard]] std::uint64_t own_key(std::uint64_t seed, std::uint64_t id) noexcept;
/// The seed of a run's synthetic prompts: `--seed` with the id prefix mixed in (clients given
/// different `--id-prefix` send different prompts).
[[nodiscard]] std::uint64_t prompt_seed(std::uint64_t seed, std::string_view id_prefix) noexcept;
/// A synthetic request's prompt (no trace, no prefix groups): `prompt_tokens` words of its own
/// key (`own_key(seed, number)`, `number` the request's number in the run, as its X-Request-Id),
/// so that no two requests of a run, nor of a sweep's points, share a prompt block of 16 tokens
/// or more, and the same options send the same prompts.
[[nodiscard]] std::string synthetic_prompt(std::uint64_t seed, std::uint64_t number,
                                           std::uint32_t prompt_tokens);

/// The JSON body of one streamed request asking for `max_tokens` tokens (with `ignore_eos`, so a
/// server that honours it returns exactly that many) after `prompt` (the user message of a chat
/// request), with `stream_options.include_usage`.
[[nodiscard]] std::string request_body(const target& t, std::string prompt,
                                       std::uint32_t max_tokens);
/// The same body for the chat endpoint with `messages` (a JSON array of chat messages) as the
/// conversation.
[[nodiscard]] std::string chat_request_body(const target& t, nlohmann::ordered_json messages,
                                            std::uint32_t max_tokens);

/// Which time a read's events get.
/// - `kernel`: the kernel's software receive timestamp of the last TCP segment the read returned
///   (Linux `SO_TIMESTAMPING` with `SOF_TIMESTAMPING_RX_SOFTWARE`; on loopback taken in the
///   sender's write, on a NIC when the driver hands the packet to the stack), moved from
///   `CLOCK_REALTIME` to the steady clock by a clock anchor read at the read (`read_timed`). The
///   client's wake-up, its event loop's queue and its parsing are not in it. Bounded by the read
///   time above and by the stream's previous time below. A read without a usable stamp
///   (another OS, a kernel that refuses the option, a preempted anchor) gets its read time, and
///   is counted. Two events the kernel merged into one read (the client a whole gap behind the
///   stream) both get the later one's stamp.
/// - `read`: the steady-clock time just after the read returned.
enum class receive_time : std::uint8_t { kernel, read };

/// Asks the kernel to stamp every segment socket `fd` receives (Linux `SO_TIMESTAMPING`,
/// software receive stamps). False where the OS refuses or lacks the option.
bool ask_receive_timestamps(int fd) noexcept;

/// One non-blocking read of socket `fd` into `[data, data + size)`, with its times.
struct timed_read {
  long bytes = 0;             ///< > 0: bytes read; 0: the peer closed; < 0: an error, in `error`
  int error = 0;              ///< errno when `bytes < 0` (`EAGAIN`: nothing to read)
  clock::time_point read_at;  ///< the steady clock just after the read returned
  /// The kernel's receive stamp of the last segment the read returned, moved onto the steady
  /// clock through a clock anchor read at the read (`tokchron/io/clock_anchor.hpp`); empty when
  /// the segment carried no stamp, or when the anchor's two steady reads were more than
  /// `max_anchor_gap` apart (the thread was preempted). Wrong by at most `uncertainty` (half
  /// the anchor's gap, so at most `max_anchor_gap / 2`) while the wall clock is not stepped
  /// between the stamp and the read.
  std::optional<clock::time_point> kernel_at;
  clock::duration uncertainty{};
};
/// The widest clock anchor `read_timed` uses.
inline constexpr std::chrono::microseconds max_anchor_gap{20};
[[nodiscard]] timed_read read_timed(int fd, void* data, std::size_t size) noexcept;

/// Linux switches its receive stamps on lazily: after the first socket asks, a deferred work
/// item turns them on, and segments before it carry none. This holder, kept for a run, asks on
/// a UDP socket of its own and sends itself datagrams until one comes back stamped (at most
/// about 100 ms), so a run's first reads are stamped too, and the stamps stay on between its
/// connections.
class receive_timestamps_holder {
 public:
  receive_timestamps_holder() noexcept;
  ~receive_timestamps_holder();
  receive_timestamps_holder(const receive_timestamps_holder&) = delete;
  receive_timestamps_holder& operator=(const receive_timestamps_holder&) = delete;
  /// Whether a datagram came back stamped.
  [[nodiscard]] bool stamping() const noexcept { return stamping_; }

 private:
  int fd_ = -1;
  bool stamping_ = false;
};

/// How the client checks an https:// server's certificate (`tls.hpp`).
struct tls_options {
  /// Verify the chain and the host name (default). Off (`--tls-verify off`): any certificate
  /// is taken, and the run says so.
  bool verify = true;
  /// A PEM file of certificates to trust instead of the system's store (`--ca-cert`; Debian's
  /// ca-certificates through OpenSSL's default paths otherwise).
  std::string ca_file;
};

/// How long the client waits (zero: no limit). Each expiry fails the request with the reason.
struct timeouts {
  clock::duration connect = std::chrono::seconds(10);  ///< until the TCP connection is open
  clock::duration request = std::chrono::seconds(0);   ///< from the send to the end of stream
  clock::duration idle = std::chrono::seconds(60);     ///< between two reads (or write)
};

/// One request of a run: its timeline, the reason it failed (empty when it did not), and
/// whether it counts (intended send at or after the warm-up).
struct request_outcome {
  std::uint64_t id = 0;  ///< the load generator's index of the request in its run
  /// `load_options::id_prefix` then `load_options::first_request_id` + id: its X-Request-Id
  /// and trace id.
  std::string request_id;

  timeline tl;
  std::string error;
  failure_kind failure = failure_kind::none;  ///< with `error`: its kind
  bool measured = true;
  /// Reads that returned bytes, and those of them timed by a kernel receive timestamp.
  std::uint32_t reads = 0, kernel_timed_reads = 0;
  /// The longest a stamped read's bytes waited in the kernel (the read's time minus the
  /// stamp): how far the client fell behind this stream. A wait near the gap between the
  /// stream's events means two of them may have shared one read, and the earlier one the
  /// later one's stamp.
  clock::duration longest_read_wait{};
  /// What the stream carried (text, reasoning, tool-call deltas, ...; events that shared a read).
  stream_content content;
  /// The server's finish reason as it wrote it (quoted, at most 40 bytes; empty: none given),
  /// and whether `classify_finish_reason` knows the word.
  std::string finish_word;
  bool finish_word_known = true;
  /// The closed loop held this request's user back this long before its next request, after a
  /// fast failure (see `backoff`).
  clock::duration backoff{};
  /// The request opened a connection (not a kept-alive one): how long the TCP connect took,
  /// and with TLS the handshake after it (both inside TTFT from the send), and whether the
  /// handshake resumed an earlier session.
  bool new_connection = false, tls_resumed = false;
  clock::duration connect_time{}, handshake_time{};
  /// The text of the measured choice (chat `delta.content`, completions `text`) as received,
  /// kept only when `load_options::keep_reply` is set, at most that many bytes; `reply_cut`:
  /// the stream carried more.
  std::string reply;
  bool reply_cut = false;
};

/// Whether a Content-Type value names `text/event-stream`: the media type compared
/// case-insensitively, its parameters (`; charset=utf-8`) and the whitespace around them
/// ignored (RFC 9110 section 8.3.1).
[[nodiscard]] bool is_event_stream(std::string_view content_type) noexcept;

/// How the closed loop backs off from a server that fails fast (refuses connections, resets
/// them, answers 503 at once). A failed request that ended within `fast` of its send holds its
/// user back before the next request: a delay drawn uniformly from [d/2, d] (jitter, so users
/// do not retry in step), d = `first` x 2^(k - 1) for its user's k-th fast failure in a row, at
/// most `most`; any other outcome sets k back to 0. The open loop keeps its schedule (its
/// request count is the configured rate times the duration, whatever the server does).
struct backoff {
  clock::duration fast = std::chrono::milliseconds(500);
  clock::duration first = std::chrono::milliseconds(50);
  clock::duration most = std::chrono::seconds(2);
};

/// Where a run stands, for the progress line.
struct progress {
  double elapsed_s = 0;
  std::uint64_t sent = 0, finished = 0, failed = 0, in_flight = 0;
};

/// A run: the target, the workload (tools/loadgen's, as batching-executor's: open loop at `rate`
/// with gamma gaps of shape `burstiness`, or `users` closed-loop users with `think` times;
/// prompt and output length distributions; `duration_s`, `max_requests`, `seed`), the warm-up,
/// the timeouts and the I/O threads.
struct load_options {
  target tgt;
  tokchron_loadgen::workload work;
  double warmup_s = 0;
  timeouts limits;
  unsigned threads = 1;  ///< I/O threads (each runs its own event loop)
  /// Keep connections open between requests (`Connection: keep-alive`, a pool per I/O thread)
  /// instead of one connection per request: a request then starts without a TCP handshake when
  /// a connection is free.
  bool keep_alive = false;
  /// The I/O threads poll instead of sleeping until the kernel wakes them: a read is timed, and
  /// a send begun, without a wake-up's delay, at the cost of one busy core per I/O thread.
  bool busy_poll = false;
  /// Which time a read's events get (see `receive_time`).
  receive_time rx_time = receive_time::kernel;
  /// With an https:// target: how its certificate is checked.
  tls_options tls;
  /// The X-Request-Id (and trace id) of the run's first request; the others follow it. A sweep
  /// gives each point its own range, so one server trace holds every point without a clash.
  std::uint64_t first_request_id = 0;
  /// Put before every request id (X-Request-Id and trace id), e.g. `host1-`, so that several
  /// clients driving one server send different ids (`check_id_prefix` states what it may hold).
  std::string id_prefix;
  /// Called about every `progress_every` from the scheduling thread (may be empty).
  std::function<void(const progress&)> on_progress;
  clock::duration progress_every = std::chrono::milliseconds(500);
  backoff retry;
  /// Stop sending when, for this long, no stream received a byte of a 200 answer and requests
  /// failed (a dead, refusing or failing server): the run then ends with `gave_up` set, its
  /// requests in flight run to their end. Zero: never.
  clock::duration give_up = std::chrono::seconds(30);
  /// When set, each request is handed over here as it ends, in the order they end, on a thread
  /// of the run's own (never the scheduling thread: nothing it does delays a send), with
  /// the time the run's schedule counts from (`load_result::zero`), instead of being kept in
  /// `load_result::requests`: the run then keeps only the requests in flight, so its memory is
  /// bounded by the users (closed loop) or the rate times the request time (open loop), not by
  /// its duration.
  std::function<void(request_outcome&&, clock::time_point zero)> on_end;
  /// Where the run's requests come from instead of `work`'s arrivals (a trace replay,
  /// workloads.hpp): made once per run; its times count from `load_result::zero`. Its arrivals'
  /// ids are distinct; the closed loop's backoff does not apply.
  std::function<std::unique_ptr<tokchron_loadgen::arrival_source>()> schedule;
  /// The JSON body of each request (empty: `request_body` of its `synthetic_prompt` and output
  /// length);
  /// called on the scheduling thread, in order of intended send.
  std::function<std::string(const target&, const tokchron_loadgen::arrival&)> body;
  /// More headers of each request, after the target's (called with `body`); each must pass
  /// `parse_header`'s rules.
  std::function<std::vector<std::pair<std::string, std::string>>(const tokchron_loadgen::arrival&)>
      headers;
  /// Keep each request's reply text, at most this many bytes (`request_outcome::reply`); 0:
  /// none.
  std::size_t keep_reply = 0;
  /// Called on the scheduling thread as each request ends, before its schedule hears of it
  /// (`arrival_source::on_finish`) and before `on_end`: a schedule whose next request depends
  /// on this one's outcome (a session's next turn) reads it here, and may take its `reply`.
  std::function<void(request_outcome&)> on_outcome;
};

/// The outcome of a run: every request it sent (none when `load_options::on_end` took them),
/// the time its schedule counts from, and why it stopped early, if it did.
struct load_result {
  std::deque<request_outcome> requests;
  clock::time_point zero;
  /// Not empty when the run stopped before its end: no stream received a byte for
  /// `load_options::give_up` while requests failed, or the load generator refused to go on
  /// (its memory limit).
  std::string gave_up;
  /// Requests sent, fast failures that held a user back, and their delays in all.
  std::uint64_t sent = 0, backoffs = 0;
  clock::duration backoff_total{};
};

/// Sends the workload and waits for every request to end. Arrivals stop at `duration_s` (closed
/// loop: a user's next request is sent only if it falls before it); requests in flight then
/// run to their end or their timeout. Throws `std::invalid_argument` for a bad workload or
/// target, `std::runtime_error` when the host does not resolve.
[[nodiscard]] load_result run_load(const load_options& opt);

/// The measured requests of `r` as trace records, times in seconds since `r.zero`.
[[nodiscard]] std::vector<tc::trace_record> to_trace(const load_result& r);
/// One request as a trace record, times in seconds since `zero`, with the clock anchor `a`
/// (read once a run: `tc::read_clock_anchor<clock>(zero)`). Its `ok` and finish reason are the
/// request's verdict: a request with an `error` is never `ok`.
[[nodiscard]] tc::trace_record to_trace(const request_outcome& o, clock::time_point zero,
                                        const tc::clock_anchor& a);

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_CLIENT_HPP
