// SPDX-License-Identifier: MIT
// `batching-executor serve` over real sockets: a server on port 0 in this process, driven by a
// small Beast client. Stream shape, usage, [DONE], non-streaming answers, every bad request
// (status + OpenAI error JSON, and the server keeps serving), a client that disconnects
// mid-stream (aborted in /metrics and in the trace, its KV released), many streams at once,
// and request counts in /metrics equal to the trace.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "live_engine.hpp"
#include "openai.hpp"
#include "server.hpp"
#ifdef TOKCHRON_SERVE_PROTOBUF
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <map>

#include "io/prometheus/client/metrics.pb.h"
#include "tokchron/export/prometheus_protobuf.hpp"
#endif

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using namespace batching::serve;

const char* model = "tokchron-sim";

// A server on an ephemeral port, run on its own thread until the fixture ends.
struct running_server {
  std::string trace_path;
  std::unique_ptr<server> srv;
  std::thread th;
  std::uint64_t traced = 0;

  explicit running_server(std::vector<std::string> extra = {}, const char* max_body = "4096") {
    trace_path = "serve_test_trace_" + std::to_string(::getpid()) + "_" +
                 std::to_string(counter()++) + ".jsonl";
    std::vector<std::string> args = {"--port", "0", "--trace-out", trace_path, "--max-body",
                                     max_body, "--threads", "3",
                                     // h200: decode steps of a few ms keep the test short
                                     "--hw", "h200"};
    args.insert(args.end(), extra.begin(), extra.end());
    srv = std::make_unique<server>(parse_serve_options(args));
    th = std::thread([this] { traced = srv->run(false); });
  }
  ~running_server() {
    stop();
    std::remove(trace_path.c_str());
  }
  void stop() {
    if (!th.joinable()) return;
    srv->shutdown();
    th.join();
  }
  [[nodiscard]] std::uint16_t port() const { return srv->port(); }
  static int& counter() {
    static int n = 0;
    return n;
  }
  // The trace, one JSON object a line.
  [[nodiscard]] std::vector<json> trace() const {
    std::ifstream f(trace_path);
    std::vector<json> out;
    std::string line;
    while (std::getline(f, line)) out.push_back(json::parse(line));
    return out;
  }
};

struct reply {
  unsigned status = 0;
  std::string body;
  std::string content_type;
};

reply call_http(std::uint16_t port, http::verb method, const std::string& target,
                const std::string& body = {}, const std::string& accept = {}) {
  net::io_context ioc;
  tcp::socket s(ioc);
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req(method, target, 11);
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  if (!accept.empty()) req.set(http::field::accept, accept);
  req.body() = body;
  if (method == http::verb::post || !body.empty()) req.prepare_payload();
  http::write(s, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> p;
  p.body_limit(1u << 26);
  http::read(s, buf, p);
  return {p.get().result_int(), p.get().body(), std::string(p.get()[http::field::content_type])};
}

reply post(std::uint16_t port, const std::string& target, const json& body) {
  return call_http(port, http::verb::post, target, body.dump());
}

// The `data:` payloads of an SSE body, in order.
std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const auto end = body.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

std::size_t count_words(const std::string& s) {
  std::size_t n = 0;
  bool in = false;
  for (const char c : s) {
    const bool sp = c == ' ';
    if (!sp && !in) ++n;
    in = !sp;
  }
  return n;
}

// The value of the sample line that starts with `series` in a Prometheus text body.
double sample(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}
// The sum of a family's samples (every label set) in a Prometheus text body; -1 when absent.
double family_sum(const std::string& text, const std::string& family) {
  double sum = 0;
  bool found = false;
  std::size_t at = 0;
  while ((at = text.find("\n" + family, at)) != std::string::npos) {
    at += 1 + family.size();
    if (text[at] != '{' && text[at] != ' ') continue;
    const auto sp = text.find(' ', text[at] == '{' ? text.find('}', at) : at);
    sum += std::stod(text.substr(sp + 1));
    found = true;
  }
  return found ? sum : -1;
}
std::string reason_series(const char* reason) {
  return std::string("vllm:request_success_total{model_name=\"") + model +
         "\",engine=\"0\",finished_reason=\"" + reason + "\"}";
}
double finished(const std::string& metrics, const char* reason) {
  return sample(metrics, reason_series(reason));
}

json chat_body(unsigned max_tokens, bool stream, bool usage, bool ignore_eos = true) {
  json b = {{"model", model},
            {"messages", json::array({{{"role", "user"}, {"content", "count the five words"}}})},
            {"max_tokens", max_tokens},
            {"ignore_eos", ignore_eos}};
  if (stream) b["stream"] = true;
  if (usage) b["stream_options"] = {{"include_usage", true}};
  return b;
}

}  // namespace

TEST_CASE("serve: streaming chat is a role chunk, one content chunk per step, usage, [DONE]") {
  running_server s;
  const reply r = post(s.port(), "/v1/chat/completions", chat_body(12, true, true));
  REQUIRE(r.status == 200);
  const auto ev = events(r.body);
  REQUIRE(ev.size() >= 4);
  CHECK(ev.back() == "[DONE]");
  const json role = json::parse(ev.front());
  CHECK(role["object"] == "chat.completion.chunk");
  CHECK(role["choices"][0]["delta"]["role"] == "assistant");
  CHECK(role["choices"][0]["delta"]["content"] == "");
  const json usage = json::parse(ev[ev.size() - 2]);
  CHECK(usage["choices"].empty());
  CHECK(usage["usage"]["completion_tokens"] == 12);
  CHECK(usage["usage"]["prompt_tokens"] == 4);
  CHECK(usage["usage"]["total_tokens"] == 16);
  std::size_t tokens = 0, content_chunks = 0;
  for (std::size_t i = 1; i + 2 < ev.size(); ++i) {
    const json c = json::parse(ev[i]);
    CHECK(c["id"] == role["id"]);
    const json& ch = c["choices"][0];
    CHECK(!ch["delta"].contains("role"));
    tokens += count_words(ch["delta"]["content"].get<std::string>());
    ++content_chunks;
    CHECK(ch["finish_reason"] == (i + 3 == ev.size() ? json("length") : json(nullptr)));
  }
  CHECK(tokens == 12);
  s.stop();
  // The trace has one chunk per content chunk sent, with the same token counts.
  const auto tr = s.trace();
  REQUIRE(tr.size() == 1);
  CHECK(tr[0]["id"] == role["id"]);
  CHECK(tr[0]["chunks"].size() == content_chunks);
  CHECK(tr[0]["finish_reason"] == "length");
}

TEST_CASE("serve: streaming completions without include_usage has no usage chunk") {
  running_server s;
  json b = {{"model", model},
            {"prompt", "one two three"},
            {"max_tokens", 5},
            {"ignore_eos", true},
            {"stream", true}};
  const reply r = post(s.port(), "/v1/completions", b);
  REQUIRE(r.status == 200);
  const auto ev = events(r.body);
  REQUIRE(ev.size() >= 2);
  CHECK(ev.back() == "[DONE]");
  std::size_t tokens = 0;
  for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
    const json c = json::parse(ev[i]);
    CHECK(c["object"] == "text_completion");
    REQUIRE(c["choices"].size() == 1);
    CHECK(!c.contains("usage"));
    tokens += count_words(c["choices"][0]["text"].get<std::string>());
  }
  CHECK(tokens == 5);
  CHECK(json::parse(ev[ev.size() - 2])["choices"][0]["finish_reason"] == "length");
}

