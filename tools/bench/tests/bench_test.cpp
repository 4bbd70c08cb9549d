// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// tokchron-bench against its scripted SSE server (scripted_server.hpp): what each request
// records, its failures with their reasons, timeouts that end a silent stream, and the number of
// requests the open and closed loops send.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_cli.hpp"
#include "client.hpp"
#include "scripted_server.hpp"
#include "tokchron/io/trace_json_reader.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"

#if defined(__linux__)
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#endif

namespace tb = tokchron_bench;
namespace tc = tokchron;
using namespace std::chrono_literals;

namespace {

// One request (closed loop, one user, max_requests 1) of `prompt` words asking for `output`
// tokens from `srv` with model `model`.
tb::load_result one(const tb::scripted_server& srv, const std::string& model,
                    tb::endpoint_kind e = tb::endpoint_kind::completions, tb::timeouts lim = {},
                    std::uint32_t prompt = 7, std::uint32_t output = 5,
                    tb::receive_time rx = tb::receive_time::kernel) {
  tb::load_options o;
  o.tgt = tb::parse_target("http://127.0.0.1:" + std::to_string(srv.port()),
                           e == tb::endpoint_kind::chat ? "chat" : "completions", model);
  o.work.mode = tokchron_loadgen::arrival_mode::closed;
  o.work.users = 1;
  o.work.max_requests = 1;
  o.work.duration_s = 30;
  o.work.prompt =
      tokchron_loadgen::distribution::fixed(prompt, tokchron_loadgen::quantity::prompt_length);
  o.work.output =
      tokchron_loadgen::distribution::fixed(output, tokchron_loadgen::quantity::output_length);
  o.limits = lim;
  o.rx_time = rx;
  return tb::run_load(o);
}

std::vector<tc::chunk_kind> kinds(const tb::timeline& tl) {
  std::vector<tc::chunk_kind> k;
  for (const auto& c : tl.store().chunks()) k.push_back(c.kind);
  return k;
}

}  // namespace

TEST_CASE("sse_decoder: an event is recorded at the read that completed its last data line") {
  tb::timeline tl;
  const auto t0 = tb::clock::time_point(1s);
  REQUIRE(tl.arrive(t0) == tc::record_status::ok);
  tb::sse_decoder d(tb::endpoint_kind::chat, tl);
  CHECK(d.feed("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\nda",
               t0 + 1ms));
  CHECK(d.feed("ta: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\r\n", t0 + 2ms));
  CHECK(tl.store().chunks().size() == 1);  // the second event has no blank line yet
  CHECK(d.feed("\r\n: a comment\nevent: x\n\n", t0 + 3ms));
  CHECK(
      d.feed("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n"
             "data: [DONE]\n\n",
             t0 + 4ms));
  CHECK(d.done());
  CHECK_FALSE(d.failed());
  CHECK_FALSE(tl.finished());  // the decoder's owner finishes it
  CHECK(d.finish_timeline() == tc::record_status::ok);
  const auto& c = tl.store().chunks();
  REQUIRE(c.size() == 4);
  CHECK(kinds(tl) == std::vector<tc::chunk_kind>{tc::chunk_kind::empty, tc::chunk_kind::text,
                                                 tc::chunk_kind::usage, tc::chunk_kind::done});
  CHECK(c[0].time == t0 + 1ms);
  // Its data line ended at 2 ms; the blank line that dispatched it came at 3 ms.
  CHECK(c[1].time == t0 + 2ms);
  CHECK(c[1].tokens == 1);
  CHECK(c[2].time == t0 + 4ms);
  CHECK(tl.prompt_tokens() == 3u);
  CHECK(tl.reported_output_tokens() == 1u);
  CHECK(tl.succeeded());
}

TEST_CASE("sse_decoder: reasoning deltas (both field names) and usage details") {
  tb::timeline tl;
  const auto t0 = tb::clock::time_point(1s);
  REQUIRE(tl.arrive(t0) == tc::record_status::ok);
  tb::sse_decoder d(tb::endpoint_kind::chat, tl);
  CHECK(
      d.feed("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
             "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"let\"}}]}\n\n",
             t0 + 1ms));
  CHECK(d.feed("data: {\"choices\":[{\"delta\":{\"reasoning\":\" me\",\"content\":null}}]}\n\n",
               t0 + 2ms));
  // The delta where the thinking ends may carry both: a reasoning and a text chunk, same time.
  CHECK(d.feed(
      "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\".\",\"content\":\"A\"}}]}"
      "\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"B\"},\"finish_reason\":\"length\"}]}"
      "\n\n",
      t0 + 3ms));
  CHECK(
      d.feed("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":5,"
             "\"prompt_tokens_details\":{\"cached_tokens\":4},"
             "\"completion_tokens_details\":{\"reasoning_tokens\":3}}}\n\ndata: [DONE]\n\n",
             t0 + 4ms));
  CHECK_FALSE(d.failed());
  using k = tc::chunk_kind;
  CHECK(kinds(tl) == std::vector<k>{k::empty, k::reasoning, k::reasoning, k::reasoning, k::text,
                                    k::text, k::usage, k::done});
  const auto& c = tl.store().chunks();
  REQUIRE(c.size() == 8);
  CHECK(c[1].time == t0 + 1ms);
  CHECK(c[3].time == t0 + 3ms);
  CHECK(c[4].time == t0 + 3ms);
  CHECK(c[3].tokens == 1);
  CHECK(tl.cached_prompt_tokens() == 4u);
  CHECK(tl.reported_reasoning_tokens() == 3u);
  CHECK(tl.reported_output_tokens() == 5u);
  // A reasoning field that is not a string is a broken event.
  tb::timeline t2;
  REQUIRE(t2.arrive(t0) == tc::record_status::ok);
  tb::sse_decoder d2(tb::endpoint_kind::chat, t2);
  CHECK_FALSE(d2.feed("data: {\"choices\":[{\"delta\":{\"reasoning\":7}}]}\n\n", t0));
  CHECK(d2.error().find("not a string") != std::string::npos);
}

TEST_CASE("sse_decoder: malformed lines and events fail with the reason") {
  const auto t = tb::clock::time_point(1s);
  struct bad {
    std::string bytes, reason;
  };
  const std::vector<bad> cases{
      {"data: {\"choices\": [oops\n\n", "SSE event 1 is not a JSON object"},
      {"this is not an SSE field\n", "SSE line 1 is not a field"},
      {"data: {\"error\":{\"message\":\"boom\"}}\n\n", "server error in the stream: boom"},
      {"data: {\"id\":1}\n\n", "has neither choices nor usage"},
      {"data: {\"choices\":[{\"text\":3}]}\n\n", "text is not a string"},
      {"data: [DONE]\n\ndata: [DONE]\n\n", "comes after [DONE]"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.bytes);
    tb::timeline tl;
    REQUIRE(tl.arrive(t) == tc::record_status::ok);
    tb::sse_decoder d(tb::endpoint_kind::completions, tl);
    CHECK_FALSE(d.feed(b.bytes, t));
    CHECK(d.error().find(b.reason) != std::string::npos);
    CHECK_FALSE(d.feed("data: [DONE]\n\n", t));  // nothing more is read
  }
  // A line that never ends stops at max_sse_line: memory stays bounded.
  tb::timeline tl;
  REQUIRE(tl.arrive(t) == tc::record_status::ok);
  tb::sse_decoder d(tb::endpoint_kind::completions, tl);
  const std::string block(64 * 1024, 'x');
  bool ok = true;
  for (std::size_t i = 0; ok && i < 2 * tb::max_sse_line / block.size(); ++i) ok = d.feed(block, t);
  CHECK_FALSE(ok);
  CHECK(d.error().find("longer than") != std::string::npos);
}

TEST_CASE("parse_target: URLs and endpoints") {
  const auto t = tb::parse_target("http://localhost:9000/v1/", "chat", "m");
  CHECK(t.host == "localhost");
  CHECK(t.port == "9000");
  CHECK(t.path() == "/v1/chat/completions");
  CHECK(tb::parse_target("http://h/api", "completions", "m").path() == "/api/v1/completions");
  CHECK_FALSE(t.tls);
  // https: TLS, port 443 unless given; an IPv6 address in brackets, its port after them.
  const auto s = tb::parse_target("https://api.example.com/v1", "chat", "m");
  CHECK(s.tls);
  CHECK(s.port == "443");
  CHECK(s.host == "api.example.com");
  CHECK(tb::parse_target("https://h:8443", "chat", "m").port == "8443");
  const auto v6 = tb::parse_target("http://[::1]:9000", "chat", "m");
  CHECK(v6.host == "::1");
  CHECK(v6.port == "9000");
  CHECK(tb::parse_target("https://[::1]", "chat", "m").port == "443");
  CHECK_THROWS_AS((void)tb::parse_target("ftp://h", "chat", "m"), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::parse_target("https://user:pw@h", "chat", "m"), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::parse_target("http://[::1:80", "chat", "m"), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::parse_target("http://h:0", "chat", "m"), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::parse_target("http://h:99999", "chat", "m"), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::parse_target("http://h", "embeddings", "m"), std::invalid_argument);
}

