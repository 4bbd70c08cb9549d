// SPDX-License-Identifier: MIT
// Fuzz target: the request path of `batching-executor serve` (tools/executor/serve): the raw
// bytes of an HTTP/1.1 request through Boost.Beast's request parser, as serve's session reads
// them (a `request_parser<string_body>` with serve's body limit), then serve's routing and its
// OpenAI request-body checks (`parse_request`, openai.cpp).
// Input: byte 0 mod 4 picks the mode: 0 and 1, the rest is raw HTTP (byte 0 / 4 + 1 bytes the
// largest read, the cuts seeded by bytes 1-4); 2 and 3, the rest is the body of a POST to
// /v1/completions (2) or /v1/chat/completions (3).
// Properties: nothing crashes or throws; the parser reads the same request however the bytes
// are cut into reads (or refuses it both ways); every refusal is a 4xx with a non-empty reason
// whose error JSON parses back with that message (and, for a bad field, names it in `param`),
// and whose size does not grow with the request (what it quotes of the request is bounded); an
// accepted body gives a request within the limits (prompt and output within the context, reasoning
// within the output, the shared prefix within the prompt); serve's verdict on a Transfer-Encoding
// it accepts agrees with how Beast frames the body (chunked or not).
// Each input runs on a thread with a 256 KiB stack: recursion on the request's nesting (a field
// holding 4000 nested arrays, within --max-body here) overflows it and is a finding, where the
// main thread's 8 MiB would hide it until a 400 KB body crashes serve.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <pthread.h>

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "http_rules.hpp"
#include "openai.hpp"

namespace http = boost::beast::http;
namespace sv = batching::serve;

