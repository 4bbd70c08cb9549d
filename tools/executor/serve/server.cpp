// SPDX-License-Identifier: MIT
#include "server.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <exception>
#include <iostream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "http_rules.hpp"
#include "live_engine.hpp"
#include "openai.hpp"
#include "tokchron/export/prometheus.hpp"
#include "trace_file.hpp"
#ifdef TOKCHRON_SERVE_PROTOBUF
#include "tokchron/export/prometheus_protobuf.hpp"
#endif
#include "tokchron/live/presets.hpp"
#include "tokchron/live/scrape.hpp"

namespace batching::serve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

std::uint64_t parse_count(const std::string& opt, const std::string& v, std::uint64_t lo,
                          std::uint64_t hi) {
  std::size_t used = 0;
  unsigned long long x = 0;
  try {
    if (v.empty() || v[0] == '-' || v[0] == '+') throw std::invalid_argument(v);
    x = std::stoull(v, &used, 10);
  } catch (const std::exception&) {
    throw usage_error("--" + opt + " '" + v + "': not a whole number");
  }
  if (used != v.size()) throw usage_error("--" + opt + " '" + v + "': not a whole number");
  if (x < lo || x > hi)
    throw usage_error("--" + opt + " '" + v + "': must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  return x;
}

// A request id from the X-Request-Id header, as vLLM takes it: kept when it is short printable
// ASCII, else the server's counter.
std::string header_request_id(std::string_view h) {
  if (h.empty() || h.size() > 128) return {};
  for (const char c : h)
    if (c <= ' ' || c > '~' || c == '"' || c == '\\') return {};
  return std::string(h);
}

std::string sse(const std::string& data) { return "data: " + data + "\n\n"; }

}  // namespace

std::string serve_usage() {
  return "usage: batching-executor serve [options] [engine options]\n"
         "The OpenAI API (POST /v1/completions, /v1/chat/completions; GET /v1/models, /health,\n"
         "/metrics) in front of the executor running in real time. docs/tools/serve.md.\n"
         "  --host ADDR           listen address (default 127.0.0.1)\n"
         "  --port P              port (default 8000; 0: any free port, printed)\n"
         "  --served-model NAME   the model name requests must give (default tokchron-sim)\n"
         "  --names NAMES         /metrics names and semantics: " +
         metric_names_list() +
         "\n                        (default vllm; docs/library/live-metrics.md)\n"
         "  --trace-out FILE      write the server's timelines (tokchron JSON Lines) at exit\n"
         "  --max-requests N      exit after answering N requests (default: run until a signal)\n"
         "  --max-body BYTES      largest request body (default 1048576; larger: HTTP 413)\n"
         "  --write-timeout S     drop a client whose response write stalls S seconds (default "
         "30)\n"
         "  --max-connections N   open connections at most; past it 503 + Retry-After (default "
         "1024)\n"
         "  --max-buffered BYTES  drop a client with more unwritten response bytes (default "
         "4194304)\n"
         "  --idle-timeout S      close a connection that starts no request for S seconds "
         "(default 60)\n"
         "  --header-timeout S    a request's header must be whole S seconds after its first "
         "byte\n"
         "                        (default 10; else 408 and the connection closed)\n"
         "  --body-timeout S      its body whole S seconds after the header (default 30; 408)\n"
         "  --request-timeout S   header and body whole S seconds after the first byte "
         "(default 30; 408)\n"
         "  --max-header BYTES    largest request header (default 8192; larger: HTTP 431)\n"
         "  --shutdown-grace-ms MS  after a first signal, stop MS ms later (default 200); a\n"
         "                        second signal stops at once\n"
         "  --threads N           HTTP threads (default 2)\n"
         "  --max-model-len N     prompt + output tokens of a request (default 4096)\n"
         "  --eos-range N         without ignore_eos an answer stops after 1..N tokens\n"
         "                        (default 256; see docs/tools/serve.md)\n"
         "  --enable-prompt-tokens-details  usage.prompt_tokens_details.cached_tokens on\n"
         "                        answers that hit the prefix cache (as vLLM's flag)\n"
         "  --reasoning-fraction F, --shared-prefix TOKENS  reasoning chat answers, a shared\n"
         "                        system prompt the prefix cache reuses (run options)\n"
         "Engine options are the run options of `batching-executor --help` (--backend, --sim,\n"
         "--max-batch-size, --max-num-batched-tokens, ...); the sim backend sleeps each step's\n"
         "modelled time. An option given twice is refused, naming it and both values (--sim and\n"
         "--compute take each KEY once).\n";
}