TEST_CASE("a chat stream: chunk kinds, times after the server wrote them, usage") {
  auto rx = tb::receive_time::kernel;
  SUBCASE("timed by the kernel's receive stamps") { rx = tb::receive_time::kernel; }
  SUBCASE("timed by the read") { rx = tb::receive_time::read; }
  tb::scripted_server srv({5ms, 3ms, 2});
  const auto r = one(srv, "m", tb::endpoint_kind::chat, {}, 7, 5, rx);
  REQUIRE(r.requests.size() == 1);
  const auto& o = r.requests.front();
  // Every read was stamped by the kernel (Linux), or none was asked to be.
  CHECK(o.reads > 0);
#if defined(__linux__)
  CHECK(o.kernel_timed_reads == (rx == tb::receive_time::kernel ? o.reads : 0u));
#endif
  CHECK(o.error.empty());
  REQUIRE(o.tl.succeeded());
  using k = tc::chunk_kind;
  CHECK(kinds(o.tl) ==
        std::vector<k>{k::empty, k::text, k::text, k::text, k::text, k::text, k::usage, k::done});
  CHECK(o.tl.output_tokens() == 5);
  CHECK(o.tl.prompt_tokens() == 7u);
  CHECK(o.tl.reported_output_tokens() == 5u);
  CHECK(o.tl.reason() == tc::finish_reason::length);
  // Every chunk was read after the server wrote it (same clock), and the send came first. A
  // kernel stamp is taken in the server's write, after its clock read; moving it onto the
  // steady clock may err by half the widest anchor.
  const auto sent = srv.emissions().at(std::to_string(o.id));
  const auto& c = o.tl.store().chunks();
  const auto slack = rx == tb::receive_time::kernel
                         ? std::chrono::duration_cast<tb::clock::duration>(tb::max_anchor_gap) / 2
                         : tb::clock::duration::zero();
  REQUIRE(sent.size() == c.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    CAPTURE(i);
    CHECK(c[i].time + slack >= sent[i].time);
  }
  CHECK(*o.tl.send_time() <= sent.front().time);
  CHECK(*o.tl.arrival() <= *o.tl.send_time());
  // The trace record keeps it all.
  const auto trace = tb::to_trace(r);
  REQUIRE(trace.size() == 1);
  CHECK(trace[0].ok);
  CHECK(trace[0].chunks.size() == c.size());
  CHECK(trace[0].usage_output_tokens == 5u);
}

