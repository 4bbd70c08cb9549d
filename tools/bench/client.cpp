// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#include "client.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

#include <cctype>
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

#include "tls.hpp"
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
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    t.tls = true;
    rest = url.substr(8);
  } else {
    bad("must start with http:// or https://");
  }
  const auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) t.prefix = rest.substr(slash);
  while (!t.prefix.empty() && t.prefix.back() == '/') t.prefix.pop_back();
  if (t.prefix.size() >= 3 && t.prefix.compare(t.prefix.size() - 3, 3, "/v1") == 0)
    t.prefix.resize(t.prefix.size() - 3);  // http://host:8000/v1 names the same server
  if (authority.empty()) bad("no host");
  if (authority.find('@') != std::string::npos)
    bad("user information in the URL is not sent; give --api-key or --header 'Authorization: ...'");
  // An IPv6 address is bracketed ([::1]:8000): its colons are not the port's.
  const auto close = authority[0] == '[' ? authority.find(']') : std::string::npos;
  if (authority[0] == '[' && close == std::string::npos) bad("an IPv6 address without its ']'");
  const auto colon = authority.find(':', close == std::string::npos ? 0 : close);
  if (colon != std::string::npos) {
    t.port = authority.substr(colon + 1);
    authority.resize(colon);
    if (t.port.empty() || t.port.size() > 5 ||
        !std::all_of(t.port.begin(), t.port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoul(t.port) == 0 || std::stoul(t.port) > 65535)
      bad("the port must be a number in [1, 65535]");
  } else {
    t.port = t.tls ? "443" : "80";
  }
  if (close != std::string::npos) authority = authority.substr(1, close - 1);
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

std::pair<std::string, std::string> parse_header(const std::string& spec) {
  const auto bad = [&](const std::string& why) {
    throw std::invalid_argument("--header '" + quote_bytes(spec, 120) + "': " + why);
  };
  const auto colon = spec.find(':');
  if (colon == std::string::npos) bad("expected 'Name: value'");
  const std::string name = spec.substr(0, colon);
  if (name.empty()) bad("no name before the ':'");
  // tchar (RFC 9110 section 5.6.2): letters, digits and !#$%&'*+-.^_`|~
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
      bad("the name holds '" + quote_bytes(std::string(1, c), 8) +
          "', which an HTTP field name cannot (letters, digits and !#$%&'*+-.^_`|~)");
  std::string value = spec.substr(colon + 1);
  const auto ows = [](char c) { return c == ' ' || c == '\t'; };
  while (!value.empty() && ows(value.front())) value.erase(value.begin());
  while (!value.empty() && ows(value.back())) value.pop_back();
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f)
      bad("the value holds a control character (" + quote_bytes(std::string(1, c), 8) +
          "): a field value may not (RFC 9110 section 5.5)");
  }
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* const owned[] = {"host",       "content-length",  "transfer-encoding",
                                      "connection", "keep-alive",      "te",
                                      "trailer",    "upgrade",         "proxy-connection",
                                      "expect",     "content-type",    "content-encoding",
                                      "accept",     "accept-encoding", "x-request-id"};
  for (const char* o : owned)
    if (lower == o)
      bad(std::string("the client sets ") + name +
          " itself (it frames the request, keeps or closes the connection, sends JSON and "
          "reads an uncompressed event stream, and names each request; --id-prefix sets the "
          "start of X-Request-Id)");
  return {name, value};
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

namespace {

std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Two alphabets of 16 words each, every word one token (with its leading space) in common
// tokenizers; the filler after a key's 16 words is alphabet 0's first word.
constexpr const char* alphabets[2][16] = {{"the", "of", "and", "to", "in", "is", "it", "that",
                                           "for", "on", "was", "with", "as", "at", "by", "be"},
                                          {"a", "you", "he", "we", "they", "this", "are", "have",
                                           "not", "but", "or", "from", "an", "his", "all", "one"}};

}  // namespace

void append_words(std::string& out, std::uint64_t key, unsigned alphabet, std::uint32_t n,
                  bool space_first) {
  const std::uint64_t bits = mix(key);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (i > 0 || space_first) out += ' ';
    out += i < 16 ? alphabets[alphabet & 1][(bits >> (60 - 4 * i)) & 15] : alphabets[0][0];
  }
}

std::uint64_t block_key(std::uint64_t seed, std::uint64_t id) noexcept { return mix(seed) ^ id; }
std::uint64_t own_key(std::uint64_t seed, std::uint64_t id) noexcept {
  return mix(seed ^ 0x5bd1e9955bd1e995ULL) ^ id;
}

std::uint64_t prompt_seed(std::uint64_t seed, std::string_view id_prefix) noexcept {
  for (const char c : id_prefix) seed = mix(seed ^ static_cast<unsigned char>(c));
  return seed;
}

std::string synthetic_prompt(std::uint64_t seed, std::uint64_t number,
                             std::uint32_t prompt_tokens) {
  std::string prompt;
  prompt.reserve(std::size_t{5} * prompt_tokens);
  append_words(prompt, own_key(seed, number), 1, prompt_tokens, false);
  return prompt;
}

namespace {

// The body of a streamed request for `model` with `conversation` as its `field` (`messages`
// or `prompt`).
std::string body_of(const std::string& model, const char* field,
                    nlohmann::ordered_json conversation, std::uint32_t max_tokens) {
  nlohmann::ordered_json j;
  j["model"] = model;
  j[field] = std::move(conversation);
  j["max_tokens"] = max_tokens;
  j["ignore_eos"] = true;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  return j.dump();
}

}  // namespace

