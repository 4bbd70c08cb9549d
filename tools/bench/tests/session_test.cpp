// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// tokchron-bench's multi-turn sessions (sessions.hpp): sessions files read (AIPerf's
// multi_turn, vLLM's conversations, a turn a line) and their malformed lines refused by line and
// field; sessions run against the scripted server, whose replies name their request, so that
// every turn is checked to carry exactly the earlier user messages and the live replies, with
// the affinity header; a failed turn stops its session; the run's end cuts sessions; a huge
// turn count allocates nothing by its number.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_cli.hpp"
#include "client.hpp"
#include "scripted_server.hpp"
#include "sessions.hpp"

namespace tb = tokchron_bench;
using namespace std::chrono_literals;

namespace {

tb::session_plan read(const std::string& text) {
  std::istringstream in(text);
  return tb::read_sessions(in, "s.jsonl");
}

std::string error_of(const std::string& text) {
  try {
    (void)read(text);
  } catch (const tb::session_error& e) {
    return e.what();
  }
  return {};
}

std::string text_of(const tb::session_plan& p, std::uint64_t at, std::uint32_t size) {
  return p.text.substr(at, size);
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = std::string(TOKCHRON_BENCH_TEST_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string header_of(const tb::seen_request& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    std::string lower = n;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == name) return v;
  }
  return "<none>";
}

struct logged_turn {
  std::string session, request_id, end, error;
  std::uint32_t turn = 0, user_words = 0;
  bool ok = false;
};

std::vector<logged_turn> read_log(const std::string& path) {
  std::vector<logged_turn> out;
  std::ifstream f(path);
  for (std::string l; std::getline(f, l);) {
    const auto j = nlohmann::json::parse(l);
    if (!j.contains("turn")) {  // a session the run's end cut: checked by the test that cuts
      CHECK(j.at("session_end") == "cut");
      continue;
    }
    logged_turn t;
    t.session = j.at("session");
    t.turn = j.at("turn");
    t.request_id = j.at("request_id");
    t.user_words = j.at("user_words");
    t.ok = j.at("ok");
    t.end = j.value("session_end", "");
    t.error = j.value("error", "");
    out.push_back(t);
  }
  return out;
}

// Checks every request the server saw: its messages are the session's earlier user messages,
// each followed by the reply the server streamed for that turn (" ID.0 ID.1 ...", from the
// `numbered` model), then a new user message; its affinity header names its session. Returns
// the turns checked.
std::size_t check_conversations(const tb::scripted_server& srv, const std::vector<logged_turn>& log,
                                const std::string& header) {
  const auto seen = srv.seen();
  std::map<std::string, std::vector<const logged_turn*>> by_session;
  for (const auto& t : log) by_session[t.session].push_back(&t);
  std::size_t checked = 0;
  for (const auto& [session, turns] : by_session) {
    std::vector<std::string> users, replies;
    for (std::size_t k = 0; k < turns.size(); ++k) {
      const logged_turn& t = *turns[k];
      CAPTURE(t.request_id);
      REQUIRE(t.turn == k + 1);
      REQUIRE(seen.count(t.request_id) == 1);
      const tb::seen_request& r = seen.at(t.request_id);
      CHECK(header_of(r, header) == session);
      const auto body = nlohmann::json::parse(r.body);
      const auto& m = body.at("messages");
      REQUIRE(m.size() == 2 * k + 1);
      for (std::size_t i = 0; i < k; ++i) {
        CHECK(m[2 * i].at("role") == "user");
        CHECK(m[2 * i].at("content") == users[i]);
        CHECK(m[2 * i + 1].at("role") == "assistant");
        CHECK(m[2 * i + 1].at("content") == replies[i]);
      }
      CHECK(m[2 * k].at("role") == "user");
      const std::string user = m[2 * k].at("content");
      // The user message has the words the log says.
      std::istringstream words(user);
      std::uint32_t n = 0;
      for (std::string w; words >> w;) ++n;
      CHECK(n == t.user_words);
      users.push_back(user);
      // The live reply: what the server streamed for this request.
      std::string reply;
      for (std::uint32_t c = 0; c < body.at("max_tokens").get<std::uint32_t>(); ++c)
        reply += " " + t.request_id + "." + std::to_string(c);
      replies.push_back(reply);
      ++checked;
    }
  }
  return checked;
}

}  // namespace