#if defined(__linux__)
TEST_CASE("read_timed: the kernel's receive stamp is when the bytes arrived, not when read") {
  const tb::receive_timestamps_holder on;
  REQUIRE(on.stamping());  // Linux stamps a loopback datagram once the holder asked
  // A TCP connection over loopback: `tx` writes, `rx` reads.
  const int lst = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(lst, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(lst, 1) == 0);
  REQUIRE(::getsockname(lst, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int tx = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(::connect(tx, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const int one_flag = 1;
  REQUIRE(::setsockopt(tx, IPPROTO_TCP, TCP_NODELAY, &one_flag, sizeof one_flag) == 0);
  const int rx = ::accept(lst, nullptr, nullptr);
  REQUIRE(rx >= 0);
  REQUIRE(tb::ask_receive_timestamps(rx));
  char buf[64];
  const auto empty = tb::read_timed(rx, buf, sizeof buf);
  CHECK(empty.bytes < 0);
  CHECK(empty.error == EAGAIN);
  CHECK_FALSE(empty.kernel_at);
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    // The stamp is taken inside the write (loopback delivers in the sender's system call); the
    // read comes 20 ms later and must not move it.
    const auto t0 = tb::clock::now();
    REQUIRE(::write(tx, "data", 4) == 4);
    const auto t1 = tb::clock::now();
    std::this_thread::sleep_for(20ms);
    const auto r = tb::read_timed(rx, buf, sizeof buf);
    REQUIRE(r.bytes == 4);
    REQUIRE(r.kernel_at);
    CHECK(r.uncertainty <= tb::max_anchor_gap / 2 + 1ns);
    CHECK(*r.kernel_at + r.uncertainty >= t0);
    CHECK(*r.kernel_at - r.uncertainty <= t1);
    CHECK(r.read_at - t1 >= 20ms);
  }
  // The other end never asked: its reads carry no stamp.
  REQUIRE(::write(rx, "back", 4) == 4);
  std::this_thread::sleep_for(5ms);
  const auto r = tb::read_timed(tx, buf, sizeof buf);
  CHECK(r.bytes == 4);
  CHECK_FALSE(r.kernel_at);
  // The peer's close is an end of stream.
  ::close(rx);
  std::this_thread::sleep_for(5ms);
  CHECK(tb::read_timed(tx, buf, sizeof buf).bytes == 0);
  ::close(tx);
  ::close(lst);
}
#endif

TEST_CASE("failures are recorded with their reason and never hang the client") {
  tb::scripted_server srv({2ms, 2ms, 2});
  struct fault {
    std::string model, reason;
    tc::finish_reason finish;
  };
  const std::vector<fault> faults{
      {"cut", "the connection closed before [DONE]", tc::finish_reason::error},
      {"malformed", "SSE event 3 is not a JSON object", tc::finish_reason::error},
      {"garbage", "SSE line 5 is not a field", tc::finish_reason::error},
      {"error", "server error in the stream: scripted error", tc::finish_reason::error},
      {"http500", "HTTP 500: {\"error\"", tc::finish_reason::error},
      {"json", "HTTP 200 with Content-Type 'application/json', not text/event-stream",
       tc::finish_reason::error},
      {"stall", "idle timeout (no bytes for 0.2 s)", tc::finish_reason::timed_out},
  };
  for (const auto& f : faults) {
    CAPTURE(f.model);
    // The 0.2 s idle limit only for the model that stalls (the others keep the default 60 s):
    // on a loaded machine another model's pause could reach it and give another verdict.
    tb::timeouts lim;
    if (std::string(f.model) == "stall") lim.idle = 200ms;
    const auto start = tb::clock::now();
    const auto r = one(srv, f.model, tb::endpoint_kind::completions, lim);
    REQUIRE(r.requests.size() == 1);
    const auto& o = r.requests.front();
    CHECK(o.error.find(f.reason) != std::string::npos);
    CHECK(o.tl.reason() == f.finish);
    CHECK_FALSE(o.tl.succeeded());
    CHECK(tb::clock::now() - start < 10s);
    const auto trace = tb::to_trace(r);
    REQUIRE(trace.size() == 1);
    CHECK_FALSE(trace[0].ok);
    CHECK(trace[0].error == o.error);
  }
  // The text chunks before the fault are kept.
  const auto r = one(srv, "cut");
  CHECK(r.requests.front().tl.output_tokens() == 2);
}

TEST_CASE("the request timeout ends a stalled stream; a refused connection fails") {
  tb::scripted_server srv({2ms, 2ms, 1});
  tb::timeouts lim;
  lim.idle = 0s;
  lim.request = 300ms;
  const auto r = one(srv, "stall", tb::endpoint_kind::completions, lim);
  const auto& o = r.requests.front();
  CHECK(o.error.find("request timeout (0.3 s)") != std::string::npos);
  CHECK(o.tl.reason() == tc::finish_reason::timed_out);
  const auto took = *o.tl.finish_time() - *o.tl.send_time();
  CHECK(took >= 300ms);
  CHECK(took < 5s);

  const std::uint16_t port = srv.port();
  srv.stop();
  tb::load_options lo;
  lo.tgt = tb::parse_target("http://127.0.0.1:" + std::to_string(port), "completions", "m");
  lo.work.users = 2;
  lo.work.max_requests = 3;
  lo.work.duration_s = 30;
  lo.limits.idle = 2s;
  const auto refused = tb::run_load(lo);
  CHECK(refused.requests.size() == 3);
  for (const auto& x : refused.requests) {
    CAPTURE(x.error);
    CHECK(x.error.rfind("connect: ", 0) == 0);
  }
}

TEST_CASE("open and closed loops send the load generator's requests") {
  tb::scripted_server srv({1ms, 1ms, 2});
  tb::load_options lo;
  lo.tgt = tb::parse_target("http://127.0.0.1:" + std::to_string(srv.port()), "completions", "m");
  lo.work.prompt = tokchron_loadgen::distribution::parse("uniform:1,20",
                                                         tokchron_loadgen::quantity::prompt_length);
  lo.work.output = tokchron_loadgen::distribution::parse("uniform:1,4",
                                                         tokchron_loadgen::quantity::output_length);
  SUBCASE("open loop: the arrivals the executor's generator counts, warm-up left out") {
    lo.work.mode = tokchron_loadgen::arrival_mode::open;
    lo.work.rate = 40;
    lo.work.burstiness = 0.5;
    lo.work.duration_s = 1.5;
    lo.work.seed = 7;
    lo.warmup_s = 0.5;
    const auto n = tokchron_loadgen::count_open_arrivals(lo.work, lo.warmup_s, 1000000);
    const auto r = tb::run_load(lo);
    CHECK(r.requests.size() == n.total);
    CHECK(tb::to_trace(r).size() == n.from);
    CHECK(srv.requests() == n.total);
    for (const auto& o : r.requests) {
      CHECK(o.error.empty());
      CHECK(*o.tl.send_time() >= *o.tl.arrival());
    }
  }
  SUBCASE("closed loop: max_requests over users, each user one at a time") {
    lo.work.mode = tokchron_loadgen::arrival_mode::closed;
    lo.work.users = 3;
    lo.work.max_requests = 10;
    lo.work.duration_s = 30;
    lo.threads = 2;
    const auto r = tb::run_load(lo);
    CHECK(r.requests.size() == 10);
    CHECK(srv.requests() == 10);
    // At most 3 requests in flight at any send time.
    for (const auto& o : r.requests) {
      CHECK(o.error.empty());
      int overlapping = 0;
      for (const auto& p : r.requests)
        overlapping +=
            *p.tl.send_time() <= *o.tl.send_time() && *p.tl.finish_time() > *o.tl.send_time();
      CHECK(overlapping <= 3);
    }
  }
}

TEST_CASE("the command line: the report of the run, and bad options refused") {
  tb::scripted_server srv({1ms, 1ms, 2});
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  std::ostringstream out, err;
  const int rc = tb::run_cli(
      {"--url",          url,    "--endpoint",   "chat",    "--users",      "2",
       "--max-requests", "6",    "--output-len", "fixed:3", "--prompt-len", "fixed:4",
       "--format",       "json", "--profile",    "vllm",    "--slo",        "max(ttft) < 10s",
       "--progress",     "never"},
      out, err);
  CAPTURE(err.str());
  CHECK(rc == 0);
  CHECK(out.str().find("\"requests\"") != std::string::npos);
  CHECK(out.str().find("\"status\": \"pass\"") != std::string::npos);
  CHECK(srv.requests() == 6);
#if defined(__linux__)
  // Every read stamped; how long the bytes waited in the kernel before the client read them.
  CHECK(err.str().find("reads carried no kernel receive stamp") == std::string::npos);
  CHECK(err.str().find(
            "longest wait of its bytes in the kernel before the client read them: median ") !=
        std::string::npos);
#endif
  std::ostringstream out_read, err_read;
  CHECK(tb::run_cli({"--url", url, "--users", "1", "--max-requests", "1", "--output-len", "fixed:2",
                     "--receive-time", "read", "--progress", "never"},
                    out_read, err_read) == 0);
  CHECK(err_read.str().find("longest wait") == std::string::npos);

  std::ostringstream o2, e2;
  CHECK(tb::run_cli({"--rate", "0"}, o2, e2) == 2);
  CHECK(e2.str().find("--rate") != std::string::npos);
  CHECK(tb::run_cli({"--url", "ftp://x"}, o2, e2) == 2);
  CHECK(tb::run_cli({"--max-batch-size", "3"}, o2, e2) == 2);  // not a load option
  CHECK(tb::run_cli({"--sweep", "rate=1,x"}, o2, e2) == 2);
  CHECK(tb::run_cli({"--warmup", "10", "--duration", "5"}, o2, e2) == 2);
  CHECK(tb::run_cli({"--keep-alive", "yes"}, o2, e2) == 2);
  CHECK(tb::run_cli({"--busy-poll", "1"}, o2, e2) == 2);
  CHECK(tb::run_cli({"--receive-time", "nic"}, o2, e2) == 2);
  CHECK(e2.str().find("--receive-time 'nic': expected kernel or read") != std::string::npos);
  // A request id prefix: printable, no space, quote or backslash, at most 64 characters.
  const std::vector<std::string> bad_prefixes{"a\tb",
                                              "a b",
                                              "a\"b",
                                              "a\\b",
                                              std::string("a\0b", 3),
                                              std::string(tb::max_id_prefix + 1, 'x')};
  for (const std::string& bad : bad_prefixes) {
    std::ostringstream o3, e3;
    CAPTURE(bad);
    CHECK(tb::run_cli({"--id-prefix", bad}, o3, e3) == 2);
    CHECK(e3.str().find("tokchron-bench: --id-prefix: ") == 0);
  }
  std::ostringstream e4;
  CHECK(tb::run_cli({"--id-prefix", "a\nb"}, o2, e4) == 2);
  CHECK(e4.str().find("character 2 (0x0a)") != std::string::npos);
  CHECK_NOTHROW(tb::check_id_prefix(std::string(tb::max_id_prefix, 'x')));
  CHECK_NOTHROW(tb::check_id_prefix("host-1.rack_2:a/b~"));
}

TEST_CASE("--sweep: one run, one report and one trace per value") {
  tb::scripted_server srv({1ms, 1ms, 2});
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  const std::string trace = std::string(TOKCHRON_BENCH_TEST_DIR) + "/sweep.jsonl";
  std::ostringstream out, err;
  const int rc =
      tb::run_cli({"--url", url, "--sweep", "users=1,3", "--max-requests", "6", "--output-len",
                   "fixed:2", "--prompt-len", "fixed:2", "--format", "csv", "--profile",
                   "canonical", "--progress", "never", "--trace-out", trace},
                  out, err);
  CAPTURE(err.str());
  CHECK(rc == 0);
  CHECK(out.str().find("== users = 1 ==") != std::string::npos);
  CHECK(out.str().find("== users = 3 ==") != std::string::npos);
  CHECK(srv.requests() == 12);
  for (const char* v : {"1", "3"}) {
    std::ifstream f(std::string(TOKCHRON_BENCH_TEST_DIR) + "/sweep.users=" + v + ".jsonl");
    int lines = 0;
    for (std::string l; std::getline(f, l);) ++lines;
    CHECK(lines == 6);
  }
}

TEST_CASE("--sweep with --slo ends with the capacity planner's pick") {
  // TTFT 1 ms, a chunk every 2 ms: 2 tokens end in about 3 ms, 500 tokens in no less than
  // 999 ms whatever the load (the server's pacing), so 900 ms separates them with a margin of
  // about 300x for the short point on a loaded machine.
  tb::scripted_server srv({1ms, 2ms, 2});
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  std::ostringstream out, err;
  const int rc = tb::run_cli({"--url", url, "--sweep", "output_len=fixed:2,fixed:500", "--users",
                              "2", "--max-requests", "4", "--prompt-len", "fixed:2", "--profile",
                              "canonical", "--slo", "max(e2e) < 900ms", "--progress", "never"},
                             out, err);
  CAPTURE(out.str());
  CAPTURE(err.str());
  CHECK(rc == 3);  // the second point fails its objective
  const std::string s = out.str();
  const auto planner = s.find("Capacity planner");
  REQUIRE(planner != std::string::npos);
  CHECK(s.find("== output-len = fixed:500 ==") < planner);  // after every point's report
  CHECK(s.find("  choice: #1 output-len=fixed:2 at ", planner) != std::string::npos);
  CHECK(s.find("#2 output-len=fixed:500: throughput", planner) != std::string::npos);
  CHECK(s.find("max(e2e) < 900ms: fail", planner) != std::string::npos);

  std::ostringstream o2, e2;  // without an objective there is nothing to plan
  CHECK(tb::run_cli({"--url", url, "--sweep", "users=1,2", "--max-requests", "2", "--progress",
                     "never", "--output-len", "fixed:2"},
                    o2, e2) == 0);
  CHECK(o2.str().find("Capacity planner") == std::string::npos);
}

TEST_CASE("keep-alive: one connection serves a user's requests one after another") {
  tb::scripted_server srv({1ms, 1ms, 2});
  tb::load_options lo;
  lo.tgt = tb::parse_target("http://127.0.0.1:" + std::to_string(srv.port()), "chat", "m");
  lo.work.mode = tokchron_loadgen::arrival_mode::closed;
  lo.work.users = 2;
  lo.work.max_requests = 10;
  lo.work.duration_s = 30;
  lo.work.output =
      tokchron_loadgen::distribution::fixed(3, tokchron_loadgen::quantity::output_length);
  lo.first_request_id = 100;
  SUBCASE("on: at most one connection per user") {
    lo.keep_alive = true;
    const auto r = tb::run_load(lo);
    REQUIRE(r.requests.size() == 10);
    for (const auto& o : r.requests) {
      CHECK(o.error.empty());
      CHECK(kinds(o.tl) == std::vector<tc::chunk_kind>{
                               tc::chunk_kind::empty, tc::chunk_kind::text, tc::chunk_kind::text,
                               tc::chunk_kind::text, tc::chunk_kind::usage, tc::chunk_kind::done});
    }
    CHECK(srv.requests() == 10);
    CHECK(srv.connections() <= 2);
    // The ids start at first_request_id, in the trace and in X-Request-Id.
    const auto sent = srv.emissions();
    for (const auto& rec : tb::to_trace(r)) CHECK(sent.count(rec.id) == 1);
    CHECK(sent.count("100") == 1);
    CHECK(sent.count("109") == 1);
  }
  SUBCASE("an id prefix goes before every id, in the trace and in X-Request-Id") {
    lo.id_prefix = "host1-";
    const auto r = tb::run_load(lo);
    REQUIRE(r.requests.size() == 10);
    const auto sent = srv.emissions();
    CHECK(sent.size() == 10);
    for (const auto& rec : tb::to_trace(r)) {
      CHECK(rec.id.rfind("host1-", 0) == 0);
      CHECK(sent.count(rec.id) == 1);
    }
    CHECK(sent.count("host1-100") == 1);
    CHECK(sent.count("host1-109") == 1);
    lo.id_prefix = "bad prefix";
    CHECK_THROWS_AS((void)tb::run_load(lo), std::invalid_argument);
  }
  SUBCASE("on, with busy-polling I/O threads") {
    lo.keep_alive = true;
    lo.busy_poll = true;
    lo.threads = 2;
    const auto r = tb::run_load(lo);
    REQUIRE(r.requests.size() == 10);
    for (const auto& o : r.requests) CHECK(o.error.empty());
    CHECK(srv.connections() <= 4);  // each thread keeps its own: at most users x threads
  }
  SUBCASE("on, against a server that closes kept connections: each request sent again once") {
    lo.keep_alive = true;
    lo.tgt.model = "drop";
    lo.work.users = 1;
    lo.work.max_requests = 4;
    const auto r = tb::run_load(lo);
    REQUIRE(r.requests.size() == 4);
    for (const auto& o : r.requests) CHECK(o.error.empty());
    CHECK(srv.requests() == 4);  // the dropped connection never got the resent request
    CHECK(srv.connections() == 4);
  }
  SUBCASE("off: a connection per request") {
    const auto r = tb::run_load(lo);
    CHECK(r.requests.size() == 10);
    CHECK(srv.connections() == 10);
  }
}

// ---- a hostile server (docs/bad-input.md, rows C3-C12) ------------------------------------

namespace {

// The decoder's chunks of `stream` fed whole, at `t`.
struct decoded {
  std::vector<tc::chunk_kind> kinds;
  std::vector<tb::clock::time_point> times;
  std::optional<std::uint64_t> prompt, completion;
  std::string error;
  tb::failure_kind failure = tb::failure_kind::none;
  bool done = false;
};

// Feeds `stream` cut at the positions in `cuts` (increasing), piece k at t0 + k ms.
decoded decode(std::string_view stream, const std::vector<std::size_t>& cuts,
               tb::endpoint_kind e = tb::endpoint_kind::chat) {
  const auto t0 = tb::clock::time_point(1s);
  tb::timeline tl;
  REQUIRE(tl.arrive(t0) == tc::record_status::ok);
  REQUIRE(tl.send(t0) == tc::record_status::ok);
  tb::sse_decoder d(e, tl);
  std::size_t from = 0;
  for (std::size_t k = 0; k <= cuts.size(); ++k) {
    const std::size_t to = k < cuts.size() ? cuts[k] : stream.size();
    if (!d.feed(stream.substr(from, to - from), t0 + std::chrono::milliseconds(k))) break;
    from = to;
  }
  decoded out;
  out.kinds = kinds(tl);
  for (const auto& c : tl.store().chunks()) out.times.push_back(c.time);
  out.prompt = tl.prompt_tokens();
  out.completion = tl.reported_output_tokens();
  out.error = d.error();
  out.failure = d.failure();
  out.done = d.done();
  if (d.failed()) CHECK(d.failure() != tb::failure_kind::none);
  if (!d.failed() && !d.done() && from == stream.size()) out.error = "unfinished" + d.unfinished();
  return out;
}

// A valid chat stream with comments, `event:`/`id:` fields, and lines ended by LF, CR and
// CRLF in every order that keeps them apart (a CR followed by an LF is one line end).
const std::string mixed_stream =
    ": hello\r\n"
    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
    "event: message\rid: 7\rdata: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\r\r"
    ": ping\n"
    "data: {\"choices\":\r\n"
    "data: [{\"delta\":{\"content\":\"A\"}}]}\r\n\r\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"B\"},\"finish_reason\":\"length\"}]}\n\r"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\r\n\n"
    "data: [DONE]\r\n\r\n";

}  // namespace

TEST_CASE("bad input C3: a stream split at every byte, with LF, CR and CRLF line ends") {
  using k = tc::chunk_kind;
  const std::vector<k> want{k::empty, k::reasoning, k::text, k::text, k::usage, k::done};
  const decoded whole = decode(mixed_stream, {});
  CAPTURE(whole.error);
  REQUIRE(whole.done);
  CHECK(whole.kinds == want);
  CHECK(whole.prompt == 4u);
  CHECK(whole.completion == 3u);
  // Cut once at every byte: the same events, each at the time of the piece that completed it.
  for (std::size_t i = 1; i < mixed_stream.size(); ++i) {
    CAPTURE(i);
    const decoded two = decode(mixed_stream, {i});
    REQUIRE(two.error.empty());
    CHECK(two.done);
    CHECK(two.kinds == want);
    CHECK(two.completion == 3u);
  }
  // One byte a feed: every event at the time of its last data line's end, never decreasing.
  std::vector<std::size_t> every(mixed_stream.size() - 1);
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = i + 1;
  const decoded bytes = decode(mixed_stream, every);
  REQUIRE(bytes.error.empty());
  CHECK(bytes.kinds == want);
  CHECK(std::is_sorted(bytes.times.begin(), bytes.times.end()));
  const auto t0 = tb::clock::time_point(1s);
  // The role event's data line ends at its LF, fed alone at t0 + its index ms.
  CHECK(bytes.times[0] == t0 + std::chrono::milliseconds(mixed_stream.find("\n\n")));
  // End to end: the scripted server writes a whole stream one byte a write (the HTTP framing
  // too), its lines ended by LF, CR and CRLF in turn, with comments.
  tb::scripted_server srv({2ms, 2ms, 2});
  const auto r = one(srv, "split", tb::endpoint_kind::chat);
  const auto& o = r.requests.front();
  CAPTURE(o.error);
  REQUIRE(o.error.empty());
  CHECK(kinds(o.tl) ==
        std::vector<k>{k::empty, k::text, k::text, k::text, k::text, k::text, k::usage, k::done});
  CHECK(o.tl.reported_output_tokens() == 5u);
}

TEST_CASE("bad input C4: a data line without its blank line; a line that never ends") {
  // At the end of the stream the event is not complete: the reason says so.
  const decoded cut = decode("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n", {},
                             tb::endpoint_kind::completions);
  CHECK_FALSE(cut.done);
  CHECK(cut.error ==
        "unfinished, inside an event (a data line without the blank line that ends it)");
  // Two data lines without a blank line between them are one event: not a JSON object.
  const decoded merged =
      decode("data: {\"choices\":[{\"text\":\"a\"}]}\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\n",
             {}, tb::endpoint_kind::completions);
  CHECK(merged.failure == tb::failure_kind::sse_json);
  CHECK(merged.error.find("SSE event 1 is not a JSON object") == 0);
  // An event of many data lines, together longer than 1 MiB, fails as a line would.
  tb::timeline tl;
  REQUIRE(tl.arrive(tb::clock::time_point(1s)) == tc::record_status::ok);
  tb::sse_decoder d(tb::endpoint_kind::completions, tl);
  const std::string line = "data: " + std::string(1000, 'y') + "\n";
  bool ok = true;
  for (int i = 0; ok && i < 2000; ++i) ok = d.feed(line, tb::clock::time_point(1s));
  CHECK_FALSE(ok);
  CHECK(d.failure() == tb::failure_kind::sse_too_long);
  CHECK(d.error().find("SSE event 1 is longer than 1048576 bytes") == 0);
  CHECK(d.buffered() <= 2 * tb::max_sse_line);

  tb::scripted_server srv({2ms, 2ms, 2});
  tb::timeouts lim;
  lim.request = 20s;
  const auto u = one(srv, "unterminated", tb::endpoint_kind::completions, lim);
  CHECK(u.requests.front().error ==
        "the response ended before [DONE], inside an event (a data line without the blank line "
        "that ends it)");
  CHECK(u.requests.front().failure == tb::failure_kind::ended_early);
  const auto e = one(srv, "endless_line", tb::endpoint_kind::completions, lim);
  CHECK(e.requests.front().error.find("is longer than 1048576 bytes") != std::string::npos);
  CHECK(e.requests.front().failure == tb::failure_kind::sse_too_long);
}

TEST_CASE("bad input C5: an endless stream ends at the request timeout, or at its events' cap") {
  tb::scripted_server srv({2ms, 2ms, 2});
  tb::timeouts lim;
  lim.idle = 1s;  // never reached: the server writes every 2 ms, and the request ends first
  lim.request = 400ms;
  for (const char* model : {"endless", "pings"}) {
    CAPTURE(model);
    const auto r = one(srv, model, tb::endpoint_kind::chat, lim);
    const auto& o = r.requests.front();
    CHECK(o.error == "request timeout (0.4 s) during read");
    CHECK(o.failure == tb::failure_kind::timeout);
    CHECK(o.tl.reason() == tc::finish_reason::timed_out);
    const auto took = *o.tl.finish_time() - *o.tl.send_time();
    CHECK(took >= 400ms);
    CHECK(took < 3s);
    if (std::string(model) == "endless") CHECK(o.tl.output_tokens() > 10);
  }
  // Without a request timeout, a stream of events that never sends [DONE] stops at
  // max_stream_events: the chunks kept are bounded.
  tb::timeline tl;
  REQUIRE(tl.arrive(tb::clock::time_point(1s)) == tc::record_status::ok);
  tb::sse_decoder d(tb::endpoint_kind::completions, tl);
  std::string block;
  for (int i = 0; i < 4096; ++i) block += "data: {\"choices\":[{\"text\":\"a\"}]}\n\n";
  bool ok = true;
  std::uint64_t fed = 0;
  while (ok && fed <= tb::max_stream_events) {
    ok = d.feed(block, tb::clock::time_point(1s));
    fed += 4096;
  }
  CHECK_FALSE(ok);
  CHECK(d.failure() == tb::failure_kind::sse_too_long);
  CHECK(d.error() == "more than 1048576 SSE events without [DONE]");
  CHECK(tl.store().chunks().size() == tb::max_stream_events);
}

TEST_CASE("bad input C6: event data that is not a JSON object") {
  const std::vector<std::string> bad{
      "{\"choices\":[",  // cut
      "[1,2]",
      "\"text\"",
      "NaN",
      "{\"choices\":[]}{\"choices\":[]}",
      "{\"choices\":[{\"text\":\"\xff\"}]}",  // not UTF-8
      std::string(500000, '['),               // deep nesting
      "{\"choices\":[{\"text\":\"a\"}],}",
      "",
  };
  for (const auto& data : bad) {
    CAPTURE(data.substr(0, 40));
    const decoded d = decode("data: " + data + "\n\n", {}, tb::endpoint_kind::completions);
    CHECK(d.failure == tb::failure_kind::sse_json);
    CHECK(d.error.find("SSE event 1 is not a JSON object: '") == 0);
    CHECK(d.error.size() < 200);  // the excerpt is short
  }
}

TEST_CASE("bad input C7: usage counts that cannot be") {
  const std::string text = "data: {\"choices\":[{\"text\":\"a\"}]}\n\n";
  const std::string three = text + text + text;
  struct bad {
    std::string usage, reason;
  };
  const std::vector<bad> cases{
      {"{\"completion_tokens\":2}", "usage.completion_tokens (2) is fewer than the 3 chunks"},
      {"{\"completion_tokens\":-3}", "usage.completion_tokens is -3, not a count"},
      {"{\"prompt_tokens\":18446744073709551616}", "usage.prompt_tokens is 1.8446744073709552e+19"},
      {"{\"completion_tokens\":3.5}", "usage.completion_tokens is 3.5, not a count"},
      {"{\"completion_tokens\":\"3\"}", "usage.completion_tokens is \"3\", not a count"},
      {"{\"prompt_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":5}}",
       "cached_tokens (5) is greater than usage.prompt_tokens (2)"},
      {"{\"completion_tokens\":3,\"completion_tokens_details\":{\"reasoning_tokens\":4}}",
       "reasoning_tokens (4) is greater than usage.completion_tokens (3)"},
      {"{\"prompt_tokens_details\":[1]}", "usage.prompt_tokens_details is not an object"},
      {"7", "usage is not an object"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.usage);
    const decoded d =
        decode(three + "data: {\"choices\":[],\"usage\":" + b.usage + "}\n\ndata: [DONE]\n\n", {},
               tb::endpoint_kind::completions);
    CHECK(d.failure == tb::failure_kind::usage);
    CHECK(d.error.find("SSE event 4: ") == 0);
    CHECK(d.error.find(b.reason) != std::string::npos);
    CHECK(d.completion == std::nullopt);  // nothing of the event was recorded
  }
  // 2^64 - 1 is a count; null is none; a usage object per event counting so far is fine.
  const decoded ok = decode(
      "data: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":1}}\n\n"
      "data: {\"choices\":[{\"text\":\"b\"}],\"usage\":null}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":18446744073709551615,"
      "\"completion_tokens\":2,\"prompt_tokens_details\":null}}\n\ndata: [DONE]\n\n",
      {}, tb::endpoint_kind::completions);
  CAPTURE(ok.error);
  CHECK(ok.done);
  CHECK(ok.prompt == 18446744073709551615u);
  CHECK(ok.completion == 2u);
  // End to end: each fails the request, and its trace record stays valid.
  tb::scripted_server srv({2ms, 2ms, 9});
  for (const char* model : {"usage_low", "usage_negative", "usage_2p64"}) {
    CAPTURE(model);
    const auto r = one(srv, model, tb::endpoint_kind::completions);
    CHECK(r.requests.front().failure == tb::failure_kind::usage);
    CHECK(r.requests.front().error.find("usage.completion_tokens") != std::string::npos);
    const auto trace = tb::to_trace(r);
    REQUIRE(trace.size() == 1);
    CHECK_FALSE(tc::validate(trace[0]).has_value());
  }
}