namespace {

// serve's limits for this run: `--max-body` small enough that an input can pass it.
constexpr std::uint64_t max_body = 4096;
const sv::request_limits& limits() {
  static const sv::request_limits l = [] {
    sv::request_limits x;
    x.model = "m";
    x.max_model_len = 512;
    x.eos_range = 64;
    x.max_prompt_tokens = 300;
    x.reasoning_fraction = 0.25;
    x.shared_prefix = 8;
    x.block_size = 16;  // prefix caching on: the prompt's block hashes are made too
    return x;
  }();
  return l;
}

// `text` as a client reads it back from the error JSON: serve echoes request text in its
// messages and replaces invalid UTF-8 with U+FFFD rather than failing (error_json).
std::string as_sent(const std::string& text) {
  return nlohmann::json::parse(
             nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

void check_refusal(unsigned status, const sv::api_error& e) {
  TOKCHRON_FUZZ_CHECK(status >= 400 && status <= 499);
  TOKCHRON_FUZZ_CHECK(e.status == status);
  TOKCHRON_FUZZ_CHECK(!e.message.empty());
  // What a refusal quotes of the request is bounded (a string's first bytes, a target's, an
  // array's size), so a refusal is never larger than this whatever the request.
  TOKCHRON_FUZZ_CHECK(e.message.size() <= 1024);
  TOKCHRON_FUZZ_CHECK(e.param.size() <= 128);
  const auto j = nlohmann::json::parse(sv::error_json(e), nullptr, false);
  TOKCHRON_FUZZ_CHECK(j.is_object() && j.contains("error") && j["error"].is_object());
  const auto& err = j["error"];
  TOKCHRON_FUZZ_CHECK(err.contains("message") && err["message"] == as_sent(e.message));
  TOKCHRON_FUZZ_CHECK(e.param.empty() ? err["param"].is_null() : err["param"] == as_sent(e.param));
}

// serve's OpenAI body checks: a request within the limits, or a 4xx naming the reason.
void check_body(sv::endpoint kind, std::string_view body) {
  const auto parsed = sv::parse_request(kind, body, limits());
  if (const auto* e = std::get_if<sv::api_error>(&parsed)) return check_refusal(e->status, *e);
  const auto& g = std::get<sv::generation_request>(parsed);
  const auto& l = limits();
  TOKCHRON_FUZZ_CHECK(g.kind == kind);
  TOKCHRON_FUZZ_CHECK(g.prompt_tokens >= 1 && g.prompt_tokens < l.max_model_len);
  TOKCHRON_FUZZ_CHECK(g.prompt_tokens <= l.max_prompt_tokens);
  TOKCHRON_FUZZ_CHECK(g.max_tokens >= 1);
  TOKCHRON_FUZZ_CHECK(std::uint64_t{g.prompt_tokens} + g.max_tokens <= l.max_model_len);
  TOKCHRON_FUZZ_CHECK(g.output_tokens >= 1 && g.output_tokens <= g.max_tokens);
  TOKCHRON_FUZZ_CHECK(g.reasoning_tokens <= g.output_tokens);
  TOKCHRON_FUZZ_CHECK(kind == sv::endpoint::chat || g.reasoning_tokens == 0);
  TOKCHRON_FUZZ_CHECK(g.block_hashes.size() == g.prompt_tokens / l.block_size);
}

struct parsed_request {
  boost::system::error_code ec;
  bool done = false, chunked = false;
  unsigned version = 11;
  std::string method, target, body;
  std::string transfer_encoding;  // the field lines joined with ", "
  bool has_transfer_encoding = false;
  // The same request read (the error of a request not read may differ with the cuts: Beast
  // may find a bad token in a whole buffer before it finds the header's end missing).
  bool operator==(const parsed_request& o) const {
    return done == o.done && method == o.method && target == o.target && body == o.body;
  }
};

// Reads one request from `bytes` as serve's session does (its parser settings), fed in the
// pieces `cuts` gives, then the end of the stream.
parsed_request read_request(std::string_view bytes, const std::vector<std::size_t>& cuts) {
  http::request_parser<http::string_body> p;
  p.body_limit(max_body);
  parsed_request r;
  std::string pending;  // what the parser has not consumed (Beast's read keeps it in a buffer)
  std::size_t at = 0;
  for (const std::size_t n : cuts) {
    pending.append(bytes.substr(at, n));
    at += n;
    while (!pending.empty() && !p.is_done()) {
      boost::system::error_code ec;
      const std::size_t used = p.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == http::error::need_more) break;
      if (ec) {
        r.ec = ec;
        return r;
      }
      if (used == 0) break;
    }
    if (p.is_done()) break;
  }
  if (!p.is_done()) {
    boost::system::error_code ec;
    if (p.got_some()) p.put_eof(ec);
    if (ec || !p.is_done()) {
      r.ec = ec ? ec : http::error::end_of_stream;
      return r;
    }
  }
  r.done = true;
  r.chunked = p.chunked();
  const auto& req = p.get();
  r.version = req.version();
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  r.body = req.body();
  for (const auto& f : req) {
    if (f.name() != http::field::transfer_encoding) continue;
    if (r.has_transfer_encoding) r.transfer_encoding += ", ";
    r.transfer_encoding += std::string(f.value());
    r.has_transfer_encoding = true;
  }
  return r;
}

// serve's session on one request (tools/executor/serve/server.cpp, session::on_request and
// handle): a parse error is 400 (413 past the body limit), a closed stream closes; then the
// routes, and parse_request on the two completion endpoints.
void route(const parsed_request& r, http::verb method) {
  if (!r.done) {
    if (r.ec == http::error::end_of_stream || r.ec == http::error::partial_message) return;
    sv::api_error e;
    if (r.ec == http::error::body_limit) {
      e.status = 413;
      e.message = "the request body is larger than the server's limit of " +
                  std::to_string(max_body) + " bytes";
    } else {
      e.message = "malformed HTTP request: " + r.ec.message();
    }
    return check_refusal(e.status, e);
  }
  // The framing serve accepts is the one Beast read: chunked exactly when serve says chunked.
  std::string_view coding;
  const auto te =
      sv::check_transfer_encoding(r.has_transfer_encoding, r.transfer_encoding, r.version, coding);
  if (te == sv::transfer_verdict::chunked) TOKCHRON_FUZZ_CHECK(r.chunked);
  if (te == sv::transfer_verdict::none) TOKCHRON_FUZZ_CHECK(!r.chunked);
  if (te != sv::transfer_verdict::none && te != sv::transfer_verdict::chunked) return;  // 400/501
  const std::string_view target = sv::target_path(r.target);
  if (target == "/health" || target == "/v1/models" || target == "/metrics") return;
  const bool chat = target == "/v1/chat/completions";
  if (!chat && target != "/v1/completions") return;  // 404 with its message
  if (method != http::verb::post) return;            // 405
  check_body(chat ? sv::endpoint::chat : sv::endpoint::completions, r.body);
}

void one_input(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return;
  const int mode = data[0] % 4;
  if (mode >= 2) {
    check_body(mode == 3 ? sv::endpoint::chat : sv::endpoint::completions,
               std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
    return;
  }
  if (size < 5) return;
  const std::size_t largest = 1 + data[0] / 4;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 5, size - 5);
  const std::vector<std::size_t> cuts = tokchron_fuzz::random_cuts(bytes.size(), largest, data + 1);
  const parsed_request split = read_request(bytes, cuts);
  const parsed_request whole = read_request(bytes, {bytes.size()});
  TOKCHRON_FUZZ_CHECK(split == whole);
  for (const parsed_request* r : {&split, &whole})
    route(*r, r->done ? http::string_to_verb(r->method) : http::verb::unknown);
}

// One worker thread with a 256 KiB stack runs every input (made once: a thread per input would
// cost more than the input). 256 KiB is what serve's request path needs with room to spare under
// ASan (its deepest document is max_json_depth levels, parsed iteratively), far less than 4000
// levels of recursion take.
class small_stack_worker {
 public:
  small_stack_worker() {
    pthread_attr_t attr;
    TOKCHRON_FUZZ_CHECK(pthread_attr_init(&attr) == 0);
    TOKCHRON_FUZZ_CHECK(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
    TOKCHRON_FUZZ_CHECK(pthread_create(&thread_, &attr, &small_stack_worker::main, this) == 0);
    pthread_attr_destroy(&attr);
  }
  void run(const std::uint8_t* data, std::size_t size) {
    std::unique_lock<std::mutex> lock(mu_);
    data_ = data;
    size_ = size;
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !pending_; });
  }

 private:
  static void* main(void* self) {
    auto& w = *static_cast<small_stack_worker*>(self);
    std::unique_lock<std::mutex> lock(w.mu_);
    for (;;) {
      w.cv_.wait(lock, [&w] { return w.pending_; });
      one_input(w.data_, w.size_);
      w.pending_ = false;
      w.cv_.notify_all();
    }
  }
  pthread_t thread_{};
  std::mutex mu_;
  std::condition_variable cv_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool pending_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static small_stack_worker* const worker = new small_stack_worker;  // lives as long as the run
  worker->run(data, size);
  return 0;
}
