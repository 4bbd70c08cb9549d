// SPDX-License-Identifier: MIT
// `tokchron-report join`: client and server traces joined by request id (join.hpp).
#include <doctest/doctest.h>

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