TEST_CASE("bad input C8-C11: resets, non-SSE answers, broken chunked framing, stalled headers") {
  tb::scripted_server srv({2ms, 2ms, 2});
  struct fault {
    std::string model, reason;
    tb::failure_kind kind;
  };
  const std::vector<fault> faults{
      {"reset", "read: Connection reset by peer", tb::failure_kind::connection},
      {"html", "HTTP 200 with Content-Type 'text/html', not text/event-stream",
       tb::failure_kind::not_sse},
      {"json", "HTTP 200 with Content-Type 'application/json', not text/event-stream",
       tb::failure_kind::not_sse},
      {"badchunk", "HTTP: bad chunk", tb::failure_kind::http_framing},
      {"hugechunk", "HTTP: bad chunk", tb::failure_kind::http_framing},
      {"endless_ext", "bytes of the response do not parse", tb::failure_kind::http_framing},
      {"headers_stall", "request timeout (0.3 s) during read", tb::failure_kind::timeout},
      {"silent", "request timeout (0.3 s) during read", tb::failure_kind::timeout},
  };
  tb::timeouts lim;
  lim.idle = 0s;
  lim.connect = 0s;
  lim.request = 300ms;  // every wait bounded by it
  for (const auto& f : faults) {
    CAPTURE(f.model);
    const auto r = one(srv, f.model, tb::endpoint_kind::completions, lim);
    const auto& o = r.requests.front();
    CHECK(o.error.find(f.reason) != std::string::npos);
    CHECK(o.failure == f.kind);
    const auto took = *o.tl.finish_time() - *o.tl.send_time();
    CHECK(took < 3s);
    const auto trace = tb::to_trace(r);
    REQUIRE(trace.size() == 1);
    CHECK_FALSE(tc::validate(trace[0]).has_value());
  }
  // The idle timeout ends a stalled answer too.
  lim.idle = 200ms;
  lim.request = 0s;
  const auto r = one(srv, "headers_stall", tb::endpoint_kind::completions, lim);
  CHECK(r.requests.front().error == "idle timeout (no bytes for 0.2 s) during read");
}