TEST_CASE("read_sessions: AIPerf's multi_turn, vLLM's conversations, a turn a line") {
  const auto p = read(
      // AIPerf multi_turn (aiperf/dataset/loader/multi_turn.py)
      "{\"session_id\": \"a\", \"turns\": [{\"text\": \"hello there\", \"delay\": 0}, "
      "{\"text\": \"and then\", \"delay\": 1500, \"output_length\": 7}]}\n"
      "\n"
      // vLLM's conversation (benchmarks/multi_turn): assistant messages give way to replies
      "{\"id\": \"b\", \"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, "
      "{\"role\": \"user\", \"content\": \"q1\"}, {\"role\": \"assistant\", \"content\": \"x\"}, "
      "{\"role\": \"user\", \"content\": \"q2\"}]}\n"
      // a turn a line, grouped by session_id, across other lines
      "{\"session_id\": \"c\", \"input_length\": 12, \"output_length\": 3}\n"
      "{\"session_id\": \"a\", \"text\": \"third\"}\n"
      "{\"session_id\": \"c\", \"input_length\": 5, \"delay\": 250}\n"
      "{\"text\": \"alone\"}\n");
  REQUIRE(p.sessions.size() == 4);
  CHECK(p.turns == 8);
  const auto& a = p.sessions[0];
  CHECK(a.id == "a");
  REQUIRE(a.turns.size() == 3);
  CHECK(text_of(p, a.turns[0].text_at, a.turns[0].text_size) == "hello there");
  CHECK(*a.turns[1].delay_s == doctest::Approx(1.5));
  CHECK(a.turns[1].output_tokens == 7);
  CHECK(text_of(p, a.turns[2].text_at, a.turns[2].text_size) == "third");
  CHECK(a.turns[2].line == 5);
  const auto& b = p.sessions[1];
  CHECK(b.id == "b");
  CHECK(b.has_system);
  CHECK(text_of(p, b.system_at, b.system_size) == "be brief");
  REQUIRE(b.turns.size() == 2);
  CHECK(text_of(p, b.turns[1].text_at, b.turns[1].text_size) == "q2");
  const auto& c = p.sessions[2];
  REQUIRE(c.turns.size() == 2);
  CHECK(!c.turns[0].has_text);
  CHECK(c.turns[0].words == 12);
  CHECK(c.turns[0].output_tokens == 3);
  CHECK(*c.turns[1].delay_s == doctest::Approx(0.25));
  CHECK(p.sessions[3].id == "line-7");
}

