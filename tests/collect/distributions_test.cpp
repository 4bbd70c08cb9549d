// SPDX-License-Identifier: MIT
// The aggregation model's entry point (tokchron/distributions.hpp) in each mode: the types it
// names, the single-writer mode against the recording rules serving_metrics and
// slo_distributions had before they became that mode (restated here as references), the
// sharded mode against the single-writer mode (one thread, then many under the "concurrency"
// suite that CI runs under ThreadSanitizer), and the labelled-live mode against the same
// requests.
#include "tokchron/distributions.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "tokchron/live/presets.hpp"
#include "tokchron/live/scrape.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/testing.hpp"

namespace {
using namespace std::chrono_literals;
using tokchron::basic_distributions;
using tokchron::distributions_options;
using tokchron::finish_reason;
using tokchron::metric_id;
using timeline = tokchron::testing::scripted_timeline;
using exact = tokchron::exact_quantiles<>;

// Requests of every kind the recording rules tell apart: successes with one-token and
// multi-token chunks, failures with latencies (aborted, error after tokens), a request
// rejected before any token, and unfinished ones.
std::vector<timeline> workload(int n) {
  std::vector<timeline> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto ms = [](int x) { return std::chrono::milliseconds(x); };
    tokchron::testing::script s;
    s.arrive(0ms)
        .queued(ms(i % 3))
        .scheduled(ms(3 + i % 11))
        .prompt_tokens(static_cast<std::uint64_t>(16 + i % 50));
    if (i % 17 == 5) {  // refused before being scheduled
      out.push_back(tokchron::testing::script()
                        .arrive(0ms)
                        .finish(ms(1 + i % 4), finish_reason::rejected)
                        .timeline());
      continue;
    }
    s.first_token(ms(20 + (i * 7) % 90));
    if (i % 2 == 0)
      s.tokens(static_cast<std::uint32_t>(i % 12), ms(1 + i % 6));
    else
      s.chunks(static_cast<std::uint32_t>(1 + i % 5), static_cast<std::uint32_t>(1 + i % 4),
               ms(2 + i % 9));
    if (i % 23 == 7) {  // still running
      out.push_back(s.timeline());
      continue;
    }
    const finish_reason why = i % 13 == 0   ? finish_reason::aborted
                              : i % 19 == 0 ? finish_reason::error
                              : i % 7 == 0  ? finish_reason::length
                                            : finish_reason::stop;
    out.push_back(s.finish(why).timeline());
  }
  return out;
}

// What serving_metrics::record did before it became the single-writer mode (restated).
struct old_serving {
  std::array<tokchron::log_histogram, tokchron::metric_count> hist;
  std::array<std::uint64_t, 6> requests{};
  std::uint64_t output_tokens = 0, prompt_tokens = 0, preemptions = 0, unfinished = 0;

  old_serving() {
    for (auto& h : hist) h = tokchron::log_histogram::with_scale(6);
  }
  void record(const timeline& tl) {
    if (!tl.finished()) {
      ++unfinished;
      return;
    }
    const tokchron::request_metrics m = tokchron::canonical_metrics(tl);
    tokchron::for_each_metric_value(m, [this](metric_id k, double v) {
      if (tokchron::info(k).served) (void)hist[static_cast<std::size_t>(k)].add(v);
    });
    auto& itl = hist[static_cast<std::size_t>(metric_id::itl)];
    tokchron::for_each_itl_per_token(
        tl, [&itl](auto gap) { (void)itl.add(std::chrono::duration<double>(gap).count()); });
    const auto reason = tl.reason();
    ++requests[static_cast<std::size_t>(reason ? *reason : finish_reason::error)];
    output_tokens += m.output_tokens;
    prompt_tokens += m.prompt_tokens ? *m.prompt_tokens : 0;
    preemptions += m.preemptions;
  }
};