std::string chat_request_body(const target& t, nlohmann::ordered_json messages,
                              std::uint32_t max_tokens) {
  return body_of(t.model, "messages", std::move(messages), max_tokens);
}

std::string request_body(const target& t, std::string prompt, std::uint32_t max_tokens) {
  if (t.endpoint == endpoint_kind::chat)
    return chat_request_body(t,
                             nlohmann::ordered_json::array({nlohmann::ordered_json{
                                 {"role", "user"}, {"content", std::move(prompt)}}}),
                             max_tokens);
  return body_of(t.model, "prompt", std::move(prompt), max_tokens);
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

// The most 1xx interim responses a request skips before its final response: more is a server
// that never answers, ended here rather than by the timeouts alone.
constexpr unsigned max_interim_responses = 100;

}  // namespace

bool is_event_stream(std::string_view content_type) noexcept {
  // media-type = type "/" subtype parameters (RFC 9110 section 8.3.1): the type and subtype
  // are case-insensitive, and whitespace may come before the ";" of a parameter.
  std::string_view type = content_type.substr(0, content_type.find(';'));
  const auto ows = [](char c) { return c == ' ' || c == '\t'; };
  while (!type.empty() && ows(type.front())) type.remove_prefix(1);
  while (!type.empty() && ows(type.back())) type.remove_suffix(1);
  constexpr std::string_view want = "text/event-stream";
  if (type.size() != want.size()) return false;
  for (std::size_t i = 0; i < want.size(); ++i) {
    char c = type[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != want[i]) return false;
  }
  return true;
}

namespace {

// A duration as people read it in a reason: "0.2 s", "30 s", "2.01 s" (at most millisecond
// digits, no trailing zeros).
std::string seconds_text(clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", std::chrono::duration<double>(d).count());
  std::string s = buf;
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s + " s";
}

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

// One read takes at most this many bytes. The HTTP parser consumes what it can of each read
// at once (a body as it arrives); what it cannot yet (a header or a chunk-size line not ended)
// waits in the session's buffer, refused past `max_unparsed` (Beast 1.74 bounds a response's
// header at 8 KiB, but not a chunk-size line with its extensions).
constexpr std::size_t read_size = 16 * 1024;
constexpr std::size_t max_unparsed = 64 * 1024;

// With keep-alive, the open connections of one I/O thread that no request uses now (plain, or
// TLS streams with their session). Used only on that thread; it never holds more connections
// than were in flight at once.
struct connection_pool {
  std::vector<tcp::socket> idle;
  std::vector<std::unique_ptr<tls_stream>> idle_tls;
};

// The connection one request runs on: a new one, or with keep-alive an open one from its I/O
// thread's pool, handed back to the pool at the end when the answer left it clean. It also
// decides the one retry: a kept-alive connection the server closed while it was idle fails
// before any byte of the answer, and the request is then sent again once, on a new connection
// (as HTTP clients retry an idempotent send on a stale pooled connection).
//
// With TLS (`tls` not null) the TCP connection becomes a `tls_stream` once connected (`start_tls`);
// its reads go through `timed_socket`, so each decrypted byte has the time of the socket read
// that completed its record.
class request_connection {
 public:
  request_connection(net::io_context& ioc, const tcp::endpoint& ep, connection_pool* pool,
                     tls_client* tls)
      : ioc_(ioc), ep_(ep), pool_(pool), tls_client_(tls) {}

  // Takes an open connection from the pool; false when there is none (or no pool).
  bool take_pooled() {
    if (!pool_) return false;
    if (tls_client_) {
      if (pool_->idle_tls.empty()) return false;
      tls_ = std::move(pool_->idle_tls.back());
      pool_->idle_tls.pop_back();
    } else {
      if (pool_->idle.empty()) return false;
      stream_.emplace(std::move(pool_->idle.back()));
      pool_->idle.pop_back();
    }
    reused_ = true;
    return true;
  }

  [[nodiscard]] bool is_tls() const { return tls_client_ != nullptr; }
  // The connected TCP socket becomes a TLS stream for `host`, its reads timed by the kernel
  // (`kernel_time`) or the read. False when OpenSSL refused the host name or the session.
  bool start_tls(const std::string& host, bool kernel_time) {
    tls_ = std::make_unique<tls_stream>(timed_socket(stream_->release_socket(), kernel_time),
                                        tls_client_->context());
    stream_.reset();
    return tls_client_->prepare(tls_->native_handle(), host);
  }
  [[nodiscard]] tls_stream& tls() { return *tls_; }

  // Opens a new connection (within `limit`, zero: none); `handler(ec)` when done.
  template <class Handler>
  void connect(clock::duration limit, Handler&& handler) {
    tls_.reset();
    stream_.emplace(ioc_);
    arm(limit);
    stream_->async_connect(ep_, std::forward<Handler>(handler));
  }

  // Bounds the stream's next operations (zero: no limit).
  void arm(clock::duration d) {
    if (d.count() > 0)
      stream_->expires_after(d);
    else
      stream_->expires_never();
  }

  [[nodiscard]] beast::tcp_stream& stream() { return *stream_; }
  [[nodiscard]] tcp::socket& socket() {
    return tls_ ? tls_->next_layer().socket() : stream_->socket();
  }
  [[nodiscard]] int native_handle() { return socket().native_handle(); }
  // Whether the connection was taken from the pool (its socket options are already set).
  [[nodiscard]] bool reused() const { return reused_; }
  // A byte of the answer arrived: from now on a failure is the server's, never a stale
  // connection's.
  void answered() { answered_ = true; }