TEST_CASE("serve: non-streaming answers carry usage; without ignore_eos the documented stop") {
  running_server s;
  const reply chat = post(s.port(), "/v1/chat/completions", chat_body(7, false, false));
  REQUIRE(chat.status == 200);
  const json c = json::parse(chat.body);
  CHECK(c["object"] == "chat.completion");
  CHECK(c["choices"][0]["message"]["role"] == "assistant");
  CHECK(count_words(c["choices"][0]["message"]["content"].get<std::string>()) == 7);
  CHECK(c["usage"]["completion_tokens"] == 7);
  CHECK(c["choices"][0]["finish_reason"] == "length");

  // Without ignore_eos: stops after natural_length(hash of the prompt) tokens when that is
  // within max_tokens ("stop"), else at max_tokens ("length").
  const json body = {{"model", model}, {"prompt", "a b c d"}, {"max_tokens", 300}};
  request_limits lim;
  lim.model = model;
  const auto g =
      std::get<generation_request>(parse_request(endpoint::completions, body.dump(), lim));
  const std::uint32_t natural = natural_length(g.seed, lim.eos_range);
  REQUIRE(natural <= 256);
  const reply r = post(s.port(), "/v1/completions", body);
  REQUIRE(r.status == 200);
  const json j = json::parse(r.body);
  CHECK(j["usage"]["completion_tokens"] == natural);
  CHECK(j["choices"][0]["finish_reason"] == "stop");
  CHECK(j["usage"]["prompt_tokens"] == 4);
  // The same prompt gives the same text.
  CHECK(json::parse(post(s.port(), "/v1/completions", body).body)["choices"][0]["text"] ==
        j["choices"][0]["text"]);
  const json short_body = {{"model", model}, {"prompt", "a b c d"}, {"max_tokens", 1}};
  const json one = json::parse(post(s.port(), "/v1/completions", short_body).body);
  CHECK(one["usage"]["completion_tokens"] == 1);
  CHECK(one["choices"][0]["finish_reason"] == (natural == 1 ? "stop" : "length"));
}

TEST_CASE("serve: every bad request gets its status and OpenAI error JSON; serving goes on") {
  running_server s;
  struct bad_case {
    const char* what;
    http::verb method;
    std::string target, body;
    unsigned status;
    const char* param;  // nullptr: null
  };
  const std::string big(5000, 'x');
  const std::vector<bad_case> cases = {
      {"malformed JSON", http::verb::post, "/v1/completions", "{\"model\":", 400, nullptr},
      {"not an object", http::verb::post, "/v1/completions", "[1,2]", 400, nullptr},
      {"unknown model", http::verb::post, "/v1/completions", R"({"model":"nope","prompt":"a"})",
       404, "model"},
      {"missing model", http::verb::post, "/v1/completions", R"({"prompt":"a"})", 400, "model"},
      {"missing prompt", http::verb::post, "/v1/completions", R"({"model":"tokchron-sim"})", 400,
       "prompt"},
      {"missing messages", http::verb::post, "/v1/chat/completions", R"({"model":"tokchron-sim"})",
       400, "messages"},
      {"empty messages", http::verb::post, "/v1/chat/completions",
       R"({"model":"tokchron-sim","messages":[]})", 400, "messages"},
      {"negative max_tokens", http::verb::post, "/v1/completions",
       R"({"model":"tokchron-sim","prompt":"a","max_tokens":-1})", 400, "max_tokens"},
      {"zero max_tokens", http::verb::post, "/v1/completions",
       R"({"model":"tokchron-sim","prompt":"a","max_tokens":0})", 400, "max_tokens"},
      {"fractional max_tokens", http::verb::post, "/v1/completions",
       R"({"model":"tokchron-sim","prompt":"a","max_tokens":2.5})", 400, "max_tokens"},
      {"string max_tokens", http::verb::post, "/v1/completions",
       R"({"model":"tokchron-sim","prompt":"a","max_tokens":"5"})", 400, "max_tokens"},
      {"huge max_tokens", http::verb::post, "/v1/completions",
       R"({"model":"tokchron-sim","prompt":"a","max_tokens":18446744073709551615})", 400,
       "max_tokens"},
      {"stream not a boolean", http::verb::post, "/v1/completions",
       R"({"model":"tokchron-sim","prompt":"a","stream":"yes"})", 400, "stream"},
      {"stream_options without stream", http::verb::post, "/v1/chat/completions",
       R"({"model":"tokchron-sim","messages":[{"role":"user","content":"a"}],"stream_options":{"include_usage":true}})",
       400, "stream_options"},
      {"n > 1", http::verb::post, "/v1/completions",
       R"({"model":"tokchron-sim","prompt":"a","n":2})", 400, "n"},
      {"message without role", http::verb::post, "/v1/chat/completions",
       R"({"model":"tokchron-sim","messages":[{"content":"a"}]})", 400, "messages[0].role"},
      {"body over --max-body", http::verb::post, "/v1/completions",
       R"({"model":"tokchron-sim","prompt":")" + big + "\"}", 413, nullptr},
      {"unknown path", http::verb::get, "/v1/nothing", "", 404, nullptr},
      {"wrong method", http::verb::get, "/v1/completions", "", 405, nullptr},
      {"POST /metrics", http::verb::post, "/metrics", "{}", 405, nullptr},
  };
  for (const bad_case& c : cases) {
    CAPTURE(c.what);
    const reply r = call_http(s.port(), c.method, c.target, c.body);
    CHECK(r.status == c.status);
    const json j = json::parse(r.body, nullptr, false);
    REQUIRE(j.is_object());
    REQUIRE(j.contains("error"));
    const json& e = j["error"];
    CHECK(e["message"].is_string());
    CHECK(!e["message"].get<std::string>().empty());
    CHECK(e["type"].is_string());
    CHECK(e.contains("code"));
    CHECK(e["param"] == (c.param ? json(c.param) : json(nullptr)));
    // The server still answers.
    CHECK(call_http(s.port(), http::verb::get, "/health").status == 200);
  }
  // A good request after all of them, and nothing of the bad ones in the accounting.
  CHECK(post(s.port(), "/v1/chat/completions", chat_body(2, false, false)).status == 200);
  const std::string m = call_http(s.port(), http::verb::get, "/metrics").body;
  CHECK(finished(m, "length") == 1);
  CHECK(finished(m, "abort") == 0);
  s.stop();
  CHECK(s.trace().size() == 1);
}