serve_options parse_serve_options(const std::vector<std::string>& args) {
  serve_options o;
  tokchron_cli::option_once once;  // an option given twice: refused, as every tool's
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      o.help = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) throw usage_error("serve: unexpected argument '" + a + "'");
    if (a == "--enable-prompt-tokens-details") {  // a flag, as vLLM's
      o.prompt_tokens_details = true;
      continue;
    }
    std::string name = a.substr(2);
    std::string value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else {
      if (i + 1 >= args.size()) throw usage_error("--" + name + " needs a value");
      value = args[++i];
    }
    if (auto repeated = note_option(once, name, value)) throw usage_error("serve: " + *repeated);
    if (name == "host") {
      o.host = value;
    } else if (name == "port") {
      o.port = static_cast<std::uint16_t>(parse_count(name, value, 0, 65535));
    } else if (name == "served-model") {
      if (value.empty()) throw usage_error("--served-model: empty name");
      o.model = value;
    } else if (name == "names") {
      if (!known_metric_names(value))
        throw usage_error("--names '" + value + "': expected " + metric_names_list());
      o.names = value;
    } else if (name == "trace-out") {
      o.trace_out = value;
    } else if (name == "max-requests") {
      o.max_requests = parse_count(name, value, 1, std::uint64_t(1) << 62);
    } else if (name == "max-body") {
      o.max_body = parse_count(name, value, 1, std::uint64_t(1) << 32);
    } else if (name == "write-timeout") {
      o.write_timeout_s = parse_count(name, value, 1, 86400);
    } else if (name == "max-connections") {
      o.max_connections = parse_count(name, value, 1, 1000000);
    } else if (name == "max-buffered") {
      o.max_buffered = parse_count(name, value, 4096, std::uint64_t(1) << 32);
    } else if (name == "idle-timeout") {
      o.idle_timeout_s = parse_count(name, value, 1, 86400);
    } else if (name == "header-timeout") {
      o.header_timeout_s = parse_count(name, value, 1, 86400);
    } else if (name == "body-timeout") {
      o.body_timeout_s = parse_count(name, value, 1, 86400);
    } else if (name == "request-timeout") {
      o.request_timeout_s = parse_count(name, value, 1, 86400);
    } else if (name == "shutdown-grace-ms") {
      o.shutdown_grace_ms = parse_count(name, value, 0, 3600000);
    } else if (name == "max-header") {
      o.max_header = parse_count(name, value, 1024, 1u << 20);
    } else if (name == "threads") {
      o.threads = static_cast<unsigned>(parse_count(name, value, 1, 256));
    } else if (name == "max-model-len") {
      o.max_model_len = static_cast<std::uint32_t>(parse_count(name, value, 2, 1u << 30));
    } else if (name == "eos-range") {
      o.eos_range = static_cast<std::uint32_t>(parse_count(name, value, 1, 1u << 30));
    } else {
      try {
        set_option(o.engine, name, value);
      } catch (const std::invalid_argument& e) {
        throw usage_error(std::string("serve: ") + e.what());
      }
    }
  }
  o.engine.sched.validate();
  return o;
}

// ---------------------------------------------------------------------------------------------

struct server::impl {
  // Declared before the io_context, so the sessions its destructor frees never outlive them.
  serve_options opt;
  live_metrics metrics;
  request_limits limits;
  clock_type clock;  // the requests' timelines' clock (their times are always given explicitly)
  std::unique_ptr<trace_file> trace;  // --trace-out; before the engine, which writes to it
  /// Requests the engine finished, and of them those aborted (by the shutdown or their clients).
  std::atomic<std::uint64_t> finished_requests{0}, cut_requests{0};
  std::unique_ptr<live_engine> engine;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::int64_t created = 0;
  std::atomic<std::uint64_t> next_id{1}, answered{0};
  std::atomic<bool> stopping{false};
  /// Connections open now, and those refused past --max-connections (both in /metrics).
  std::atomic<std::uint64_t> open_connections{0}, refused_connections{0};
  /// Why serve closed a connection itself (each connection counted once, by its first reason;
  /// `/metrics`: tokchron_serve_closed_connections_total{reason}).
  enum class closed : std::uint8_t {
    idle_timeout,      // no request started within --idle-timeout (no answer)
    header_timeout,    // 408: header not whole within --header-timeout
    body_timeout,      // 408: body not whole within --body-timeout
    request_timeout,   // 408: header and body not whole within --request-timeout
    header_too_large,  // 431: header over --max-header
    body_too_large,    // 413: body over --max-body
    bad_http,          // 400: not HTTP/1.x
    write_timeout,     // a response write made no progress for --write-timeout
    write_buffer,      // more than --max-buffered response bytes waited (a client not reading)
    read_buffer,       // pipelined bytes past --max-body + 64 KiB during a response
    client_gone,       // the client closed or reset the connection during a request
    count_
  };
  static constexpr const char* closed_names[] = {
      "idle_timeout",     "header_timeout", "body_timeout", "request_timeout",
      "header_too_large", "body_too_large", "bad_http",     "write_timeout",
      "write_buffer",     "read_buffer",    "client_gone"};
  static_assert(std::size(closed_names) == static_cast<std::size_t>(closed::count_));
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(closed::count_)> closed_by{};
  void count_closed(closed why) { closed_by[static_cast<std::size_t>(why)].fetch_add(1); }

  static tokchron::live_options metric_options(const serve_options& o) {
    return serve::metric_options(o.names, o.model, o.max_model_len);
  }