  // After a failure of the write or the read: true when it is the stale pooled connection's
  // (reused and nothing of the answer read), and not yet retried. The connection is then
  // closed; the caller sends the request again on a new one.
  bool retry_on_new_connection() {
    if (!reused_ || answered_) return false;
    reused_ = false;
    abort();
    return true;
  }

  // Closes the socket: its pending operation ends with an error.
  void abort() {
    if (!stream_ && !tls_) return;
    beast::error_code ignored;
    socket().close(ignored);
  }

  // The request ended: back to the pool when `keep` (and there is one), else shut and closed
  // (a TLS connection without close_notify: the client is done with it either way).
  void release(bool keep) {
    if (!stream_ && !tls_) return;
    if (keep && pool_) {
      if (tls_)
        pool_->idle_tls.push_back(std::move(tls_));
      else
        pool_->idle.push_back(stream_->release_socket());
    } else {
      beast::error_code ignored;
      socket().shutdown(tcp::socket::shutdown_both, ignored);
      socket().close(ignored);
    }
  }

  [[nodiscard]] bool pooled() const { return pool_ != nullptr; }

 private:
  net::io_context& ioc_;
  tcp::endpoint ep_;
  connection_pool* pool_;                    // null without keep-alive
  tls_client* tls_client_;                   // null for plain HTTP
  std::optional<beast::tcp_stream> stream_;  // the TCP stream until TLS takes its socket
  std::unique_ptr<tls_stream> tls_;
  bool reused_ = false, answered_ = false;
};

// One streamed request on one connection (`request_connection`), on one io_context run by one
// thread (so its handlers never run concurrently). It moves through its phases only by
// `enter`; a handler that finds the session in another phase than the one it was started in
// (a timer that fired as the request ended) does nothing. Reports its end through `done`.
class session : public std::enable_shared_from_this<session> {
 public:
  session(net::io_context& ioc, const tcp::endpoint& ep, const target& tgt, const timeouts& lim,
          receive_time rx, request_outcome& out, std::string body,
          const std::vector<std::pair<std::string, std::string>>& headers, std::size_t keep_reply,
          connection_pool* pool, tls_client* tls, std::atomic<clock::rep>* progress,
          std::function<void()> done)
      : ioc_(ioc),
        conn_(ioc, ep, pool, tls),
        host_(tgt.host),
        deadline_(ioc),
        idle_(ioc),
        lim_(lim),
        rx_(rx),
        out_(out),
        sse_(tgt.endpoint, out.tl),
        done_(std::move(done)),
        progress_(progress) {
    // Host: an IPv6 address in brackets (RFC 9110 section 7.2).
    const std::string host =
        tgt.host.find(':') != std::string::npos ? "[" + tgt.host + "]" : tgt.host;
    req_ = "POST " + tgt.path() + " HTTP/1.1\r\nHost: " + host + ":" + tgt.port +
           "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n" +
           (pool ? "Connection: keep-alive" : "Connection: close") +
           "\r\nX-Request-Id: " + out.request_id + "\r\n";
    if (!tgt.api_key.empty()) req_ += "Authorization: Bearer " + tgt.api_key + "\r\n";
    for (const auto& [name, value] : tgt.headers) req_ += name + ": " + value + "\r\n";
    for (const auto& [name, value] : headers) req_ += name + ": " + value + "\r\n";
    if (keep_reply > 0) sse_.keep_text(&out.reply, keep_reply, &out.reply_cut);
    req_ += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    new_parser();
  }

  void start() {
    last_t_ = clock::now();
    (void)out_.tl.send(last_t_);
    if (lim_.request.count() > 0) {
      deadline_.expires_after(lim_.request);
      deadline_.async_wait([self = shared_from_this()](const beast::error_code& ec) {
        if (ec || self->phase_ == phase::ended) return;
        self->expired_ = expiry::request;
        self->conn_.abort();  // the pending operation ends with an error
      });
    }
    // Keep-alive: an open connection, no handshake.
    enter(conn_.take_pooled() ? phase::writing : phase::connecting);
  }

 private:
  // Where the request stands. Each phase is entered by `enter`, which starts its operation.
  enum class phase : std::uint8_t {
    created,      // not started
    connecting,   // opening a new connection
    handshaking,  // TLS: the handshake on the new connection
    writing,      // sending the request (on a new or a pooled connection)
    reading,      // reading the answer; the idle limit is the session's own timer
    ended,        // finished (its outcome recorded); later handlers do nothing
  };
  // Why the session closed its own connection: the pending operation's error is then a timeout.
  enum class expiry : std::uint8_t { none, request, idle, handshake };

