// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#include "scripted_server.hpp"

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

namespace tokchron_bench {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using sclock = std::chrono::steady_clock;

struct scripted_server::impl {
  explicit impl(server_script s) : script(s), acceptor(ioc) {
    beast::error_code ec;
    const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
    acceptor.open(ep.protocol(), ec);
    if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(4096, ec);
    if (ec) throw std::runtime_error("scripted_server: cannot listen: " + ec.message());
    port = acceptor.local_endpoint().port();
    accept();
    thread = std::thread([this] { ioc.run(); });
  }

  void accept();

  void record(const std::string& id, sclock::time_point t, const std::vector<std::string>& kinds) {
    std::lock_guard<std::mutex> lock(m);
    auto& v = sent[id];
    for (const auto& k : kinds) v.push_back({t, k});
  }

  server_script script;
  net::io_context ioc{1};
  tcp::acceptor acceptor;
  std::thread thread;
  mutable std::mutex m;
  std::map<std::string, std::vector<emission>> sent;
  std::map<std::string, std::string> prompts;  // by X-Request-Id
  std::map<std::string, seen_request> seen;    // by X-Request-Id
  std::uint64_t received = 0, accepted = 0;
  std::uint16_t port = 0;
};

namespace {

std::string frame(const std::string& payload) {
  char head[24];
  std::snprintf(head, sizeof head, "%zx\r\n", payload.size());
  return head + payload + "\r\n";
}

class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(scripted_server::impl& srv, tcp::socket s)
      : srv_(srv), socket_(std::move(s)), timer_(srv.ioc) {}

  void start() {
    http::async_read(socket_, buf_, req_,
                     [self = shared_from_this()](const beast::error_code& ec, std::size_t) {
                       if (!ec) self->on_request();
                     });
  }