  explicit impl(const serve_options& o) : opt(o), metrics(metric_options(o)) {
    auto be = make_backend(opt.engine);
    // The prefix cache shares KV blocks between requests: the sim's accounting does; the
    // real-compute backends keep per-sequence state that a shared block would bypass.
    if (opt.engine.backend != "sim") opt.engine.sched.prefix_caching = false;
    // A request must fit the KV pool whole: the model length is capped by it.
    const std::uint64_t kv_tokens =
        std::uint64_t(be->kv_blocks(opt.engine.sched.block_size)) * opt.engine.sched.block_size;
    limits.model = opt.model;
    limits.max_model_len =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(opt.max_model_len, kv_tokens));
    if (limits.max_model_len < 2)
      throw std::invalid_argument("serve: the KV pool holds fewer than 2 tokens");
    limits.eos_range = opt.eos_range;
    limits.reasoning_fraction = opt.engine.load.reasoning_fraction;
    limits.shared_prefix = opt.engine.load.shared_prefix;
    if (opt.engine.sched.prefix_caching) limits.block_size = opt.engine.sched.block_size;
    if (!opt.engine.sched.chunked_prefill)
      limits.max_prompt_tokens = opt.engine.sched.max_num_batched_tokens;
    created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    beast::error_code ec;
    const auto addr = net::ip::make_address(opt.host, ec);
    if (ec) throw std::invalid_argument("serve: --host '" + opt.host + "': " + ec.message());
    const tcp::endpoint ep(addr, opt.port);
    acceptor.open(ep.protocol(), ec);
    if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec)
      throw std::runtime_error("serve: cannot listen on " + opt.host + ":" +
                               std::to_string(opt.port) + ": " + ec.message());
    // The trace file is created once serve can listen, and filled as requests finish.
    if (opt.trace_out) trace = std::make_unique<trace_file>(*opt.trace_out);
    engine = std::make_unique<live_engine>(
        opt.engine.sched, std::move(be), metrics,
        [this](std::vector<tokchron::trace_record>& records) noexcept {
          for (const auto& r : records) {
            finished_requests.fetch_add(1);
            if (r.reason == tokchron::finish_reason::aborted) cut_requests.fetch_add(1);
          }
          if (trace) trace->write(records);
        });
  }

  void accept();
  void begin_shutdown();
  /// serve's own families (connections open, refused, closed by reason), appended to the
  /// scrape of the live metrics: one list for the text and the protobuf exposition.
  void add_connection_metrics(tokchron::metrics_snapshot& s) const {
    s.family("tokchron_serve_open_connections", "Connections open now.",
             tokchron::metric_kind::gauge)
        .add(static_cast<double>(open_connections.load()));
    s.family("tokchron_serve_refused_connections",
             "Connections refused past --max-connections (503).", tokchron::metric_kind::counter)
        .add(static_cast<double>(refused_connections.load()));
    auto& by_reason = s.family("tokchron_serve_closed_connections",
                               "Connections serve closed itself, by reason (timeouts, limits, "
                               "clients that stopped reading or went away mid-request).",
                               tokchron::metric_kind::counter);
    for (std::size_t i = 0; i < closed_by.size(); ++i)
      by_reason.add(static_cast<double>(closed_by[i].load()), {{"reason", closed_names[i]}});
  }
  void answered_one() {
    if (opt.max_requests && answered.fetch_add(1) + 1 == opt.max_requests) begin_shutdown();
  }
};

