// SPDX-License-Identifier: MIT
#include "tokchron/collect/collector.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"

namespace {
using exact = tokchron::exact_quantiles<>;
using collector = tokchron::basic_collector<exact>;
using tokchron::collector_sync;

// The modes every behavioural test runs under (automatic is fences where membarrier is missing).
const collector_sync modes[] = {collector_sync::automatic, collector_sync::fences};
}  // namespace

TEST_CASE("collector: snapshots partition the samples into intervals") {
  for (collector_sync mode : modes) {
    CAPTURE(static_cast<int>(mode));
    collector c(mode);
    auto w = c.make_writer();
    CHECK(w.attached());
    CHECK(c.writers() == 1);
    for (int i = 1; i <= 10; ++i) CHECK(w.add(i));
    exact a = c.snapshot();
    CHECK(a.count() == 10);
    CHECK(a.sum() == 55);
    CHECK(*a.min() == 1);
    CHECK(*a.max() == 10);
    for (int i = 11; i <= 15; ++i) CHECK(w.add(i));
    exact b = c.snapshot();
    CHECK(b.count() == 5);
    CHECK(*b.min() == 11);
    CHECK(c.snapshot().empty());  // nothing since
    exact all = c.cumulative();
    CHECK(all.count() == 15);
    CHECK(all.sum() == 120);
    CHECK(c.snapshots() == 3);
    // cumulative() does not start an interval
    w.add(16);
    CHECK(c.cumulative().count() == 16);
    CHECK(c.snapshot().sorted_samples() == std::vector<double>{16});
  }
}

TEST_CASE("collector: an empty collector gives empty estimators, not errors") {
  collector c;
  CHECK(c.snapshot().empty());
  CHECK(c.cumulative().empty());
  CHECK_FALSE(c.snapshot().quantile(0.5).has_value());
}

TEST_CASE("collector: rejected samples are counted and reported per interval") {
  collector c;
  auto w = c.make_writer();
  CHECK_FALSE(w.add(std::numeric_limits<double>::quiet_NaN()));
  CHECK_FALSE(w.add(std::numeric_limits<double>::infinity()));
  CHECK(w.add(1.0));
  exact s = c.snapshot();
  CHECK(s.count() == 1);
  CHECK(s.rejected() == 2);
  CHECK(c.snapshot().rejected() == 0);
  CHECK(c.cumulative().rejected() == 2);
}

TEST_CASE("collector: a prototype's samples are ignored") {
  exact proto;
  proto.add(42);
  collector c(proto);
  auto w = c.make_writer();
  w.add(1);
  CHECK(c.snapshot().sorted_samples() == std::vector<double>{1});
}

TEST_CASE("collector: the default collector keeps the prototype's log_histogram configuration") {
  const tokchron::log_histogram proto(0.001);
  tokchron::collector c(proto);
  auto w = c.make_writer();
  for (int i = 1; i <= 1000; ++i) w.add(i * 1e-3);
  const tokchron::log_histogram s = c.snapshot();
  CHECK(s.scale() == proto.scale());
  CHECK(s.count() == 1000);
  CHECK(*s.min() == 1e-3);
  CHECK(*s.max() == 1.0);
  // the snapshot is the same histogram a single writer would have built
  tokchron::log_histogram direct(0.001);
  for (int i = 1; i <= 1000; ++i) direct.add(i * 1e-3);
  CHECK(s == direct);  // scale, every bucket count, sum, min and max
  CHECK(*s.quantile(0.99) == *direct.quantile(0.99));
}

TEST_CASE("collector: detached writers record nothing and say so") {
  collector c;
  collector::writer none;
  CHECK_FALSE(none.attached());
  CHECK_FALSE(none.add(1.0));
  CHECK_FALSE(none.update([](exact& e) noexcept { e.add(2.0); }));
  auto w = c.make_writer();
  collector::writer moved = std::move(w);
  CHECK_FALSE(w.add(1.0));  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  CHECK(moved.add(3.0));
  CHECK(c.snapshot().count() == 1);
}