// What slo_distributions::add did before it became the single-writer mode (restated).
struct old_slo {
  std::array<exact, tokchron::metric_count> e{};
  std::optional<tokchron::fluidity_deadlines> fluidity;
  std::uint64_t succeeded = 0, failed = 0;

  const exact& operator[](metric_id k) const { return e[static_cast<std::size_t>(k)]; }
  void add(metric_id k, double x) { (void)e[static_cast<std::size_t>(k)].add(x); }
  void add_metrics(const tokchron::request_metrics& m) {
    ++succeeded;
    tokchron::for_each_metric_value(m, [&](metric_id k, double x) {
      if (k != metric_id::itl) add(k, x);
    });
  }
  void add(const timeline& tl) {
    if (!tl.finished()) return;
    if (!tl.succeeded()) {
      ++failed;
      return;
    }
    add_metrics(tokchron::canonical_metrics(tl));
    auto& itl = e[static_cast<std::size_t>(metric_id::itl)];
    tokchron::for_each_itl_per_token(
        tl, [&](auto gap, std::uint64_t n) { (void)itl.add(tokchron::to_seconds(gap), n); });
    tokchron::for_each_itl_per_chunk(
        tl, [&](auto gap) { add(metric_id::icl, tokchron::to_seconds(gap)); });
    if (fluidity) {
      tokchron::fluidity_counter c(*fluidity);
      if (tokchron::detail::for_each_token_chunk_gap(
              tl, [&](std::uint32_t k, double gap) { c.tokens(k, gap); }))
        add(metric_id::fluidity, c.result().index());
    }
  }
  void add(const tokchron::request_metrics& m) {
    if (!m.counted())
      ++failed;
    else
      add_metrics(m);
  }
};

// Two exact distributions hold the same multiset (every order statistic equal); same count of
// refusals.
bool same_samples(const exact& a, const exact& b) {
  if (a.count() != b.count() || a.rejected() != b.rejected()) return false;
  for (std::uint64_t i = 0; i < a.count(); ++i)
    if (a.at_rank(i) != b.at_rank(i)) return false;
  return true;
}

template <class A, class B>
void check_same_exact(const A& a, const B& b) {
  for (const auto& m : tokchron::metric_table) {
    CAPTURE(m.name);
    CHECK(same_samples(a[m.id], b[m.id]));
  }
}

void check_same_counts(const tokchron::request_counts& a, const tokchron::request_counts& b) {
  CHECK(a == b);
  CHECK_FALSE(a != b);
}

const tokchron::fluidity_deadlines deadlines{0.05, 0.004};
}  // namespace

TEST_CASE("distributions: the entry point names one type per mode") {
  static_assert(std::is_same_v<tokchron::distributions<>, basic_distributions<>>);
  static_assert(std::is_same_v<tokchron::distributions<tokchron::single_writer, exact>,
                               basic_distributions<exact>>);
  static_assert(std::is_same_v<tokchron::distributions<tokchron::sharded>,
                               tokchron::basic_collector<basic_distributions<>>>);
  static_assert(
      std::is_same_v<tokchron::distributions<tokchron::labelled_live>, tokchron::live_metrics>);
  // The single-writer exporters are that mode with a view on top.
  static_assert(std::is_base_of_v<tokchron::distributions<>, tokchron::serving_metrics>);
  static_assert(std::is_base_of_v<tokchron::distributions<tokchron::single_writer, exact>,
                                  tokchron::slo_distributions<>>);
  // Which metrics each selection records.
  const auto served = distributions_options::served();
  const auto slo = distributions_options::slo();
  for (const auto& m : tokchron::metric_table) {
    CAPTURE(m.name);
    CHECK(served.records(m.id) == m.served);
    CHECK(slo.records(m.id) == (m.id != metric_id::fluidity));
  }
  CHECK(distributions_options::slo(deadlines).records(metric_id::fluidity));
  CHECK_THROWS_AS(
      basic_distributions<>(distributions_options::slo(tokchron::fluidity_deadlines{0, 1})),
      std::invalid_argument);
}

