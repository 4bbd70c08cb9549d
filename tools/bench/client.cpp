// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#include "client.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include <cerrno>
#include <cstring>

#if defined(__linux__)
#include <linux/net_tstamp.h>
#include <sys/prctl.h>
#endif
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include "tokchron/io/clock_anchor.hpp"

namespace tokchron_bench {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

std::string target::path() const {
  return prefix + (endpoint == endpoint_kind::chat ? "/v1/chat/completions" : "/v1/completions");
}

target parse_target(const std::string& url, const std::string& endpoint, const std::string& model) {
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument("--url '" + url + "': " + why);
  };
  target t;
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0) bad("HTTPS is not supported (the client speaks plain HTTP)");
  if (url.rfind(scheme, 0) != 0) bad("must start with http://");
  std::string rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) t.prefix = rest.substr(slash);
  while (!t.prefix.empty() && t.prefix.back() == '/') t.prefix.pop_back();
  if (t.prefix.size() >= 3 && t.prefix.compare(t.prefix.size() - 3, 3, "/v1") == 0)
    t.prefix.resize(t.prefix.size() - 3);  // http://host:8000/v1 names the same server
  if (authority.empty()) bad("no host");
  const auto colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    t.port = authority.substr(colon + 1);
    authority.resize(colon);
    if (t.port.empty() || t.port.size() > 5 ||
        !std::all_of(t.port.begin(), t.port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoul(t.port) == 0 || std::stoul(t.port) > 65535)
      bad("the port must be a number in [1, 65535]");
  } else {
    t.port = "80";
  }
  if (authority.empty()) bad("no host");
  t.host = authority;
  if (endpoint == "completions")
    t.endpoint = endpoint_kind::completions;
  else if (endpoint == "chat")
    t.endpoint = endpoint_kind::chat;
  else
    throw std::invalid_argument("--endpoint '" + endpoint + "': must be completions or chat");
  t.model = model;
  return t;
}

void check_id_prefix(const std::string& prefix) {
  if (prefix.size() > max_id_prefix)
    throw std::invalid_argument("--id-prefix: " + std::to_string(prefix.size()) +
                                " characters, at most " + std::to_string(max_id_prefix));
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    const auto c = static_cast<unsigned char>(prefix[i]);
    if (c > ' ' && c <= '~' && c != '"' && c != '\\') continue;
    char code[8];
    std::snprintf(code, sizeof code, "0x%02x", c);
    throw std::invalid_argument("--id-prefix: character " + std::to_string(i + 1) + " (" + code +
                                ") is not printable ASCII other than space, '\"' and '\\'");
  }
}

std::string request_body(const target& t, std::uint32_t prompt_tokens, std::uint32_t max_tokens) {
  std::string prompt;
  prompt.reserve(std::size_t{4} * prompt_tokens);
  for (std::uint32_t i = 0; i < prompt_tokens; ++i) prompt += i ? " the" : "the";
  nlohmann::ordered_json j;
  j["model"] = t.model;
  if (t.endpoint == endpoint_kind::chat)
    j["messages"] = nlohmann::ordered_json::array(
        {nlohmann::ordered_json{{"role", "user"}, {"content", std::move(prompt)}}});
  else
    j["prompt"] = std::move(prompt);
  j["max_tokens"] = max_tokens;
  j["ignore_eos"] = true;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  return j.dump();
}

// ---- SSE ----------------------------------------------------------------------------------

bool sse_decoder::fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  return false;
}

bool sse_decoder::feed(std::string_view bytes, clock::time_point t) {
  if (failed()) return false;
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    const std::string_view part = bytes.substr(0, nl);
    if (line_.size() + part.size() > max_sse_line)
      return fail("SSE line " + std::to_string(lines_ + 1) + " is longer than " +
                  std::to_string(max_sse_line) + " bytes");
    if (nl == std::string_view::npos) {
      line_.append(part);
      return true;
    }
    bytes.remove_prefix(nl + 1);
    std::string_view l;
    if (line_.empty()) {
      l = part;
    } else {
      line_.append(part);
      l = line_;
    }
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    const bool ok = line(l, t);
    line_.clear();
    if (!ok) return false;
  }
  return true;
}