TEST_CASE("collector: a destroyed writer's samples are kept and its shard reused") {
  collector c;
  {
    auto w = c.make_writer();
    w.add(1);
    w.add(2);
  }
  CHECK(c.writers() == 0);
  auto w2 = c.make_writer();  // reuses the shard
  w2.add(3);
  exact s = c.snapshot();
  CHECK(s.count() == 3);
  CHECK(s.sum() == 6);
  CHECK(c.writers() == 1);
  // Retired, then drained while retired: both sides go out, nothing counted twice.
  {
    auto w3 = c.make_writer();
    w3.add(10);
  }
  w2.add(4);
  exact t = c.snapshot();
  CHECK(t.sorted_samples() == std::vector<double>{4, 10});
  CHECK(c.cumulative().count() == 5);
}

TEST_CASE("collector: writers move between owners and assignment releases the old shard") {
  collector c;
  auto a = c.make_writer();
  auto b = c.make_writer();
  CHECK(c.writers() == 2);
  a.add(1);
  b.add(2);
  a = std::move(b);  // a's old shard retires with its sample
  CHECK(c.writers() == 1);
  a.add(3);
  CHECK(c.snapshot().sorted_samples() == std::vector<double>{1, 2, 3});
}

TEST_CASE("collector: a writer may outlive its collector") {
  collector::writer w;
  {
    collector c;
    w = c.make_writer();
    w.add(1);
  }
  CHECK(w.attached());
  CHECK(w.add(2));  // recorded into state nobody reads; no crash, no leak (ASan checks)
}

TEST_CASE("collector: update runs a noexcept recording call on the active side") {
  collector c;
  auto w = c.make_writer();
  CHECK(w.update([](exact& e) noexcept {
    e.add(1);
    e.add(2);
  }));
  CHECK(c.snapshot().count() == 2);
}

TEST_CASE("collector: the asymmetric barrier is used where the OS offers it") {
  collector automatic;
  collector fences(collector_sync::fences);
  CHECK_FALSE(fences.asymmetric());
  CHECK(automatic.asymmetric() == tokchron::detail::asymmetric_barrier::available());
#if defined(__linux__) && TOKCHRON_HAS_MEMBARRIER
  MESSAGE("membarrier available: " << tokchron::detail::asymmetric_barrier::available());
#endif
}