TEST_CASE("read_sessions: a malformed line is refused, naming the line and the field") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"turns\": [{\"text\": \"a\"}]}\nnot json\n", "s.jsonl: line 2: not a JSON object"},
      {"[1, 2]\n", "s.jsonl: line 1: not a JSON object"},
      {"{\"turns\": []}\n", "line 1: field turns: must be a non-empty array"},
      {"{\"turns\": [{\"delay\": 3}]}\n", "line 1: field turns[0].text: missing"},
      {"{\"turns\": [{\"text\": 3}]}\n", "line 1: field turns[0].text: must be a string"},
      {"{\"turns\": [{\"text\": \"a\", \"timestamp\": 5}]}\n",
       "line 1: field turns[0].timestamp: fixed-schedule turns are not supported"},
      {"{\"turns\": [{\"texts\": [\"a\", \"b\"]}]}\n", "line 1: field turns[0].texts: is not"},
      {"{\"turns\": [{\"text\": \"a\", \"dealy\": 5}]}\n",
       "line 1: field turns[0].dealy: is not a field of a turn"},
      {"{\"turns\": [{\"text\": \"a\", \"delay\": -1}]}\n",
       "line 1: field turns[0].delay: must be a number of milliseconds"},
      {"{\"turns\": [{\"text\": \"a\", \"output_length\": 0}]}\n",
       "line 1: field turns[0].output_length: must be a positive integer"},
      {"{\"turns\": [{\"input_length\": 4000000000}]}\n",
       "line 1: field turns[0].input_length: 4000000000, more than 1048576"},
      {"{\"turns\": [{\"text\": \"a\", \"role\": \"assistant\"}]}\n",
       "line 1: field turns[0].role: must be \"user\""},
      {"{\"session_id\": \"a b\", \"turns\": [{\"text\": \"a\"}]}\n",
       "line 1: field session_id: 'a b' holds a character"},
      {"{\"session_id\": \"\", \"text\": \"a\"}\n", "line 1: field session_id: must be 1 to 128"},
      {"{\"session_id\": [1], \"text\": \"a\"}\n", "line 1: field session_id: must be a string"},
      {"{\"id\": 1, \"messages\": [{\"role\": \"assistant\", \"content\": \"x\"}]}\n",
       "line 1: field messages[0].role: an assistant message that answers no user message"},
      {"{\"id\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": "
       "\"user\", \"content\": \"y\"}]}\n",
       "line 1: field messages[1].role: a user message right after another"},
      {"{\"id\": 1, \"messages\": [{\"role\": \"tool\", \"content\": \"x\"}]}\n",
       "line 1: field messages[0].role: must be system, user or assistant"},
      {"{\"id\": 1, \"messages\": [{\"role\": \"user\", \"content\": [1]}]}\n",
       "line 1: field messages[0].content: must be a string"},
      {"{\"id\": 1, \"messages\": [{\"role\": \"system\", \"content\": \"s\"}]}\n",
       "line 1: session '1' has no user turn"},
      {"{\"session_id\": \"a\", \"text\": \"x\"}\n{\"session_id\": \"a\", \"system\": \"s\", "
       "\"text\": \"y\"}\n",
       "line 2: field system: a system message after the session's first user turn"},
      {"\n\n", "s.jsonl: no session (2 lines)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.first);
    const std::string e = error_of(c.first);
    CAPTURE(e);
    CHECK(e.find(c.second) != std::string::npos);
  }
  // Deep nesting is refused as a value of the wrong type, not a crash.
  CHECK(error_of("{\"turns\": [{\"text\": " + std::string(100000, '[') + std::string(100000, ']') +
                 "}]}\n")
            .find("line 1: field turns[0].text: must be a string") != std::string::npos);
}

TEST_CASE("sessions against the scripted server: every turn carries the live replies") {
  tb::scripted_server srv({1ms, 1ms, 2, {"numbered"}});
  const std::string log_path = std::string(TOKCHRON_BENCH_TEST_DIR) + "/session_test.log";
  std::ostringstream out, err;
  const int rc = tb::run_cli({"--url",           "http://127.0.0.1:" + std::to_string(srv.port()),
                              "--endpoint",      "chat",
                              "--session-turns", "uniform:2,5",
                              "--prompt-len",    "uniform:1,20",
                              "--output-len",    "uniform:1,6",
                              "--users",         "3",
                              "--max-sessions",  "7",
                              "--duration",      "60",
                              "--turn-think",    "uniform:0,0.01",
                              "--session-log",   log_path,
                              "--progress",      "never",
                              "--profile",       "canonical",
                              "--format",        "json"},
                             out, err);
  CAPTURE(err.str());
  REQUIRE(rc == 0);
  const auto log = read_log(log_path);
  const std::size_t checked = check_conversations(srv, log, "x-session-id");
  CHECK(checked == log.size());
  CHECK(srv.requests() == log.size());
  const auto doc = nlohmann::json::parse(out.str());
  const auto& s = doc.at("sessions");
  CHECK(s.at("started") == 7);
  CHECK(s.at("completed") == 7);
  CHECK(s.at("failed") == 0);
  CHECK(s.at("cut") == 0);
  CHECK(s.at("turns") == log.size());
  CHECK(s.at("duration_s").at("count") == 7);
  // Rows for turns 1 and 2 at least (every session has two); each row's requests sum to all.
  std::uint64_t rows = 0;
  for (const auto& r : s.at("by_turn")) rows += r.at("summary").at("requests").get<std::uint64_t>();
  CHECK(rows == log.size());
  CHECK(s.at("by_turn").at(0).at("turn") == "1");
  CHECK(s.at("by_turn").at(0).at("summary").at("requests") == 7);
  std::remove(log_path.c_str());
}