TEST_CASE("serve: a client that disconnects mid-stream is aborted, counted and its KV freed") {
  running_server s;
  {
    net::io_context ioc;
    tcp::socket sock(ioc);
    sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
    http::request<http::string_body> req(http::verb::post, "/v1/chat/completions", 11);
    req.set(http::field::host, "127.0.0.1");
    req.body() = chat_body(3000, true, true).dump();
    req.prepare_payload();
    http::write(sock, req);
    // Read until the first content chunk has arrived, then hang up.
    std::string got;
    char buf[4096];
    while (got.find("\"content\":\" ") == std::string::npos) {
      const std::size_t n = sock.read_some(net::buffer(buf));
      got.append(buf, n);
    }
    sock.close();
  }
  // Polled until the engine has seen it; the 30 s deadline only catches an abort never counted.
  std::string m;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    m = call_http(s.port(), http::verb::get, "/metrics").body;
    if (finished(m, "abort") == 1 || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK_MESSAGE(finished(m, "abort") == 1, "the abort was not counted within 30 s");
  CHECK(sample(m, "tokchron_misuse_total") == 0);
  CHECK(sample(m, "vllm:num_requests_running{model_name=\"tokchron-sim\",engine=\"0\"}") == 0);
  CHECK(sample(m, "vllm:kv_cache_usage_perc{model_name=\"tokchron-sim\",engine=\"0\"}") == 0);
  // The server goes on serving.
  CHECK(post(s.port(), "/v1/completions",
             json{{"model", model}, {"prompt", "x"}, {"max_tokens", 3}, {"ignore_eos", true}})
            .status == 200);
  s.stop();
  const auto tr = s.trace();
  REQUIRE(tr.size() == 2);
  CHECK(tr[0]["finish_reason"] == "aborted");
  CHECK(tr[0]["chunks"].size() >= 1);
  CHECK(tr[0]["chunks"].size() < 3000);
  CHECK(tr[1]["finish_reason"] == "length");
}

TEST_CASE("serve: many streams at once; /metrics request counts equal the trace") {
  running_server s({"--max-batch-size", "8"});
  const int n = 24;
  std::vector<std::thread> clients;
  std::atomic<int> good{0};
  for (int i = 0; i < n; ++i)
    clients.emplace_back([&, i] {
      const bool chat = i % 2 == 0;
      json b = chat ? chat_body(static_cast<unsigned>(5 + i), true, true)
                    : json{{"model", model},      {"prompt", "p q r"},
                           {"max_tokens", 5 + i}, {"ignore_eos", true},
                           {"stream", true},      {"stream_options", {{"include_usage", true}}}};
      const reply r = post(s.port(), chat ? "/v1/chat/completions" : "/v1/completions", b);
      const auto ev = events(r.body);
      if (r.status == 200 && ev.size() >= 3 && ev.back() == "[DONE]" &&
          json::parse(ev[ev.size() - 2])["usage"]["completion_tokens"] == 5 + i)
        ++good;
    });
  for (auto& t : clients) t.join();
  CHECK(good == n);
  const std::string m = call_http(s.port(), http::verb::get, "/metrics").body;
  double total = 0;
  for (const char* r : {"stop", "length", "abort", "error", "repetition"}) total += finished(m, r);
  CHECK(total == n);
  CHECK(sample(m, "tokchron_misuse_total") == 0);
  s.stop();
  CHECK(s.trace().size() == std::size_t(n));
  CHECK(s.traced == std::uint64_t(n));
}

TEST_CASE("serve: --max-requests ends the server after that many answers") {
  running_server s({"--max-requests", "2"});
  CHECK(
      post(s.port(), "/v1/completions", json{{"model", model}, {"prompt", "a"}, {"max_tokens", 2}})
          .status == 200);
  CHECK(
      post(s.port(), "/v1/completions", json{{"model", model}, {"prompt", "b"}, {"max_tokens", 2}})
          .status == 200);
  s.th.join();  // returns by itself
  CHECK(s.trace().size() == 2);
}

TEST_CASE("serve: the command line") {
  CHECK_THROWS_AS((void)parse_serve_options({"--port", "70000"}), batching::usage_error);
  CHECK_THROWS_AS((void)parse_serve_options({"--port", "-1"}), batching::usage_error);
  CHECK_THROWS_AS((void)parse_serve_options({"--names", "prom"}), batching::usage_error);
  for (const std::string_view n : metric_names) {  // every preset parses and builds
    CHECK(parse_serve_options({"--names", std::string(n)}).names == n);
    CHECK_NOTHROW((void)metric_options(n, "m", 4096));
  }
  CHECK_THROWS_AS((void)metric_options("prom", "m", 4096), std::invalid_argument);
  CHECK_THROWS_AS((void)parse_serve_options({"--no-such-option", "1"}), batching::usage_error);
  CHECK_THROWS_AS((void)parse_serve_options({"--max-body", "0"}), batching::usage_error);
  const serve_options o =
      parse_serve_options({"--port=0", "--max-batch-size", "4", "--enable-prompt-tokens-details"});
  CHECK(o.prompt_tokens_details);
  CHECK(o.port == 0);
  CHECK(o.engine.sched.max_batch_size == 4);
}

TEST_CASE("serve: hostile bodies are refused without harm") {
  request_limits lim;
  lim.model = model;
  auto error_of = [&](const std::string& body) {
    auto r = parse_request(endpoint::chat, body, lim);
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(r);
  };
  // 500000 nested arrays (the parser and the document's destructor are iterative).
  const std::string deep = std::string(500000, '[') + std::string(500000, ']');
  CHECK(error_of(deep).status == 400);
  CHECK(error_of(deep).code == "invalid_json");
  // Invalid UTF-8 inside a string: not JSON.
  CHECK(error_of(
            "{\"model\":\"tokchron-sim\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}")
            .code == "invalid_json");
  // A lone surrogate escape is not valid JSON text either; an unknown model is echoed back.
  CHECK(error_of(R"({"model":"\ud800x","messages":[]})").code == "invalid_json");
  const api_error e = error_of(R"({"model":"\u00ff \"quoted\"","messages":[]})");
  CHECK(e.status == 404);
  CHECK(json::parse(error_json(e), nullptr, false).is_object());
  // A prompt of 4096 words with --max-model-len 4096 leaves no room.
  std::string words4096;
  for (int i = 0; i < 4096; ++i) words4096 += "w ";
  CHECK(error_of(json{{"model", model},
                      {"messages", json::array({{{"role", "user"}, {"content", words4096}}})}}
                     .dump())
            .param == "messages");
}

namespace {

// A chat request with a prompt of `words` words.
json long_chat(unsigned words, unsigned max_tokens, bool stream) {
  std::string text;
  for (unsigned i = 0; i < words; ++i) text += "w ";
  json b = {{"model", model},
            {"messages", json::array({{{"role", "user"}, {"content", text}}})},
            {"max_tokens", max_tokens},
            {"ignore_eos", true}};
  if (stream) {
    b["stream"] = true;
    b["stream_options"] = {{"include_usage", true}};
  }
  return b;
}

}  // namespace

TEST_CASE("serve: reasoning streams in vLLM's delta field; usage details equal the trace") {
  // A quarter of each chat answer is reasoning; the first 32 prompt tokens are the shared
  // system prompt (2 KV blocks of 16), cached after the first request computed them.
  running_server s(
      {"--reasoning-fraction", "0.25", "--shared-prefix", "32", "--enable-prompt-tokens-details"});
  std::vector<json> usages;
  for (int round = 0; round < 2; ++round) {
    const reply r = post(s.port(), "/v1/chat/completions", long_chat(40, 20, true));
    REQUIRE(r.status == 200);
    const auto ev = events(r.body);
    REQUIRE(ev.size() >= 4);
    std::size_t thinking = 0, answer = 0;
    bool answer_started = false;
    for (std::size_t i = 1; i + 2 < ev.size(); ++i) {
      const json d = json::parse(ev[i])["choices"][0]["delta"];
      if (d.contains("reasoning")) {
        CHECK(!answer_started);
        CHECK(d["reasoning_content"] == d["reasoning"]);  // vLLM's deprecated copy
        thinking += count_words(d["reasoning"].get<std::string>());
      }
      if (d.contains("content")) {
        answer_started = true;
        answer += count_words(d["content"].get<std::string>());
      }
    }
    CHECK(thinking == 5);  // round(0.25 x 20)
    CHECK(answer == 15);
    usages.push_back(json::parse(ev[ev.size() - 2])["usage"]);
  }
  CHECK(usages[0]["completion_tokens_details"]["reasoning_tokens"] == 5);
  CHECK(!usages[0].contains("prompt_tokens_details"));  // nothing cached yet (vLLM omits 0)
  CHECK(usages[1]["prompt_tokens_details"]["cached_tokens"] == 32);
  CHECK(usages[1]["completion_tokens_details"]["reasoning_tokens"] == 5);

  // Non-streaming: the message's reasoning, and completions (no reasoning parser) untouched.
  const reply full = post(s.port(), "/v1/chat/completions", long_chat(40, 8, false));
  REQUIRE(full.status == 200);
  const json m = json::parse(full.body);
  CHECK(count_words(m["choices"][0]["message"]["reasoning"].get<std::string>()) == 2);
  CHECK(count_words(m["choices"][0]["message"]["content"].get<std::string>()) == 6);
  CHECK(m["usage"]["completion_tokens_details"]["reasoning_tokens"] == 2);
  CHECK(m["usage"]["prompt_tokens_details"]["cached_tokens"] == 32);
  const reply cmpl =
      post(s.port(), "/v1/completions",
           json{{"model", model}, {"prompt", "a b c"}, {"max_tokens", 4}, {"ignore_eos", true}});
  const json cj = json::parse(cmpl.body);
  CHECK(count_words(cj["choices"][0]["text"].get<std::string>()) == 4);
  CHECK(!cj["usage"].contains("completion_tokens_details"));

  // /metrics counts the same reasoning and cached tokens (tokchron's live metrics).
  const std::string metrics = call_http(s.port(), http::verb::get, "/metrics").body;
  CHECK(family_sum(metrics, "tokchron_reasoning_tokens_total") == 12);  // 5 + 5 + 2
  CHECK(family_sum(metrics, "vllm:prompt_tokens_cached_total") == 64);  // 0 + 32 + 32 (+ 0)
  CHECK(family_sum(metrics, "vllm:prefix_cache_hits_total") == 64);
  CHECK(family_sum(metrics, "vllm:prefix_cache_queries_total") == 123);  // 3 x 40 + 3

  s.stop();
  // The trace: reasoning chunks first, then text, and their tokens are the usage's counts.
  const auto tr = s.trace();
  REQUIRE(tr.size() == 4);
  for (std::size_t i = 0; i < 3; ++i) {
    std::uint64_t thinking = 0;
    bool text_seen = false;
    for (const json& c : tr[i]["chunks"]) {
      const bool reasoning = c.size() > 2 && c[2] == "reasoning";
      if (reasoning) {
        CHECK(!text_seen);
        thinking += c[1].get<std::uint64_t>();
      } else {
        text_seen = true;
      }
    }
    const json& u = i < 2 ? usages[i] : m["usage"];
    CHECK(thinking == u["completion_tokens_details"]["reasoning_tokens"].get<std::uint64_t>());
    // The trace's usage fields are the answer's.
    CHECK(tr[i]["usage_reasoning_tokens"] == u["completion_tokens_details"]["reasoning_tokens"]);
    CHECK(tr[i]["cached_prompt_tokens"] == (u.contains("prompt_tokens_details")
                                                ? u["prompt_tokens_details"]["cached_tokens"]
                                                : json(0)));
  }
  CHECK(!tr[3].contains("usage_reasoning_tokens"));  // completions: no reasoning
}

