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
  std::uint64_t received = 0, accepted = 0;
  std::uint16_t port = 0;
};

namespace {

std::string frame(const std::string& payload) {
  char head[24];
  std::snprintf(head, sizeof head, "%zx\r\n", payload.size());
  return head + payload + "\r\n";
}

std::string event(const nlohmann::json& j) { return "data: " + j.dump() + "\n\n"; }

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
    {
      std::lock_guard<std::mutex> lock(srv_.m);
      ++srv_.received;
    }
    id_ = std::string(req_["X-Request-Id"]);
    chat_ = req_.target().find("chat") != beast::string_view::npos;
    const auto j = nlohmann::json::parse(req_.body(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return respond(400, "malformed JSON");
    model_ = j.value("model", std::string());
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
    if (model_ == "http500") return respond(500, "scripted failure");
    if (model_ == "json") return respond(200, "not streamed");
    write_raw(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        "Transfer-Encoding: chunked\r\nConnection: " +
            std::string(req_.keep_alive() ? "keep-alive" : "close") + "\r\n\r\n",
        {});
    start_ = sclock::now();
    step();
  }

  void respond(unsigned status, const std::string& message) {
    const std::string body =
        nlohmann::json{{"error", {{"message", message}, {"type", "BadRequestError"}}}}.dump();
    write_raw("HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK\r\n" : " Error\r\n") +
                  "Content-Type: application/json\r\nConnection: close\r\n"
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
    return {{"id", "cmpl-" + id_},
            {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
            {"created", 0},
            {"model", model_},
            {"choices", nlohmann::json::array({std::move(choice)})}};
  }

  nlohmann::json text_choice(const char* reason) const {
    nlohmann::json choice = chat_ ? nlohmann::json{{"index", 0}, {"delta", {{"content", " w"}}}}
                                  : nlohmann::json{{"index", 0}, {"text", " w"}};
    choice["finish_reason"] = reason ? nlohmann::json(reason) : nlohmann::json(nullptr);
    return choice;
  }

  void emit() {
    std::string payload;
    std::vector<std::string> kinds;
    if (k_ == srv_.script.fault_after && model_ != "stall" && model_ != "cut" &&
        model_ != "malformed" && model_ != "garbage" && model_ != "error") {
      // no fault: fall through to the ordinary chunk
    } else if (k_ == srv_.script.fault_after) {
      if (model_ == "cut") return close();
      if (model_ == "stall") return wait_for_close();
      if (model_ == "malformed") payload = "data: {\"choices\": [oops\n\n";
      if (model_ == "garbage") payload = "this is not an SSE field\n\n";
      if (model_ == "error") payload = event({{"error", {{"message", "scripted error"}}}});
      write_raw(frame(payload), {"fault"});
      return wait_for_close();
    }
    if (chat_ && k_ == 0) {
      payload += event(chunk({{"index", 0},
                              {"delta", {{"role", "assistant"}, {"content", ""}}},
                              {"finish_reason", nullptr}}));
      kinds.emplace_back("role");
    }
    const bool last = k_ + 1 >= n_;
    if (n_ > 0) {
      if (last) {
        payload += event(chunk(text_choice("length")));
      } else {
        if (text_event_.empty()) text_event_ = event(chunk(text_choice(nullptr)));
        payload += text_event_;  // the same bytes every step: the server stays cheap
      }
      kinds.emplace_back("text");
    }
    if (last) {
      if (usage_) {
        payload += event({{"id", "cmpl-" + id_},
                          {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                          {"created", 0},
                          {"model", model_},
                          {"choices", nlohmann::json::array()},
                          {"usage",
                           {{"prompt_tokens", prompt_tokens_},
                            {"completion_tokens", n_},
                            {"total_tokens", prompt_tokens_ + n_}}}});
        kinds.emplace_back("usage");
      }
      payload += "data: [DONE]\n\n";
      kinds.emplace_back("done");
      write_raw(frame(payload) + "0\r\n\r\n", kinds);
      if (!req_.keep_alive() || model_ == "drop") return close();
      return next_request();
    }
    write_raw(frame(payload), kinds);
    ++k_;
    step();
  }

  // Writes synchronously; the time is read just before the write, and recorded before it too,
  // so a client that has read the bytes always finds their record.
  void write_raw(const std::string& bytes, const std::vector<std::string>& kinds) {
    const auto t = sclock::now();
    if (!kinds.empty()) srv_.record(id_, t, kinds);
    beast::error_code ec;
    net::write(socket_, net::buffer(bytes), ec);
  }

  // Keep-alive: the connection waits for its next request.
  void next_request() {
    req_ = {};
    k_ = 0;
    text_event_.clear();
    usage_ = false;
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
  bool chat_ = false, usage_ = false;
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