TEST_CASE("a sessions file: system message, file texts and lengths, the header named") {
  tb::scripted_server srv({1ms, 1ms, 2, {"numbered"}});
  const std::string path = write_file(
      "sessions_file.jsonl",
      "{\"session_id\": \"conv-1\", \"system\": \"you are terse\", \"turns\": [{\"text\": \"hi "
      "there\"}, {\"text\": \"more please\", \"output_length\": 4, \"delay\": 5}]}\n"
      "{\"id\": \"conv-2\", \"messages\": [{\"role\": \"user\", \"content\": \"one\"}, "
      "{\"role\": \"assistant\", \"content\": \"recorded answer\"}, {\"role\": \"user\", "
      "\"content\": \"two\"}]}\n"
      "{\"session_id\": \"conv-3\", \"input_length\": 40, \"output_length\": 2}\n");
  const std::string log_path = std::string(TOKCHRON_BENCH_TEST_DIR) + "/session_file.log";
  std::ostringstream out, err;
  const int rc = tb::run_cli({"--url",
                              "http://127.0.0.1:" + std::to_string(srv.port()),
                              "--endpoint",
                              "chat",
                              "--sessions",
                              path,
                              "--rate",
                              "50",
                              "--output-len",
                              "fixed:3",
                              "--session-header",
                              "X-Affinity",
                              "--session-log",
                              log_path,
                              "--progress",
                              "never",
                              "--profile",
                              "canonical",
                              "--format",
                              "csv"},
                             out, err);
  CAPTURE(err.str());
  REQUIRE(rc == 0);
  CHECK(out.str().find("Sessions: 3 started, 3 completed every turn") != std::string::npos);
  const auto log = read_log(log_path);
  REQUIRE(log.size() == 5);
  const auto seen = srv.seen();
  for (const auto& t : log) {
    const tb::seen_request& r = seen.at(t.request_id);
    CHECK(header_of(r, "x-affinity") == t.session);
    CHECK(header_of(r, "x-session-id") == "<none>");
    const auto m = nlohmann::json::parse(r.body).at("messages");
    if (t.session == "conv-1") {
      CHECK(m.at(0) == nlohmann::json{{"role", "system"}, {"content", "you are terse"}});
      CHECK(m.at(1).at("content") == "hi there");
      if (t.turn == 2) {
        REQUIRE(m.size() == 4);
        CHECK(nlohmann::json::parse(r.body).at("max_tokens") == 4);
        CHECK(m.at(3).at("content") == "more please");
      }
    } else if (t.session == "conv-2" && t.turn == 2) {
      REQUIRE(m.size() == 3);
      // The recorded answer gave way to the live reply (3 tokens: --output-len fixed:3).
      const auto first = std::find_if(log.begin(), log.end(), [](const logged_turn& x) {
        return x.session == "conv-2" && x.turn == 1;
      });
      REQUIRE(first != log.end());
      const std::string id = first->request_id;
      CHECK(m.at(1).at("content") == " " + id + ".0 " + id + ".1 " + id + ".2");
      CHECK(m.at(2).at("content") == "two");
    } else if (t.session == "conv-3") {
      CHECK(t.user_words == 40);
      CHECK(nlohmann::json::parse(r.body).at("max_tokens") == 2);
    }
  }
  std::remove(log_path.c_str());
  std::remove(path.c_str());
}

