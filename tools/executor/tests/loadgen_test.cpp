// SPDX-License-Identifier: MIT
// The executor's load generator: its requests are the shared arrival processes' arrivals
// (tools/loadgen), every field as drawn, each timeline arriving and sent at its arrival.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "loadgen.hpp"

using namespace batching;

TEST_CASE("load_generator: each request is the arrival tools/loadgen draws for the seed") {
  for (const arrival_mode mode : {arrival_mode::closed, arrival_mode::open}) {
    workload w;
    w.mode = mode;
    w.users = 4;
    w.rate = 20;
    w.think = distribution::parse("exp:1", quantity::seconds);
    w.shared_prefix = 3;
    w.reasoning_fraction = 0.25;
    w.priority_levels = 4;
    w.duration_s = 30;
    w.seed = 7;
    clock_type clock;
    load_generator gen(w, clock);
    tokchron_loadgen::arrival_generator expected(w);
    std::vector<request*> got;
    std::vector<tokchron_loadgen::arrival> want;
    const time_point until(std::chrono::seconds(60));
    // Release in steps and end every request at once, so closed-loop users send again.
    for (time_point t{}; t < until; t += std::chrono::milliseconds(250)) {
      const std::size_t from = got.size(), from_want = want.size();
      gen.release(t, got);
      expected.release(t, want);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = from; i < got.size(); ++i) gen.on_finish(*got[i], t);
      for (std::size_t i = from_want; i < want.size(); ++i) expected.on_finish(want[i], t);
    }
    REQUIRE(got.size() > 20);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const request& r = *got[i];
      const tokchron_loadgen::arrival& a = want[i];
      CHECK(r.id == a.id);
      CHECK(r.user == a.user);
      CHECK(r.arrival == a.at);
      CHECK(r.think_s == a.think_s);
      CHECK(r.prompt_tokens == a.prompt_tokens);
      CHECK(r.prefix_tokens == a.prefix_tokens);
      CHECK(r.reasoning_tokens == a.reasoning_tokens);
      CHECK(r.output_tokens == a.output_tokens);
      CHECK(r.predicted_output == a.predicted_output);
      CHECK(r.priority == a.priority);
      CHECK(r.tl.arrival() == a.at);
      CHECK(r.tl.send_time() == a.at);
    }
  }
}