// One line of the stream (SSE: "field: value", ":" comment, blank = end of event). A line
// without a colon is a field with an empty value in the SSE grammar, but no OpenAI-compatible
// server sends one: it is taken as a broken stream (the line is named in the reason).
bool sse_decoder::line(std::string_view l, clock::time_point t) {
  ++lines_;
  if (l.empty()) return event(t);
  if (l.front() == ':') return true;
  const auto colon = l.find(':');
  if (colon == std::string_view::npos)
    return fail("SSE line " + std::to_string(lines_) + " is not a field: '" +
                std::string(l.substr(0, 80)) + "'");
  const std::string_view field = l.substr(0, colon);
  std::string_view value = l.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return true;  // event, id, retry: nothing to record
  if (has_data_) data_ += '\n';
  if (data_.size() + value.size() > max_sse_line)
    return fail("SSE event " + std::to_string(events_ + 1) + " is longer than " +
                std::to_string(max_sse_line) + " bytes");
  data_.append(value);
  has_data_ = true;
  return true;
}

bool sse_decoder::event(clock::time_point t) {
  if (!has_data_) return true;
  has_data_ = false;
  const std::string data = std::move(data_);
  data_.clear();
  ++events_;
  const std::string where = "SSE event " + std::to_string(events_);
  if (done_) return fail(where + " comes after [DONE]");
  if (data == "[DONE]") {
    done_ = true;
    (void)tl_->chunk(t, 0, tc::chunk_kind::done);
    (void)tl_->finish(t, reason_);
    return true;
  }
  const auto j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail(where + " is not a JSON object: '" + data.substr(0, 80) + "'");
  if (const auto e = j.find("error"); e != j.end()) {
    std::string msg = e->dump();
    if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
      msg = (*e)["message"].get<std::string>();
    return fail("server error in the stream: " + msg.substr(0, 200));
  }
  bool has_choice = false, has_text = false, has_reasoning = false;
  // A string field that is present and not empty; a field of another type (null aside) fails.
  const auto nonempty = [&](const nlohmann::json& obj, const char* field, bool& bad) {
    const auto x = obj.find(field);
    if (x == obj.end() || x->is_null()) return false;
    if (!x->is_string()) bad = true;
    return x->is_string() && !x->get_ref<const std::string&>().empty();
  };
  if (const auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
    const auto& c0 = c->front();
    if (!c0.is_object()) return fail(where + ": choices[0] is not an object");
    has_choice = true;
    bool bad = false;
    if (endpoint_ == endpoint_kind::chat) {
      // Reasoning models' thinking comes in its own delta field: `reasoning_content` (vLLM's
      // DeltaMessage, vllm/entrypoints/openai/protocol.py at
      // 0052bed36509c7a5a2d8e48265334e40cf2f5a0e; SGLang, DeepSeek) or `reasoning` (later vLLM
      // versions).
      if (const auto d = c0.find("delta"); d != c0.end() && d->is_object()) {
        has_text = nonempty(*d, "content", bad);
        has_reasoning = nonempty(*d, "reasoning_content", bad) || nonempty(*d, "reasoning", bad);
      }
    } else {
      has_text = nonempty(c0, "text", bad);
    }
    if (bad) return fail(where + ": the choice's text is not a string");
    if (const auto f = c0.find("finish_reason"); f != c0.end() && f->is_string())
      reason_ = f->get_ref<const std::string&>() == "length" ? tc::finish_reason::length
                                                             : tc::finish_reason::stop;
  }
  bool has_usage = false;
  if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
    has_usage = true;
    auto count = [&](const char* name) -> std::optional<std::uint64_t> {
      const auto x = u->find(name);
      if (x == u->end() || !x->is_number_unsigned()) return std::nullopt;
      return x->get<std::uint64_t>();
    };
    if (const auto p = count("prompt_tokens")) tl_->set_prompt_tokens(*p);
    if (const auto o = count("completion_tokens")) tl_->set_reported_output_tokens(*o);
    // The details objects of OpenAI's usage (vLLM sends prompt_tokens_details when prefix
    // caching statistics are enabled).
    const auto detail = [&](const char* object, const char* name) -> std::optional<std::uint64_t> {
      const auto d = u->find(object);
      if (d == u->end() || !d->is_object()) return std::nullopt;
      const auto x = d->find(name);
      if (x == d->end() || !x->is_number_unsigned()) return std::nullopt;
      return x->get<std::uint64_t>();
    };
    if (const auto c = detail("prompt_tokens_details", "cached_tokens"))
      tl_->set_cached_prompt_tokens(*c);
    if (const auto r = detail("completion_tokens_details", "reasoning_tokens"))
      tl_->set_reported_reasoning_tokens(*r);
  }
  if (has_choice) {
    // One event with both (the delta where the thinking ends) gives two chunks at its time.
    if (has_reasoning) (void)tl_->chunk(t, 1, tc::chunk_kind::reasoning);
    if (has_text || !has_reasoning)
      (void)tl_->chunk(t, has_text ? 1 : 0,
                       has_text ? tc::chunk_kind::text : tc::chunk_kind::empty);
  } else if (has_usage)
    (void)tl_->chunk(t, 0, tc::chunk_kind::usage);
  else
    return fail(where + " has neither choices nor usage");
  return true;
}