TEST_SUITE("concurrency") {
  // N writers x M events with a snapshotter taking interval snapshots all along: every sample
  // appears in exactly one interval, so the counts add up to N x M exactly, and the merged
  // intervals hold exactly the multiset recorded (sums and extremes agree).
  TEST_CASE("collector: concurrent writers and snapshots lose nothing and count nothing twice") {
    constexpr int writers = 4;
    constexpr int events = 50000;
    for (collector_sync mode : modes) {
      CAPTURE(static_cast<int>(mode));
      collector c(mode);
      std::atomic<int> done{0};
      std::atomic<std::uint64_t> taken{0};  // snapshots taken so far
      std::vector<std::thread> threads;
      for (int t = 0; t < writers; ++t) {
        threads.emplace_back([&c, &done, &taken, t] {
          auto w = c.make_writer();
          // Distinct integers per writer: exact sums, and the multiset identifies every sample.
          for (int i = 0; i < events; ++i) {
            w.add(static_cast<double>(t * events + i));
            if (i == events / 2) {
              // Halfway, wait until two more snapshots have completed: the second began after
              // this point, so it (or an earlier one) drained the first half, and the second half
              // lands in later intervals (the final snapshot included); on 2 cores the writers
              // could otherwise finish before any snapshot ran.
              const std::uint64_t seen = taken.load();
              while (taken.load() < seen + 2) std::this_thread::yield();
            }
            if (i % 256 == 0) std::this_thread::yield();
          }
          done.fetch_add(1);
        });
      }
      exact merged;
      std::uint64_t nonempty = 0;
      while (done.load() < writers) {
        exact s = c.snapshot();
        taken.fetch_add(1);
        if (!s.empty()) ++nonempty;
        merged.merge(s);
      }
      for (auto& th : threads) th.join();
      exact last = c.snapshot();
      if (!last.empty()) ++nonempty;
      merged.merge(last);
      CHECK(nonempty >= 2);  // the intervals did split the writing
      const std::uint64_t n = std::uint64_t{writers} * events;
      REQUIRE(merged.count() == n);
      const double expected_sum = static_cast<double>(n) * static_cast<double>(n - 1) / 2;
      CHECK(merged.sum() == expected_sum);
      CHECK(*merged.min() == 0);
      CHECK(*merged.max() == static_cast<double>(n - 1));
      const auto& v = merged.sorted_samples();
      bool each_once = true;
      for (std::size_t i = 0; i < v.size(); ++i)
        each_once = each_once && v[i] == static_cast<double>(i);
      CHECK(each_once);
      exact total = c.cumulative();
      CHECK(total.count() == n);
      CHECK(total.sum() == expected_sum);
      CHECK(c.writers() == 0);
    }
  }

  // The same with the default estimator: log_histogram counts, sums and extremes are exact.
  TEST_CASE("collector: concurrent log_histogram writers give exact counts, sums and extremes") {
    constexpr int writers = 3;
    constexpr int events = 50000;
    tokchron::collector c;
    std::atomic<int> done{0};
    std::atomic<std::uint64_t> taken{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < writers; ++t) {
      threads.emplace_back([&c, &done, &taken, t] {
        auto w = c.make_writer();
        for (int i = 0; i < events; ++i) {
          w.add(static_cast<double>(t * events + i + 1));
          if (i == events / 2) {
            const std::uint64_t seen = taken.load();
            while (taken.load() < seen + 2) std::this_thread::yield();
          }
        }
        done.fetch_add(1);
      });
    }
    tokchron::log_histogram merged;
    std::uint64_t nonempty = 0;
    while (done.load() < writers) {
      tokchron::log_histogram s = c.snapshot();
      taken.fetch_add(1);
      if (!s.empty()) ++nonempty;
      merged.merge(s);
    }
    for (auto& th : threads) th.join();
    tokchron::log_histogram last = c.snapshot();
    if (!last.empty()) ++nonempty;
    merged.merge(last);
    const std::uint64_t n = std::uint64_t{writers} * events;
    CHECK(nonempty >= 2);
    REQUIRE(merged.count() == n);
    CHECK(merged.sum() == static_cast<double>(n) * static_cast<double>(n + 1) / 2);
    CHECK(*merged.min() == 1);
    CHECK(*merged.max() == static_cast<double>(n));
    CHECK(merged ==
          c.cumulative());  // the intervals add up to the running total, bucket for bucket
  }

  // A snapshot that flips while a recording call is in progress waits for it, and the sample that
  // call records belongs to that snapshot's interval.
  TEST_CASE("collector: a snapshot waits for a recording call in progress") {
    for (collector_sync mode : modes) {
      CAPTURE(static_cast<int>(mode));
      collector c(mode);
      std::atomic<bool> inside{false}, release{false};
      std::thread slow([&] {
        auto w = c.make_writer();
        w.update([&](exact& e) noexcept {
          inside.store(true);
          while (!release.load()) std::this_thread::yield();
          e.add(7.0);
        });
      });
      while (!inside.load()) std::this_thread::yield();
      std::atomic<bool> snapped{false};
      exact s;
      std::thread snapper([&] {
        s = c.snapshot();
        snapped.store(true);
      });
      for (int i = 0; i < 100 && !snapped.load(); ++i) std::this_thread::yield();
      CHECK_FALSE(snapped.load());  // it cannot finish while the call is in progress
      release.store(true);
      snapper.join();
      slow.join();
      CHECK(s.sorted_samples() == std::vector<double>{7.0});
      CHECK(c.snapshot().empty());
    }
  }

  // Writers come and go (shards retire and are reused) while snapshots run.
  TEST_CASE("collector: writer churn during snapshots keeps exact counts") {
    constexpr int threads_n = 3;
    constexpr int rounds = 40;
    constexpr int per_round = 500;
    collector c;
    std::atomic<bool> stop{false};
    std::uint64_t seen = 0;
    std::thread snapper([&] {
      while (!stop.load()) seen += c.snapshot().count();
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_n; ++t) {
      threads.emplace_back([&c] {
        for (int r = 0; r < rounds; ++r) {
          auto w = c.make_writer();
          for (int i = 0; i < per_round; ++i) w.add(1.0);
        }
      });
    }
    for (auto& th : threads) th.join();
    stop.store(true);
    snapper.join();
    seen += c.snapshot().count();
    CHECK(seen == std::uint64_t{threads_n} * rounds * per_round);
    CHECK(c.cumulative().sum() == static_cast<double>(seen));
  }
}