TEST_CASE("serve: the prefix cache's keys are the prompt's tokens, block by block") {
  request_limits lim;
  lim.model = model;
  lim.block_size = 4;
  const auto hashes = [&](endpoint kind, const json& body) {
    json b = body;
    b["model"] = model;
    const auto g = parse_request(kind, b.dump(), lim);
    REQUIRE(std::holds_alternative<generation_request>(g));
    return std::get<generation_request>(g).block_hashes;
  };
  const auto text = [&](const std::string& p) {
    return hashes(endpoint::completions, {{"prompt", p}});
  };
  const auto chat = [&](const json& messages) {
    return hashes(endpoint::chat, {{"messages", messages}});
  };
  const auto base = text("a b c d e f g h i");
  REQUIRE(base.size() == 2);  // 9 tokens: 2 full blocks of 4, the partial one has no hash
  CHECK(text("a b c d e f g h x") == base);        // the difference is past the last block
  CHECK(text(" a  b\tc\nd e f g h\r\n") == base);  // the same tokens, other spaces
  const auto late = text("a b c d e f g x i");
  CHECK(late[0] == base[0]);  // a chain: equal up to the block with the first difference
  CHECK(late[1] != base[1]);
  const auto early = text("x b c d e f g h i");
  CHECK(early[0] != base[0]);
  CHECK(early[1] != base[1]);              // the same block 1, after another block 0
  CHECK(text("b a c d e f g h") != base);  // order matters
  CHECK(hashes(endpoint::completions, {{"prompt", {"a b c d e f g h"}}}) == base);
  CHECK(text("a b c").empty());
  // Token ids are other tokens than words, even words that spell the ids.
  CHECK(hashes(endpoint::completions, {{"prompt", {1, 2, 3, 4, 5}}}).size() == 1);
  CHECK(hashes(endpoint::completions, {{"prompt", {1, 2, 3, 4}}}) != text("1 2 3 4"));
  // Chat: a word's role and message are part of its token. (json::array: a braced list of one
  // json is that json itself under g++, not an array of it.)
  const json user = {{"role", "user"}, {"content", "a b c d e f g h"}};
  const json system = {{"role", "system"}, {"content", "a b c d e f g h"}};
  CHECK(chat(json::array({user})).size() == 2);
  CHECK(chat(json::array({user})) != chat(json::array({system})));
  CHECK(chat(json::array({user})) != base);
  const auto split = chat(
      {{{"role", "user"}, {"content", "a b c d"}}, {{"role", "user"}, {"content", "e f g h"}}});
  CHECK(split[0] == chat(json::array({user}))[0]);
  CHECK(split[1] != chat(json::array({user}))[1]);
  // A conversation's next turn starts with the blocks of the turn before.
  const json turn1 = {system, {{"role", "user"}, {"content", "q r s t u v w"}}};
  json turn2 = turn1;
  turn2.push_back({{"role", "assistant"}, {"content", "an answer"}});
  turn2.push_back({{"role", "user"}, {"content", "next"}});
  const auto h1 = chat(turn1), h2 = chat(turn2);
  REQUIRE(h1.size() == 3);
  CHECK(std::equal(h1.begin(), h1.end(), h2.begin()));
  // --shared-prefix: the first tokens are the same tokens whatever their words.
  lim.shared_prefix = 4;
  CHECK(text("x y z w e f g h") == text("a b c d e f g h"));
  CHECK(text("x y z w e f g h")[1] != text("a b c d e f g x")[1]);
  // Prefix caching off: no hashes.
  lim.block_size = 0;
  CHECK(text("a b c d e f g h i").empty());
}

TEST_CASE("serve: cached tokens are the prompt's leading blocks an earlier prompt computed") {
  running_server s({"--enable-prompt-tokens-details"});
  const auto words = [](const char* w, unsigned n) {
    std::string t;
    for (unsigned i = 0; i < n; ++i) t += std::string(w) + std::to_string(i) + " ";
    return t;
  };
  const auto cached = [&](const std::string& prompt) -> std::uint64_t {
    const reply r =
        post(s.port(), "/v1/completions",
             {{"model", model}, {"prompt", prompt}, {"max_tokens", 2}, {"ignore_eos", true}});
    REQUIRE(r.status == 200);
    const json u = json::parse(r.body)["usage"];
    return u.contains("prompt_tokens_details")
               ? u["prompt_tokens_details"]["cached_tokens"].get<std::uint64_t>()
               : 0;
  };
  CHECK(cached(words("a", 100)) == 0);                   // blocks of 16: 6 full ones
  CHECK(cached(words("a", 100)) == 96);                  // all 6
  CHECK(cached(words("a", 40) + words("b", 60)) == 32);  // blocks 0 and 1; block 2 differs
  CHECK(cached(words("a", 96)) == 80);                   // 6 blocks, the last token computed
  CHECK(cached(words("b", 100)) == 0);
  CHECK(cached(words("a", 40) + words("b", 60)) == 96);  // its own 6 blocks now
  s.stop();
  const auto tr = s.trace();
  REQUIRE(tr.size() == 6);
  const std::uint64_t want[] = {0, 96, 32, 80, 0, 96};
  for (std::size_t i = 0; i < 6; ++i) CHECK(tr[i].value("cached_prompt_tokens", 0) == want[i]);
}