// ---- reads and their times --------------------------------------------------------------------

bool ask_receive_timestamps(int fd) noexcept {
#if defined(__linux__) && defined(SO_TIMESTAMPING)
  const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  return ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) == 0;
#else
  (void)fd;
  return false;
#endif
}

namespace {

// The software stamp among a received message's control data (the first of the three
// timespecs of SCM_TIMESTAMPING, on CLOCK_REALTIME), in Unix nanoseconds; 0 when there is none.
std::int64_t software_stamp_ns(msghdr& mh) noexcept {
#if defined(__linux__) && defined(SO_TIMESTAMPING)
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c != nullptr; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPING ||
        c->cmsg_len < CMSG_LEN(sizeof(timespec)))
      continue;
    timespec ts{};
    std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }
#else
  (void)mh;
#endif
  return 0;
}

// recvmsg with room for the stamps, retried on EINTR.
long receive_with_stamp(int fd, void* data, std::size_t size, int flags, std::int64_t& stamp_ns,
                        int& error) noexcept {
  iovec io{data, size};
  alignas(cmsghdr) char control[256];
  msghdr mh{};
  mh.msg_iov = &io;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  ssize_t got = 0;
  do got = ::recvmsg(fd, &mh, flags);
  while (got < 0 && errno == EINTR);
  error = got < 0 ? errno : 0;
  stamp_ns = got > 0 ? software_stamp_ns(mh) : 0;
  return static_cast<long>(got);
}

}  // namespace

timed_read read_timed(int fd, void* data, std::size_t size) noexcept {
  timed_read r;
  std::int64_t stamp_ns = 0;
  r.bytes = receive_with_stamp(fd, data, size, MSG_DONTWAIT, stamp_ns, r.error);
  r.read_at = clock::now();
  if (stamp_ns <= 0) return r;
  // The anchor pairs the wall clock with the steady clock at the read (best of two reads);
  // `mono` is in seconds since `read_at`, so it keeps nanoseconds.
  const auto a = tc::read_clock_anchor<clock, std::chrono::system_clock>(r.read_at, 2);
  if (a.wall_ns == 0 ||
      std::chrono::nanoseconds(static_cast<std::int64_t>(a.gap_ns)) > max_anchor_gap)
    return r;
  const auto age = std::chrono::nanoseconds(static_cast<std::int64_t>(a.wall_ns) - stamp_ns);
  const auto anchor_at = r.read_at + std::chrono::duration_cast<clock::duration>(
                                         std::chrono::duration<double>(a.mono));
  r.kernel_at = anchor_at - std::chrono::duration_cast<clock::duration>(age);
  r.uncertainty = std::chrono::duration_cast<clock::duration>(
      std::chrono::nanoseconds(static_cast<std::int64_t>(a.gap_ns / 2 + 1)));
  return r;
}