TEST_CASE("distributions: single-writer mode records as serving_metrics always did") {
  const auto requests = workload(400);
  old_serving ref;
  tokchron::serving_metrics sm;
  basic_distributions<> d(distributions_options::served(), tokchron::log_histogram::with_scale(6));
  for (const auto& tl : requests) {
    ref.record(tl);
    CHECK(sm.record(tl) == tl.finished());
    CHECK(d.record(tl) == tl.finished());
  }
  for (const auto& m : tokchron::metric_table) {
    CAPTURE(m.name);
    // Same samples in the same order: equal to the last bit (buckets, sum, extremes).
    CHECK(sm.histogram(m.id) == ref.hist[static_cast<std::size_t>(m.id)]);
    CHECK(d[m.id] == ref.hist[static_cast<std::size_t>(m.id)]);
  }
  CHECK(ref.hist[static_cast<std::size_t>(metric_id::itl)].count() > 400);
  for (std::size_t r = 0; r < tokchron::finish_reason_count; ++r)
    CHECK(sm.requests(static_cast<finish_reason>(r)) == ref.requests[r]);
  CHECK(sm.requests(finish_reason::rejected) > 0);
  CHECK(sm.output_tokens() == ref.output_tokens);
  CHECK(sm.prompt_tokens() == ref.prompt_tokens);
  CHECK(sm.preemptions() == ref.preemptions);
  CHECK(sm.unfinished() == ref.unfinished);
  CHECK(ref.unfinished > 0);
  check_same_counts(sm.counts(), d.counts());
}

TEST_CASE("distributions: single-writer mode records as slo_distributions always did") {
  const auto requests = workload(400);
  for (bool with_fluidity : {false, true}) {
    CAPTURE(with_fluidity);
    old_slo ref;
    if (with_fluidity) ref.fluidity = deadlines;
    tokchron::slo_distributions<> slo =
        with_fluidity ? tokchron::slo_distributions<>(deadlines) : tokchron::slo_distributions<>();
    basic_distributions<exact> d(with_fluidity ? distributions_options::slo(deadlines)
                                               : distributions_options::slo());
    for (const auto& tl : requests) {
      ref.add(tl);
      (void)slo.add(tl);
      (void)d.record(tl);
    }
    check_same_exact(slo, ref);
    check_same_exact(d, ref);
    CHECK(slo.succeeded() == ref.succeeded);
    CHECK(slo.failed() == ref.failed);
    CHECK(ref.failed > 0);
    CHECK(slo.records_fluidity() == with_fluidity);
    CHECK(ref.e[static_cast<std::size_t>(metric_id::icl)].count() > 0);
    CHECK(ref.e[static_cast<std::size_t>(metric_id::fluidity)].count() ==
          (with_fluidity ? ref.succeeded : 0));
    check_same_counts(slo.counts(), d.counts());
  }

  // The per-request records of a profile, as the reports feed them.
  old_slo ref;
  tokchron::slo_distributions<> slo;
  for (const auto& tl : requests) {
    if (!tl.finished()) continue;
    const auto m = tokchron::evaluate(tokchron::profiles::genai_perf, tl);
    ref.add(m);
    slo.add(m);
  }
  check_same_exact(slo, ref);
  CHECK(slo.succeeded() == ref.succeeded);
  CHECK(slo.failed() == ref.failed);
}

TEST_CASE("distributions: merge equals recording into one; clear empties") {
  const auto requests = workload(300);
  basic_distributions<exact> a, b, both;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    (void)(i % 3 == 0 ? a : b).record(requests[i]);
    (void)both.record(requests[i]);
  }
  a.merge(b);
  check_same_exact(a, both);
  check_same_counts(a.counts(), both.counts());
  CHECK(a.count() == both.count());
  CHECK_FALSE(a.empty());
  a.clear();
  CHECK(a.empty());
  CHECK(a.count() == 0);
  CHECK(a.counts().failed == 0);
  CHECK(a.counts() != both.counts());
  CHECK(a.counts() == tokchron::request_counts{});
}