namespace {

const char* status_text(unsigned s) {
  switch (s) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// One connection: reads requests (keep-alive, pipelining), answers them one at a time.
class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket s, server::impl& srv) : stream_(std::move(s)), srv_(srv) {
    srv_.open_connections.fetch_add(1);
  }
  ~session() { srv_.open_connections.fetch_sub(1); }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
  }

 private:
  using closed = server::impl::closed;
  using steady = std::chrono::steady_clock;

  // Reading a request, in three timed phases (docs/tools/serve.md, "Time limits"): the first
  // byte within --idle-timeout, then the header within --header-timeout of it, then the body
  // within --body-timeout of the header's end, the whole within --request-timeout. A deadline
  // that passes cancels the read; the read's handler then answers 408 (or, idle, just closes).
  void read_request() {
    parser_.emplace();
    head_request_ = false;
    body_unread_ = false;
    parser_->body_limit(srv_.opt.max_body);
    parser_->header_limit(static_cast<std::uint32_t>(srv_.opt.max_header));
    if (buf_.size() > 0) return read_header();  // a pipelined request's first bytes are here
    arm_read(steady::now() + std::chrono::seconds(srv_.opt.idle_timeout_s), closed::idle_timeout);
    stream_.socket().async_read_some(
        buf_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
          self->disarm_read();
          if (ec) {
            if (self->read_timeout_) self->srv_.count_closed(*self->read_timeout_);
            return self->close();
          }
          self->buf_.commit(n);
          self->read_header();
        });
  }

  void read_header() {
    const auto first = steady::now();
    request_deadline_ = first + std::chrono::seconds(srv_.opt.request_timeout_s);
    arm_part(first + std::chrono::seconds(srv_.opt.header_timeout_s), closed::header_timeout);
    http::async_read_header(stream_, buf_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              self->disarm_read();
                              if (ec) return self->on_request(ec);
                              self->on_header();
                            });
  }

  void read_body() {
    arm_part(steady::now() + std::chrono::seconds(srv_.opt.body_timeout_s), closed::body_timeout);
    http::async_read(stream_, buf_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->disarm_read();
                       self->on_request(ec);
                     });
  }

  // A part's deadline, or the whole request's when that is earlier.
  void arm_part(steady::time_point part, closed why) {
    if (part < request_deadline_)
      arm_read(part, why);
    else
      arm_read(request_deadline_, closed::request_timeout);
  }

  // The read deadline: when it passes, the pending read is cancelled and `read_timeout_` says
  // which limit it was. A generation number retires a timer whose read ended first.
  void arm_read(steady::time_point deadline, closed why) {
    read_timeout_.reset();
    const std::uint64_t gen = ++read_gen_;
    read_timer_.expires_at(deadline);
    read_timer_.async_wait([self = shared_from_this(), gen, why](beast::error_code ec) {
      if (ec || gen != self->read_gen_) return;
      self->read_timeout_ = why;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }
  void disarm_read() {
    ++read_gen_;
    read_timer_.cancel();
  }

  // A request refused before it was read whole: counted, answered, the connection closed.
  void refuse(closed why, unsigned status, const char* code, std::string message) {
    srv_.count_closed(why);
    api_error e;
    e.status = status;
    e.code = code;
    e.message = std::move(message);
    if (status >= 500) e.type = "server_error";
    send_plain(e.status, "application/json", error_json(e), false);
  }

  // The header is whole: what it alone decides (RFC 9112's framing, RFC 9110's Expect), before
  // any of the body is read.
  void on_header() {
    const auto& h = parser_->get();
    version_ = h.version();
    head_request_ = h.method() == http::verb::head;
    // The body's framing: only chunked is decoded; anything Beast would not frame as RFC 9112
    // says (a coding it ignores, chunked not last, where it reads no body and would take the
    // body's bytes for the next request) is refused and the connection closed.
    std::string te;
    bool has_te = false;
    for (const auto& f : h) {
      if (f.name() != http::field::transfer_encoding) continue;
      if (has_te) te += ", ";
      te.append(f.value().data(), f.value().size());
      has_te = true;
    }
    std::string_view coding;
    switch (check_transfer_encoding(has_te, te, version_, coding)) {
      case transfer_verdict::none:
      case transfer_verdict::chunked: break;
      case transfer_verdict::http10:
        return refuse(closed::bad_http, 400, "bad_transfer_encoding",
                      "Transfer-Encoding in an HTTP/1.0 request: its framing cannot be trusted "
                      "(RFC 9112 section 6.1)");
      case transfer_verdict::not_final:
        return refuse(closed::bad_http, 400, "bad_transfer_encoding",
                      "the final transfer coding must be chunked, got '" +
                          std::string(coding.substr(0, 64)) + "' (RFC 9112 section 6.3)");
      case transfer_verdict::chunked_twice:
        return refuse(closed::bad_http, 400, "bad_transfer_encoding",
                      "chunked is applied more than once (RFC 9112 section 7.1)");
      case transfer_verdict::not_implemented:
        return refuse(closed::bad_http, 501, "unsupported_transfer_encoding",
                      "the transfer coding '" + std::string(coding.substr(0, 64)) +
                          "' is not implemented (serve decodes chunked only)");
    }
    const auto expect = h.find(http::field::expect);
    const expect_verdict ex = check_expect(
        expect != h.end(),
        expect == h.end() ? std::string_view()
                          : std::string_view(expect->value().data(), expect->value().size()),
        version_);
    if (ex == expect_verdict::unsupported)
      return refuse(closed::bad_http, 417, "expectation_failed",
                    "the only expectation serve meets is 100-continue");
    if (parser_->is_done()) return on_request({});
    if (ex == expect_verdict::continue_100) {
      // The client waits for 100 (Continue) before sending the body (RFC 9110 section 10.1.1).
      // A request the header already refuses (a path without a body, a wrong method) gets its
      // final answer instead, and the connection is closed, its body unread.
      const std::string_view path = target_path({h.target().data(), h.target().size()});
      const bool takes_body = h.method() == http::verb::post &&
                              (path == "/v1/completions" || path == "/v1/chat/completions");
      if (!takes_body) {
        body_unread_ = true;
        return handle(parser_->release());
      }
      queue_raw("HTTP/1.1 100 Continue\r\n\r\n");
    }
    read_body();
  }

  void on_request(beast::error_code ec) {
    if (read_timeout_) {  // a time limit passed: 408
      const closed why = *read_timeout_;
      const bool header = why == closed::header_timeout, body = why == closed::body_timeout;
      const std::string which = header ? "header" : body ? "body" : "request";
      const std::uint64_t limit = header ? srv_.opt.header_timeout_s
                                  : body ? srv_.opt.body_timeout_s
                                         : srv_.opt.request_timeout_s;
      return refuse(why, 408,
                    header ? "header_timeout"
                    : body ? "body_timeout"
                           : "request_timeout",
                    "the request's " + which + " was not received whole within the server's --" +
                        which + "-timeout of " + std::to_string(limit) + " s");
    }
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted) {
      return close();
    }
    if (ec == http::error::body_limit)
      return refuse(closed::body_too_large, 413, "body_too_large",
                    "the request body is larger than the server's limit of " +
                        std::to_string(srv_.opt.max_body) + " bytes");
    if (ec == http::error::header_limit)
      return refuse(closed::header_too_large, 431, "header_too_large",
                    "the request header is larger than the server's limit of " +
                        std::to_string(srv_.opt.max_header) + " bytes (--max-header)");
    if (ec == http::error::partial_message || ec == net::error::connection_reset ||
        ec == net::error::broken_pipe) {  // the client went away part-way through its request
      srv_.count_closed(closed::client_gone);
      return close();
    }
    if (ec)
      return refuse(closed::bad_http, 400, "bad_http", "malformed HTTP request: " + ec.message());
    handle(parser_->release());
  }

  void handle(http::request<http::string_body> req) {
    const time_point received = live_engine::now();
    version_ = req.version();
    keep_alive_ = req.keep_alive() && !body_unread_;
    const auto m = req.method();
    head_request_ = m == http::verb::head;
    // The path of an origin-form or absolute-form target (RFC 9112 section 3.2); what an error
    // echoes of the target is its first 256 bytes.
    const std::string_view raw(req.target().data(), req.target().size());
    const std::string_view target = target_path(raw);
    const std::string shown_target =
        std::string(raw.substr(0, 256)) + (raw.size() > 256 ? "..." : "");
    if (m == http::verb::unknown) {  // RFC 9110 section 9.1: an unrecognised method is 501
      api_error e;
      e.status = 501;
      e.type = "server_error";
      e.message =
          "method " + std::string(req.method_string().substr(0, 64)) + " is not implemented";
      e.code = "method_not_implemented";
      return send_plain(e.status, "application/json", error_json(e), keep_alive_);
    }
    // A GET resource answers HEAD with the same header and no body (RFC 9110 section 9.3.2);
    // 405 names the allowed methods in Allow (section 15.5.6).
    auto wrong_method = [&](const char* allowed) {
      api_error e;
      e.status = 405;
      e.message = "method " + std::string(req.method_string()) + " is not allowed on " +
                  std::string(target) + " (use " + allowed + ")";
      e.code = "method_not_allowed";
      send_plain(e.status, "application/json", error_json(e), keep_alive_,
                 std::string("Allow: ") + allowed + "\r\n");
    };
    const bool get = m == http::verb::get || m == http::verb::head;
    if (target == "/health") {
      if (!get) return wrong_method("GET, HEAD");
      return send_plain(200, "text/plain", "", keep_alive_);
    }
    if (target == "/v1/models") {
      if (!get) return wrong_method("GET, HEAD");
      return send_plain(200, "application/json",
                        models_json(srv_.opt.model, srv_.created, srv_.limits.max_model_len),
                        keep_alive_);
    }
    if (target == "/metrics") {
      if (!get) return wrong_method("GET, HEAD");
#ifdef TOKCHRON_SERVE_PROTOBUF
      // A scraper that asks for the protobuf exposition (Prometheus with native histograms
      // enabled) gets it: every histogram's classic buckets, and a native histogram where the
      // buckets are a native schema's edges (the tokchron names' exponential layout); the text
      // format otherwise; serve's own connection families in both.
      if (const auto accept = req.find(http::field::accept);
          accept != req.end() &&
          tokchron::negotiate_exposition({accept->value().data(), accept->value().size()}) ==
              tokchron::exposition_format::protobuf) {
        tokchron::metrics_snapshot s = tokchron::scrape(srv_.metrics);
        srv_.add_connection_metrics(s);
        std::string body;
        try {
          body = tokchron::to_prometheus_protobuf(s, tokchron::prometheus_native_from_classic(s));
        } catch (const std::exception& e) {  // nothing throws through the request path
          return send_plain(500, "text/plain", std::string("serve: /metrics: ") + e.what() + "\n",
                            keep_alive_);
        }
        return send_plain(200, std::string(tokchron::prometheus_protobuf_content_type),
                          std::move(body), keep_alive_);
      }
#endif
      tokchron::metrics_snapshot s = tokchron::scrape(srv_.metrics);
      srv_.add_connection_metrics(s);
      return send_plain(200, std::string(tokchron::prometheus_content_type),
                        tokchron::to_prometheus(s), keep_alive_);
    }
    const bool chat = target == "/v1/chat/completions";
    if (!chat && target != "/v1/completions") {
      api_error e;
      e.status = 404;
      e.message = "no endpoint " + shown_target;
      e.code = "not_found";
      return send_plain(404, "application/json", error_json(e), keep_alive_);
    }
    if (m != http::verb::post) return wrong_method("POST");
    auto parsed =
        parse_request(chat ? endpoint::chat : endpoint::completions, req.body(), srv_.limits);
    if (auto* e = std::get_if<api_error>(&parsed))
      return send_plain(e->status, "application/json", error_json(*e), keep_alive_);

    auto c = std::make_shared<call>(srv_.clock);
    c->gen = std::get<generation_request>(parsed);
    c->id = srv_.next_id.fetch_add(1);
    const auto hid = req.find("X-Request-Id");
    std::string base = hid == req.end()
                           ? std::string()
                           : header_request_id({hid->value().data(), hid->value().size()});
    if (base.empty()) base = std::to_string(c->id);
    c->name = (chat ? "chatcmpl-" : "cmpl-") + base;
    c->received = received;
    head_ = {chat ? endpoint::chat : endpoint::completions, c->name, srv_.opt.model, srv_.created};
    std::weak_ptr<session> weak = weak_from_this();
    auto ex = stream_.get_executor();
    c->sink = [weak, ex](const step_event& ev) noexcept {
      try {
        if (auto s = weak.lock()) net::post(ex, [s, ev] { s->on_event(ev); });
      } catch (...) {  // out of memory posting: the session is torn down by its watch read
      }
    };
    srv_.metrics.arrive(c->live, live_engine::steady(received),
                        {tokchron::live_series{}, c->gen.prompt_tokens, c->gen.max_tokens});
    call_ = c;
    finished_ = false;
    role_sent_ = false;
    if (!srv_.engine->submit(c)) {  // shutting down
      srv_.metrics.reject(c->live, live_engine::steady(live_engine::now()));
      call_.reset();
      api_error e;
      e.status = 503;
      e.type = "server_error";
      e.message = "the server is shutting down";
      return send_plain(503, "application/json", error_json(e), false);
    }
    if (c->gen.stream) {
      chunked_ = version_ >= 11;
      std::string h = std::string(version_ >= 11 ? "HTTP/1.1" : "HTTP/1.0") +
                      " 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n";
      if (chunked_)
        h += "Transfer-Encoding: chunked\r\n";
      else
        keep_alive_ = false;
      h += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
      queue_raw(std::move(h));
    }
    watch();
  }

  // While a call runs, a read on the socket tells when the client goes away (and keeps the
  // bytes of a pipelined next request).
  void watch() {
    watching_ = true;
    stream_.socket().async_read_some(
        buf_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
          self->watching_ = false;
          if (!ec) {
            self->buf_.commit(n);
            if (self->buf_.size() > self->srv_.opt.max_body + 65536)  // not a client: bytes
              return self->client_gone(closed::read_buffer);          // beyond any request
            if (self->call_ && !self->finished_) return self->watch();
            return self->after_call();
          }
          if (ec == net::error::operation_aborted && self->finished_ && !self->dead_)
            return self->after_call();
          if (self->finished_ && !self->dead_ && ec != net::error::operation_aborted) {
            // The answer is complete and the client closed after reading what it needed (a
            // `Connection: close` client that read by Content-Length): no drop. The write in
            // flight, if any, ends the connection; a failed one is a client gone.
            self->keep_alive_ = false;
            if (self->writing_) return;
            if (self->call_) self->call_done();
            return self->close();
          }
          self->client_gone(closed::client_gone);
        });
  }

  // The connection is given up (counted once, by `why`, in /metrics): a request in flight is
  // aborted in the engine, which sends its final event; then the socket is closed.
  void client_gone(closed why) {
    if (dead_) return;
    dead_ = true;
    srv_.count_closed(why);
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // a write or read in flight ends now
    if (call_ && !finished_) return srv_.engine->cancel(call_);  // the engine aborts it
    if (call_) call_done();
    close();
  }

  void on_event(const step_event& ev) {
    if (!call_ || finished_) return;
    const call& c = *call_;
    if (ev.finished) {
      finished_ = true;
      completion_ = ev.first + ev.tokens;
    }
    if (dead_) {
      if (finished_) {
        call_done();
        close();
      }
      return;
    }
    const bool normal =
        ev.reason == tokchron::finish_reason::stop || ev.reason == tokchron::finish_reason::length;
    if (c.gen.stream) {
      if (head_.kind == endpoint::chat && !role_sent_ && (ev.tokens > 0 || ev.finished)) {
        queue_event(sse(role_chunk(head_)));
        role_sent_ = true;
      }
      const bool failed = ev.finished && (ev.reason == tokchron::finish_reason::error ||
                                          ev.reason == tokchron::finish_reason::rejected);
      if (failed) {
        queue_event(sse(error_json(engine_error(ev.reason))));
      } else if (ev.tokens > 0 || ev.finished) {
        // Tokens below gen.reasoning_tokens are reasoning, the rest the answer.
        const std::uint32_t end = ev.first + ev.tokens;
        const std::uint32_t split = std::clamp(c.gen.reasoning_tokens, ev.first, end);
        queue_event(sse(content_chunk(head_, words(c.gen.seed, split, end - split),
                                      ev.finished ? finish_reason_text(ev.reason) : "",
                                      words(c.gen.seed, ev.first, split - ev.first))));
      }
      if (ev.finished) {
        if (c.gen.include_usage && !failed) queue_event(sse(usage_chunk(head_, usage(ev))));
        queue_event("data: [DONE]\n\n");
        if (chunked_) queue_raw("0\r\n\r\n");
        closing_write_ = true;
      }
      return;
    }
    if (!ev.finished) return;
    if (!normal) {
      const api_error e = engine_error(ev.reason);
      return send_plain(e.status, "application/json", error_json(e), false);
    }
    const std::uint32_t split = std::min(c.gen.reasoning_tokens, completion_);
    send_plain(200, "application/json",
               full_response(head_, words(c.gen.seed, split, completion_ - split),
                             finish_reason_text(ev.reason), usage(ev), words(c.gen.seed, 0, split)),
               keep_alive_);
  }

  // The finished answer's usage: cached prompt tokens as vLLM reports them (with
  // --enable-prompt-tokens-details), reasoning tokens when the server gives chat answers
  // reasoning (OpenAI's completion_tokens_details).
  usage_counts usage(const step_event& ev) const {
    const call& c = *call_;
    usage_counts u;
    u.prompt = c.gen.prompt_tokens;
    u.completion = completion_;
    if (srv_.opt.prompt_tokens_details) u.cached = ev.cached_tokens;
    if (head_.kind == endpoint::chat && srv_.limits.reasoning_fraction > 0)
      u.reasoning = std::min(c.gen.reasoning_tokens, completion_);
    return u;
  }

  // Why the engine ended a request without an answer.
  api_error engine_error(tokchron::finish_reason why) const {
    api_error e;
    e.type = "server_error";
    e.status = 503;
    if (why == tokchron::finish_reason::error) {
      e.status = 500;
      e.message = "the engine failed: " + srv_.engine->failure();
    } else if (why == tokchron::finish_reason::rejected) {
      e.message = "the engine rejected the request (it waited longer than --max-queue-time)";
    } else {
      e.message = "the request was aborted (the server is shutting down)";
    }
    return e;
  }

  void queue_event(const std::string& data) {
    if (!chunked_) return queue_raw(data);
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    queue_raw(size + data + "\r\n");
  }

  // A whole response; to HEAD, its header only, with the Content-Length the body has.
  void send_plain(unsigned status, const std::string& type, std::string body, bool keep,
                  const std::string& extra_fields = {}) {
    keep_alive_ = keep;
    const std::string ver = version_ == 10 ? "HTTP/1.0" : "HTTP/1.1";
    std::string h = ver + " " + std::to_string(status) + " " + status_text(status) +
                    "\r\nContent-Type: " + type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_fields +
                    "Connection: " + (keep ? "keep-alive" : "close") + "\r\n\r\n";
    closing_write_ = true;
    queue_raw(head_request_ ? std::move(h) : h + body);
  }

  void queue_raw(std::string s) {
    if (dead_) return;
    out_bytes_ += s.size();
    out_.push_back(std::move(s));
    // A client that does not read: the bytes queued behind the write in flight are bounded, and
    // past them the client is dropped (one response, however large, is always written).
    if (writing_ && out_bytes_ - out_.front().size() > srv_.opt.max_buffered) {
      closing_write_ = false;
      out_.erase(out_.begin() + 1, out_.end());  // the front is being written: it stays
      out_bytes_ = out_.front().size();
      return client_gone(closed::write_buffer);  // cancels the write in flight
    }
    if (!writing_) write_next();
  }

  void write_next() {
    if (out_.empty()) {
      writing_ = false;
      if (closing_write_) {
        closing_write_ = false;
        response_written();
      }
      return;
    }
    writing_ = true;
    // A write that does not complete within --write-timeout drops the client: the timer counts
    // it first, then cancels the write.
    const std::uint64_t gen = ++write_gen_;
    write_timer_.expires_after(std::chrono::seconds(srv_.opt.write_timeout_s));
    write_timer_.async_wait([self = shared_from_this(), gen](beast::error_code ec) {
      if (!ec && gen == self->write_gen_) self->client_gone(closed::write_timeout);
    });
    net::async_write(stream_, net::buffer(out_.front()),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       ++self->write_gen_;
                       self->write_timer_.cancel();
                       if (!self->out_.empty()) {
                         self->out_bytes_ -= std::min(self->out_bytes_, self->out_.front().size());
                         self->out_.pop_front();
                       }
                       if (ec || self->dead_) {
                         self->out_bytes_ = 0;
                         self->out_.clear();
                         self->writing_ = false;
                         self->closing_write_ = false;
                         return self->client_gone(closed::client_gone);
                       }
                       self->write_next();
                     });
  }

  // The whole response is on the wire.
  void response_written() {
    if (call_ && finished_) call_done();
    if (!keep_alive_) return close();
    if (watching_) {  // the watch read ends with operation_aborted, then reads the next request
      beast::error_code ec;
      stream_.socket().cancel(ec);
      return;
    }
    after_call();
  }

  void after_call() {
    if (dead_) return close();
    if (call_ && !finished_) return;
    if (writing_) return;
    call_.reset();
    read_request();
  }

  void call_done() {
    if (counted_ == call_.get()) return;
    counted_ = call_.get();
    srv_.answered_one();
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  server::impl& srv_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<call> call_;
  const call* counted_ = nullptr;
  response_head head_;
  std::deque<std::string> out_;
  std::uint64_t out_bytes_ = 0;  // the bytes in out_
  net::steady_timer read_timer_{stream_.get_executor()}, write_timer_{stream_.get_executor()};
  std::uint64_t read_gen_ = 0, write_gen_ = 0;  // the deadline a timer's wait belongs to
  std::optional<closed> read_timeout_;          // the read limit that passed, if one did
  steady::time_point request_deadline_{};
  unsigned version_ = 11;
  std::uint32_t completion_ = 0;
  bool keep_alive_ = true, chunked_ = true, writing_ = false, watching_ = false;
  bool finished_ = false, dead_ = false, role_sent_ = false, closing_write_ = false;
  bool head_request_ = false;  // the request is HEAD: responses carry no body
  bool body_unread_ = false;   // answered from the header (Expect: 100-continue): then closed
};

}  // namespace