TEST_CASE("serve: without the options, no reasoning field and no usage details") {
  running_server s({"--shared-prefix", "32"});  // cached, but not reported without the flag
  for (int round = 0; round < 2; ++round) {
    const reply r = post(s.port(), "/v1/chat/completions", long_chat(40, 6, true));
    const auto ev = events(r.body);
    REQUIRE(ev.size() >= 4);
    for (std::size_t i = 1; i + 2 < ev.size(); ++i)
      CHECK(!json::parse(ev[i])["choices"][0]["delta"].contains("reasoning"));
    const json u = json::parse(ev[ev.size() - 2])["usage"];
    CHECK(!u.contains("prompt_tokens_details"));
    CHECK(!u.contains("completion_tokens_details"));
  }
  const std::string metrics = call_http(s.port(), http::verb::get, "/metrics").body;
  CHECK(family_sum(metrics, "tokchron_reasoning_tokens_total") <= 0);  // absent or 0
}

TEST_CASE(
    "bad input H3: serve: a prompt token id's refusal names the element and the real reason") {
  request_limits lim;
  lim.model = "m";
  const auto refusal = [&](const std::string& ids) {
    const auto r =
        parse_request(endpoint::completions, R"({"model":"m","prompt":)" + ids + "}", lim);
    REQUIRE(std::holds_alternative<api_error>(r));
    const api_error& e = std::get<api_error>(r);
    CHECK(e.status == 400);
    CHECK(e.param == "prompt");
    return e.message;
  };
  // 2^64-1 is non-negative: it is refused as out of range, not read as int64 (-1).
  CHECK(refusal("[1,18446744073709551615]") ==
        "'prompt[1]' token id 18446744073709551615 is out of range (0 to 4294967295)");
  CHECK(refusal("[4294967296]") ==
        "'prompt[0]' token id 4294967296 is out of range (0 to 4294967295)");
  CHECK(refusal("[3,-2]") == "'prompt[1]' is a negative token id (-2)");
  CHECK(refusal("[-9223372036854775808]") ==
        "'prompt[0]' is a negative token id (-9223372036854775808)");
  CHECK(refusal("[1,2.5]") == "'prompt[1]' must be an integer token id, got 2.5");
  CHECK(refusal("[1,\"a\"]") == "'prompt[1]' must be an integer token id, got a string (\"a\")");
  // The largest id is taken.
  CHECK(std::holds_alternative<generation_request>(
      parse_request(endpoint::completions, R"({"model":"m","prompt":[0,4294967295]})", lim)));
}

#ifdef TOKCHRON_SERVE_PROTOBUF
TEST_CASE(
    "serve: /metrics answers protobuf when Accept asks for it, native histograms for tokchron's "
    "names") {
  running_server s({"--names", "tokchron"});
  REQUIRE(post(s.port(), "/v1/chat/completions", chat_body(4, false, false)).status == 200);
  // Prometheus 2.42 with --enable-feature=native-histograms.
  const reply r = call_http(s.port(), http::verb::get, "/metrics", {},
                            "application/vnd.google.protobuf;proto=io.prometheus.client."
                            "MetricFamily;encoding=delimited;q=0.8,text/plain;version=0.0.4;q=0.5");
  REQUIRE(r.status == 200);
  CHECK(r.content_type == tokchron::prometheus_protobuf_content_type);
  std::map<std::string, io::prometheus::client::MetricFamily> families;
  google::protobuf::io::ArrayInputStream in(r.body.data(), static_cast<int>(r.body.size()));
  for (;;) {
    io::prometheus::client::MetricFamily f;
    bool eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&f, &in, &eof)) {
      REQUIRE(eof);
      break;
    }
    families[f.name()] = f;
  }
  // TTFT: classic buckets and, on the same schema-4 edges, a native histogram of one request.
  REQUIRE(families.count("tokchron_ttft_seconds") == 1);
  const auto& ttft = families["tokchron_ttft_seconds"];
  CHECK(ttft.type() == io::prometheus::client::HISTOGRAM);
  REQUIRE(ttft.metric_size() == 1);
  const auto& h = ttft.metric(0).histogram();
  CHECK(h.sample_count() == 1);
  CHECK(h.bucket_size() > 2);
  CHECK(h.schema() == 4);
  std::int64_t native = static_cast<std::int64_t>(h.zero_count()), running = 0;
  for (const auto d : h.positive_delta()) native += running += d;
  CHECK(native == 1);
  // serve's own families, as the text format has them.
  CHECK(families.count("tokchron_serve_open_connections") == 1);
  CHECK(families.count("tokchron_serve_refused_connections_total") == 1);
  // Any other scraper gets the text format.
  const reply text = call_http(s.port(), http::verb::get, "/metrics");
  CHECK(text.content_type == tokchron::prometheus_content_type);
  CHECK(text.body.find("tokchron_ttft_seconds_bucket") != std::string::npos);
}
#endif