receive_timestamps_holder::receive_timestamps_holder() noexcept {
#if defined(__linux__) && defined(SO_TIMESTAMPING)
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  sockaddr_in self{};
  self.sin_family = AF_INET;
  self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof self;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&self), sizeof self) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&self), &len) != 0 ||
      !ask_receive_timestamps(fd_))
    return;
  for (int i = 0; i < 50 && !stamping_; ++i) {
    const char ping = 0;
    if (::sendto(fd_, &ping, 1, 0, reinterpret_cast<sockaddr*>(&self), sizeof self) != 1) return;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10) != 1) continue;
    char back = 0;
    std::int64_t stamp_ns = 0;
    int error = 0;
    if (receive_with_stamp(fd_, &back, 1, MSG_DONTWAIT, stamp_ns, error) == 1 && stamp_ns > 0)
      stamping_ = true;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the work item has not run
  }
#endif
}

receive_timestamps_holder::~receive_timestamps_holder() {
  if (fd_ >= 0) ::close(fd_);
}

// ---- one request ----------------------------------------------------------------------------

namespace {

std::string describe(const beast::error_code& ec) { return ec.message(); }

// Timer slack: Linux lets a sleeping thread's wake-up come up to 50 us late by default (to
// batch wake-ups); a client that times sends and reads asks for the least (1 ns).
void least_timer_slack() noexcept {
#if defined(__linux__)
  (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
}

// Thousands of streams need as many descriptors: the soft limit (often 1024) is raised to the
// hard limit, which a process may do by itself. A connection refused a descriptor still fails
// with its reason ("connect: Too many open files").
void most_open_files() noexcept {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &r);
  }
}

// With keep-alive, the open connections of one I/O thread that no request uses now. Used only
// on that thread; it never holds more connections than were in flight at once.
struct connection_pool {
  std::vector<tcp::socket> idle;
};

// One streamed request on one connection (its own, or with keep-alive one from the thread's
// pool), on one io_context run by one thread (so its handlers never run concurrently). Reports
// its end through `done`.
class session : public std::enable_shared_from_this<session> {
 public:
  session(net::io_context& ioc, const tcp::endpoint& ep, const target& tgt, const timeouts& lim,
          receive_time rx, request_outcome& out, std::string body, connection_pool* pool,
          std::function<void()> done)
      : ioc_(ioc),
        deadline_(ioc),
        idle_(ioc),
        ep_(ep),
        lim_(lim),
        rx_(rx),
        out_(out),
        sse_(tgt.endpoint, out.tl),
        pool_(pool),
        done_(std::move(done)) {
    req_ = "POST " + tgt.path() + " HTTP/1.1\r\nHost: " + tgt.host + ":" + tgt.port +
           "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n" +
           (pool ? "Connection: keep-alive" : "Connection: close") +
           "\r\nX-Request-Id: " + out.request_id + "\r\n";
    if (!tgt.api_key.empty()) req_ += "Authorization: Bearer " + tgt.api_key + "\r\n";
    req_ += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    parser_.eager(true);
    parser_.body_limit((std::numeric_limits<std::uint64_t>::max)());
  }

  void start() {
    last_t_ = clock::now();
    (void)out_.tl.send(last_t_);
    if (lim_.request.count() > 0) {
      deadline_.expires_after(lim_.request);
      deadline_.async_wait([self = shared_from_this()](const beast::error_code& ec) {
        if (ec || self->ended_) return;
        self->request_expired_ = true;
        beast::error_code ignored;
        self->stream_->socket().close(ignored);  // the pending operation ends with an error
      });
    }
    if (pool_ && !pool_->idle.empty()) {  // keep-alive: an open connection, no handshake
      stream_.emplace(std::move(pool_->idle.back()));
      pool_->idle.pop_back();
      reused_ = true;
      return on_connect({});
    }
    connect();
  }