  // The one transition function: every phase change goes through it, and each phase's
  // operation starts here. `ended` needs `end` (which records the outcome first).
  void enter(phase next) {
    phase_ = next;
    switch (next) {
      case phase::created: return;
      case phase::connecting:
        phase_start_ = clock::now();
        return conn_.connect(
            lim_.connect, [self = shared_from_this()](const beast::error_code& ec) {
              if (self->phase_ != phase::connecting) return;
              if (ec) return self->io_failure(ec, "connect");
              self->out_.new_connection = true;
              self->out_.connect_time = clock::now() - self->phase_start_;
              self->enter(self->conn_.is_tls() ? phase::handshaking : phase::writing);
            });
      case phase::handshaking: {
        // The stamps are asked for before the handshake's first read.
        if (rx_ == receive_time::kernel) (void)ask_receive_timestamps(conn_.native_handle());
        if (!conn_.start_tls(host_, rx_ == receive_time::kernel))
          return fail(clock::now(), tc::finish_reason::error, failure_kind::tls,
                      "TLS: OpenSSL refused the host name '" + quote_bytes(host_, 80) + "'");
        conn_.tls().next_layer().floor(last_t_);
        phase_start_ = last_io_ = clock::now();
        watch(phase::handshaking, lim_.connect);
        return conn_.tls().async_handshake(
            net::ssl::stream_base::client,
            [self = shared_from_this()](const beast::error_code& ec) {
              if (self->phase_ != phase::handshaking) return;
              if (ec) return self->tls_failure(ec);
              self->out_.handshake_time = clock::now() - self->phase_start_;
              self->out_.tls_resumed = SSL_session_reused(self->conn_.tls().native_handle()) == 1;
              self->enter(phase::writing);
            });
      }
      case phase::writing: {
        const auto written = [self = shared_from_this()](const beast::error_code& ec, std::size_t) {
          if (self->phase_ != phase::writing) return;
          if (ec) {
            if (self->retry(ec)) return;
            return self->io_failure(ec, "write");
          }
          self->enter(phase::reading);
        };
        if (conn_.is_tls()) {
          last_io_ = clock::now();
          watch(phase::writing, lim_.idle);
          return net::async_write(conn_.tls(), net::buffer(req_), written);
        }
        // A kernel that refuses the stamps leaves the reads timed by the read (each one
        // counted). A pooled connection asked when it was opened.
        if (!conn_.reused() && rx_ == receive_time::kernel)
          (void)ask_receive_timestamps(conn_.native_handle());
        conn_.arm(lim_.idle);
        return net::async_write(conn_.stream(), net::buffer(req_), written);
      }
      case phase::reading:
        // From here the idle limit is the session's own timer: the reads wait on the socket,
        // outside the tcp_stream's operations.
        if (conn_.is_tls())
          tls_reads_ = conn_.tls().next_layer().last().count;
        else
          conn_.stream().expires_never();
        last_io_ = clock::now();
        watch_idle();
        return read();
      case phase::ended:
        deadline_.cancel();
        idle_.cancel();
        conn_.release(keep_);
        return done_();
    }
  }

  // A failure of the write or the read on a stale pooled connection: the request is sent
  // again on a new connection (once; never after a timeout closed the connection).
  bool retry(const beast::error_code& ec) {
    if (!ec || expired_ != expiry::none || !conn_.retry_on_new_connection()) return false;
    enter(phase::connecting);
    return true;
  }

  // The idle limit: one timer a session, due at the last read (or the write) + the limit. It
  // is not moved on each read; when it fires early it waits again for what is left. With TLS
  // it bounds the handshake (by the connect limit) and the write too.
  void watch(phase p, clock::duration limit) {
    if (limit.count() <= 0) return;
    idle_.expires_at(last_io_ + limit);
    idle_.async_wait([self = shared_from_this(), p, limit](const beast::error_code& ec) {
      if (ec || self->phase_ != p) return;
      if (clock::now() < self->last_io_ + limit) return self->watch(p, limit);
      self->expired_ = p == phase::handshaking ? expiry::handshake : expiry::idle;
      self->conn_.abort();  // the pending wait ends with an error
    });
  }
  void watch_idle() { watch(phase::reading, lim_.idle); }