void server::impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      return accept();  // EMFILE and the like: keep accepting
    }
    beast::error_code nd;
    s.set_option(tcp::no_delay(true), nd);
    if (open_connections.load() >= opt.max_connections) {
      // Past the cap: a short 503 written without waiting (it fits any send buffer; a client
      // that cannot take it loses it), then closed. Nothing of it enters the engine.
      refused_connections.fetch_add(1);
      static const std::string busy = [] {
        const std::string body =
            R"({"error":{"message":"too many open connections","type":"server_error",)"
            R"("param":null,"code":"too_many_connections"}})";
        return "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: "
               "application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
      }();
      s.non_blocking(true, nd);
      s.write_some(net::buffer(busy.data(), busy.size()), nd);
      s.shutdown(tcp::socket::shutdown_send, nd);
      s.close(nd);
      return accept();
    }
    // The kernel's send buffer is bounded too (no autotuning past it), so a client that stops
    // reading holds at most about 2 x --max-buffered bytes (Linux doubles SO_SNDBUF) in the
    // kernel plus --max-buffered queued here before its write stalls and it is dropped.
    beast::error_code opt_ec;
    s.set_option(net::socket_base::send_buffer_size(
                     static_cast<int>(std::min<std::uint64_t>(opt.max_buffered, 1u << 30))),
                 opt_ec);
    std::make_shared<session>(std::move(s), *this)->start();
    accept();
  });
}