 private:
  void connect() {
    stream_.emplace(ioc_);
    arm(lim_.connect);
    stream_->async_connect(
        ep_, [self = shared_from_this()](const beast::error_code& ec) { self->on_connect(ec); });
  }

  void arm(clock::duration d) {
    if (d.count() > 0)
      stream_->expires_after(d);
    else
      stream_->expires_never();
  }

  // A kept-alive connection the server closed while it was idle fails before any byte of the
  // answer: the request is sent again once, on a new connection (as HTTP clients retry an
  // idempotent send on a stale pooled connection).
  bool retry_on_new_connection() {
    if (!reused_ || read_any_ || ended_ || request_expired_) return false;
    reused_ = false;
    beast::error_code ignored;
    stream_->socket().close(ignored);
    connect();
    return true;
  }

  void on_connect(const beast::error_code& ec) {
    if (ec) return io_failure(ec, "connect");
    // A kernel that refuses the stamps leaves the reads timed by the read (each one counted).
    if (!reused_ && rx_ == receive_time::kernel)
      (void)ask_receive_timestamps(stream_->socket().native_handle());
    arm(lim_.idle);
    net::async_write(*stream_, net::buffer(req_),
                     [self = shared_from_this()](const beast::error_code& e, std::size_t) {
                       if (e) {
                         if (self->retry_on_new_connection()) return;
                         return self->io_failure(e, "write");
                       }
                       // From here the idle limit is the session's own timer: the reads wait
                       // on the socket, outside the tcp_stream's operations.
                       self->stream_->expires_never();
                       self->last_io_ = clock::now();
                       self->watch_idle();
                       self->read();
                     });
  }

  // The idle limit: one timer a session, due at the last read (or the write) + the limit. It
  // is not moved on each read; when it fires early it waits again for what is left.
  void watch_idle() {
    if (lim_.idle.count() <= 0) return;
    idle_.expires_at(last_io_ + lim_.idle);
    idle_.async_wait([self = shared_from_this()](const beast::error_code& ec) {
      if (ec || self->ended_) return;
      if (clock::now() < self->last_io_ + self->lim_.idle) return self->watch_idle();
      self->idle_expired_ = true;
      beast::error_code ignored;
      self->stream_->socket().close(ignored);  // the pending wait ends with an error
    });
  }