TEST_CASE("a failed turn stops its session: no later turn is sent") {
  // One user, so the server's order of arrival is the sessions' order: session 0's turns are
  // requests 0, 1 (fails: 500), and nothing more of it; session 1 then runs whole.
  tb::scripted_server srv({1ms, 1ms, 2, {"numbered", "http500", "numbered", "numbered"}});
  const std::string log_path = std::string(TOKCHRON_BENCH_TEST_DIR) + "/session_fail.log";
  std::ostringstream out, err;
  const int rc = tb::run_cli({"--url",           "http://127.0.0.1:" + std::to_string(srv.port()),
                              "--endpoint",      "chat",
                              "--session-turns", "fixed:3",
                              "--prompt-len",    "fixed:4",
                              "--output-len",    "fixed:2",
                              "--users",         "1",
                              "--max-sessions",  "2",
                              "--session-log",   log_path,
                              "--progress",      "never",
                              "--profile",       "canonical",
                              "--format",        "json"},
                             out, err);
  CAPTURE(err.str());
  CHECK(rc == tb::exit_failed_requests);
  const auto log = read_log(log_path);
  REQUIRE(log.size() == 5);  // 2 turns of session 0, 3 of session 1
  CHECK(log[1].session == log[0].session);
  CHECK(!log[1].ok);
  CHECK(log[1].end == "failed");
  CHECK(log[2].session != log[0].session);
  CHECK(log[2].turn == 1);
  CHECK(log[4].end == "completed");
  CHECK(srv.requests() == 5);
  const auto s = nlohmann::json::parse(out.str()).at("sessions");
  CHECK(s.at("started") == 2);
  CHECK(s.at("completed") == 1);
  CHECK(s.at("failed") == 1);
  CHECK(s.at("by_turn").at(1).at("failed") == 1);
  std::remove(log_path.c_str());
}

TEST_CASE("the run's end cuts sessions; a huge turn count allocates nothing by its number") {
  tb::scripted_server srv({1ms, 1ms, 2, {"numbered"}});
  std::ostringstream out, err;
  const std::string log_path = std::string(TOKCHRON_BENCH_TEST_DIR) + "/session_cut.log";
  // A billion turns each; think 0.2 s; the run ends at 1 s: each session is cut by it.
  const int rc = tb::run_cli({"--url",           "http://127.0.0.1:" + std::to_string(srv.port()),
                              "--session-log",   log_path,
                              "--endpoint",      "chat",
                              "--session-turns", "fixed:1000000000",
                              "--turn-think",    "fixed:0.2",
                              "--prompt-len",    "fixed:2",
                              "--output-len",    "fixed:1",
                              "--users",         "2",
                              "--duration",      "1",
                              "--progress",      "never",
                              "--profile",       "canonical",
                              "--format",        "json"},
                             out, err);
  CAPTURE(err.str());
  REQUIRE(rc == 0);
  const auto s = nlohmann::json::parse(out.str()).at("sessions");
  CHECK(s.at("started") == 2);
  CHECK(s.at("completed") == 0);
  CHECK(s.at("cut") == 2);
  // Each user's turns are 0.2 s apart at least: at most 1 + 1 s / 0.2 s each.
  CHECK(s.at("turns").get<std::uint64_t>() >= 2);
  CHECK(s.at("turns").get<std::uint64_t>() <= 12);
  // Turns past the 32nd would share the last row: here every turn has its own.
  CHECK(s.at("by_turn").back().at("turn") != "33+");
  // The log: no turn ends a session; each session's own line says the run's end cut it after
  // the turns logged.
  std::map<std::string, std::uint64_t> turns, cut;
  std::ifstream f(log_path);
  for (std::string l; std::getline(f, l);) {
    const auto j = nlohmann::json::parse(l);
    if (j.contains("turn")) {
      CHECK_FALSE(j.contains("session_end"));
      ++turns[j.at("session").get<std::string>()];
    } else {
      CHECK(j.at("session_end") == "cut");
      cut[j.at("session").get<std::string>()] = j.at("turns").get<std::uint64_t>();
    }
  }
  CHECK(cut.size() == 2);
  CHECK(cut == turns);
}