TEST_CASE("distributions: sharded mode gives the single-writer mode's distributions") {
  const auto requests = workload(300);
  tokchron::distributions<tokchron::sharded, exact> c;
  basic_distributions<exact> one;
  auto w1 = c.make_writer();
  auto w2 = c.make_writer();
  basic_distributions<exact> merged;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CHECK((i % 2 == 0 ? w1 : w2).record(requests[i]) == requests[i].finished());
    (void)one.record(requests[i]);
    if (i % 50 == 49) merged.merge(c.snapshot());
  }
  merged.merge(c.snapshot());
  check_same_exact(merged, one);
  check_same_counts(merged.counts(), one.counts());
  check_same_exact(c.cumulative(), one);

  // A request that is only counted (a failure) reaches the snapshot: a shard holding counters
  // and no samples is not skipped.
  auto failed = tokchron::testing::script()
                    .arrive(0ms)
                    .first_token(5ms)
                    .finish(9ms, finish_reason::aborted)
                    .timeline();
  CHECK(w1.record(failed));
  const auto s = c.snapshot();
  CHECK(s.count() == 0);
  CHECK(s.counts().failed == 1);
  CHECK(s.requests(finish_reason::aborted) == 1);

  // A request's metrics (a profile's record) go through the writer as well.
  REQUIRE(requests[1].succeeded());
  CHECK(w2.record(tokchron::canonical_metrics(requests[1])));
  CHECK(c.snapshot().counts().succeeded == 1);

  // Detached writers record nothing.
  decltype(c)::writer none;
  CHECK_FALSE(none.record(requests[0]));

  // The prototype's options and estimator configuration reach every shard.
  tokchron::distributions<tokchron::sharded> served(
      basic_distributions<>(distributions_options::served(), tokchron::log_histogram(0.001)));
  auto w = served.make_writer();
  CHECK(w.record(requests[0]));
  const auto snap = served.snapshot();
  CHECK(snap[metric_id::ttft].count() == 1);
  CHECK(snap[metric_id::ttft_from_scheduled].count() == 0);  // not served
  CHECK(snap[metric_id::ttft].relative_error() == tokchron::log_histogram(0.001).relative_error());
}

TEST_CASE("distributions: sharded snapshots merge into serving_metrics (concurrency.md)") {
  const auto requests = workload(200);
  tokchron::distributions<tokchron::sharded> recorded(tokchron::basic_distributions<>(
      distributions_options::served(), tokchron::log_histogram::with_scale(6)));
  auto w = recorded.make_writer();
  tokchron::serving_metrics direct, exported;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    (void)w.record(requests[i]);
    (void)direct.record(requests[i]);
    if (i % 40 == 39) exported.merge(recorded.snapshot());
  }
  exported.merge(recorded.snapshot());
  for (const auto& m : tokchron::metric_table) {
    CAPTURE(m.name);
    const auto& a = exported.histogram(m.id);
    const auto& b = direct.histogram(m.id);
    CHECK(a.count() == b.count());
    CHECK(a.min() == b.min());
    CHECK(a.max() == b.max());
    // Same scale: the same buckets, so every quantile agrees; sums add in another order.
    for (double q : {0.0, 0.25, 0.5, 0.9, 0.99, 1.0}) CHECK(a.quantile(q) == b.quantile(q));
    CHECK(a.sum() == doctest::Approx(b.sum()).epsilon(1e-12));
  }
  check_same_counts(exported.counts(), direct.counts());
}