  void read() {
    stream_->socket().async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this()](const beast::error_code& ec) { self->on_readable(ec); });
  }

  // The socket has bytes: one read, timed at once, then the parsing is posted behind the
  // handlers that are already due. When one wake-up of the event loop finds many connections
  // ready, each is read and timed before any is parsed, so no read's time includes the
  // parsing of the others.
  void on_readable(const beast::error_code& wait_ec) {
    if (ended_) return;
    if (wait_ec) return on_read_at(wait_ec, 0, clock::now());
    const auto space = buf_.prepare(16 * 1024);
    const timed_read r = read_timed(stream_->socket().native_handle(), space.data(), space.size());
    if (r.bytes < 0 && (r.error == EAGAIN || r.error == EWOULDBLOCK)) return read();  // no bytes
    beast::error_code ec;
    std::size_t n = 0;
    if (r.bytes < 0)
      ec.assign(r.error, net::error::get_system_category());
    else if (r.bytes == 0)
      ec = net::error::eof;
    else
      n = static_cast<std::size_t>(r.bytes);
    clock::time_point t = r.read_at;
    if (n > 0) {
      ++out_.reads;
      if (r.kernel_at && rx_ == receive_time::kernel) {
        // Never after the read, nor before the stream's previous time (a step of the wall
        // clock between the stamp and the read cannot reorder a stream).
        t = std::clamp(*r.kernel_at, last_t_, r.read_at);
        ++out_.kernel_timed_reads;
        out_.longest_read_wait = std::max(out_.longest_read_wait, r.read_at - t);
      }
      last_t_ = t;
      last_io_ = r.read_at;
    }
    net::post(ioc_, [self = shared_from_this(), ec, n, t] { self->on_read_at(ec, n, t); });
  }

  void on_read_at(const beast::error_code& ec, std::size_t n, clock::time_point t) {
    if (ended_) return;
    buf_.commit(n);
    if (n > 0) read_any_ = true;
    if (n > 0 && !parse(t)) return;
    if (ended_) return;
    if (ec && retry_on_new_connection()) return;
    if (ec) {
      if (ec == net::error::eof || ec == http::error::end_of_stream) {
        // A close-delimited body ends here; anything else ended early (Beast's put_eof needs
        // a response begun: a server that closes before its first byte is a failure too).
        if (parser_.got_some()) {
          beast::error_code pe;
          parser_.put_eof(pe);
          if (!pe && parser_.is_done()) return end_of_body(t);
        }
        return fail(t, tc::finish_reason::error,
                    sse_.events() ? "the connection closed before [DONE]"
                                  : "the connection closed before the response ended");
      }
      return io_failure(ec, "read");
    }
    read();
  }

  // Feeds what was read into the HTTP parser and the body into the SSE decoder. False once the
  // request ended.
  bool parse(clock::time_point t) {
    for (;;) {
      beast::error_code pe;
      const std::size_t used = parser_.put(buf_.data(), pe);
      buf_.consume(used);
      if (pe == http::error::need_more) pe = {};
      if (pe) {
        fail(t, tc::finish_reason::error, "HTTP: " + describe(pe));
        return false;
      }
      if (parser_.is_header_done()) {
        std::string& body = parser_.get().body();
        const unsigned status = parser_.get().result_int();
        if (status != 200) {
          if (body.size() > 4096) body.resize(4096);
          if (parser_.is_done() || body.size() >= 4096) {
            fail(t, tc::finish_reason::error,
                 "HTTP " + std::to_string(status) + ": " + body.substr(0, 300));
            return false;
          }
        } else {
          const auto type = parser_.get()[http::field::content_type];
          if (type.substr(0, 17) != "text/event-stream") {
            fail(t, tc::finish_reason::error,
                 "HTTP 200 with Content-Type '" + std::string(type.substr(0, 80)) +
                     "', not text/event-stream (the server did not stream)");
            return false;
          }
          if (!body.empty()) {
            const bool ok = sse_.feed(body, t);
            body.clear();
            if (!ok) {
              fail(t, tc::finish_reason::error, sse_.error());
              return false;
            }
          }
          if (parser_.is_done()) {
            end_of_body(t);
            return false;
          }
        }
      }
      if (used == 0 || buf_.size() == 0) return true;
    }
  }

  void end_of_body(clock::time_point t) {
    if (sse_.done()) {
      // Keep-alive: the connection goes back to the pool when the answer ended cleanly, the
      // server keeps it open and no byte of anything else was read.
      keep_ = pool_ && parser_.is_done() && parser_.get().keep_alive() && buf_.size() == 0;
      return end(std::string());
    }
    fail(t, tc::finish_reason::error, "the response ended before [DONE]");
  }

  void io_failure(const beast::error_code& ec, const char* what) {
    const clock::time_point t = clock::now();
    if (request_expired_)
      return fail(t, tc::finish_reason::timed_out,
                  "request timeout (" + seconds(lim_.request) + ") during " + what);
    if (idle_expired_)
      return fail(t, tc::finish_reason::timed_out,
                  "idle timeout (no bytes for " + seconds(lim_.idle) + ") during " + what);
    if (ec == beast::error::timeout) {
      const bool connecting = std::string_view(what) == "connect";
      return fail(t, tc::finish_reason::timed_out,
                  connecting
                      ? "connect timeout (" + seconds(lim_.connect) + ")"
                      : "idle timeout (no bytes for " + seconds(lim_.idle) + ") during " + what);
    }
    fail(t, tc::finish_reason::error, std::string(what) + ": " + describe(ec));
  }

  static std::string seconds(clock::duration d) {
    std::string s = std::to_string(std::chrono::duration<double>(d).count());
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s + " s";
  }

  void fail(clock::time_point t, tc::finish_reason why, std::string reason) {
    if (ended_) return;
    if (!out_.tl.finished()) (void)out_.tl.finish(t, why);
    end(std::move(reason));
  }

  void end(std::string reason) {
    if (ended_) return;
    ended_ = true;
    out_.error = std::move(reason);
    beast::error_code ignored;
    deadline_.cancel();
    idle_.cancel();
    if (stream_) {
      if (keep_) {
        pool_->idle.push_back(stream_->release_socket());
      } else {
        stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_->socket().close(ignored);
      }
    }
    done_();
  }

  net::io_context& ioc_;
  std::optional<beast::tcp_stream> stream_;  // set by connect() or taken from the pool
  net::steady_timer deadline_;
  net::steady_timer idle_;
  tcp::endpoint ep_;
  timeouts lim_;
  receive_time rx_;
  request_outcome& out_;
  sse_decoder sse_;
  connection_pool* pool_;  // null without keep-alive
  std::function<void()> done_;
  std::string req_;
  beast::flat_buffer buf_;
  http::response_parser<http::string_body> parser_;
  clock::time_point last_t_;   // the stream's latest time (its send, then its reads)
  clock::time_point last_io_;  // the latest read (or the write): the idle limit counts from it
  bool ended_ = false, request_expired_ = false, idle_expired_ = false;
  bool reused_ = false, read_any_ = false, keep_ = false;
};

}  // namespace

