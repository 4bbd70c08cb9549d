// SPDX-License-Identifier: MIT
// `tokchron-report join`: client and server traces joined by request id (join.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report.hpp"
#include "test_util.hpp"

namespace tr = tokchron_report;

using namespace trace_report_test;

namespace {

// The client's clock reads 10 s and the server's 5000 s at the same wall instant (their
// anchors): a server time minus 4990 s is a client time.
const std::string client_anchor =
    R"("clock_mono":10,"clock_wall_ns":1700000000000000000,"clock_gap_ns":1000,)";
const std::string server_anchor =
    R"("clock_mono":5000,"clock_wall_ns":1700000000000000000,"clock_gap_ns":2000,)";

std::string line(const std::string& anchor, const std::string& rest) {
  return "{" + anchor + rest + "}";
}

}  // namespace

TEST_CASE("join: ids, counts and the split of each request") {
  CHECK(tr::client_id_of_server_id("cmpl-12") == "12");
  CHECK(tr::client_id_of_server_id("chatcmpl-ab") == "ab");
  CHECK(tr::client_id_of_server_id("cmpl-") == "cmpl-");
  CHECK(tr::client_id_of_server_id("x7") == "x7");

  const std::string dir = tmp_dir("join_split");
  write_lines(dir + "/client.jsonl",
              {line(client_anchor, R"("id":"1","send":1.0,"chunks":[[1.5,1],[2.0,3]],"end":2.0)"),
               line(client_anchor, R"("id":"2","send":1.2,"chunks":[[1.9,1],[2.4,3]],"end":2.4)"),
               line(client_anchor, R"("id":"3","send":1.3,"chunks":[],"ok":false,"error":"x")"),
               line(client_anchor, R"("id":"4","send":1.3,"chunks":[[1.4,1]])"),
               line(client_anchor, R"("id":"5","send":1.3,"chunks":[[1.4,1]])"),
               line(client_anchor, R"("id":"5","send":1.3,"chunks":[[1.4,1]])")});
  // Server: request 1 arrives 0.1 s after its send, is scheduled 0.1 s later, first token
  // 0.2 s after that, and its first chunk reaches the client 0.1 s later. Request 2's first
  // chunk is on the client 0.05 s *before* the server sent it: a clock error of -50 ms.
  write_lines(
      dir + "/server.jsonl",
      {line(
           server_anchor,
           R"("id":"cmpl-1","send":4991.1,"scheduled":4991.2,"chunks":[[4991.4,1],[4991.9,3]],"end":4991.9)"),
       line(server_anchor,
            R"("id":"chatcmpl-2","send":4991.3,"chunks":[[4991.95,1],[4992.3,3]],"end":4992.3)"),
       line(server_anchor, R"("id":"cmpl-3","send":4991.4,"chunks":[[4991.8,1]],"end":4992.3)"),
       line(server_anchor, R"("id":"cmpl-7","send":4991.4,"chunks":[[4991.8,1]],"end":4992.3)")});
  const auto r = report({"join", "--format", "json", "--percentiles", "50,100", "--server",
                         dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& q = j["requests"];
  CHECK(q["client"] == 6);
  CHECK(q["server"] == 4);
  CHECK(q["matched"] == 3);        // 1, 2, 3
  CHECK(q["client_only"] == 1);    // 4
  CHECK(q["server_only"] == 1);    // cmpl-7
  CHECK(q["duplicate_ids"] == 2);  // both 5s
  CHECK(q["failed"] == 1);         // 3 failed on the client
  CHECK(q["split"] == 2);
  CHECK(j["clock"]["server_to_client"].get<double>() == -4990.0);
  CHECK(j["clock"]["error"].get<double>() == doctest::Approx(1.5e-6));
  CHECK(j["clock"]["source"] == "anchors");
  const auto& p = j["parts"];
  auto approx = [](const nlohmann::json& v) {
    return doctest::Approx(v.get<double>()).epsilon(1e-9);
  };
  CHECK(p["client_ttft"]["min"].get<double>() == doctest::Approx(0.5));
  CHECK(p["client_ttft"]["max"].get<double>() == doctest::Approx(0.7));
  CHECK(p["to_server"]["p50"].get<double>() == doctest::Approx(0.1));
  CHECK(p["server_ttft"]["min"].get<double>() == doctest::Approx(0.3));
  CHECK(p["server_ttft"]["max"].get<double>() == doctest::Approx(0.65));
  CHECK(p["server_queue"]["count"] == 1);
  CHECK(p["server_queue"]["max"].get<double>() == doctest::Approx(0.1));
  CHECK(p["server_prefill"]["max"].get<double>() == doctest::Approx(0.2));
  CHECK(p["ttft_return"]["min"].get<double>() == doctest::Approx(-0.05));
  CHECK(p["ttft_return"]["negative"] == 1);
  CHECK(p["ttft_return"]["beyond_error"] == 1);  // -50 ms is far beyond the 1.5 us bound
  CHECK(p["e2e_return"]["negative"] == 0);
  // The parts add up to the client's figures, request by request (so do the means).
  for (const char* m : {"mean", "min", "max"}) {
    CAPTURE(m);
    if (std::string(m) == "mean") {
      CHECK(p["client_ttft"][m].get<double>() ==
            approx(p["to_server"][m].get<double>() + p["server_ttft"][m].get<double>() +
                   p["ttft_return"][m].get<double>()));
      CHECK(p["client_e2e"][m].get<double>() ==
            approx(p["to_server"][m].get<double>() + p["server_e2e"][m].get<double>() +
                   p["e2e_return"][m].get<double>()));
    }
  }
  CHECK(r.err.find("warning: 1 client requests have no server request") != std::string::npos);
  CHECK(r.err.find("warning: 2 requests share their id") != std::string::npos);
  CHECK(r.err.find("ttft_return: 1 values are negative beyond the clock error bound") !=
        std::string::npos);

  // The table and CSV carry the same parts.
  const auto t = report({"join", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(t.rc == 0);
  CHECK(t.out.find("clock: client time = server time -4990 s (anchors), error <= 1.5 us") !=
        std::string::npos);
  CHECK(t.out.find("ttft_return") != std::string::npos);
  const auto c =
      report({"join", "--format", "csv", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(c.out.rfind("part,count,mean,min,p50,p90,p95,p99,max,negative,beyond_error\n", 0) == 0);
  CHECK(c.out.find("\nttft_return,2,") != std::string::npos);

  // --clock-offset replaces the anchors (its error is the user's: no bound, none beyond it).
  const auto o = report({"join", "--format", "json", "--clock-offset", "-4990.05", "--server",
                         dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(o.rc == 0);
  const auto jo = nlohmann::json::parse(o.out);
  CHECK(jo["clock"]["source"] == "--clock-offset");
  CHECK(jo["clock"]["error"].is_null());
  CHECK(jo["parts"]["to_server"]["p50"].get<double>() == doctest::Approx(0.05));

  // --plot writes the two split pictures beside the page.
  const auto pl = report(
      {"join", "--plot", dir + "/plot", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(pl.rc == 0);
  CHECK(pl.err.find("plot: wrote 7 pictures' data and scripts") !=
        std::string::npos);                                                 // 4 + spectrum + 2
  CHECK(std::filesystem::is_regular_file(dir + "/plot/latency_ttft.dat"));  // client and server
  CHECK(std::filesystem::is_regular_file(dir + "/plot/split_ttft.dat"));
  CHECK(std::filesystem::is_regular_file(dir + "/plot/split_e2e.gp"));
  CHECK(std::filesystem::is_regular_file(dir + "/plot/index.html"));
}

TEST_CASE("TR3: join leaves out an unreadable client file, names and counts it") {
  const std::string dir = tmp_dir("join_unreadable");
  write_lines(dir + "/client.jsonl",
              {line(client_anchor, R"("id":"1","send":1.0,"chunks":[[1.5,1],[2.0,3]],"end":2.0)")});
  write_lines(
      dir + "/server.jsonl",
      {line(
          server_anchor,
          R"("id":"cmpl-1","send":4991.1,"scheduled":4991.2,"chunks":[[4991.4,1],[4991.9,3]],"end":4991.9)")});
  const std::string missing = dir + "/missing.jsonl";
  for (const std::string format : {"table", "csv", "json"}) {
    CAPTURE(format);
    const auto r = report({"join", "--format", format, "--server", dir + "/server.jsonl", missing,
                           dir + "/client.jsonl"});
    CHECK(r.rc == tr::exit_unreadable_files);
    CHECK(r.err.find("cannot open " + missing) != std::string::npos);
    if (format == "json") {
      const auto j = nlohmann::json::parse(r.out);
      CHECK(j["requests"]["matched"] == 1);
      CHECK(j["unreadable_files"].size() == 1);
    } else {
      CHECK(r.out.find(format == "csv" ? "unreadable_files,1\n" : "unreadable client files: 1") !=
            std::string::npos);
    }
  }
  // the server's trace is needed whole
  const auto r = report({"join", "--server", missing, dir + "/client.jsonl"});
  CHECK(r.rc == tr::exit_input);
  CHECK(r.out.empty());
}

TEST_CASE("join: refusals") {
  const std::string dir = tmp_dir("join_refusals");
  write_lines(dir + "/plain.jsonl", {R"({"id":"1","send":1,"chunks":[[2,1]]})"});
  write_lines(dir + "/server.jsonl",
              {line(server_anchor, R"("id":"cmpl-1","send":4991.1,"chunks":[[4991.4,1]])")});
  write_lines(dir + "/bad.jsonl", {R"({"id":"1","send":1,"chunks":[[0.5,1]]})"});
  // No anchor on one side, no offset: the clocks cannot be related (exit 1, nothing written).
  auto r = report({"join", "--server", dir + "/server.jsonl", dir + "/plain.jsonl"});
  CHECK(r.rc == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("the client trace has no clock anchor") != std::string::npos);
  CHECK(r.err.find("--clock-offset") != std::string::npos);
  // With an offset it joins.
  r = report(
      {"join", "--clock-offset", "-4990", "--server", dir + "/server.jsonl", dir + "/plain.jsonl"});
  CHECK(r.rc == 0);
  // Usage errors: no --server, no client, a bad offset, an option join does not take.
  CHECK(report({"join", dir + "/plain.jsonl"}).rc == 2);
  CHECK(report({"join", "--server", dir + "/server.jsonl"}).rc == 2);
  CHECK(report({"join", "--clock-offset", "x", "--server", dir + "/server.jsonl",
                dir + "/plain.jsonl"})
            .rc == 2);
  CHECK(
      report({"join", "--profile", "vllm", "--server", dir + "/server.jsonl", dir + "/plain.jsonl"})
          .rc == 2);
  CHECK(report({"--server", dir + "/server.jsonl", dir + "/plain.jsonl"}).rc == 2);
  // A missing file is named; a client trace with only bad lines gives no report.
  r = report({"join", "--server", dir + "/nope.jsonl", dir + "/plain.jsonl"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("nope.jsonl") != std::string::npos);
  r = report(
      {"join", "--clock-offset", "0", "--server", dir + "/server.jsonl", dir + "/bad.jsonl"});
  CHECK(r.rc == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("line 1: field chunks[0][0]: is earlier than send") != std::string::npos);
}

namespace {

// A client line and its server partner (ids "ID" and "cmpl-ID"): sent at `t` on the client,
// arriving 0.1 s later on the server, first token 0.2 s after that, the client seeing it 0.1 s
// later, the end 0.1 s after the first token on both sides. `server_clock`: the server's time
// of client time 0 (the anchors below put it at +4990 s).
std::string client_line(const std::string& id, double t) {
  std::ostringstream os;
  os.precision(17);
  os << R"("id":")" << id << R"(","send":)" << t << R"(,"chunks":[[)" << t + 0.4 << ",1],["
     << t + 0.5 << R"(,3]],"end":)" << t + 0.5;
  return line(client_anchor, os.str());
}
std::string server_line(const std::string& id, double t, double server_clock = 4990) {
  std::ostringstream os;
  os.precision(17);
  const double s = t + server_clock;
  os << R"("id":"cmpl-)" << id << R"(","send":)" << s + 0.1 << R"(,"chunks":[[)" << s + 0.3
     << ",1],[" << s + 0.4 << R"(,3]],"end":)" << s + 0.4;
  return line(server_anchor, os.str());
}

nlohmann::json join_json_of(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"join", "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  const auto r = report(args);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE(
    "bad input J1: join: every request of each side is matched, alone, duplicated or "
    "ambiguous, counted and named in every format") {
  const std::string dir = tmp_dir("join_ids");
  // Client: 1 and 2 match; 3 twice (a duplicate on the client); 4 once, but the server has it
  // twice (ambiguous); 5 only on the client. Server: 1, 2, 4 twice, 3 once (ambiguous: the
  // client has it twice), 6 and 7 only on the server.
  write_lines(dir + "/client.jsonl",
              {client_line("1", 1), client_line("2", 2), client_line("3", 3), client_line("3", 4),
               client_line("4", 5), client_line("5", 6)});
  write_lines(dir + "/server.jsonl",
              {server_line("1", 1), server_line("2", 2), server_line("4", 5), server_line("4", 5.5),
               server_line("3", 3), server_line("6", 7), server_line("7", 8)});
  const auto r = report(
      {"join", "--format", "json", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& q = j["requests"];
  CHECK(q["client"] == 6);
  CHECK(q["server"] == 7);
  CHECK(q["matched"] == 2);
  CHECK(q["client_only"] == 1);
  CHECK(q["server_only"] == 2);
  CHECK(q["client_duplicate_ids"] == 2);
  CHECK(q["server_duplicate_ids"] == 2);
  CHECK(q["duplicate_ids"] == 4);
  CHECK(q["client_ambiguous"] == 1);  // 4
  CHECK(q["server_ambiguous"] == 1);  // cmpl-3 (before: miscounted as server only)
  // Every request of each side in exactly one class.
  CHECK(q["client"].get<int>() == q["matched"].get<int>() + q["client_only"].get<int>() +
                                      q["client_duplicate_ids"].get<int>() +
                                      q["client_ambiguous"].get<int>());
  CHECK(q["server"].get<int>() == q["matched"].get<int>() + q["server_only"].get<int>() +
                                      q["server_duplicate_ids"].get<int>() +
                                      q["server_ambiguous"].get<int>());
  CHECK(q["split"] == 2);
  const auto& ex = j["unpaired_examples"];
  CHECK(ex["client_only"] == nlohmann::json::array({"5"}));
  CHECK(ex["server_only"] == nlohmann::json::array({"cmpl-6", "cmpl-7"}));
  CHECK(ex["duplicate_ids"] == nlohmann::json::array({"3", "4"}));
  CHECK(ex["ambiguous"] == nlohmann::json::array({"4", "3"}));
  CHECK(r.err.find("warning: 1 client requests have no server request of the same id (left "
                   "out): 5\n") != std::string::npos);
  CHECK(r.err.find("warning: 2 server requests have no client request of the same id (left "
                   "out): cmpl-6, cmpl-7\n") != std::string::npos);
  CHECK(r.err.find("warning: 4 requests share their id with another on the same side (left "
                   "out; 2 client, 2 server): 3, 4\n") != std::string::npos);
  CHECK(r.err.find("warning: 2 requests have an id that repeats on the other side (left out, "
                   "never paired by guess; 1 client, 1 server): 4, 3\n") != std::string::npos);
  // The table and the CSV carry every count.
  const auto t = report({"join", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(t.out.find("requests: 6 client, 7 server; 2 matched, 1 client only, 2 server only, 4 "
                   "with a duplicate id (2 client, 2 server), 2 whose id repeats on the other "
                   "side (1 client, 1 server); 0 failed, 0 without a first token; 2 split\n") !=
        std::string::npos);
  const auto c =
      report({"join", "--format", "csv", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  for (const char* row :
       {"\nrequests_client,6\n", "\nrequests_server,7\n", "\nmatched,2\n", "\nclient_only,1\n",
        "\nserver_only,2\n", "\nclient_duplicate_ids,2\n", "\nserver_duplicate_ids,2\n",
        "\nclient_ambiguous,1\n", "\nserver_ambiguous,1\n", "\nsplit,2\n",
        "\nclient_malformed_lines,0\n"}) {
    CAPTURE(row);
    CHECK(c.out.find(row) != std::string::npos);
  }
  // More unpaired ids than the examples kept: the first five named, then "...".
  std::vector<std::string> many = {client_line("1", 1)};
  for (int i = 0; i < 8; ++i) many.push_back(client_line("x" + std::to_string(i), 10 + i));
  write_lines(dir + "/client.jsonl", many);
  const auto m = report({"join", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(m.err.find("warning: 8 client requests have no server request of the same id (left "
                   "out): x0, x1, x2, x3, x4, ...\n") != std::string::npos);
}

TEST_CASE("bad input J2: join: clocks hours apart, or pairs no one shift fits, are named") {
  const std::string dir = tmp_dir("join_clocks");
  write_lines(dir + "/client.jsonl", {client_line("1", 1), client_line("2", 2)});
  write_lines(dir + "/server.jsonl", {server_line("1", 1), server_line("2", 2)});
  // The anchors relate the clocks: the shift is inside what the requests allow,
  // [-4990 + 0 - 0.1, -4990 + 0.1] = [-4990.1, -4989.9].
  auto j = join_json_of(dir);
  CHECK(j["clock"]["check"]["low"].get<double>() == doctest::Approx(-4990.1));
  CHECK(j["clock"]["check"]["high"].get<double>() == doctest::Approx(-4989.9));
  CHECK(j["clock"]["check"]["off_by"].get<double>() == 0);
  // A --clock-offset three hours wrong: every request says so, in every format.
  const std::string wrong = std::to_string(-4990 + 3 * 3600);
  j = join_json_of(dir, {"--clock-offset", wrong});
  CHECK(j["clock"]["check"]["off_by"].get<double>() == doctest::Approx(3 * 3600 - 0.1));
  CHECK(j["parts"]["ttft_return"]["negative"] == 2);
  auto r = report(
      {"join", "--clock-offset", wrong, "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(r.out.find("clock check: the split requests allow a shift in [-4990.1, -4989.9] s; the "
                   "shift used is off by at least 10799.9 s") != std::string::npos);
  CHECK(r.err.find("warning: the clock shift used (5810 s, --clock-offset) is off by at least "
                   "10799.9 s: the split requests put it in [-4990.1, -4989.9] s\n") !=
        std::string::npos);
  r = report({"join", "--format", "csv", "--clock-offset", wrong, "--server", dir + "/server.jsonl",
              dir + "/client.jsonl"});
  CHECK(r.out.find("\nclock_off_by_s,10799.") != std::string::npos);
  // Anchors whose wall clocks disagree by hours (two hosts, one clock wrong): the same warning.
  const std::string skewed =
      R"("clock_mono":5000,"clock_wall_ns":1700010800000000000,"clock_gap_ns":2000,)";
  std::vector<std::string> lines;
  for (const auto& l : {server_line("1", 1), server_line("2", 2)})
    lines.push_back("{" + skewed + l.substr(1 + server_anchor.size()));
  write_lines(dir + "/server.jsonl", lines);
  r = report({"join", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(r.err.find("(5810 s, anchors) is off by at least 10799.9 s") != std::string::npos);
  // Pairs that no one shift fits (request 2's server times an hour later: wrong pairs, or a
  // clock that jumped): named as such.
  write_lines(dir + "/server.jsonl", {server_line("1", 1), server_line("2", 2, 4990 + 3600)});
  j = join_json_of(dir);
  CHECK(j["clock"]["check"]["low"].get<double>() > j["clock"]["check"]["high"].get<double>());
  CHECK(j["clock"]["check"]["off_by"].get<double>() == doctest::Approx((3600 - 0.2) / 2));
  r = report({"join", "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
  CHECK(r.err.find("warning: no clock shift fits every split request") != std::string::npos);
  CHECK(r.out.find("none fits them all (wrong pairs or drifting clocks)") != std::string::npos);
}

TEST_CASE(
    "bad input J3: join: reordered lines give the same join; a file cut mid-line is "
    "counted and named") {
  const std::string dir = tmp_dir("join_lines");
  std::vector<std::string> client, server;
  for (int i = 0; i < 6; ++i) {
    client.push_back(client_line(std::to_string(i), 1 + i * 0.25));
    server.push_back(server_line(std::to_string(i), 1 + i * 0.25));
  }
  write_lines(dir + "/client.jsonl", client);
  write_lines(dir + "/server.jsonl", server);
  const auto in_order = join_json_of(dir);
  // Reordered: both files backwards, and the client's interleaved.
  std::reverse(server.begin(), server.end());
  write_lines(dir + "/server.jsonl", server);
  write_lines(dir + "/client.jsonl",
              {client[3], client[0], client[5], client[1], client[4], client[2]});
  const auto reordered = join_json_of(dir);
  CHECK(reordered["requests"] == in_order["requests"]);
  CHECK(reordered["parts"] == in_order["parts"]);
  CHECK(reordered["clock"] == in_order["clock"]);
  // The server's file cut in the middle of its last line (a server killed while writing), and
  // the client's cut in the middle of a line followed by more lines.
  server.back().resize(server.back().size() / 2);
  {
    std::ofstream f(dir + "/server.jsonl", std::ios::binary);
    for (std::size_t i = 0; i < server.size(); ++i)
      f << server[i] << (i + 1 < server.size() ? "\n" : "");  // no newline after the cut
  }
  client[2].resize(20);
  write_lines(dir + "/client.jsonl", client);
  for (const std::string format : {"json", "table", "csv"}) {
    CAPTURE(format);
    const auto r = report(
        {"join", "--format", format, "--server", dir + "/server.jsonl", dir + "/client.jsonl"});
    CHECK(r.rc == tr::exit_input);  // malformed lines: exit 1, the join still written
    CHECK(r.err.find("client.jsonl: line 3") != std::string::npos);
    CHECK(r.err.find("server.jsonl: line 6") != std::string::npos);
    CHECK(r.err.find("warning: malformed lines skipped (their requests are unpaired): 1 client, "
                     "1 server\n") != std::string::npos);
    if (format == "json") {
      const auto j = nlohmann::json::parse(r.out);
      CHECK(j["requests"]["client_malformed_lines"] == 1);
      CHECK(j["requests"]["server_malformed_lines"] == 1);
      CHECK(j["requests"]["matched"] == 4);      // 1, 3, 4, 5
      CHECK(j["requests"]["client_only"] == 1);  // 0: its server line was cut
      CHECK(j["requests"]["server_only"] == 1);  // cmpl-2: its client line was cut
    } else if (format == "csv") {
      CHECK(r.out.find("\nclient_malformed_lines,1\nserver_malformed_lines,1\n") !=
            std::string::npos);
    } else {
      CHECK(r.out.find("malformed lines skipped: 1 client, 1 server\n") != std::string::npos);
    }
  }
}