TEST_CASE(
    "bad input C12: a run against a hostile server: counted by kind, exit 5, latencies "
    "within the run") {
  tb::server_script script{1ms, 1ms, 2};
  script.models = {"m",       "cut",       "reset",  "malformed",      "garbage",
                   "error",   "usage_low", "html",   "json",           "badchunk",
                   "endless", "pings",     "silent", "headers_stall",  "unterminated",
                   "split",   "http500",   "m",      "usage_negative", "hugechunk"};
  tb::scripted_server srv(script);
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  const std::string trace = std::string(TOKCHRON_BENCH_TEST_DIR) + "/hostile.jsonl";
  std::ostringstream out, err;
  const auto start = tb::clock::now();
  const int rc = tb::run_cli(
      {"--url",          url,     "--rate",       "200",       "--duration",        "10",
       "--max-requests", "40",    "--output-len", "fixed:4",   "--request-timeout", "0.5",
       "--idle-timeout", "0.3",   "--profile",    "canonical", "--format",          "csv",
       "--progress",     "never", "--trace-out",  trace},
      out, err);
  const double wall = std::chrono::duration<double>(tb::clock::now() - start).count();
  CAPTURE(err.str());
  CHECK(rc == tb::exit_failed_requests);
  CHECK(srv.requests() == 40);
  // The report counts the requests and the failures; stderr counts them by kind.
  CAPTURE(out.str());
  // (The CSV writes each number in its shortest exact form: 40 may read "4e+01".)
  const auto value_of = [&](const std::string& key) {
    const auto at = out.str().find("\n" + key + ",");
    return at == std::string::npos ? -1.0
                                   : std::strtod(out.str().c_str() + at + key.size() + 2, nullptr);
  };
  CHECK(value_of("requests") == 40);
  CHECK(value_of("completed") == 6);
  CHECK(value_of("failed") == 34);
  CHECK(err.str().find("34 of 40 requests failed, by kind: connection 2 ended_early 4 "
                       "http_framing 4 http_status 2 not_sse 4 server_error 2 sse_json 2 "
                       "sse_line 2 timeout 8 usage 4\n") != std::string::npos);
  // Every line valid, every latency of every profile in [0, the run's duration].
  std::ifstream f(trace);
  std::size_t lines = 0;
  double last_end = 0;
  std::vector<tc::trace_record> records;
  for (std::string l; std::getline(f, l);) {
    ++lines;
    auto res = tc::parse_trace_line(l);
    CAPTURE(l.substr(0, 200));
    REQUIRE(res.record);
    CHECK_FALSE(tc::validate(*res.record).has_value());
    last_end = std::max(last_end, res.record->end.value_or(0));
    records.push_back(std::move(*res.record));
  }
  CHECK(lines == 40);
  CHECK(last_end < wall);
  std::size_t values = 0;
  for (const auto& rec : records) {
    const auto tl = tc::to_timeline(rec);
    for (const tc::profile* p : tc::all_profiles()) {
      tc::for_each_metric_value(tc::evaluate(*p, tl), [&](tc::metric_id m, double v) {
        if (!tc::is_time_metric(m)) return;
        CAPTURE(tc::info(m).name);
        CHECK(v >= 0);
        CHECK(v <= last_end);
        ++values;
      });
    }
  }
  CHECK(values > 100);
}

// ---- every stream as the server meant it, every byte (docs/bad-input.md, rows C13-C18) ------