// ---- the run --------------------------------------------------------------------------------

load_result run_load(const load_options& opt) {
  if (opt.threads == 0) throw std::invalid_argument("--threads must be > 0");
  check_id_prefix(opt.id_prefix);
  most_open_files();
  if (!(opt.warmup_s >= 0)) throw std::invalid_argument("--warmup must be >= 0");
  std::optional<receive_timestamps_holder> stamps;  // the kernel's stamps on for the whole run
  if (opt.rx_time == receive_time::kernel) stamps.emplace();
  batching::workload work = opt.work;
  if (work.memory_limit == 0) work.memory_limit = batching::default_memory_limit;
  batching::clock_type virtual_clock;  // the load generator's schedule, in time since `zero`
  batching::load_generator gen(work, virtual_clock);

  // Resolve once: every request connects to the same address.
  tcp::endpoint ep;
  {
    net::io_context ioc;
    tcp::resolver res(ioc);
    beast::error_code ec;
    const auto r = res.resolve(opt.tgt.host, opt.tgt.port, ec);
    if (ec || r.empty())
      throw std::runtime_error("cannot resolve " + opt.tgt.host + ":" + opt.tgt.port + ": " +
                               ec.message());
    ep = *r.begin();
  }

  std::vector<std::unique_ptr<net::io_context>> iocs;
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards;
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < opt.threads; ++i) {
    iocs.push_back(std::make_unique<net::io_context>(1));
    guards.push_back(net::make_work_guard(*iocs.back()));
  }
  // One pool per I/O thread, used only there; destroyed (closing its sockets) after the
  // threads are joined and before their io_contexts.
  std::vector<connection_pool> pools(opt.keep_alive ? opt.threads : 0);
  for (unsigned i = 0; i < opt.threads; ++i)
    threads.emplace_back([&, i] {
      least_timer_slack();
      if (!opt.busy_poll) {
        iocs[i]->run();
        return;
      }
      // Busy polling: the loop never sleeps in the kernel, so a read completes without a
      // wake-up (a core per I/O thread is spent on it).
      while (!iocs[i]->stopped()) iocs[i]->poll();
    });
  least_timer_slack();  // this thread sleeps until each intended send

  load_result result;
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::size_t> ended;  // indices in result.requests of the requests that ended
  std::uint64_t in_flight = 0, sent = 0, finished = 0, failed = 0;
  std::size_t next_thread = 0;

  result.zero = clock::now() + std::chrono::milliseconds(20);  // a lead so t = 0 is not late
  const auto at = [&](batching::time_point v) {
    return result.zero + std::chrono::duration_cast<clock::duration>(v.time_since_epoch());
  };
  const auto virtual_now = [&](clock::time_point t) {
    return batching::time_point(std::chrono::duration_cast<batching::duration>(t - result.zero));
  };
  auto next_progress = result.zero;
  std::vector<batching::request*> released;
  for (;;) {
    std::vector<std::size_t> now_ended;
    {
      std::lock_guard<std::mutex> lock(m);
      now_ended.swap(ended);
    }
    for (const std::size_t i : now_ended) {
      --in_flight;
      ++finished;
      const request_outcome& o = result.requests[i];
      if (!o.error.empty()) ++failed;
      gen.on_finish(gen.requests()[o.id], virtual_now(*o.tl.finish_time()));
    }
    const auto now = clock::now();
    if (opt.on_progress && now >= next_progress) {
      opt.on_progress({std::chrono::duration<double>(now - result.zero).count(), sent, finished,
                       failed, in_flight});
      next_progress = now + opt.progress_every;
    }
    const auto next = gen.next_arrival();
    const bool more = next && *next < gen.end();
    if (!more && in_flight == 0) break;
    const auto wake = more ? std::min(at(*next), next_progress) : next_progress;
    if (!more || now < at(*next)) {
      std::unique_lock<std::mutex> lock(m);
      if (opt.on_progress)
        cv.wait_until(lock, wake, [&] { return !ended.empty(); });
      else if (more)
        cv.wait_until(lock, at(*next), [&] { return !ended.empty(); });
      else
        cv.wait(lock, [&] { return !ended.empty(); });
      continue;
    }
    released.clear();
    gen.release(virtual_now(now), released);
    for (batching::request* r : released) {
      if (r->arrival >= gen.end()) continue;
      request_outcome& o = result.requests.emplace_back();
      o.id = r->id;
      o.request_id = opt.id_prefix + std::to_string(opt.first_request_id + r->id);
      o.measured =
          std::chrono::duration<double>(r->arrival.time_since_epoch()).count() >= opt.warmup_s;
      (void)o.tl.arrive(at(r->arrival));
      ++in_flight;
      ++sent;
      const std::size_t index = result.requests.size() - 1;
      auto s = std::make_shared<session>(
          *iocs[next_thread], ep, opt.tgt, opt.limits, opt.rx_time, o,
          request_body(opt.tgt, r->prompt_tokens, r->output_tokens),
          pools.empty() ? nullptr : &pools[next_thread], [&m, &cv, &ended, index] {
            {
              std::lock_guard<std::mutex> lock(m);
              ended.push_back(index);
            }
            cv.notify_one();
          });
      net::post(*iocs[next_thread], [s] { s->start(); });
      next_thread = (next_thread + 1) % iocs.size();
    }
  }
  for (auto& g : guards) g.reset();
  for (auto& t : threads) t.join();
  if (opt.on_progress)
    opt.on_progress({std::chrono::duration<double>(clock::now() - result.zero).count(), sent,
                     finished, failed, in_flight});
  return result;
}

std::vector<tc::trace_record> to_trace(const load_result& r) {
  std::vector<tc::trace_record> out;
  for (const request_outcome& o : r.requests)
    if (o.measured) out.push_back(tc::to_trace_record(o.tl, r.zero, o.request_id, o.error));
  tc::set_clock_anchor(out, tc::read_clock_anchor<clock>(r.zero));  // docs/library/trace-format.md
  return out;
}

}  // namespace tokchron_bench