TEST_CASE("distributions: labelled-live mode sees the same requests") {
  // The live mode keeps fixed buckets per label set; its counts and sums agree with the
  // single-writer mode's distributions of the same requests (tokchron's semantics: canonical
  // definitions, per-token ITL; every finished request, as serving_metrics records them).
  const auto requests = workload(200);
  auto options = tokchron::tokchron_live_options();
  options.inclusion = tokchron::live_inclusion::all;
  tokchron::distributions<tokchron::labelled_live> live(options);
  basic_distributions<> one(distributions_options::served());
  for (const auto& tl : requests) {
    (void)one.record(tl);
    if (tl.finished()) CHECK(live.record(tl) == tokchron::record_status::ok);
  }
  const auto s = tokchron::scrape(live);
  auto find = [&](tokchron::live_histogram h) -> const tokchron::histogram_data* {
    std::string name;  // the preset's family of histogram h
    for (const auto& f : live.options().families)
      if (f.source == tokchron::live_source::histogram && f.histogram == h) name = f.name;
    for (const auto& f : s.families)
      if (f.name == name && !f.points.empty()) return &f.points.front().histogram;
    return nullptr;
  };
  const std::pair<tokchron::live_histogram, metric_id> pairs[] = {
      {tokchron::live_histogram::ttft, metric_id::ttft},
      {tokchron::live_histogram::e2e, metric_id::e2e},
      {tokchron::live_histogram::itl, metric_id::itl},
  };
  for (const auto& pair : pairs) {
    const tokchron::live_histogram h = pair.first;
    const metric_id m = pair.second;
    CAPTURE(tokchron::info(m).name);
    const tokchron::histogram_data* hd = find(h);
    REQUIRE(hd != nullptr);
    CHECK(hd->count == one[m].count());
    // The same doubles summed, possibly in another order: within n ulps relative.
    CHECK(hd->sum == doctest::Approx(one[m].sum()).epsilon(1e-12));
  }
}

TEST_SUITE("concurrency") {
  // N writers record requests into the sharded mode while a snapshotter merges intervals all
  // along: the merged intervals hold exactly the single-writer mode's distributions and counts
  // (nothing lost, nothing counted twice, counters and samples of one request never split).
  TEST_CASE("distributions: sharded writers and snapshots equal the single-writer mode") {
    constexpr int writers = 4;
    constexpr int per_writer = 600;
    const auto requests = workload(writers * per_writer);
    basic_distributions<exact> one;
    for (const auto& tl : requests) (void)one.record(tl);

    for (auto sync : {tokchron::collector_sync::automatic, tokchron::collector_sync::fences}) {
      CAPTURE(static_cast<int>(sync));
      tokchron::distributions<tokchron::sharded, exact> c(sync);
      std::atomic<int> done{0};
      std::atomic<std::uint64_t> taken{0};  // snapshots taken so far
      std::vector<std::thread> threads;
      for (int t = 0; t < writers; ++t) {
        threads.emplace_back([&, t] {
          auto w = c.make_writer();
          for (int i = t; i < writers * per_writer; i += writers) {
            (void)w.record(requests[static_cast<std::size_t>(i)]);
            if (i / writers == per_writer / 2) {
              // Halfway, wait until two more snapshots have completed, as the collector's
              // stress test does: the intervals then split every writer's requests, however
              // the threads are scheduled.
              const std::uint64_t seen = taken.load();
              while (taken.load() < seen + 2) std::this_thread::yield();
            }
            if (i % 64 == 0) std::this_thread::yield();
          }
          done.fetch_add(1);
        });
      }
      basic_distributions<exact> merged;
      std::uint64_t nonempty = 0;
      auto take = [&] {
        const basic_distributions<exact> s = c.snapshot();
        taken.fetch_add(1);
        if (!s.empty()) ++nonempty;
        merged.merge(s);
      };
      while (done.load() < writers) take();
      for (auto& th : threads) th.join();
      take();
      CHECK(nonempty >= 2);  // the intervals did split the recording
      check_same_exact(merged, one);
      check_same_counts(merged.counts(), one.counts());
      CHECK(c.writers() == 0);
    }
  }
}
