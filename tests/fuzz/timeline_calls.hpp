// SPDX-License-Identifier: MIT
// Drives a request timeline with a sequence of recording calls decoded from bytes, and checks
// the recording contract (docs/bad-input.md, row T4): every refused call is counted and changes
// nothing; whatever the calls, every canonical metric and every profile's per-request values and
// pooled ITL samples are non-negative. Shared by the fuzz target timeline_calls_fuzz.cpp and the
// property test of random call sequences (tests/bad_input/timeline_test.cpp).
#ifndef TOKCHRON_TESTS_FUZZ_TIMELINE_CALLS_HPP
#define TOKCHRON_TESTS_FUZZ_TIMELINE_CALLS_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "tokchron/clock.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/timeline/request_timeline.hpp"

namespace tokchron_test {

/// What a call sequence did.
struct call_sequence_result {
  std::string failure;  ///< the first property that failed; empty when all held
  std::uint64_t calls = 0, refused = 0;
};

namespace detail {
using tl_type = tokchron::basic_request_timeline<tokchron::manual_clock>;

// Everything a recording call may change, to compare before and after a refused one.
struct state {
  std::optional<tl_type::time_point> arrival, send, queued, first_sched, last_sched, preempted,
      finish, first_token, last_token;
  std::optional<tokchron::finish_reason> reason;
  std::uint64_t tokens;
  std::size_t chunks;
  std::uint32_t preemptions;
  bool operator==(const state& o) const {
    return arrival == o.arrival && send == o.send && queued == o.queued &&
           first_sched == o.first_sched && last_sched == o.last_sched && preempted == o.preempted &&
           finish == o.finish && first_token == o.first_token && last_token == o.last_token &&
           reason == o.reason && tokens == o.tokens && chunks == o.chunks &&
           preemptions == o.preemptions;
  }
};
inline state state_of(const tl_type& tl) {
  return state{tl.arrival(),         tl.send_time(),        tl.queued_time(),
               tl.first_scheduled(), tl.last_scheduled(),   tl.last_preempted(),
               tl.finish_time(),     tl.first_token_time(), tl.last_token_time(),
               tl.reason(),          tl.output_tokens(),    tl.store().chunks().size(),
               tl.preemptions()};
}

// The next time: a step from the previous one (backwards too), or a jump to the edges of the
// time range and of int64.
inline std::int64_t next_time(std::int64_t now, std::uint8_t b) {
  constexpr std::int64_t range = tokchron::time_range_ticks;
  switch (b) {
    case 0x7f: return std::numeric_limits<std::int64_t>::max();
    case 0x80: return std::numeric_limits<std::int64_t>::min() + 1;
    case 0x7e: return range - 1;
    case 0x81: return -(range - 1);
    case 0x7d: return range;
    case 0x82: return -range;
    default: break;
  }
  const std::int64_t step = static_cast<std::int8_t>(b) * std::int64_t{1000000};  // +-127 ms
  if (step > 0 && now > std::numeric_limits<std::int64_t>::max() - step) return now;
  if (step < 0 && now < std::numeric_limits<std::int64_t>::min() - step) return now;
  return now + step;
}

inline bool negative(const std::optional<double>& v) { return v && !(*v >= 0); }
}  // namespace detail

/// Replays the calls encoded in `data` (three bytes a call: which call, the time step, the token
/// count or finish reason) and checks the properties. Deterministic.
inline call_sequence_result check_call_sequence(const std::uint8_t* data, std::size_t size) {
  using namespace tokchron;
  using detail::tl_type;
  call_sequence_result res;
  tl_type tl{manual_clock()};
  std::int64_t now = 0;
  auto fail = [&](const char* what) {
    if (res.failure.empty()) res.failure = what;
  };
  for (std::size_t i = 0; i + 3 <= size && res.failure.empty(); i += 3) {
    const std::uint8_t op = data[i], arg = data[i + 2];
    now = detail::next_time(now, data[i + 1]);
    const tl_type::time_point t = manual_clock::at(std::chrono::nanoseconds(now));
    const std::uint32_t tokens = arg == 0xff ? std::numeric_limits<std::uint32_t>::max()
                                             : static_cast<std::uint32_t>(arg % 4);
    const detail::state before = detail::state_of(tl);
    const std::uint32_t misuses = tl.misuse_count();
    record_status s = record_status::ok;
    switch (op % 11) {
      case 0: s = tl.arrive(t); break;
      case 1: s = tl.send(t); break;
      case 2: s = tl.queued(t); break;
      case 3: s = tl.scheduled(t); break;
      case 4: s = tl.preempted(t); break;
      case 5:
      case 6: s = tl.chunk(t, tokens); break;
      case 7: s = tl.chunk(t, 0, static_cast<chunk_kind>(arg % 5)); break;
      case 8: s = tl.chunk(t, tokens, static_cast<chunk_kind>(arg % 5)); break;
      case 9: s = tl.finish(t, static_cast<finish_reason>(arg % 6)); break;
      default:
        s = tl.set_speculative(arg % 4u, (arg / 4u) % 4u);
        break;  // refused: accepted > drafted
    }
    ++res.calls;
    if (s != record_status::ok) {
      ++res.refused;
      if (tl.misuse_count() != misuses + 1) fail("a refused call was not counted once");
      if (tl.last_misuse() != s) fail("last_misuse() is not the refusal just returned");
      if (!(detail::state_of(tl) == before)) fail("a refused call changed the timeline");
    } else if (tl.misuse_count() != misuses) {
      fail("an accepted call was counted as misuse");
    }
  }
  if (tl.misuse_count() != res.refused) fail("misuse_count() differs from the refusals");
  const request_metrics m = canonical_metrics(tl);
  for (std::size_t k = 0; k < metric_count; ++k)  // every metric of the table
    if (detail::negative(m.value(static_cast<metric_id>(k))))
      fail("a canonical metric is negative");
  if (m.spec_acceptance && *m.spec_acceptance > 1) fail("spec_acceptance exceeds 1");
  if (m.reasoning_tokens > m.output_tokens) fail("reasoning tokens exceed output tokens");
  for (const profile* p : all_profiles()) {
    bool bad_sample = false;
    for_each_icl(*p, tl, [&](double g) {
      if (!(g >= 0)) bad_sample = true;
    });
    const request_metrics r = evaluate(*p, tl, [&](double g, std::uint64_t n) noexcept {
      if (!(g >= 0) || n == 0) bad_sample = true;
    });
    if (bad_sample) fail("a pooled ITL sample is negative");
    for (std::size_t k = 0; k < metric_count; ++k)  // every metric of the table
      if (detail::negative(r.value(static_cast<metric_id>(k))))
        fail("a profile's per-request value is negative");
  }
  return res;
}

}  // namespace tokchron_test

#endif  // TOKCHRON_TESTS_FUZZ_TIMELINE_CALLS_HPP
