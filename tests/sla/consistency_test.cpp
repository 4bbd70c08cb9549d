// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <string>

#include "tokchron/sla/consistency.hpp"

using tokchron::claims;

namespace {
const tokchron::finding* find(const tokchron::audit_report& r, std::string_view check) {
  for (const auto& f : r.findings)
    if (f.check == check) return &f;
  return nullptr;
}
// The seed's case study, batch 8 (tests/data/claims/seed_a10g.json holds all three runs).
claims seed_batch8() {
  claims c;
  c.name = "A10G batch 8";
  c.output_tps = 850;
  c.p95_ttft_s = 1.2;
  c.p95_tpot_s = 0.085;
  c.max_batch_size = 8;
  c.users = 50;
  c.think_time_s = 0;
  c.mean_prompt_tokens = 300;
  c.mean_output_tokens = 150;
  c.gpus = 1;
  return c;
}
}  // namespace

TEST_CASE("the seed's A10G case study is flagged with the implied figures") {
  const auto r = tokchron::audit(seed_batch8());
  CHECK(!r.consistent());
  const auto* d = find(r, "decode_rate");
  REQUIRE(d);
  CHECK(!d->consistent);
  CHECK(d->implied == doctest::Approx(8 / 0.085));  // 94 tokens/s at most
  CHECK(d->factor == doctest::Approx(850 / (8 / 0.085)));
  CHECK(d->message.find("9.412 ms") != std::string::npos);  // the TPOT the claim needs
  const auto* q = find(r, "queueing_ttft");
  REQUIRE(q);
  CHECK(!q->consistent);
  // 42 of 50 users wait at 850/150 = 5.67 req/s: 7.4 s of queueing against a 1.2 s P95 TTFT
  CHECK(q->claimed == doctest::Approx(42 / (850.0 / 150)));
  CHECK(q->implied == 1.2);

  // the generous reading (850 counts prompt tokens too) is still impossible
  claims total = seed_batch8();
  total.output_tps.reset();
  total.total_tps = 850;
  const auto rt = tokchron::audit(total);
  const auto* dt = find(rt, "decode_rate");
  REQUIRE(dt);
  CHECK(dt->claimed == doctest::Approx(850.0 * 150 / 450));  // 283 output tokens/s
  CHECK(dt->factor == doctest::Approx(850.0 * 150 / 450 / (8 / 0.085)));
  CHECK(!dt->consistent);

  // and the weight-read floor: Llama-2-7B fp16 (13.5 GB) on 600 GB/s
  claims hw = seed_batch8();
  hw.weight_bytes = 13.5e9;
  hw.memory_bandwidth_bytes_per_s = 600e9;
  const auto rh = tokchron::audit(hw);
  bool floor_flagged = false;
  for (const auto& f : rh.findings)
    if (f.check == "hardware_floor" && !f.consistent) floor_flagged = true;
  CHECK(floor_flagged);
}

TEST_CASE("a consistent report passes every check") {
  // A closed loop in steady state: 50 users, 8 slots, mean TPOT 36 ms, 150-token outputs.
  claims c;
  c.name = "consistent";
  c.max_batch_size = 8;
  c.mean_tpot_s = 0.036;
  c.mean_output_tokens = 150;
  c.mean_prompt_tokens = 300;
  const double decode_s = 149 * 0.036;              // 5.364 s
  const double rps = 8 * 0.95 / (decode_s + 0.06);  // slots 95% busy
  c.rps = rps;
  c.output_tps = rps * 150;
  c.total_tps = rps * 450;
  c.users = 50;
  c.think_time_s = 0;
  const double e2e = 50 / rps;  // the response-time law
  c.mean_e2e_s = e2e;
  c.mean_ttft_s = e2e - decode_s;
  c.concurrency = rps * e2e;
  const auto r = tokchron::audit(c);
  CHECK(r.consistent());
  CHECK(r.findings.size() >= 6);
  INFO(r.to_string());
  for (const auto& f : r.findings) CHECK(f.factor <= f.allowed);
}

TEST_CASE("claims: keys, setting, and tolerance") {
  claims c;
  CHECK(c.set("rps", 2));
  CHECK(c.rps == 2);
  CHECK(!c.set("rpm", 2));
  CHECK(!c.set("rps", -1));
  for (std::string_view k : claims::keys) CHECK(c.field(k) != nullptr);
  CHECK(tokchron::audit(c).findings.empty());
  CHECK(tokchron::audit(c).consistent());
  tokchron::audit_options bad;
  bad.tolerance = 0.5;
  CHECK_THROWS_AS((void)tokchron::audit(c, bad), std::invalid_argument);
  // Little's law: 10 in flight at 2 req/s needs a 5 s E2E
  c.concurrency = 10;
  c.mean_e2e_s = 5;
  CHECK(tokchron::audit(c).consistent());
  c.mean_e2e_s = 2;
  const auto r = tokchron::audit(c);
  CHECK(!r.consistent());
  CHECK(find(r, "littles_law")->implied == 4);
}