TEST_CASE("sessions on the command line: refusals") {
  const std::string ok = write_file("sessions_ok.jsonl", "{\"text\": \"a\"}\n");
  const std::string bad = write_file("sessions_bad.jsonl", "{\"text\": \"a\"}\n{\"text\": 1}\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--sessions", ok}, "sessions need --endpoint chat"},
      {{"--endpoint", "chat", "--sessions", ok, "--session-turns", "fixed:2"},
       "--session-turns makes synthetic sessions; --sessions reads them: one"},
      {{"--endpoint", "chat", "--sessions", ok, "--max-requests", "3"},
       "--max-requests does not go with sessions"},
      {{"--endpoint", "chat", "--session-turns", "fixed:2", "--replay", ok},
       "--replay does not go with sessions"},
      {{"--turn-think", "fixed:1"}, "--turn-think goes with --sessions or --session-turns"},
      {{"--endpoint", "chat", "--session-turns", "nope:2"}, "--session-turns 'nope:2': "},
      {{"--endpoint", "chat", "--session-turns", "fixed:2", "--session-header", "Bad Name"},
       "--session-header 'Bad Name': the name holds ' '"},
      {{"--endpoint", "chat", "--session-turns", "fixed:2", "--session-header", "Host"},
       "--session-header 'Host': the client sets Host itself"},
      {{"--endpoint", "chat", "--session-turns", "fixed:2", "--max-sessions", "0"},
       "--max-sessions '0': must be an integer in [1, 1e12]"},
      {{"--endpoint", "chat", "--sessions", bad},
       "--sessions: " + bad + ": line 2: field text: must be a string"},
      {{"--endpoint", "chat", "--sessions", bad + ".missing"}, "--sessions: cannot read "},
  };
  for (const auto& c : refused) {
    std::ostringstream out, err;
    CAPTURE(c.second);
    CHECK(tb::run_cli(c.first, out, err) == 2);
    CAPTURE(err.str());
    CHECK(err.str().find("tokchron-bench: " + c.second) == 0);
  }
  std::remove(ok.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("a conversation over its byte limit stops: the reply that would pass it is not carried") {
  // Replies of " ID.k" (ID a 1-digit request id here: 4 bytes a token, 40 a reply); 3 words of
  // user message a turn (5 to 14 bytes). After turn 1 the conversation holds 45 to 54 bytes,
  // with turn 2's message 50 to 68, and turn 2's reply would take it to 90 to 108: past 80.
  tb::scripted_server srv({1ms, 1ms, 2, {"numbered"}});
  tb::load_options lo;
  lo.tgt = tb::parse_target("http://127.0.0.1:" + std::to_string(srv.port()), "chat", "m");
  tb::session_settings ss;
  ss.work.mode = tokchron_loadgen::arrival_mode::closed;
  ss.work.users = 1;
  ss.work.duration_s = 30;
  ss.work.prompt =
      tokchron_loadgen::distribution::fixed(3, tokchron_loadgen::quantity::prompt_length);
  ss.work.output =
      tokchron_loadgen::distribution::fixed(10, tokchron_loadgen::quantity::output_length);
  ss.turns = tokchron_loadgen::distribution::fixed(4, tokchron_loadgen::quantity::output_length);
  ss.max_sessions = 1;
  ss.max_bytes = 80;
  std::ostringstream log;
  ss.log = &log;
  auto h = tb::make_session_hooks(ss);
  lo.schedule = h.schedule;
  lo.body = h.body;
  lo.headers = h.headers;
  lo.on_outcome = h.on_outcome;
  lo.keep_reply = h.keep_reply;
  const auto r = tb::run_load(lo);
  h.finish();
  CAPTURE(log.str());
  REQUIRE(r.requests.size() == 2);
  for (const auto& o : r.requests) CHECK(o.error.empty());
  CHECK(h.stats->started == 1);
  CHECK(h.stats->too_long == 1);
  CHECK(h.stats->completed == 0);
  CHECK(h.stats->turns == 2);
  CHECK(log.str().find("\"turn\":2") != std::string::npos);
  CHECK(log.str().find("\"session_end\":\"too_long\"") != std::string::npos);
  CHECK(srv.requests() == 2);
}