  void read() {
    if (conn_.is_tls()) return read_tls();
    conn_.socket().async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this()](const beast::error_code& ec) { self->on_readable(ec); });
  }

  // A TLS read: the stream decrypts what the timed socket read; the bytes get the time of the
  // socket read that completed their record (held between the stream's previous time and the
  // read's time, as a plain read's stamp).
  void read_tls() {
    if (unparsed_overflow()) return;
    conn_.tls().async_read_some(
        buf_.prepare(read_size), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
          if (self->phase_ != phase::reading) return;
          const timed_socket::read_info& li = self->conn_.tls().next_layer().last();
          clock::time_point t = clock::now();
          if (n > 0) {
            if (li.count > self->tls_reads_) {
              const auto more = static_cast<std::uint32_t>(li.count - self->tls_reads_);
              self->out_.reads += more;
              if (li.stamped) {
                self->out_.kernel_timed_reads += more;
                self->out_.longest_read_wait =
                    std::max(self->out_.longest_read_wait, li.read_at - li.time);
              }
              self->tls_reads_ = li.count;
            }
            t = std::max(li.time, self->last_t_);
            self->last_t_ = t;
            self->last_io_ = li.read_at;
          }
          // A server that closes without TLS's close_notify ends the stream as a close does.
          if (ec == net::ssl::error::stream_truncated) ec = net::error::eof;
          net::post(self->ioc_, [self, ec, n, t] { self->on_read_at(ec, n, t); });
        });
  }

  // Fails the request when the buffer holds `max_unparsed` bytes the parser could not use.
  bool unparsed_overflow() {
    if (buf_.size() < max_unparsed) return false;
    fail(last_t_, tc::finish_reason::error, failure_kind::http_framing,
         "HTTP: " + std::to_string(buf_.size()) +
             " bytes of the response do not parse (a header or chunk-size line that does not "
             "end)");
    return true;
  }

  // A failed handshake: its timeout, or TLS's reason (a certificate refused names why).
  void tls_failure(const beast::error_code& ec) {
    if (expired_ == expiry::handshake)
      return fail(clock::now(), tc::finish_reason::timed_out, failure_kind::timeout,
                  "TLS handshake timeout (" + seconds(lim_.connect) + ")");
    if (expired_ != expiry::none) return io_failure(ec, "TLS handshake");
    std::string why = tls_client::handshake_error(conn_.tls().native_handle(), ec);
    if (why.find("certificate verify failed") != std::string::npos)
      why += " (trust its issuer with --ca-cert FILE, or give --tls-verify off)";
    fail(clock::now(), tc::finish_reason::error, failure_kind::tls,
         "TLS handshake: " + quote_bytes(why, 300));
  }

  // The socket has bytes: one read, timed at once, then the parsing is posted behind the
  // handlers that are already due. When one wake-up of the event loop finds many connections
  // ready, each is read and timed before any is parsed, so no read's time includes the
  // parsing of the others.
  void on_readable(const beast::error_code& wait_ec) {
    if (phase_ != phase::reading) return;
    if (wait_ec) return on_read_at(wait_ec, 0, clock::now());
    if (unparsed_overflow()) return;
    const auto space = buf_.prepare(read_size);
    const timed_read r = read_timed(conn_.native_handle(), space.data(), space.size());
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
    if (phase_ != phase::reading) return;
    buf_.commit(n);
    if (n > 0) conn_.answered();
    if (n > 0 && !parse(t)) return;
    if (phase_ != phase::reading) return;
    if (retry(ec)) return;
    if (ec) {
      if (ec == net::error::eof || ec == http::error::end_of_stream) {
        // A close-delimited body ends here; anything else ended early (Beast's put_eof needs
        // a response begun: a server that closes before its first byte is a failure too).
        if (parser_->got_some()) {
          beast::error_code pe;
          parser_->put_eof(pe);
          if (!pe && parser_->is_done()) return end_of_body(t);
        }
        return fail(t, tc::finish_reason::error, failure_kind::ended_early,
                    (sse_.events() ? "the connection closed before [DONE]"
                                   : "the connection closed before the response ended") +
                        sse_.unfinished());
      }
      return io_failure(ec, "read");
    }
    read();
  }

  // A parser for the next response (the first, or the one after a 1xx interim response).
  void new_parser() {
    parser_.emplace();
    parser_->eager(true);
    parser_->body_limit((std::numeric_limits<std::uint64_t>::max)());
  }

  // Feeds what was read into the HTTP parser and the body into the SSE decoder. False once the
  // request ended.
  bool parse(clock::time_point t) {
    for (;;) {
      beast::error_code pe;
      const std::size_t used = parser_->put(buf_.data(), pe);
      buf_.consume(used);
      if (pe == http::error::need_more) pe = {};
      if (pe) {
        fail(t, tc::finish_reason::error, failure_kind::http_framing,
             "HTTP: " + quote_bytes(describe(pe), 200));
        return false;
      }
      if (parser_->is_header_done()) {
        std::string& body = parser_->get().body();
        const unsigned status = parser_->get().result_int();
        if (status >= 100 && status < 200 && status != 101) {
          // An interim response (100 Continue, 102, 103 Early Hints): RFC 9110 section 15.2
          // has a client parse and skip any number of them before the final response (101,
          // a protocol switch nobody asked for, is final and refused below).
          if (++interim_ > max_interim_responses) {
            fail(t, tc::finish_reason::error, failure_kind::http_status,
                 "HTTP: more than " + std::to_string(max_interim_responses) +
                     " 1xx interim responses without a final one");
            return false;
          }
          new_parser();
          if (buf_.size() == 0) return true;
          continue;
        }
        if (status != 200) {
          if (body.size() > 4096) body.resize(4096);
          if (parser_->is_done() || body.size() >= 4096) {
            fail(t, tc::finish_reason::error, failure_kind::http_status,
                 "HTTP " + std::to_string(status) + ": " + quote_bytes(body, 300));
            return false;
          }
        } else {
          const auto field = parser_->get()[http::field::content_type];
          const std::string_view type(field.data(), field.size());
          if (!is_event_stream(type)) {
            fail(t, tc::finish_reason::error, failure_kind::not_sse,
                 "HTTP 200 with Content-Type '" + quote_bytes(type, 80) +
                     "', not text/event-stream (the server did not stream)");
            return false;
          }
          if (!body.empty()) {
            const bool ok = sse_.feed(body, t, out_.reads);
            body.clear();
            if (!ok) {
              fail(t, tc::finish_reason::error, sse_.failure(), sse_.error());
              return false;
            }
            if (progress_)
              progress_->store(t.time_since_epoch().count(), std::memory_order_relaxed);
          }
          if (parser_->is_done()) {
            end_of_body(t);
            return false;
          }
        }
      }
      if (used == 0 || buf_.size() == 0) return true;
    }
  }

  // The body ended cleanly: the request's verdict is the stream's.
  void end_of_body(clock::time_point t) {
    if (!sse_.done())
      return fail(t, tc::finish_reason::error, failure_kind::ended_early,
                  "the response ended before [DONE]" + sse_.unfinished());
    // The timeline ends at [DONE] as the server's finish reason says; a reason that says the
    // request did not complete makes it a failure with that reason.
    (void)sse_.finish_timeline();
    record_stream();
    if (!sse_.server_failure().empty()) {
      out_.failure = failure_kind::server_finish;
      return end(sse_.server_failure());
    }
    // Keep-alive: the connection goes back to the pool when the answer ended cleanly, the
    // server keeps it open and no byte of anything else was read.
    end(std::string(),
        conn_.pooled() && parser_->is_done() && parser_->get().keep_alive() && buf_.size() == 0);
  }

  // What the stream carried, kept with the outcome.
  void record_stream() {
    out_.content = sse_.content();
    out_.finish_word = sse_.finish_word();
    out_.finish_word_known = sse_.finish_word_known();
  }

  void io_failure(const beast::error_code& ec, const char* what) {
    const clock::time_point t = clock::now();
    // After [DONE], a wait that times out is one for the body's end.
    const std::string after = sse_.done() ? " after [DONE] (the response body did not end)" : "";
    if (expired_ == expiry::request)
      return fail(t, tc::finish_reason::timed_out, failure_kind::timeout,
                  "request timeout (" + seconds(lim_.request) + ") during " + what + after);
    if (expired_ == expiry::idle)
      return fail(t, tc::finish_reason::timed_out, failure_kind::timeout,
                  "idle timeout (no bytes for " + seconds(lim_.idle) + ") during " + what + after);
    if (ec == beast::error::timeout) {
      const bool connecting = std::string_view(what) == "connect";
      return fail(t, tc::finish_reason::timed_out, failure_kind::timeout,
                  connecting ? "connect timeout (" + seconds(lim_.connect) + ")"
                             : "idle timeout (no bytes for " + seconds(lim_.idle) + ") during " +
                                   what + after);
    }
    // An error of the TLS layer (an alert from the peer, a record that does not decrypt, bytes
    // that are not TLS) is TLS's, wherever in the request it came.
    if (ec.category() == net::error::get_ssl_category() ||
        ec.category() == net::ssl::error::get_stream_category())
      return fail(
          t, tc::finish_reason::error, failure_kind::tls,
          std::string("TLS, during ") + what + ": " + quote_bytes(describe(ec), 200) + after);
    fail(t, tc::finish_reason::error,
         std::string_view(what) == "connect" ? failure_kind::connect : failure_kind::connection,
         std::string(what) + ": " + quote_bytes(describe(ec), 200) + after);
  }

  static std::string seconds(clock::duration d) { return seconds_text(d); }

  // Ends the request as failed at `t` (never before the stream's latest time, so no latency
  // of a failed request is negative).
  // A finish reason from the server that said the request did not complete stands over what
  // went wrong after it (the stream cut, a timeout): its reason and finish are the request's.
  void fail(clock::time_point t, tc::finish_reason why, failure_kind kind, std::string reason) {
    if (phase_ == phase::ended) return;
    if (!sse_.server_failure().empty()) {
      why = sse_.finish_reason();
      kind = failure_kind::server_finish;
      reason = sse_.server_failure();
    }
    record_stream();
    if (!out_.tl.finished() && out_.tl.finish(std::max(t, last_t_), why) != tc::record_status::ok)
      (void)out_.tl.finish(clock::now(), why);
    out_.failure = kind;
    end(std::move(reason));
  }

  // Records the outcome (`reason` empty: success) and ends the request; `keep`: its connection
  // goes back to the pool.
  void end(std::string reason, bool keep = false) {
    if (phase_ == phase::ended) return;
    out_.error = std::move(reason);
    keep_ = keep;
    enter(phase::ended);
  }

  net::io_context& ioc_;
  request_connection conn_;
  std::string host_;  // the URL's host: TLS's server name and the certificate's expected name
  clock::time_point phase_start_;  // the connect's or the handshake's start
  std::uint64_t tls_reads_ = 0;    // the TLS socket's reads counted so far
  net::steady_timer deadline_;
  net::steady_timer idle_;
  timeouts lim_;
  receive_time rx_;
  request_outcome& out_;
  sse_decoder sse_;
  std::function<void()> done_;
  std::string req_;
  beast::flat_buffer buf_;
  std::optional<http::response_parser<http::string_body>> parser_;
  unsigned interim_ = 0;               // 1xx interim responses skipped
  std::atomic<clock::rep>* progress_;  // the run's latest stream bytes (see run_load)
  clock::time_point last_t_;           // the stream's latest time (its send, then its reads)
  clock::time_point last_io_;  // the latest read (or the write): the idle limit counts from it
  phase phase_ = phase::created;
  expiry expired_ = expiry::none;
  bool keep_ = false;  // set by `end`: the connection goes back to the pool
};
// Hands each ended request to `load_options::on_end` on a thread of its own, in the order they
// ended, so that what it does (a trace line written, the summaries updated) never delays a send:
// a write stalls while the kernel throttles writers that fill its page cache (stalls of the
// whole client of 0.1 to 0.16 s were measured while builds wrote beside a replay), and such a
// stall now holds only this thread. Its queue holds the requests ended and not yet handed over
// (bounded by the run's requests, as without `on_end`). The first exception `on_end` throws is
// kept for the scheduling thread, which stops sending; later requests are still handed over.
class end_worker {
 public:
  end_worker(const std::function<void(request_outcome&&, clock::time_point)>& f,
             clock::time_point zero)
      : f_(f), zero_(zero), thread_([this] { loop(); }) {}
  end_worker(const end_worker&) = delete;
  end_worker& operator=(const end_worker&) = delete;
  ~end_worker() { finish(); }