TEST_CASE("bad input H8: serve: every field's refusal names the field and the real reason") {
  request_limits lim;
  lim.model = "m";
  lim.max_model_len = 100;
  // The error for `fields` added to a valid request of `kind`.
  const auto refusal = [&](endpoint kind, const std::string& fields) {
    const std::string base = kind == endpoint::chat
                                 ? R"({"model":"m","messages":[{"role":"user","content":"a b"}])"
                                 : R"({"model":"m","prompt":"a b")";
    const auto r = parse_request(kind, base + (fields.empty() ? "" : "," + fields) + "}", lim);
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(r);
  };
  struct row {
    endpoint kind;
    std::string fields, param, message, code;
  };
  const endpoint cmpl = endpoint::completions, chat = endpoint::chat;
  const std::vector<row> rows = {
      // max_tokens: wrong type, not whole, below 1, past the model length, past 2^64.
      {cmpl, R"("max_tokens":"5")", "max_tokens",
       R"('max_tokens' must be an integer in [1, 98], got a string ("5"))", "invalid_value"},
      {cmpl, R"("max_tokens":true)", "max_tokens",
       "'max_tokens' must be an integer in [1, 98], got a boolean (true)", "invalid_value"},
      {cmpl, R"("max_tokens":2.5)", "max_tokens", "'max_tokens' must be an integer, got 2.5",
       "invalid_value"},
      {cmpl, R"("max_tokens":0)", "max_tokens", "'max_tokens' must be at least 1, got 0",
       "invalid_value"},
      {cmpl, R"("max_tokens":-9223372036854775808)", "max_tokens",
       "'max_tokens' must be at least 1, got -9223372036854775808", "invalid_value"},
      {cmpl, R"("max_tokens":99)", "max_tokens",
       "'max_tokens' must be at most 98, got 99 (this model's maximum context length is 100 "
       "tokens and the prompt has 2)",
       "invalid_value"},
      {cmpl, R"("max_tokens":18446744073709551615)", "max_tokens",
       "'max_tokens' must be at most 98, got 18446744073709551615 (this model's maximum "
       "context length is 100 tokens and the prompt has 2)",
       "invalid_value"},
      {cmpl, R"("max_tokens":1e300)", "max_tokens",
       "'max_tokens' must be at most 98, got 1e+300 (this model's maximum context length is 100 "
       "tokens and the prompt has 2)",
       "invalid_value"},
      {chat, R"("max_completion_tokens":[])", "max_completion_tokens",
       "'max_completion_tokens' must be an integer in [1, 98], got an empty array",
       "invalid_value"},
      {cmpl, R"("max_tokens":4,"min_tokens":5)", "min_tokens",
       "'min_tokens' must be at most max_tokens (4), got 5", "invalid_value"},
      {cmpl, R"("min_tokens":-1)", "min_tokens", "'min_tokens' must be at least 0, got -1",
       "invalid_value"},
      // n and best_of: wrong type, out of range, unsupported.
      {cmpl, R"("n":"1")", "n",
       R"('n' must be an integer in [1, 9223372036854775807], got a string ("1"))",
       "invalid_value"},
      {cmpl, R"("n":0)", "n", "'n' must be at least 1, got 0", "invalid_value"},
      {cmpl, R"("n":2)", "n", "'n' must be 1 (this server gives one choice), got 2",
       "unsupported_value"},
      {cmpl, R"("n":18446744073709551615)", "n",
       "'n' must be at most 9223372036854775807, got 18446744073709551615", "invalid_value"},
      {cmpl, R"("best_of":3)", "best_of",
       "'best_of' must be 1 (this server gives one choice), got 3", "unsupported_value"},
      // Sampling numbers: wrong type and out of range, vLLM's ranges.
      {cmpl, R"("temperature":"hot")", "temperature",
       R"('temperature' must be a number in [0, 2], got a string ("hot"))", "invalid_value"},
      {cmpl, R"("temperature":-0.5)", "temperature", "'temperature' must be in [0, 2], got -0.5",
       "invalid_value"},
      {chat, R"("temperature":2.5)", "temperature", "'temperature' must be in [0, 2], got 2.5",
       "invalid_value"},
      {cmpl, R"("top_p":0)", "top_p", "'top_p' must be in (0, 1], got 0", "invalid_value"},
      {cmpl, R"("top_p":null,"top_k":-2)", "top_k", "'top_k' must be at least -1, got -2",
       "invalid_value"},
      {cmpl, R"("top_k":1.5)", "top_k", "'top_k' must be an integer, got 1.5", "invalid_value"},
      {cmpl, R"("min_p":1.01)", "min_p", "'min_p' must be in [0, 1], got 1.01", "invalid_value"},
      {cmpl, R"("presence_penalty":3)", "presence_penalty",
       "'presence_penalty' must be in [-2, 2], got 3", "invalid_value"},
      {chat, R"("frequency_penalty":{})", "frequency_penalty",
       "'frequency_penalty' must be a number in [-2, 2], got an empty object", "invalid_value"},
      {cmpl, R"("repetition_penalty":0)", "repetition_penalty",
       "'repetition_penalty' must be in (0, 1.8e308], got 0", "invalid_value"},
      {cmpl, R"("seed":9223372036854775808)", "seed",
       "'seed' must be at most 9223372036854775807, got 9223372036854775808", "invalid_value"},
      {cmpl, R"("seed":"7")", "seed",
       R"('seed' must be an integer in [-9223372036854775808, 9223372036854775807], got a string ("7"))",
       "invalid_value"},
      // Booleans, strings and lists.
      {cmpl, R"("stream":1)", "stream", "'stream' must be a boolean, got 1", "invalid_value"},
      {cmpl, R"("ignore_eos":"true")", "ignore_eos",
       R"('ignore_eos' must be a boolean, got a string ("true"))", "invalid_value"},
      {cmpl, R"("stream":true,"stream_options":[])", "stream_options",
       "'stream_options' must be an object, got an empty array", "invalid_value"},
      {cmpl, R"("stream":true,"stream_options":{"include_usage":"yes"})",
       "stream_options.include_usage",
       R"('stream_options.include_usage' must be a boolean, got a string ("yes"))",
       "invalid_value"},
      {cmpl, R"("stream":true,"stream_options":{"continuous_usage_stats":true})",
       "stream_options.continuous_usage_stats",
       "'stream_options.continuous_usage_stats' is not supported (usage comes in one chunk at "
       "the end)",
       "unsupported_value"},
      {cmpl, R"("stream":false,"stream_options":{"include_usage":true})", "stream_options",
       "'stream_options' can only be given when 'stream' is true", "invalid_value"},
      {cmpl, R"("user":5)", "user", "'user' must be a string, got 5", "invalid_value"},
      {cmpl, R"("stop":7)", "stop", "'stop' must be a string or an array of strings, got 7",
       "invalid_value"},
      {cmpl, R"("stop":["a",2])", "stop[1]", "'stop[1]' must be a string, got 2", "invalid_value"},
      {cmpl, R"("stop":["a",""])", "stop[1]", R"('stop[1]' must not be empty, got a string (""))",
       "invalid_value"},
      {cmpl, R"("stop_token_ids":[1,4294967296])", "stop_token_ids[1]",
       "'stop_token_ids[1]' must be at most 4294967295, got 4294967296", "invalid_value"},
      {cmpl, R"("logit_bias":{"12":101})", R"(logit_bias["12"])",
       R"('logit_bias["12"]' must be in [-100, 100], got 101)", "invalid_value"},
      {cmpl, R"("logit_bias":{"x":1})", "logit_bias",
       R"('logit_bias' keys must be token ids (0 to 4294967295), got a string ("x"))",
       "invalid_value"},
      // What the server cannot give is refused as unsupported, not ignored.
      {cmpl, R"("logprobs":2)", "logprobs",
       "'logprobs' is not supported (this server has no token probabilities), got 2",
       "unsupported_value"},
      {cmpl, R"("logprobs":-2)", "logprobs", "'logprobs' must be at least -1, got -2",
       "invalid_value"},
      {chat, R"("logprobs":true)", "logprobs",
       "'logprobs' is not supported (this server has no token probabilities), got a boolean "
       "(true)",
       "unsupported_value"},
      {chat, R"("top_logprobs":21)", "top_logprobs", "'top_logprobs' must be at most 20, got 21",
       "invalid_value"},
      {cmpl, R"("echo":true)", "echo",
       "'echo' is not supported (the prompt is not echoed), got a boolean (true)",
       "unsupported_value"},
      {cmpl, R"("suffix":"x")", "suffix", R"('suffix' is not supported, got a string ("x"))",
       "unsupported_value"},
      {cmpl, R"("model":7)", "model", "'model' must be a string, got 7", "invalid_value"},
  };
  for (const row& r : rows) {
    CAPTURE(r.fields);
    const api_error e = refusal(r.kind, r.fields);
    CHECK(e.status == 400);
    CHECK(e.param == r.param);
    CHECK(e.message == r.message);
    CHECK(e.code == r.code);
  }
  // The prompt's shapes: each refusal says what was given.
  for (const auto& shape : std::vector<std::pair<std::string, std::string>>{
           {"7",
            "'prompt' must be a string, an array of one string or a non-empty array of "
            "token ids, got 7"},
           {"[]",
            "'prompt' must be a string, an array of one string or a non-empty array of "
            "token ids, got an empty array"},
           {R"(["a","b"])",
            "'prompt' must be a string, an array of one string or a non-empty "
            "array of token ids, got an array of 2 elements"},
           {"[1.5,2]", "'prompt[0]' must be an integer token id, got 1.5"}}) {
    const std::string& prompt = shape.first;  // (a structured binding cannot be captured)
    CAPTURE(prompt);
    const auto r = parse_request(cmpl, R"({"model":"m","prompt":)" + prompt + "}", lim);
    REQUIRE(std::holds_alternative<api_error>(r));
    CHECK(std::get<api_error>(r).message == shape.second);
    CHECK(std::get<api_error>(r).param == "prompt");
  }
  // Chat messages: the element, its role and its content parts are named.
  const auto chat_refusal = [&](const std::string& messages) {
    const auto r = parse_request(chat, R"({"model":"m","messages":)" + messages + "}", lim);
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(r);
  };
  struct msg_row {
    std::string messages, param, message;
  };
  const std::vector<msg_row> msgs = {
      {R"({})", "messages", "'messages' must be a non-empty array, got an empty object"},
      {R"([])", "messages", "'messages' must be a non-empty array, got an empty array"},
      {R"([{"role":"user","content":"a"},"hi"])", "messages[1]",
       R"('messages[1]' must be an object, got a string ("hi"))"},
      {R"([{"content":"a"}])", "messages[0].role", "'messages[0].role' is required"},
      {R"([{"role":"robot","content":"a"}])", "messages[0].role",
       R"('messages[0].role' must be one of "system", "developer", "user", "assistant", "tool", "function", got a string ("robot"))"},
      {R"([{"role":1,"content":"a"}])", "messages[0].role",
       R"('messages[0].role' must be one of "system", "developer", "user", "assistant", "tool", "function", got 1)"},
      {R"([{"role":"user"}])", "messages[0].content",
       "'messages[0].content' is required for a user message"},
      {R"([{"role":"user","content":5}])", "messages[0].content",
       "'messages[0].content' must be a string or an array of content parts, got 5"},
      {R"([{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}}]}])",
       "messages[0].content[1].type",
       R"('messages[0].content[1].type' is not supported (this server takes text only), got a string ("image_url"))"},
      {R"([{"role":"user","content":[{"type":"txt","text":"a"}]}])", "messages[0].content[0].type",
       R"('messages[0].content[0].type' must be "text", got a string ("txt"))"},
      {R"([{"role":"user","content":[{"type":"text","text":3}]}])", "messages[0].content[0].text",
       "'messages[0].content[0].text' must be a string, got 3"},
      {R"([{"role":"user","content":[{"text":"a"}]}])", "messages[0].content[0].type",
       "'messages[0].content[0].type' is required, got null"},
      {R"([{"role":"user","content":"a","name":[]}])", "messages[0].name",
       "'messages[0].name' must be a string, got an empty array"},
  };
  for (const msg_row& r : msgs) {
    CAPTURE(r.messages);
    const api_error e = chat_refusal(r.messages);
    CHECK(e.status == 400);
    CHECK(e.param == r.param);
    CHECK(e.message == r.message);
  }
  // Not JSON: where and why.
  const auto nj = parse_request(cmpl, R"({"model":"m","prompt":"a","max_tokens":1e400})", lim);
  REQUIRE(std::holds_alternative<api_error>(nj));
  CHECK(std::get<api_error>(nj).message ==
        "the request body is not valid JSON: number overflow parsing '1e400'");
  const auto syntax = parse_request(cmpl, R"({"model":"m",})", lim);
  REQUIRE(std::holds_alternative<api_error>(syntax));
  CHECK(std::get<api_error>(syntax).message.rfind(
            "the request body is not valid JSON: parse error at line 1, column 14: syntax error "
            "while "
            "parsing object key - unexpected '}'; expected string literal",
            0) == 0);
  CHECK(std::get<api_error>(syntax).code == "invalid_json");
  // Valid edges pass: an assistant message without content, whole numbers written as floats,
  // null for "not given", the extremes of each range, min_tokens raising the natural stop.
  for (const std::string& ok :
       {std::string(R"("max_tokens":98,"temperature":0,"top_p":1,"top_k":-1,"min_p":1,)"
                    R"("presence_penalty":-2,"frequency_penalty":2,"seed":-9223372036854775808,)"
                    R"("n":1.0,"best_of":null,"stop":["x"],"logit_bias":{"4294967295":-100},)"
                    R"("logprobs":null,"echo":false,"user":"u")"),
        std::string(R"("max_tokens":5.0,"stream":true,"stream_options":{"include_usage":true,)"
                    R"("continuous_usage_stats":false})")}) {
    CAPTURE(ok);
    CHECK(std::holds_alternative<generation_request>(
        parse_request(cmpl, R"({"model":"m","prompt":"a b",)" + ok + "}", lim)));
  }
  CHECK(std::holds_alternative<generation_request>(parse_request(
      chat,
      R"({"model":"m","messages":[{"role":"system","content":"s"},{"role":"assistant","content":null},)"
      R"({"role":"user","content":[{"type":"text","text":"a"}]}],"logprobs":false,"top_logprobs":0})",
      lim)));
  lim.eos_range = 1;  // the natural answer is 1 token; min_tokens holds it to 7
  const auto mt = parse_request(cmpl, R"({"model":"m","prompt":"a","min_tokens":7})", lim);
  REQUIRE(std::holds_alternative<generation_request>(mt));
  CHECK(std::get<generation_request>(mt).output_tokens == 7);
  CHECK(std::get<generation_request>(mt).stops);
}