void server::impl::begin_shutdown() {
  if (stopping.exchange(true)) return;
  net::post(ioc, [this] {
    beast::error_code ec;
    acceptor.close(ec);
    engine->stop();  // aborts what is in flight; the sessions get their final events
    // Let the sessions write their last bytes, then stop.
    auto t = std::make_shared<net::steady_timer>(
        ioc, std::chrono::milliseconds(static_cast<std::int64_t>(opt.shutdown_grace_ms)));
    t->async_wait([this, t](beast::error_code) { ioc.stop(); });
  });
}

server::server(const serve_options& o) : p_(std::make_unique<impl>(o)) {}
server::~server() {
  if (p_) p_->engine->stop();
}

std::uint16_t server::port() const noexcept { return p_->acceptor.local_endpoint().port(); }
std::uint32_t server::kv_blocks() const noexcept { return p_->engine->kv_blocks_total(); }
bool server::prefix_caching() const noexcept { return p_->opt.engine.sched.prefix_caching; }

void server::shutdown() { p_->begin_shutdown(); }

std::uint64_t server::run(bool signals) {
  impl& p = *p_;
  net::signal_set sigs(p.ioc);
  if (signals) {
    sigs.add(SIGINT);
    sigs.add(SIGTERM);
    // The first signal shuts down gracefully (in-flight streams get their final aborted chunk);
    // a second one during that grace stops the event loop at once.
    sigs.async_wait([&p, &sigs](beast::error_code ec, int) {
      if (ec) return;
      p.begin_shutdown();
      sigs.async_wait([&p](beast::error_code ec2, int) {
        if (ec2) return;
        std::cerr << "batching-executor serve: second signal, stopping now\n";
        p.ioc.stop();
      });
    });
  }
  p.accept();
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < p.opt.threads; ++i) pool.emplace_back([&p] { p.ioc.run(); });
  p.ioc.run();
  for (auto& t : pool) t.join();
  beast::error_code ignored;
  sigs.clear(ignored);  // from here on a signal has its default effect
  // The requests still in flight are aborted and written; every finished one already is (the
  // trace is written as requests finish, so a crash loses only those in flight).
  p.engine->stop();
  const std::uint64_t finished = p.finished_requests.load(), cut = p.cut_requests.load();
  if (cut > 0)
    std::cerr << "batching-executor serve: " << cut << " of " << finished
              << " requests were cut (aborted) by the shutdown or their clients\n";
  if (p.trace && !p.trace->error().empty())
    throw std::runtime_error("serve: --trace-out: " + p.trace->error() + " (" +
                             std::to_string(p.trace->lines()) + " requests written, " +
                             std::to_string(p.trace->lost()) + " lost)");
  return finished;
}

int serve_main(const std::vector<std::string>& args) {
  serve_options o;
  try {
    o = parse_serve_options(args);
    if (o.help) {
      std::cout << serve_usage();
      return 0;
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "batching-executor serve: " << e.what()
              << "\n(run `batching-executor serve --help` for the options)\n";
    return 2;
  }
  try {
    server s(o);
    std::cout << "batching-executor serve: listening on http://" << o.host << ":" << s.port()
              << " (model " << o.model << ", backend " << o.engine.backend << ", KV pool of "
              << s.kv_blocks() << " blocks of " << o.engine.sched.block_size
              << " tokens, prefix caching " << (s.prefix_caching() ? "on" : "off") << ")"
              << std::endl;
    s.run(true);
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "batching-executor serve: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "batching-executor serve: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace batching::serve
