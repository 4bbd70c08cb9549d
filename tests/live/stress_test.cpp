// SPDX-License-Identifier: MIT
// Many writer threads stream requests into two live_metrics objects (chunks, preemptions, every
// outcome, record(timeline) too) while a scraping thread scrapes continually. Every scrape must
// be internally consistent (cumulative buckets <= _count) and monotone against the previous
// one; the final scrape's totals must equal what the writers recorded, exactly. Writer threads
// come and go in waves, so shards are retired and claimed again. .ci/stages/32-tsan.sh runs
// this under ThreadSanitizer; TOKCHRON_STRESS_SCALE (default 1) multiplies the request count.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "live/helpers.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"
#include "tokchron/timeline/request_timeline.hpp"

namespace {
using live_test::ms;
using metrics = tokchron::basic_live_metrics<tokchron::manual_clock>;
using request = tokchron::basic_live_request<tokchron::manual_clock>;
using tokchron::finish_reason;

int scale() {
  const char* s = std::getenv("TOKCHRON_STRESS_SCALE");
  const int v = s != nullptr ? std::atoi(s) : 1;
  return v > 0 ? v : 1;
}

// What the writers recorded, to compare with the final scrape.
struct expected {
  std::atomic<std::uint64_t> requests{0}, prompt{0}, generation{0}, itl_steps{0}, first_tokens{0},
      e2e{0}, preemptions{0}, rejected{0};
  std::atomic<std::uint64_t> failed_calls{0};  // recording calls that did not return ok
};

// Every sample of a scrape keyed by family, labels and (for histograms) le/_count/_sum.
std::map<std::string, double> flatten(const tokchron::metrics_snapshot& s) {
  std::map<std::string, double> out;
  for (const auto& f : s.families)
    for (const auto& p : f.points) {
      std::string key = (f.kind == tokchron::metric_kind::gauge ? "gauge:" : "") + f.name;
      for (const auto& l : p.labels) key += "|" + l.name + "=" + l.value;
      if (f.kind != tokchron::metric_kind::histogram) {
        out[key] = p.value;
        continue;
      }
      for (const auto& b : p.histogram.buckets)
        out[key + "|le=" + std::to_string(b.upper_bound)] = static_cast<double>(b.cumulative_count);
      out[key + "|count"] = static_cast<double>(p.histogram.count);
      out[key + "|sum"] = p.histogram.sum;
    }
  return out;
}

// Scrape invariants: buckets cumulative and <= count, and monotone against `prev` for every
// cumulative series (gauges excepted).
bool consistent(const tokchron::metrics_snapshot& s, const std::map<std::string, double>& prev,
                std::map<std::string, double>& now) {
  bool ok = true;
  for (const auto& f : s.families)
    if (f.kind == tokchron::metric_kind::histogram)
      for (const auto& p : f.points) {
        std::uint64_t last = 0;
        for (const auto& b : p.histogram.buckets) {
          ok = ok && b.cumulative_count >= last;
          last = b.cumulative_count;
        }
        ok = ok && last <= p.histogram.count;
      }
  now = flatten(s);
  for (const auto& [k, v] : prev) {
    if (k.rfind("gauge:", 0) == 0) continue;  // gauges go up and down
    const auto it = now.find(k);
    ok = ok && it != now.end() && it->second >= v;
  }
  return ok;
}

// One writer thread: `n` requests of varied shapes into `m` (every fourth one recorded at
// finish in one call), tallied into `e`.
void writer(metrics& m, tokchron::live_series series, int seed, int n, expected& e) {
  std::uint64_t x = static_cast<std::uint64_t>(seed) * 2654435761u + 1;
  auto next = [&x](std::uint64_t mod) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % mod;
  };
  // No doctest assertions on writer threads (a failed REQUIRE there would terminate): count.
  auto must = [&e](tokchron::record_status s) {
    if (s != tokchron::record_status::ok) ++e.failed_calls;
  };
  request r;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t prompt = 1 + next(500);
    const auto chunks = static_cast<int>(next(6));  // 0: rejected
    const int shape = static_cast<int>(next(4));
    double t = 0;
    if (shape == 3 && chunks > 0) {  // one call at finish
      tokchron::basic_request_timeline<tokchron::manual_clock> tl;
      must(tl.arrive(ms(t)));
      must(tl.scheduled(ms(t += 1)));
      std::uint64_t tokens = 0;
      for (int c = 0; c < chunks; ++c) {
        const auto k = static_cast<std::uint32_t>(1 + next(3));
        must(tl.chunk(ms(t += 1 + static_cast<double>(next(50))), k));
        tokens += k;
      }
      tl.set_prompt_tokens(prompt);
      must(tl.finish(ms(t), finish_reason::stop));
      must(m.record(tl, series));
      e.generation += tokens;
      e.itl_steps += static_cast<std::uint64_t>(chunks - 1);
    } else {
      must(m.arrive(r, ms(t), {series, prompt, 0}));
      if (chunks == 0) {
        must(m.reject(r, ms(t += 1)));
        ++e.requests;
        ++e.rejected;
        continue;
      }
      must(m.scheduled(r, ms(t += 1)));
      for (int c = 0; c < chunks; ++c) {
        const auto k = static_cast<std::uint32_t>(1 + next(3));
        must(m.chunk(r, ms(t += 1 + static_cast<double>(next(50))), k));
        e.generation += k;
        if (c == 1 && shape == 1) {
          must(m.preempted(r, ms(t)));
          must(m.scheduled(r, ms(t += 2)));
          ++e.preemptions;
        }
      }
      e.itl_steps += static_cast<std::uint64_t>(chunks - 1);
      must(m.finish(r, ms(t), shape == 2 ? finish_reason::aborted : finish_reason::length));
    }
    ++e.requests;
    ++e.first_tokens;
    ++e.e2e;
    e.prompt += prompt;
  }
}
}  // namespace