namespace {

// A connection that sends bytes as written and reads answers as sent (HTTP/1.1's rules); a
// read that waits more than 10 s fails the test instead of hanging it.
struct raw_connection {
  net::io_context ioc;
  tcp::socket s{ioc};
  beast::flat_buffer buf;
  explicit raw_connection(std::uint16_t port) {
    s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    const timeval tv{10, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void send(const std::string& bytes) { net::write(s, net::buffer(bytes)); }
  // One response (`head`: to a HEAD request, so no body follows the header).
  http::response<http::string_body> read(bool head = false) {
    http::response_parser<http::string_body> p;
    p.skip(head);
    p.body_limit(1u << 26);
    http::read(s, buf, p);
    return p.release();
  }
  // Whether the server closed the connection (nothing more than what was read comes).
  bool closed_by_server() {
    if (buf.size() > 0) return false;
    char c = 0;
    beast::error_code ec;
    s.read_some(net::buffer(&c, 1), ec);
    return ec == net::error::eof || ec == net::error::connection_reset;
  }
};

std::string completion_body() {
  return R"({"model":"tokchron-sim","prompt":"a b","max_tokens":2})";
}

std::string nested(std::size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

}  // namespace

TEST_CASE("bad input H10: serve: a field holding deep nesting is refused, nothing recurses") {
  request_limits lim;
  lim.model = "m";
  auto refusal = [&](endpoint kind, const std::string& body) {
    const auto r = parse_request(kind, body, lim);
    REQUIRE(std::holds_alternative<api_error>(r));
    const api_error e = std::get<api_error>(r);
    CHECK(e.status == (e.code == "model_not_found" ? 404u : 400u));
    CHECK(e.message.size() < 400);  // what it quotes of the request is bounded
    return e;
  };
  // The issue's request: a field holding 400 KB of nested arrays, quoted in the error (a
  // recursive dump overflowed serve's stack). Every field and depth: refused before a document
  // is built, naming the depth limit and where it was passed.
  const std::string cmpl = R"({"model":"m","prompt":"a",)";
  for (const std::string field : {"\"max_tokens\":", "\"stop\":", "\"logit_bias\":{\"1\":",
                                  "\"stream_options\":{\"include_usage\":", "\"user\":"}) {
    CAPTURE(field);
    const std::string body =
        cmpl + field + nested(200000) + (field.find('{') != std::string::npos ? "}}" : "}");
    const api_error e = refusal(endpoint::completions, body);
    CHECK(e.code == "invalid_json");
    CHECK(e.message.find("more than 128 levels deep (at byte " +
                         std::to_string(cmpl.size() + field.size() + 127 -
                                        (field.find('{') != std::string::npos ? 1 : 0)) +
                         ")") != std::string::npos);
  }
  CHECK(refusal(endpoint::chat, R"({"model":"m","messages":)" + nested(300000) + "}").code ==
        "invalid_json");
  CHECK(
      refusal(endpoint::completions, R"({"model":"m","prompt":[1,)" + nested(300000) + "]}").code ==
      "invalid_json");
  // Objects count as arrays do; brackets inside strings do not count.
  std::string objects;  // 128 levels, in a field of the body's object: 129
  for (int i = 0; i < 128; ++i) objects += "{\"a\":";
  objects += "1" + std::string(128, '}');
  CHECK(refusal(endpoint::completions, cmpl + "\"user\":" + objects + "}").code == "invalid_json");
  CHECK(std::holds_alternative<generation_request>(parse_request(
      endpoint::completions,
      R"({"model":"m","prompt":")" + std::string(100000, '[') + R"(\"[{","max_tokens":2})", lim)));
  // At the limit (128 levels, the body's own object included) a field is checked as usual and
  // quoted by its type and size, never printed.
  const api_error at_limit =
      refusal(endpoint::completions, cmpl + "\"max_tokens\":" + nested(127) + "}");
  CHECK(at_limit.param == "max_tokens");
  CHECK(at_limit.message.find("got an array of 1 element") != std::string::npos);
  CHECK(
      refusal(endpoint::completions, R"({"model":"m","prompt":[1,)" + nested(126) + "]}").message ==
      "'prompt[1]' must be an integer token id, got an array of 1 element");
  // Long scalars are quoted by their first bytes, cut on a character boundary.
  const api_error unknown_model = refusal(
      endpoint::completions, R"({"model":")" + std::string(1u << 20, 'x') + R"(","prompt":"a"})");
  CHECK(unknown_model.status == 404);
  CHECK(unknown_model.message.find("xxx...' does not exist") != std::string::npos);
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";  // é, 2 bytes
  // (32 bytes would end inside the 16th character: 31 are quoted)
  const api_error str =
      refusal(endpoint::completions, cmpl + "\"max_tokens\":\"x" + accents + "\"}");
  CHECK(str.message.find("got a string (\"x" + accents.substr(0, 30) + "\"...)") !=
        std::string::npos);
  CHECK(json::parse(error_json(str))["error"]["message"] == str.message);
  // A parse error quotes at most 256 bytes of the token the parser read.
  CHECK(refusal(endpoint::completions,
                R"({"model":"m","prompt":")" + std::string(100000, 'y') + "\x01\"}")
            .code == "invalid_json");

  // Over HTTP, the 400 KB body (under --max-body) is answered and serving goes on.
  running_server s({}, "1048576");
  const std::string body =
      R"({"model":"tokchron-sim","prompt":"a","max_tokens":)" + nested(200000) + "}";
  REQUIRE(body.size() > 400000);
  const reply r = call_http(s.port(), http::verb::post, "/v1/completions", body);
  CHECK(r.status == 400);
  CHECK(json::parse(r.body)["error"]["code"] == "invalid_json");
  CHECK(call_http(s.port(), http::verb::post, "/v1/completions", completion_body()).status == 200);
}

TEST_CASE(
    "bad input H11: serve answers HEAD, Expect, absolute-form targets and transfer codings "
    "as HTTP/1.1 says") {
  running_server s;
  SUBCASE("HEAD: GET's status and header, no body; the connection stays open") {
    raw_connection c(s.port());
    const std::string models = call_http(s.port(), http::verb::get, "/v1/models").body;
    c.send("HEAD /v1/models HTTP/1.1\r\nHost: h\r\n\r\nGET /health HTTP/1.1\r\nHost: h\r\n\r\n");
    const auto head = c.read(true);
    CHECK(head.result_int() == 200);
    CHECK(head[http::field::content_length] == std::to_string(models.size()));
    CHECK(head.body().empty());
    CHECK(c.read().result_int() == 200);  // the next response follows the header directly
    c.send(
        "HEAD /v1/completions HTTP/1.1\r\nHost: h\r\n\r\nHEAD /nothing HTTP/1.1\r\nHost: "
        "h\r\n\r\nGET /health HTTP/1.1\r\nHost: h\r\n\r\n");
    const auto post_only = c.read(true);
    CHECK(post_only.result_int() == 405);
    CHECK(post_only[http::field::allow] == "POST");
    CHECK(c.read(true).result_int() == 404);
    CHECK(c.read().result_int() == 200);
    const auto get_only = call_http(s.port(), http::verb::post, "/health", "{}");
    CHECK(get_only.status == 405);
  }
  SUBCASE("Expect: 100-continue gets 100 before the body is sent, then the answer") {
    raw_connection c(s.port());
    const std::string body = completion_body();
    c.send("POST /v1/completions HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n");
    CHECK(c.read().result_int() == 100);
    c.send(body);
    const auto r = c.read();
    CHECK(r.result_int() == 200);
    CHECK(json::parse(r.body())["usage"]["completion_tokens"] == 2);
    // A request the header refuses gets its final answer at once, and the connection closes
    // (the body is never read).
    raw_connection d(s.port());
    d.send(
        "POST /v1/nothing HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: "
        "10\r\n\r\n");
    const auto nf = d.read();
    CHECK(nf.result_int() == 404);
    CHECK(!nf.keep_alive());
    CHECK(d.closed_by_server());
    // A body larger than --max-body: 413 at once.
    raw_connection e(s.port());
    e.send(
        "POST /v1/completions HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: "
        "100000\r\n\r\n");
    CHECK(e.read().result_int() == 413);
    // Another expectation: 417.
    raw_connection f(s.port());
    f.send("POST /v1/completions HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
    CHECK(f.read().result_int() == 417);
  }
  SUBCASE("absolute-form targets are routed by their path (RFC 9112 section 3.2.2)") {
    raw_connection c(s.port());
    const std::string body = completion_body();
    c.send("POST http://127.0.0.1:" + std::to_string(s.port()) +
           "/v1/completions?x=1 HTTP/1.1\r\nHost: elsewhere\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
    CHECK(c.read().result_int() == 200);
    c.send(
        "GET HTTPS://h/health HTTP/1.1\r\nHost: h\r\n\r\nGET http://h HTTP/1.1\r\nHost: "
        "h\r\n\r\nGET ftp://h/health HTTP/1.1\r\nHost: h\r\n\r\n");
    CHECK(c.read().result_int() == 200);
    CHECK(c.read().result_int() == 404);  // the path is "/"
    CHECK(c.read().result_int() == 404);
  }
  SUBCASE("transfer codings: chunked alone is read; anything else is refused and closed") {
    const std::string body = completion_body();
    char size[16];
    std::snprintf(size, sizeof size, "%zx", body.size());
    const std::string chunked = std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n";
    struct te_case {
      const char* fields;
      unsigned version, status;
    };
    for (const te_case& t : std::vector<te_case>{
             {"Transfer-Encoding: chunked\r\n", 11, 200},
             {"Transfer-Encoding: Chunked \r\n", 11, 200},
             {"Transfer-Encoding: gzip, chunked\r\n", 11, 501},
             {"Transfer-Encoding: x-custom ;q=1, chunked\r\n", 11, 501},
             {"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 11, 501},
             {"Transfer-Encoding: chunked, gzip\r\n", 11, 400},
             {"Transfer-Encoding: gzip\r\n", 11, 400},
             {"Transfer-Encoding: chunked, chunked\r\n", 11, 400},
             {"Transfer-Encoding: ,\r\n", 11, 400},
             {"Transfer-Encoding: chunked\r\n", 10, 400}}) {
      CAPTURE(t.fields);
      CAPTURE(t.version);
      raw_connection c(s.port());
      c.send(std::string("POST /v1/completions HTTP/1.") + (t.version == 10 ? "0" : "1") +
             "\r\nHost: h\r\n" + t.fields + "\r\n" + chunked);
      const auto r = c.read();
      CHECK(r.result_int() == t.status);
      if (t.status != 200) {
        const json e = json::parse(r.body())["error"];
        CHECK(e["code"] ==
              (t.status == 501 ? "unsupported_transfer_encoding" : "bad_transfer_encoding"));
        CHECK(c.closed_by_server());
      }
    }
  }
  SUBCASE("an unrecognised method is 501") {
    raw_connection c(s.port());
    c.send("BREW /health HTTP/1.1\r\nHost: h\r\n\r\n");
    CHECK(c.read().result_int() == 501);
  }
  CHECK(call_http(s.port(), http::verb::get, "/health").status == 200);
}

TEST_CASE("serve: the trace is written as requests finish, not at exit") {
  running_server s;
  for (int i = 0; i < 3; ++i)
    REQUIRE(call_http(s.port(), http::verb::post, "/v1/completions", completion_body()).status ==
            200);
  // Before any shutdown: the three finished requests are in the file, whole lines, anchored.
  const auto rows = s.trace();
  REQUIRE(rows.size() == 3);
  for (const json& r : rows) {
    CHECK(r["finish_reason"] == "length");
    CHECK(r.contains("clock_wall_ns"));
  }
  s.stop();
  CHECK(s.trace().size() == 3);
  CHECK(s.traced == 3);
}