namespace {

// A whole stream decoded in one piece (chat or completions); the timeline finished at [DONE]
// by the decoder's owner's rule.
struct whole_stream {
  tb::timeline tl;
  std::optional<tb::sse_decoder> d;
};
void decode_whole(whole_stream& w, const std::string& bytes, tb::endpoint_kind e) {
  const auto t0 = tb::clock::time_point(1s);
  REQUIRE(w.tl.arrive(t0) == tc::record_status::ok);
  w.d.emplace(e, w.tl);
  (void)w.d->feed(bytes, t0 + 1ms);
  if (w.d->done()) REQUIRE(w.d->finish_timeline() == tc::record_status::ok);
}

std::string text_event(const std::string& finish) {
  return "data: {\"choices\":[{\"index\":0,\"text\":\" w\",\"finish_reason\":" +
         (finish.empty() ? std::string("null") : "\"" + finish + "\"") + "}]}\n\n";
}

// A CLI run against `srv` (2 users, 4 requests of 4 tokens, completions unless `extra` says),
// with its trace read back (every line must be valid).
struct cli_run {
  int rc = 0;
  std::string out, err;
  std::vector<tc::trace_record> trace;
};
cli_run run_cli_against(const tb::scripted_server& srv, const std::string& model,
                        const std::vector<std::string>& extra, const std::string& name) {
  const std::string trace = std::string(TOKCHRON_BENCH_TEST_DIR) + "/" + name + ".jsonl";
  std::vector<std::string> args{"--url",          "http://127.0.0.1:" + std::to_string(srv.port()),
                                "--model",        model,
                                "--users",        "2",
                                "--max-requests", "4",
                                "--output-len",   "fixed:4",
                                "--prompt-len",   "fixed:3",
                                "--format",       "csv",
                                "--profile",      "canonical",
                                "--progress",     "never",
                                "--trace-out",    trace};
  args.insert(args.end(), extra.begin(), extra.end());
  std::ostringstream out, err;
  cli_run r;
  r.rc = tb::run_cli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  std::ifstream f(trace);
  for (std::string l; std::getline(f, l);) {
    auto res = tc::parse_trace_line(l);
    CAPTURE(l.substr(0, 300));
    REQUIRE(res.record);
    r.trace.push_back(std::move(*res.record));
  }
  return r;
}

// A number of the CSV report (each number in its shortest exact form: 40 may read "4e+01").
double report_value(const std::string& csv, const std::string& key) {
  const auto at = csv.find("\n" + key + ",");
  return at == std::string::npos ? -1.0 : std::strtod(csv.c_str() + at + key.size() + 2, nullptr);
}

// `s` is valid UTF-8 without control characters: quoting it again changes nothing.
bool clean_text(const std::string& s) {
  return tb::quote_bytes(s, s.size() + 3) == s &&
         s.find_first_of(std::string("\x1b\r\n\0", 4)) == std::string::npos;
}

}  // namespace

TEST_CASE("bad input C13: a finish reason that says the request did not complete fails it") {
  // Every word a server uses for "not completed" fails the request with its reason; the
  // usage after it is kept. The completed words, and words nobody listed, complete it.
  const std::vector<std::pair<std::string, tc::finish_reason>> failing{
      {"abort", tc::finish_reason::aborted},     {"aborted", tc::finish_reason::aborted},
      {"cancelled", tc::finish_reason::aborted}, {"canceled", tc::finish_reason::aborted},
      {"error", tc::finish_reason::error},       {"timeout", tc::finish_reason::timed_out}};
  const std::string tail =
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  for (const auto& f : failing) {
    const std::string& word = f.first;
    const tc::finish_reason reason = f.second;
    CAPTURE(word);
    whole_stream w;
    decode_whole(w, text_event("") + text_event(word) + tail, tb::endpoint_kind::completions);
    CHECK_FALSE(w.d->failed());
    CHECK(w.d->server_failure() ==
          "SSE event 2: the server ended the request with finish_reason '" + word + "'");
    CHECK(w.tl.reason() == reason);
    CHECK_FALSE(w.tl.succeeded());
    CHECK(w.tl.reported_output_tokens() == 2u);
    // A later stop does not undo it.
    whole_stream later;
    decode_whole(later, text_event(word) + text_event("stop") + tail,
                 tb::endpoint_kind::completions);
    CHECK(later.tl.reason() == reason);
    CHECK(later.d->server_failure().find("SSE event 1: ") == 0);
  }
  for (const std::string word : {"stop", "length", "tool_calls", "function_call", "content_filter",
                                 "eos_token", "stop_sequence", "repetition", "something_new"}) {
    CAPTURE(word);
    whole_stream w;
    decode_whole(w, text_event("") + text_event(word) + tail, tb::endpoint_kind::completions);
    CHECK(w.d->server_failure().empty());
    CHECK(w.tl.succeeded());
    CHECK(w.tl.reason() ==
          (word == "length" ? tc::finish_reason::length : tc::finish_reason::stop));
    CHECK(w.d->finish_word() == word);
    CHECK(w.d->finish_word_known() == (word != "something_new"));
  }
  // End to end: the scripted server aborts after 2 tokens (a last chunk saying abort, usage,
  // [DONE]; or the chunk and a closed connection): failed with the server's reason.
  tb::scripted_server srv({2ms, 2ms, 2});
  for (const std::string model : {"abort", "abort_cut"}) {
    CAPTURE(model);
    const auto r = one(srv, model);
    const auto& o = r.requests.front();
    CHECK(o.error.find("the server ended the request with finish_reason 'abort'") !=
          std::string::npos);
    CHECK(o.failure == tb::failure_kind::server_finish);
    CHECK(o.tl.reason() == tc::finish_reason::aborted);
    CHECK(o.tl.output_tokens() == 3);
    if (model == "abort") CHECK(o.tl.reported_output_tokens() == 3u);
    const auto trace = tb::to_trace(r);
    REQUIRE(trace.size() == 1);
    CHECK_FALSE(trace[0].ok);
    CHECK(trace[0].reason == tc::finish_reason::aborted);
  }
  // One verdict: standard error, the trace, the report and the exit code all say failed.
  const cli_run aborted = run_cli_against(srv, "abort", {}, "c13_abort");
  CAPTURE(aborted.err);
  CHECK(aborted.rc == tb::exit_failed_requests);
  CHECK(aborted.err.find("tokchron-bench: 4 requests: 0 completed, 4 failed\n") !=
        std::string::npos);
  CHECK(aborted.err.find("finish reasons the server sent: abort 4 (did not complete: failed)") !=
        std::string::npos);
  CHECK(aborted.err.find("by kind: server_finish 4\n") != std::string::npos);
  CHECK(report_value(aborted.out, "completed") == 0);
  CHECK(report_value(aborted.out, "failed") == 4);
  REQUIRE(aborted.trace.size() == 4);
  for (const auto& rec : aborted.trace) {
    CHECK_FALSE(rec.ok);
    CHECK(rec.reason == tc::finish_reason::aborted);
  }
  const cli_run fine = run_cli_against(srv, "m", {}, "c13_fine");
  CAPTURE(fine.err);
  CHECK(fine.rc == 0);
  CHECK(fine.err.find("finish reasons the server sent: length 4\n") != std::string::npos);
}

TEST_CASE("bad input C14: [DONE], then a body that never ends or an event: failed everywhere") {
  tb::scripted_server srv({2ms, 2ms, 2});
  tb::timeouts lim;
  lim.idle = 200ms;
  const auto stalled = one(srv, "done_stall", tb::endpoint_kind::completions, lim);
  const auto& s = stalled.requests.front();
  CHECK(s.error ==
        "idle timeout (no bytes for 0.2 s) during read after [DONE] (the response body did not "
        "end)");
  CHECK(s.failure == tb::failure_kind::timeout);
  CHECK_FALSE(s.tl.succeeded());
  CHECK(s.tl.output_tokens() == 5);
  const auto after = one(srv, "after_done");
  const auto& a = after.requests.front();
  CHECK(a.error.find("comes after [DONE]") != std::string::npos);
  CHECK_FALSE(a.tl.succeeded());
  for (const auto* r : {&stalled, &after}) {
    const auto trace = tb::to_trace(*r);
    REQUIRE(trace.size() == 1);
    CHECK_FALSE(trace[0].ok);
  }
  const cli_run run = run_cli_against(srv, "done_stall", {"--idle-timeout", "0.3"}, "c14");
  CAPTURE(run.err);
  CHECK(run.rc == tb::exit_failed_requests);
  CHECK(run.err.find("4 requests: 0 completed, 4 failed") != std::string::npos);
  CHECK(report_value(run.out, "failed") == 4);
  REQUIRE(run.trace.size() == 4);
  for (const auto& rec : run.trace) CHECK_FALSE(rec.ok);
}

TEST_CASE("bad input C15: streams without text say what they carried") {
  tb::scripted_server srv({2ms, 2ms, 100});
  // Tool-call deltas only: completed, each delta an `empty` chunk (no token), counted.
  const auto tools = one(srv, "tools", tb::endpoint_kind::chat);
  const auto& t = tools.requests.front();
  CAPTURE(t.error);
  REQUIRE(t.tl.succeeded());
  CHECK(t.content.tool_calls == 5);
  CHECK(t.content.text == 0);
  CHECK(t.finish_word == "tool_calls");
  CHECK(t.tl.output_tokens() == 0);
  CHECK(t.tl.reported_output_tokens() == 5u);
  // Which profiles time such a stream: those that time token chunks have no TTFT for it; vllm
  // times every chunk with choices (as vLLM's benchmark does).
  const auto rec = tb::to_trace(tools).front();
  const auto tl = tc::to_timeline(rec);
  CHECK_FALSE(tc::evaluate(tc::profiles::canonical, tl).ttft);
  CHECK(tc::evaluate(tc::profiles::vllm, tl).ttft);
  // The text in choice 1, none in choice 0 (the one measured): completed, said.
  for (const auto e : {tb::endpoint_kind::completions, tb::endpoint_kind::chat}) {
    const auto other = one(srv, "other_choice", e);
    const auto& o = other.requests.front();
    CAPTURE(o.error);
    REQUIRE(o.tl.succeeded());
    CHECK(o.content.other_choice == 5);
    CHECK(o.content.text == 0);
    CHECK(o.tl.output_tokens() == 0);
  }
  const cli_run run = run_cli_against(srv, "tools", {"--endpoint", "chat"}, "c15");
  CAPTURE(run.err);
  CHECK(run.rc == 0);
  CHECK(run.err.find("4 completed requests streamed no text: 4 tool-call deltas only, 0 text "
                     "only in a choice other than index 0") != std::string::npos);
  CHECK(run.err.find("finish reasons the server sent: tool_calls 4\n") != std::string::npos);
}