  void push(std::unique_ptr<request_outcome> o) {
    {
      std::lock_guard<std::mutex> lock(m_);
      queue_.push_back(std::move(o));
    }
    cv_.notify_one();
  }
  // Not empty once `on_end` threw: its message.
  std::string failure() {
    if (!failed_.load(std::memory_order_acquire)) return {};
    std::lock_guard<std::mutex> lock(m_);
    return failure_;
  }
  // Hands over every request pushed, then joins the thread.
  void finish() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;  // done_, and everything handed over
      auto o = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::string what;
      try {
        f_(std::move(*o), zero_);
      } catch (const std::exception& e) {
        what = e.what();
        if (what.empty()) what = "an exception without a message";
      }
      o.reset();
      lock.lock();
      if (!what.empty() && !failed_.load(std::memory_order_relaxed)) {
        failure_ = std::move(what);
        failed_.store(true, std::memory_order_release);
      }
    }
  }

  const std::function<void(request_outcome&&, clock::time_point)>& f_;
  clock::time_point zero_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<request_outcome>> queue_;
  bool done_ = false;
  std::atomic<bool> failed_{false};
  std::string failure_;
  std::thread thread_;  // last: started once the members it uses are made
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
  tokchron_loadgen::workload work = opt.work;
  if (work.memory_limit == 0) work.memory_limit = tokchron_loadgen::default_memory_limit;
  // The schedule, in time since `zero`: the workload's arrivals, or the hook's.
  std::optional<tokchron_loadgen::arrival_generator> generator;
  std::unique_ptr<tokchron_loadgen::arrival_source> hooked;
  if (opt.schedule)
    hooked = opt.schedule();
  else
    generator.emplace(work);
  tokchron_loadgen::arrival_source& gen = hooked ? *hooked : *generator;

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

  // With https://, one TLS context for the run (made before the pools, so it outlives their
  // connections).
  std::optional<tls_client> tls;
  if (opt.tgt.tls) tls.emplace(opt.tls);
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
  std::vector<std::uint64_t> ended;  // keys of the requests that ended
  std::uint64_t in_flight = 0, sent = 0, finished = 0, failed = 0;
  std::size_t next_thread = 0;
  // With `on_end` the run keeps only the requests in flight, by key; without it every request,
  // in `result.requests` (its key is its index there).
  std::unordered_map<std::uint64_t, std::unique_ptr<request_outcome>> flight;
  std::unordered_map<std::uint64_t, tokchron_loadgen::arrival> asked;  // by key, until it ends
  std::uint64_t next_key = 0;
  const auto outcome = [&](std::uint64_t key) -> request_outcome& {
    return opt.on_end ? *flight.at(key) : result.requests[key];
  };
  // The closed loop's backoff: each user's fast failures in a row, and the jitter's draws.
  const bool closed = !opt.schedule && opt.work.mode == tokchron_loadgen::arrival_mode::closed;
  std::vector<std::uint32_t> fast_failures(closed ? opt.work.users : 0);
  std::mt19937_64 jitter(opt.work.seed ^ 0x9e3779b97f4a7c15ULL);
  // The synthetic prompts' words: of the seed, the id prefix and the request's number.
  const std::uint64_t prompts_seed = prompt_seed(opt.work.seed, opt.id_prefix);
  // The latest time a stream received bytes of a 200 answer (the sessions store it), and the
  // latest failure: the give-up watches both.
  std::atomic<clock::rep> progress_at{0};
  clock::time_point last_failure{};
  std::string last_reason;
  bool sending = true;

  result.zero = clock::now() + std::chrono::milliseconds(20);  // a lead so t = 0 is not late
  progress_at.store(result.zero.time_since_epoch().count());
  const auto at = [&](tokchron_loadgen::time_point v) {
    return result.zero + std::chrono::duration_cast<clock::duration>(v.time_since_epoch());
  };
  const auto virtual_now = [&](clock::time_point t) {
    return tokchron_loadgen::time_point(
        std::chrono::duration_cast<tokchron_loadgen::duration>(t - result.zero));
  };
  const auto stop_sending = [&](std::string why) {
    if (!sending) return;
    sending = false;
    result.gave_up = std::move(why);
  };
  auto next_progress = result.zero;
  std::optional<end_worker> ender;
  if (opt.on_end) ender.emplace(opt.on_end, result.zero);
  std::vector<tokchron_loadgen::arrival> released;
  for (;;) {
    // Nothing below may leave the loop by an exception while requests are in flight (their
    // sessions hold references into this frame): a failure stops the sending, and the loop
    // waits for the requests in flight before it returns.
    try {
      std::vector<std::uint64_t> now_ended;
      {
        std::lock_guard<std::mutex> lock(m);
        now_ended.swap(ended);
      }
      const auto now_ended_at = clock::now();
      for (const std::uint64_t key : now_ended) {
        --in_flight;
        ++finished;
        request_outcome& o = outcome(key);
        const auto end = o.tl.finish_time().value_or(now_ended_at);
        auto resume = end;
        if (!o.error.empty()) {
          ++failed;
          last_failure = std::max(last_failure, end);
          last_reason = o.error;
        }
        const tokchron_loadgen::arrival q = asked.at(key);
        if (closed && q.user < fast_failures.size()) {
          std::uint32_t& k = fast_failures[q.user];
          if (!o.error.empty() && end - o.tl.send_time().value_or(end) < opt.retry.fast) {
            k = std::min<std::uint32_t>(k + 1, 62);
            auto d = opt.retry.first;
            for (std::uint32_t i = 1; i < k && d < opt.retry.most; ++i) d *= 2;
            d = std::min(d, opt.retry.most);
            std::uniform_int_distribution<clock::rep> draw(d.count() / 2, d.count());
            o.backoff = clock::duration(draw(jitter));
            resume += o.backoff;
            ++result.backoffs;
            result.backoff_total += o.backoff;
          } else {
            k = 0;
          }
        }
        try {
          asked.erase(key);
          if (opt.on_outcome) opt.on_outcome(o);
          if (sending) gen.on_finish(q, virtual_now(resume));
          if (ender) {
            auto taken = std::move(flight.at(key));
            flight.erase(key);
            ender->push(std::move(taken));
          }
        } catch (const std::exception& e) {  // the next requests' keys are still counted
          stop_sending(std::string("the run could not go on: ") + e.what());
        }
      }
      if (ender && sending)
        if (std::string why = ender->failure(); !why.empty())
          stop_sending("the run could not go on: " + why);
      const auto now = clock::now();
      // The give-up: no stream received a byte for `give_up`, and requests failed since.
      const clock::time_point progress{clock::duration(progress_at.load())};
      if (sending && opt.give_up.count() > 0 && last_failure > progress &&
          now - progress >= opt.give_up)
        stop_sending("no stream received a byte for " + seconds_text(now - progress) +
                     " while requests failed (the latest: " + last_reason + ")");
      if (opt.on_progress && now >= next_progress) {
        opt.on_progress({std::chrono::duration<double>(now - result.zero).count(), sent, finished,
                         failed, in_flight});
        next_progress = now + opt.progress_every;
      }
      const auto next = gen.next_arrival();
      const bool more = sending && next && *next < gen.end();
      if (!more && in_flight == 0) break;
      if (!more || now < at(*next)) {
        // Without arrivals due, wake for the next one, the progress line, or the give-up.
        auto wake = more ? at(*next) : clock::time_point::max();
        if (opt.on_progress) wake = std::min(wake, next_progress);
        if (sending && opt.give_up.count() > 0)
          wake = std::min(wake, std::max(now, progress) + opt.give_up);
        std::unique_lock<std::mutex> lock(m);
        if (wake == clock::time_point::max())
          cv.wait(lock, [&] { return !ended.empty(); });
        else
          cv.wait_until(lock, wake, [&] { return !ended.empty(); });
        continue;
      }
      released.clear();
      gen.release(virtual_now(now), released);
      for (const tokchron_loadgen::arrival& r : released) {
        if (r.at >= gen.end()) continue;
        std::string body =
            opt.body ? opt.body(opt.tgt, r)
                     : request_body(opt.tgt,
                                    synthetic_prompt(prompts_seed, opt.first_request_id + r.id,
                                                     r.prompt_tokens),
                                    r.output_tokens);
        std::vector<std::pair<std::string, std::string>> headers;
        if (opt.headers) headers = opt.headers(r);
        const std::uint64_t key = opt.on_end ? next_key++ : result.requests.size();
        request_outcome& o =
            opt.on_end ? *flight.emplace(key, std::make_unique<request_outcome>()).first->second
                       : result.requests.emplace_back();
        o.id = r.id;
        o.request_id = opt.id_prefix + std::to_string(opt.first_request_id + r.id);
        o.measured = std::chrono::duration<double>(r.at.time_since_epoch()).count() >= opt.warmup_s;
        (void)o.tl.arrive(at(r.at));
        asked.emplace(key, r);
        ++in_flight;
        ++sent;
        auto s = std::make_shared<session>(
            *iocs[next_thread], ep, opt.tgt, opt.limits, opt.rx_time, o, std::move(body), headers,
            opt.keep_reply, pools.empty() ? nullptr : &pools[next_thread], tls ? &*tls : nullptr,
            &progress_at, [&m, &cv, &ended, key] {
              {
                std::lock_guard<std::mutex> lock(m);
                ended.push_back(key);
              }
              cv.notify_one();
            });
        net::post(*iocs[next_thread], [s] { s->start(); });
        next_thread = (next_thread + 1) % iocs.size();
      }
    } catch (const std::exception& e) {
      stop_sending(std::string("the run could not go on: ") + e.what());
      if (in_flight == 0) break;
    }
  }
  for (auto& g : guards) g.reset();
  for (auto& t : threads) t.join();
  if (ender) {
    ender->finish();  // every request handed to on_end before the run returns
    if (std::string why = ender->failure(); !why.empty())
      stop_sending("the run could not go on: " + why);
  }
  result.sent = sent;
  if (opt.on_progress)
    opt.on_progress({std::chrono::duration<double>(clock::now() - result.zero).count(), sent,
                     finished, failed, in_flight});
  return result;
}

tc::trace_record to_trace(const request_outcome& o, clock::time_point zero,
                          const tc::clock_anchor& a) {
  tc::trace_record r = tc::to_trace_record(o.tl, zero, o.request_id, o.error);
  // The verdict is the request's: a request with a reason failed, whatever its timeline says
  // (the session finishes it so that they agree; this keeps it so).
  if (!o.error.empty() && r.ok) {
    r.ok = false;
    r.reason = tc::finish_reason::error;
  }
  tc::set_clock_anchor(r, a);
  return r;
}

std::vector<tc::trace_record> to_trace(const load_result& r) {
  std::vector<tc::trace_record> out;
  const tc::clock_anchor a = tc::read_clock_anchor<clock>(r.zero);  // trace-format.md
  for (const request_outcome& o : r.requests)
    if (o.measured) out.push_back(to_trace(o, r.zero, a));
  return out;
}

}  // namespace tokchron_bench