 private:
  void on_request() {
    std::uint64_t index = 0;
    {
      std::lock_guard<std::mutex> lock(srv_.m);
      index = srv_.received++;
    }
    id_ = std::string(req_["X-Request-Id"]);
    chat_ = req_.target().find("chat") != beast::string_view::npos;
    const auto j = nlohmann::json::parse(req_.body(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return respond(400, "malformed JSON");
    model_ = j.value("model", std::string());
    if (!srv_.script.models.empty()) model_ = srv_.script.models[index % srv_.script.models.size()];
    split_ = model_ == "split";
    n_ = j.value("max_tokens", 16u);
    if (const auto so = j.find("stream_options"); so != j.end() && so->is_object())
      usage_ = so->value("include_usage", false);
    std::string prompt;
    if (chat_ && j.contains("messages") && j["messages"].is_array() && !j["messages"].empty())
      prompt = j["messages"][0].value("content", std::string());
    else
      prompt = j.value("prompt", std::string());
    prompt_tokens_ = prompt.empty() ? 0 : 1;
    for (char c : prompt) prompt_tokens_ += c == ' ';
    {
      seen_request r;
      r.body = req_.body();
      for (const auto& f : req_) r.headers.emplace_back(f.name_string(), f.value());
      std::lock_guard<std::mutex> lock(srv_.m);
      srv_.prompts[id_] = prompt;
      srv_.seen[id_] = std::move(r);
    }
    if (model_ == "http500") return respond(500, "scripted failure");
    if (model_ == "http503") return respond(503, "overloaded");
    if (model_ == "latin1_500")  // 296 ASCII bytes, then Latin-1: the 300-byte quote cuts in it
      return respond(500, std::string(296, 'e') + "Erreur: d\xe9j\xe0 vu \xab\xa0\xbb",
                     "text/plain");
    if (model_ == "utf8_500")  // a 2-byte character across the 300-byte quote's end
      return respond(500, std::string(297, 'e') + "\xc3\xa9\xc3\xa9", "text/plain");
    if (model_ == "gzip_500") {  // a compressed body: binary, controls, invalid UTF-8, ESC
      static const char gz[] =
          "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9\x07\x00\x86\xa6"
          "\x10\x36\x05\x00\x00\x00\x1b[2J";
      return respond(500, std::string(gz, sizeof gz - 1), "application/json", "gzip");
    }
    if (model_ == "switching") {
      write_raw("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
                {});
      return wait_for_close();
    }
    if (model_ == "interim")  // 100 Continue and 103 Early Hints before the answer
      write_raw(
          "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload"
          "\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n",
          {});
    if (model_ == "endless_interim") return repeat("HTTP/1.1 100 Continue\r\n\r\n");
    if (model_ == "json") return respond(200, "not streamed");
    if (model_ == "html")
      return respond(200, "<html><body><h1>Welcome</h1></body></html>", "text/html");
    if (model_ == "silent") return wait_for_close();
    const std::string type = model_ == "media_type"  ? "Text/Event-Stream ; Charset=UTF-8"
                             : model_ == "not_media" ? "text/event-streamx"
                                                     : "text/event-stream";
    write_raw("HTTP/1.1 200 OK\r\nContent-Type: " + type +
                  "\r\nCache-Control: no-cache\r\n"
                  "Transfer-Encoding: chunked\r\nConnection: " +
                  std::string(req_.keep_alive() ? "keep-alive" : "close") + "\r\n\r\n",
              {});
    if (model_ == "headers_stall") return wait_for_close();
    start_ = sclock::now();
    step();
  }

  // A whole answer: an OpenAI error object carrying `message` (JSON), or `message` itself.
  void respond(unsigned status, const std::string& message,
               const std::string& type = "application/json", const std::string& encoding = "") {
    const std::string body =
        type != "application/json" || !encoding.empty()
            ? message
            : nlohmann::json{{"error", {{"message", message}, {"type", "BadRequestError"}}}}.dump();
    write_raw("HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK\r\n" : " Error\r\n") +
                  (encoding.empty() ? "" : "Content-Encoding: " + encoding + "\r\n") +
                  "Content-Type: " + type +
                  "\r\nConnection: close\r\n"
                  "Content-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body,
              {});
    close();
  }

  void step() {
    timer_.expires_at(start_ + srv_.script.first_delay + k_ * srv_.script.interval);
    timer_.async_wait([self = shared_from_this()](const beast::error_code& ec) {
      if (!ec) self->emit();
    });
  }

  nlohmann::json chunk(nlohmann::json choice) const {
    nlohmann::json j{{"id", "cmpl-" + id_},
                     {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                     {"created", 0},
                     {"model", model_},
                     {"choices", nlohmann::json::array({std::move(choice)})}};
    if (model_ == "error_null") j["error"] = nullptr;
    if (model_ == "other_choice")  // the text in choice 1; choice 0 carries nothing
      j["choices"] = nlohmann::json::array(
          {nlohmann::json{
               {"index", 0},
               {chat_ ? "delta" : "text", chat_ ? nlohmann::json::object() : nlohmann::json("")}},
           j["choices"][0]});
    return j;
  }

  nlohmann::json text_choice(const char* reason) const {
    // `numbered`: chunk k of request ID is " ID.k", so a reply names its request.
    const std::string piece = model_ == "numbered" ? " " + id_ + "." + std::to_string(k_) : " w";
    nlohmann::json choice = chat_ ? nlohmann::json{{"index", 0}, {"delta", {{"content", piece}}}}
                                  : nlohmann::json{{"index", 0}, {"text", piece}};
    if (chat_ && model_ == "tools")  // a tool call's arguments, streamed; no content
      choice["delta"] = {
          {"content", nullptr},
          {"tool_calls",
           nlohmann::json::array({{{"index", 0}, {"function", {{"arguments", "{\"a\""}}}}})}};
    if (model_ == "other_choice") choice["index"] = 1;
    if (reason && model_ == "tools") reason = "tool_calls";
    choice["finish_reason"] = reason ? nlohmann::json(reason) : nlohmann::json(nullptr);
    return choice;
  }

  // An SSE event of `data`: `data: DATA` and a blank line, each ended by LF; with `split`,
  // by LF, CR and CRLF in turn (never a CR right before an LF that ends another line), after
  // a comment line.
  std::string sse(const std::string& data) {
    if (!split_) return "data: " + data + "\n\n";
    static const char* const ends[][2] = {{"\n", "\n"}, {"\r", "\r"},   {"\r\n", "\r\n"},
                                          {"\n", "\r"}, {"\r\n", "\n"}, {"\n", "\r\n"}};
    const auto& e = ends[events_++ % 6];
    return std::string(": comment ") + std::to_string(events_) + e[0] + "data: " + data + e[0] +
           e[1];
  }
  std::string event(const nlohmann::json& j) { return sse(j.dump()); }

  // The faults that begin after `fault_after` text chunks; false when there is none (or it
  // comes at the end of the stream).
  bool fault() {
    std::string payload;
    if (model_ == "cut") {
      close();
    } else if (model_ == "reset") {
      reset();
    } else if (model_ == "stall") {
      wait_for_close();
    } else if (model_ == "pings") {
      repeat(frame(": keep-alive\n\n"));
    } else if (model_ == "endless_line") {
      write_raw(frame("data: " + std::string(65536, 'x')), {"fault"});
      repeat(frame(std::string(65536, 'x')));
    } else if (model_ == "endless_ext") {
      write_raw("5;ext=", {"fault"});
      repeat(std::string(16384, 'a'));
    }
    if (model_ == "cut" || model_ == "reset" || model_ == "stall" || model_ == "pings" ||
        model_ == "endless_line" || model_ == "endless_ext")
      return true;
    if (model_ == "abort" || model_ == "abort_cut") {
      // The server gives up on the request (as vLLM, SGLang and serve do on shutdown): a last
      // chunk with finish_reason abort, then usage and [DONE], or the connection closed.
      payload = event(chunk(text_choice("abort")));
      if (model_ == "abort_cut") {
        write_raw(frame(payload), {"fault"});
        close();
        return true;
      }
      payload += event({{"choices", nlohmann::json::array()},
                        {"usage",
                         {{"prompt_tokens", prompt_tokens_},
                          {"completion_tokens", k_ + 1},
                          {"total_tokens", prompt_tokens_ + k_ + 1}}}});
      payload += sse("[DONE]");
      write_raw(frame(payload) + "0\r\n\r\n", {"fault"});
      close();
      return true;
    }
    if (model_ == "malformed") payload = frame("data: {\"choices\": [oops\n\n");
    if (model_ == "garbage") payload = frame("this is not an SSE field\n\n");
    if (model_ == "error") payload = frame(event({{"error", {{"message", "scripted error"}}}}));
    if (model_ == "badchunk") payload = "zz\r\ndata: {}\n\n\r\n";
    if (model_ == "hugechunk") payload = "100000000000000000000\r\ndata: {}\n\n";
    if (payload.empty()) return false;
    write_raw(payload, {"fault"});
    wait_for_close();
    return true;
  }

  void emit() {
    std::string payload;
    std::vector<std::string> kinds;
    if (k_ == srv_.script.fault_after && fault()) return;
    if (chat_ && k_ == 0) {
      payload += event(chunk({{"index", 0},
                              {"delta", {{"role", "assistant"}, {"content", ""}}},
                              {"finish_reason", nullptr}}));
      kinds.emplace_back("role");
    }
    const bool last = k_ + 1 >= n_ && model_ != "endless";
    if (n_ > 0) {
      if (last) {
        payload += event(chunk(text_choice("length")));
      } else {
        if (text_event_.empty() || split_ || model_ == "numbered")
          text_event_ = event(chunk(text_choice(nullptr)));
        payload += text_event_;  // the same bytes every step: the server stays cheap
      }
      kinds.emplace_back("text");
    }
    if (last) {
      if (usage_) {
        nlohmann::json completion = n_;
        if (model_ == "usage_low") completion = n_ > 0 ? n_ - 1 : 0;
        if (model_ == "usage_negative") completion = -3;
        if (model_ == "usage_2p64") completion = "2^64";  // replaced by its digits below
        std::string usage = event({{"id", "cmpl-" + id_},
                                   {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                                   {"created", 0},
                                   {"model", model_},
                                   {"choices", nlohmann::json::array()},
                                   {"usage",
                                    {{"prompt_tokens", prompt_tokens_},
                                     {"completion_tokens", completion},
                                     {"total_tokens", prompt_tokens_ + n_}}}});
        if (const auto at = usage.find("\"2^64\""); at != std::string::npos)
          usage.replace(at, 6, "18446744073709551616");
        payload += usage;
        kinds.emplace_back("usage");
      }
      payload += model_ == "unterminated" ? "data: [DONE]\n" : sse("[DONE]");
      kinds.emplace_back("done");
      if (model_ == "after_done") payload += event(chunk(text_choice(nullptr)));
      if (model_ == "done_stall") {  // [DONE], and the body never ends (no last chunk)
        write_raw(frame(held_ + payload), kinds);
        return wait_for_close();
      }
      kinds.insert(kinds.begin(), held_kinds_.begin(), held_kinds_.end());
      write_raw(frame(held_ + payload) + "0\r\n\r\n", kinds);
      held_.clear();
      held_kinds_.clear();
      if (model_ == "unterminated") return wait_for_close();
      if (!req_.keep_alive() || model_ == "drop") return close();
      return next_request();
    }
    if (model_ == "bom" && k_ == 0) payload = "\xef\xbb\xbf" + payload;
    if (model_ == "merged" && k_ > 0) {
      // After the first, every event waits for the last write: one read brings them all.
      held_ += payload;
      held_kinds_.insert(held_kinds_.end(), kinds.begin(), kinds.end());
      ++k_;
      return step();
    }
    if (model_ == "line_split") {
      // Each event's blank line goes out with the next write: its data line comes first.
      payload = held_ + payload;
      held_ = "\n";
      payload.pop_back();
    }
    write_raw(frame(payload), kinds);
    ++k_;
    step();
  }

  // Writes synchronously (with `split`, one byte a write); the time is read just before the
  // write, and recorded before it too, so a client that has read the bytes always finds their
  // record. False when the connection broke.
  bool write_raw(const std::string& bytes, const std::vector<std::string>& kinds) {
    const auto t = sclock::now();
    if (!kinds.empty()) srv_.record(id_, t, kinds);
    beast::error_code ec;
    if (!split_) {
      net::write(socket_, net::buffer(bytes), ec);
      return !ec;
    }
    for (std::size_t i = 0; i < bytes.size() && !ec; ++i)
      net::write(socket_, net::buffer(bytes.data() + i, 1), ec);
    return !ec;
  }

  // Writes `bytes` every interval until the connection breaks (an endless stream).
  void repeat(std::string bytes) {
    timer_.expires_after(srv_.script.interval);
    timer_.async_wait(
        [self = shared_from_this(), b = std::move(bytes)](const beast::error_code& ec) {
          if (ec) return;
          if (!self->write_raw(b, {})) return self->close();
          self->repeat(b);
        });
  }

  // Resets the connection: SO_LINGER with no time makes the close send an RST.
  void reset() {
    beast::error_code ignored;
    socket_.set_option(net::socket_base::linger(true, 0), ignored);
    socket_.close(ignored);
  }

  // Keep-alive: the connection waits for its next request.
  void next_request() {
    req_ = {};
    k_ = 0;
    text_event_.clear();
    held_.clear();
    held_kinds_.clear();
    usage_ = false;
    events_ = 0;
    start();
  }

  void wait_for_close() {
    socket_.async_read_some(net::buffer(sink_),
                            [self = shared_from_this()](const beast::error_code& ec, std::size_t) {
                              if (ec) return self->close();
                              self->wait_for_close();
                            });
  }

  void close() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    socket_.close(ignored);
  }

  scripted_server::impl& srv_;
  tcp::socket socket_;
  net::steady_timer timer_;
  beast::flat_buffer buf_;
  http::request<http::string_body> req_;
  std::string id_, model_, text_event_;
  std::string held_;                     // bytes held back for the next write (merged, line_split)
  std::vector<std::string> held_kinds_;  // their events' kinds (merged)
  bool chat_ = false, usage_ = false, split_ = false;
  std::uint64_t events_ = 0;  // events written (the line endings of `split` turn with it)
  std::uint32_t n_ = 0, k_ = 0;
  std::uint64_t prompt_tokens_ = 0;
  sclock::time_point start_;
  char sink_[512];
};

}  // namespace

void scripted_server::impl::accept() {
  acceptor.async_accept([this](const beast::error_code& ec, tcp::socket s) {
    if (ec) return;  // closed by stop()
    s.set_option(tcp::no_delay(true));
    {
      std::lock_guard<std::mutex> lock(m);
      ++accepted;
    }
    std::make_shared<connection>(*this, std::move(s))->start();
    accept();
  });
}

scripted_server::scripted_server(server_script s) : impl_(std::make_unique<impl>(s)) {}

scripted_server::~scripted_server() { stop(); }

std::uint16_t scripted_server::port() const noexcept { return impl_->port; }

std::map<std::string, std::vector<emission>> scripted_server::emissions() const {
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->sent;
}

std::map<std::string, std::string> scripted_server::prompts() const {
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->prompts;
}

std::map<std::string, seen_request> scripted_server::seen() const {
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->seen;
}

std::uint64_t scripted_server::requests() const {
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->received;
}

std::uint64_t scripted_server::connections() const {
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->accepted;
}

void scripted_server::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->ioc.stop();
  impl_->thread.join();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);  // new connections are refused from here on
}

}  // namespace tokchron_bench