TEST_CASE("bad input C16: events that shared a read are counted; a token keeps its line's time") {
  const auto t0 = tb::clock::time_point(1s);
  {
    tb::timeline tl;
    REQUIRE(tl.arrive(t0) == tc::record_status::ok);
    tb::sse_decoder d(tb::endpoint_kind::completions, tl);
    CHECK(d.feed(text_event("") + text_event(""), t0 + 1ms));
    CHECK(d.feed(text_event(""), t0 + 2ms));
    CHECK(d.feed(text_event("length") +
                     "data: {\"choices\":[],\"usage\":{\"completion_tokens\":4}}\n\n"
                     "data: [DONE]\n\n",
                 t0 + 3ms));
    const tb::stream_content& c = d.content();
    CHECK(c.events == 6);
    CHECK(c.shared_read == 5);  // two in the first read, three in the last
    CHECK(c.token_gaps == 3);
    CHECK(c.token_gaps_in_one_read == 1);
    CHECK(c.last_token_with_done);
  }
  {
    // Each event's blank line comes with the next event's data line: every token keeps the
    // time its own data line arrived, and the last one is not stamped with [DONE]'s read.
    tb::timeline tl;
    REQUIRE(tl.arrive(t0) == tc::record_status::ok);
    tb::sse_decoder d(tb::endpoint_kind::completions, tl);
    std::string a = text_event(""), b = text_event("stop");
    a.pop_back();
    b.pop_back();
    CHECK(d.feed(a, t0 + 1ms));
    CHECK(d.feed("\n" + b, t0 + 2ms));
    CHECK(d.feed("\ndata: [DONE]\n\n", t0 + 3ms));
    REQUIRE(d.done());
    const auto& c = tl.store().chunks();
    REQUIRE(c.size() == 3);
    CHECK(c[0].time == t0 + 1ms);
    CHECK(c[1].time == t0 + 2ms);
    CHECK(c[2].time == t0 + 3ms);
    CHECK(d.content().shared_read == 0);
    CHECK_FALSE(d.content().last_token_with_done);
  }
  // End to end: every event after the first in one write; each event's blank line late.
  tb::scripted_server srv({5ms, 20ms, 100});
  const auto merged = one(srv, "merged");
  const auto& m = merged.requests.front();
  CAPTURE(m.error);
  REQUIRE(m.tl.succeeded());
  CHECK(m.content.shared_read >= 6);  // 4 text, usage, [DONE]
  CHECK(m.content.token_gaps == 4);
  CHECK(m.content.token_gaps_in_one_read >= 3);
  CHECK(m.content.last_token_with_done);
  const auto split = one(srv, "line_split", tb::endpoint_kind::chat);
  CAPTURE(split.requests.front().error);
  CHECK(split.requests.front().tl.succeeded());
  CHECK(split.requests.front().tl.output_tokens() == 5);
  const cli_run run = run_cli_against(srv, "merged", {}, "c16");
  CAPTURE(run.err);
  CHECK(run.rc == 0);
  CHECK(run.err.find("shared a read with another event, in 4 requests") != std::string::npos);
  CHECK(run.err.find("gaps between token chunks") != std::string::npos);
  CHECK(run.err.find("4 requests' last token came in the read of their [DONE]") !=
        std::string::npos);
}