TEST_CASE("live stress: many writers, a scraper scraping continually, exact final totals") {
  metrics a(tokchron::vllm_live_options("m", 4096));
  metrics b(tokchron::tokchron_live_options({"model"}, {"x"}));
  const tokchron::live_series a0{}, a1 = a.series({"m", "1"}), b0{};
  expected ea, eb;
  std::atomic<bool> done{false};
  std::atomic<int> scrapes{0}, bad{0};
  std::thread scraper([&] {
    std::map<std::string, double> prev_a, prev_b, now;
    while (!done.load(std::memory_order_acquire)) {
      if (!consistent(tokchron::scrape(a), prev_a, now)) ++bad;
      prev_a = now;
      if (!consistent(tokchron::scrape(b), prev_b, now)) ++bad;
      prev_b = now;
      ++scrapes;
    }
  });
  // Waves of writer threads until at least `min_scrapes` scrapes ran concurrently with them.
  // However the scheduler shares the cores (six writers and a scraper on two, under a
  // sanitizer, beside other tests), every wave overlaps two whole scrapes: its first writer
  // stops half-way through its requests until the scraper has finished two more (the first of
  // them may have begun before the wave; the second began after it, with that writer's
  // requests half-done), so the waves needed are bounded and never depend on speed.
  const int min_waves = 3, min_scrapes = 30, threads = 6, per_thread = 150 * scale();
  int waves = 0;
  for (; waves < min_waves || scrapes.load() < min_scrapes; ++waves) {
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i)
      ts.emplace_back([&, w = waves, i] {
        const int seed = w * threads + i;
        if (i == 0) {
          writer(a, a0, seed, per_thread / 2, ea);
          const int until = scrapes.load() + 2;
          while (scrapes.load() < until) std::this_thread::yield();
          writer(a, a0, seed + 5000, per_thread - per_thread / 2, ea);
        } else {
          writer(a, i % 2 == 0 ? a0 : a1, seed, per_thread, ea);
        }
        writer(b, b0, seed + 1000, per_thread / 2, eb);
      });
    for (auto& t : ts) t.join();
  }
  CHECK(waves <= min_scrapes / 2 + min_waves);
  done = true;
  scraper.join();
  CHECK(bad == 0);
  CHECK(ea.failed_calls == 0);
  CHECK(eb.failed_calls == 0);
  CHECK(scrapes >= min_scrapes);
  MESSAGE("scrapes during the run: " << scrapes.load());

  using live_test::hist;
  using live_test::value;
  const auto sa = tokchron::scrape(a);
  auto sum = [&](const char* name) {
    double total = 0;
    for (const auto& p : live_test::family(sa, name)->points) total += p.value;
    return total;
  };
  auto hsum = [&](const char* name) {
    std::uint64_t total = 0;
    for (const auto& p : live_test::family(sa, name)->points) total += p.histogram.count;
    return total;
  };
  CHECK(sum("vllm:request_success") + sum("tokchron_rejected_requests") ==
        static_cast<double>(ea.requests));
  CHECK(sum("tokchron_rejected_requests") == static_cast<double>(ea.rejected));
  CHECK(sum("vllm:prompt_tokens") == static_cast<double>(ea.prompt));
  CHECK(sum("vllm:generation_tokens") == static_cast<double>(ea.generation));
  CHECK(sum("vllm:num_preemptions") == static_cast<double>(ea.preemptions));
  CHECK(hsum("vllm:inter_token_latency_seconds") == ea.itl_steps);
  CHECK(hsum("vllm:time_to_first_token_seconds") == ea.first_tokens);
  CHECK(hsum("vllm:e2e_request_latency_seconds") == ea.e2e);
  CHECK(sum("vllm:num_requests_running") == 0);
  CHECK(sum("vllm:num_requests_waiting") == 0);
  CHECK(sum("tokchron_misuse") == 0);
  CHECK(sum("tokchron_dropped_samples") == 0);
  CHECK(live_test::family(sa, "vllm:request_success")->points.size() == 10);  // 2 series x 5

  const auto sb = tokchron::scrape(b);
  CHECK(value(sb, "tokchron_output_tokens") == static_cast<double>(eb.generation));
  CHECK(value(sb, "tokchron_prompt_tokens") == static_cast<double>(eb.prompt));
  CHECK(hist(sb, "tokchron_itl_seconds").count == eb.generation - eb.first_tokens);
  CHECK(hist(sb, "tokchron_e2e_seconds").count == eb.e2e);
  // A scrape after everything is recorded changes nothing.
  CHECK(flatten(tokchron::scrape(a)) == flatten(sa));
}