TEST_CASE("bad input C17: bytes of any kind: quoted reasons, BOM, 1xx, media types, null error") {
  // Quoted reasons: valid UTF-8, controls escaped, cut on a character boundary.
  CHECK(tb::quote_bytes("caf\xc3", 100) == "caf\xef\xbf\xbd");
  CHECK(tb::quote_bytes("d\xe9j\xe0", 100) == "d\xef\xbf\xbdj\xef\xbf\xbd");
  CHECK(tb::quote_bytes("\xc0\xaf", 100) == "\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(tb::quote_bytes("\xed\xa0\x80", 100) == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(tb::quote_bytes("a\x1b[2Jb\r\n\t", 100) == "a\\x1b[2Jb\\r\\n\\t");
  CHECK(tb::quote_bytes(std::string(299, 'e') + "\xc3\xa9", 300) == std::string(297, 'e') + "...");
  const std::string mixed = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z\xff\x01";
  for (std::size_t max = 3; max < 30; ++max) {
    CAPTURE(max);
    const std::string q = tb::quote_bytes(mixed, max);
    CHECK(q.size() <= max);
    CHECK(clean_text(q));
  }
  tb::scripted_server srv({2ms, 2ms, 100});
  for (const std::string model : {"latin1_500", "utf8_500", "gzip_500"}) {
    CAPTURE(model);
    const auto r = one(srv, model);
    const auto& o = r.requests.front();
    CAPTURE(o.error);
    CHECK(o.failure == tb::failure_kind::http_status);
    CHECK(o.error.rfind("HTTP 500: ", 0) == 0);
    CHECK(clean_text(o.error));
    REQUIRE_NOTHROW((void)tc::to_json_line(tb::to_trace(r).front()));
  }
  const cli_run gz = run_cli_against(srv, "gzip_500", {"--give-up", "0"}, "c17_gzip");
  CHECK(gz.rc == tb::exit_failed_requests);
  CHECK(gz.trace.size() == 4);
  CHECK(gz.err.find('\x1b') == std::string::npos);  // the body's escape sequence is quoted
  // A byte order mark at the start, whole or split anywhere, is skipped.
  const std::string stream = "\xef\xbb\xbf" + text_event("stop") + "data: [DONE]\n\n";
  for (std::size_t cut = 0; cut <= 4; ++cut) {
    CAPTURE(cut);
    const decoded d =
        decode(stream, cut ? std::vector<std::size_t>{cut} : std::vector<std::size_t>{},
               tb::endpoint_kind::completions);
    CHECK(d.error.empty());
    CHECK(d.kinds == std::vector<tc::chunk_kind>{tc::chunk_kind::text, tc::chunk_kind::done});
  }
  const auto bom = one(srv, "bom");
  CAPTURE(bom.requests.front().error);
  CHECK(bom.requests.front().tl.succeeded());
  CHECK(bom.requests.front().tl.output_tokens() == 5);
  // 1xx interim responses are skipped; 101 (a switch nobody asked for) is refused; endless
  // interim responses end the request.
  const auto interim = one(srv, "interim");
  CAPTURE(interim.requests.front().error);
  CHECK(interim.requests.front().tl.succeeded());
  CHECK(interim.requests.front().tl.output_tokens() == 5);
  CHECK(one(srv, "switching").requests.front().error.rfind("HTTP 101: ", 0) == 0);
  CHECK(one(srv, "endless_interim").requests.front().error ==
        "HTTP: more than 100 1xx interim responses without a final one");
  // Media types: case-insensitive, parameters and whitespace aside.
  CHECK(tb::is_event_stream("text/event-stream"));
  CHECK(tb::is_event_stream("Text/Event-Stream; charset=utf-8"));
  CHECK(tb::is_event_stream(" TEXT/EVENT-STREAM ;charset=UTF-8"));
  CHECK_FALSE(tb::is_event_stream("text/event-streamx"));
  CHECK_FALSE(tb::is_event_stream("text/event"));
  CHECK_FALSE(tb::is_event_stream(""));
  CHECK(one(srv, "media_type").requests.front().tl.succeeded());
  CHECK(one(srv, "not_media").requests.front().failure == tb::failure_kind::not_sse);
  // "error": null (or false) beside the choices is no error; an error object or string is.
  CHECK(one(srv, "error_null").requests.front().tl.succeeded());
  for (const std::string e : {"null", "false"}) {
    whole_stream w;
    decode_whole(w,
                 "data: {\"error\":" + e + ",\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n",
                 tb::endpoint_kind::completions);
    CHECK(w.tl.succeeded());
  }
  whole_stream s;
  decode_whole(s, "data: {\"error\":\"boom\\u001b[2J\"}\n\n", tb::endpoint_kind::completions);
  CHECK(s.d->error() == "server error in the stream: boom\\x1b[2J");
}

TEST_CASE("bad input C18: a dead, refusing or fast-failing server: backoff, bounded, a verdict") {
  // A port that refuses: a server that listened there has stopped.
  std::uint16_t port = 0;
  {
    tb::scripted_server gone;
    port = gone.port();
    gone.stop();
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  tb::load_options o;
  o.tgt = tb::parse_target(url, "completions", "m");
  o.work.mode = tokchron_loadgen::arrival_mode::closed;
  o.work.users = 3;
  o.work.duration_s = 1.5;
  o.work.prompt =
      tokchron_loadgen::distribution::fixed(3, tokchron_loadgen::quantity::prompt_length);
  o.work.output =
      tokchron_loadgen::distribution::fixed(3, tokchron_loadgen::quantity::output_length);
  o.retry.first = 20ms;
  o.retry.most = 100ms;
  o.give_up = 0s;
  std::uint64_t ended = 0;
  std::vector<tb::clock::duration> delays;
  o.on_end = [&](tb::request_outcome&& r, tb::clock::time_point) {
    ++ended;
    CHECK(r.failure == tb::failure_kind::connect);
    delays.push_back(r.backoff);
  };
  const auto r = tb::run_load(o);
  // Nothing kept but the counts; every attempt held its user back by [d/2, d], d doubling
  // from 20 ms to at most 100 ms: each user tries at most 1 + 1.5 s / 50 ms + 3 times.
  CHECK(r.requests.empty());
  CHECK(ended == r.sent);
  CHECK(r.sent >= 3);
  CHECK(r.sent <= 3 * (1 + 30 + 3));
  CHECK(r.backoffs == r.sent);
  for (const auto d : delays) {
    CHECK(d >= 10ms);
    CHECK(d <= 100ms);
  }
  // Without a byte from any stream for --give-up while requests fail, the run stops: exit 6.
  {
    std::ostringstream out, err;
    const auto start = tb::clock::now();
    const int rc = tb::run_cli({"--url", url, "--users", "2", "--duration", "60", "--give-up",
                                "0.3", "--progress", "never"},
                               out, err);
    CAPTURE(err.str());
    CHECK(rc == tb::exit_gave_up);
    CHECK(tb::clock::now() - start < 20s);
    CHECK(err.str().find("the run stopped sending before its end: no stream received a byte "
                         "for ") != std::string::npos);
    CHECK(err.str().find("connect: Connection refused") != std::string::npos);
  }
  // A server that answers 503 at once: the users back off too.
  tb::scripted_server srv({2ms, 2ms, 2});
  std::ostringstream out, err;
  const int rc =
      tb::run_cli({"--url", "http://127.0.0.1:" + std::to_string(srv.port()), "--model", "http503",
                   "--users", "2", "--duration", "0.5", "--give-up", "0", "--progress", "never"},
                  out, err);
  CAPTURE(err.str());
  CHECK(rc == tb::exit_failed_requests);
  CHECK(err.str().find("fast failures held their users back") != std::string::npos);
  CHECK(err.str().find("by kind: http_status ") != std::string::npos);
  // 50 ms, 100 ms, 200 ms, ... (at most 2 s) between a user's attempts: a few each in 0.5 s.
  CHECK(srv.requests() <= 2 * 8);
}

TEST_CASE("--header: Name: value, refused when malformed or owned by the client") {
  CHECK(tb::parse_header("X-Tenant: blue") ==
        std::make_pair(std::string("X-Tenant"), std::string("blue")));
  CHECK(tb::parse_header("OpenAI-Organization:org-1") ==
        std::make_pair(std::string("OpenAI-Organization"), std::string("org-1")));
  CHECK(tb::parse_header("X-Empty:   ").second.empty());
  CHECK(tb::parse_header("X-Tab: \ta b\t").second == "a b");
  CHECK(tb::parse_header("Authorization: Basic dXNlcjpwdw==").first == "Authorization");
  const std::vector<std::pair<std::string, std::string>> bad{
      {"no colon", "expected 'Name: value'"},
      {": v", "no name before the ':'"},
      {"Bad Name: v", "which an HTTP field name cannot"},
      {"X(y): v", "which an HTTP field name cannot"},
      {"X-Split: a\r\nInjected: 1", "control character"},
      {std::string("X-Nul: a\0b", 11), "control character"},
      {"Host: other", "the client sets Host itself"},
      {"content-length: 5", "the client sets content-length itself"},
      {"Transfer-Encoding: chunked", "itself"},
      {"Connection: close", "itself"},
      {"Content-Type: text/plain", "itself"},
      {"Accept-Encoding: gzip", "itself"},
      {"X-Request-Id: mine", "itself"},
      {"Expect: 100-continue", "itself"},
  };
  for (const auto& b : bad) {
    const std::string& spec = b.first;
    const std::string& why = b.second;
    CAPTURE(spec);
    try {
      (void)tb::parse_header(spec);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find(why) != std::string::npos);
      CHECK(std::string(e.what()).find('\r') == std::string::npos);
    }
  }
  // The command line: a refused header exits 2; TLS options without https, or contradicting
  // each other, and a CA file that cannot be read, too.
  std::ostringstream o, e;
  CHECK(tb::run_cli({"--header", "Host: x"}, o, e) == 2);
  CHECK(tb::run_cli({"--header", "X-A: 1", "--header", "X-B: 2", "--rate", "0"}, o, e) == 2);
  CHECK(e.str().find("--header is given twice") == std::string::npos);  // repeatable
  CHECK(tb::run_cli({"--ca-cert", "/nonexistent.pem"}, o, e) == 2);
  CHECK(tb::run_cli({"--url", "https://h", "--ca-cert", "/nonexistent.pem"}, o, e) == 2);
  CHECK(e.str().find("--ca-cert '/nonexistent.pem': cannot be loaded") != std::string::npos);
  CHECK(tb::run_cli({"--url", "https://h", "--tls-verify", "maybe"}, o, e) == 2);
  CHECK(tb::run_cli({"--url", "https://h", "--tls-verify", "off", "--ca-cert", "x.pem"}, o, e) ==
        2);
  CHECK(tb::run_cli({"--api-key", "k", "--header", "authorization: Bearer j"}, o, e) == 2);
}

TEST_CASE(
    "--otlp: OpenTelemetry's GenAI client metrics of the run, failed requests by error.type") {
  const std::string file = std::string(TOKCHRON_BENCH_TEST_DIR) + "/otlp_client.json";
  const char* const opt_in = "OTEL_SEMCONV_STABILITY_OPT_IN";
  // The provider's attribute: gen_ai.system (v1.36.0) by default, gen_ai.provider.name when the
  // stability transition's variable opts into the latest conventions.
  for (const bool latest : {false, true}) {
    CAPTURE(latest);
    if (latest)
      REQUIRE(setenv(opt_in, "http, gen_ai_latest_experimental", 1) == 0);
    else
      REQUIRE(unsetenv(opt_in) == 0);
    const std::string provider_key = latest ? "gen_ai.provider.name" : "gen_ai.system";
    tb::scripted_server srv({1ms, 1ms, 2, {"ok", "http503", "ok", "error"}});
    const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
    std::ostringstream out, err;
    const int rc = tb::run_cli({"--url", url, "--endpoint", "chat", "--model", "m", "--users", "1",
                                "--max-requests", "4", "--output-len", "fixed:3", "--progress",
                                "never", "--otlp", file, "--otlp-provider", "vllm"},
                               out, err);
    CAPTURE(err.str());
    CHECK(rc == tb::exit_failed_requests);
    std::ifstream in(file);
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    REQUIRE(doc.is_object());
    // a lone run's resource names the tool only (a sweep's or --repeat's runs name themselves)
    CHECK(doc["resourceMetrics"][0]["resource"]["attributes"] ==
          nlohmann::json::parse(
              R"([{"key":"service.name","value":{"stringValue":"tokchron-bench"}}])"));
    const auto& metrics = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
    std::map<std::string, std::map<std::string, std::string>> points;  // metric -> split -> count
    for (const auto& m : metrics)
      for (const auto& p : m["histogram"]["dataPoints"]) {
        std::map<std::string, std::string> attrs;
        for (const auto& a : p["attributes"])
          attrs[a["key"].get<std::string>()] = a["value"].contains("intValue")
                                                   ? a["value"]["intValue"].get<std::string>()
                                                   : a["value"]["stringValue"].get<std::string>();
        const std::string split = attrs.count("error.type")          ? attrs["error.type"]
                                  : attrs.count("gen_ai.token.type") ? attrs["gen_ai.token.type"]
                                                                     : "";
        CHECK(attrs[provider_key] == "vllm");
        CHECK(attrs.count(latest ? "gen_ai.system" : "gen_ai.provider.name") == 0);
        CHECK(attrs["gen_ai.operation.name"] == "chat");
        CHECK(attrs["gen_ai.request.model"] == "m");
        CHECK(attrs["server.address"] == "127.0.0.1");
        CHECK(attrs["server.port"] == std::to_string(srv.port()));
        CHECK(p["attributes"].size() == 5 + (split.empty() ? 0 : 1));
        points[m["name"].get<std::string>()][split] = p["count"].get<std::string>();
      }
    using by = std::map<std::string, std::string>;
    CHECK(points["gen_ai.client.operation.duration"] ==
          by{{"", "2"}, {"503", "1"}, {"server_error", "1"}});
    CHECK(points["gen_ai.client.token.usage"] == by{{"input", "2"}, {"output", "2"}});
    // every request that received a chunk: the 503 received none, the error object came after
    // two tokens
    CHECK(points["gen_ai.client.operation.time_to_first_chunk"] == by{{"", "3"}});
    CHECK(points["gen_ai.client.operation.time_per_output_chunk"].size() == 1);
  }
  REQUIRE(unsetenv(opt_in) == 0);
  const tb::scripted_server srv({1ms, 1ms, 2});
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  std::ostringstream o2, e2;
  CHECK(tb::run_cli({"--otlp-provider", "vllm"}, o2, e2) == 2);
  CHECK(e2.str().find("--otlp-provider goes with --otlp") != std::string::npos);
  // the trace's own file is refused; a file that cannot be written stops the run before it sends
  std::ostringstream o3, e3;
  CHECK(tb::run_cli({"--url", url, "--otlp", file, "--trace-out", file}, o3, e3) == 2);
  CHECK(e3.str().find("--otlp " + file + " is also the --trace-out file") != std::string::npos);
  const auto sent = srv.requests();
  std::ostringstream o4, e4;
  const std::string nowhere = std::string(TOKCHRON_BENCH_TEST_DIR) + "/no-such-dir/otlp.json";
  CHECK(tb::run_cli({"--url", url, "--max-requests", "2", "--progress", "never", "--otlp", nowhere},
                    o4, e4) == 1);
  CHECK(e4.str().find("cannot write " + nowhere) != std::string::npos);
  CHECK(srv.requests() == sent);
}
