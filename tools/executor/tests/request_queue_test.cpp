// SPDX-License-Identifier: MIT
// The waiting queue (core/request_queue.hpp): each policy's order, preempted and promoted
// requests ahead of it, removals that keep the order, and the lazy merge against a full sort
// of the same requests after every random operation.
#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "request_queue.hpp"

using namespace batching;

namespace {

struct pool {
  clock_type clock;
  std::deque<request> all;
  request& make(std::uint64_t id, std::int64_t arrival_ms, std::int32_t priority = 0,
                std::uint32_t prompt = 1, std::uint32_t output = 1, std::uint32_t predicted = 1) {
    request& r = all.emplace_back(clock);
    r.id = id;
    r.arrival = time_point(std::chrono::milliseconds(arrival_ms));
    r.priority = priority;
    r.prompt_tokens = prompt;
    r.output_tokens = output;
    r.predicted_output = predicted;
    return r;
  }
};

std::vector<std::uint64_t> ids(const request_queue& q) {
  std::vector<std::uint64_t> out;
  for (const request* r : q) out.push_back(r->id);
  return out;
}

}  // namespace

TEST_CASE("request_queue: fcfs is arrival order, ties by id, whatever the push order") {
  pool p;
  request_queue q(make_queue_order(policy::fcfs));
  q.push(p.make(3, 20));
  q.push(p.make(1, 10));
  q.push(p.make(2, 10));
  q.push(p.make(0, 30, /*priority=*/-5));  // fcfs ignores priority
  CHECK(ids(q) == std::vector<std::uint64_t>{1, 2, 3, 0});
  CHECK(q.order().kind() == policy::fcfs);
  CHECK(q.at(0).id == 1);
  CHECK_THROWS_AS((void)q.at(4), std::out_of_range);
}

TEST_CASE("request_queue: priority is lower value first, then arrival, then id") {
  pool p;
  request_queue q(make_queue_order(policy::priority));
  q.push(p.make(0, 0, 2));
  q.push(p.make(1, 5, 0));
  q.push(p.make(2, 1, 0));
  q.push(p.make(3, 1, -1));
  CHECK(ids(q) == std::vector<std::uint64_t>{3, 2, 1, 0});
}

TEST_CASE("request_queue: sjf ranks by the key it is given") {
  pool p;
  p.make(0, 0, 0, /*prompt=*/30, /*output=*/10, /*predicted=*/20);
  p.make(1, 1, 0, 10, 30, 30);
  p.make(2, 2, 0, 20, 20, 10);
  const std::pair<sjf_key, std::vector<std::uint64_t>> cases[] = {
      {sjf_key::prompt, {1, 2, 0}}, {sjf_key::output, {0, 2, 1}}, {sjf_key::predicted, {2, 0, 1}}};
  for (const auto& c : cases) {
    const sjf_key key = c.first;  // not a structured binding: CAPTURE's lambda captures it
    const std::vector<std::uint64_t>& want = c.second;
    CAPTURE(to_string(key));
    request_queue q(make_queue_order(policy::sjf, key));
    for (request& r : p.all) q.push(r);
    CHECK(ids(q) == want);
  }
}

TEST_CASE("request_queue: preempted and promoted requests go first, among themselves by arrival") {
  pool p;
  request_queue q(make_queue_order(policy::priority));
  for (std::uint64_t i = 0; i < 5; ++i) q.push(p.make(i, std::int64_t(i), std::int32_t(i % 2)));
  CHECK(ids(q) == std::vector<std::uint64_t>{0, 2, 4, 1, 3});
  request& late = p.make(5, 50, 9);
  q.push_front(late);
  CHECK(late.resumed);
  CHECK(ids(q) == std::vector<std::uint64_t>{5, 0, 2, 4, 1, 3});
  q.promote(p.all[3]);  // arrival 3 goes ahead of every plain request, behind nothing later
  CHECK(p.all[3].promoted);
  CHECK(ids(q) == std::vector<std::uint64_t>{3, 5, 0, 2, 4, 1});
  q.promote(p.all[3]);  // no-op
  CHECK(ids(q) == std::vector<std::uint64_t>{3, 5, 0, 2, 4, 1});
}

TEST_CASE("request_queue: pop_front, remove_if and clear keep the order of what stays") {
  pool p;
  request_queue q(make_queue_order(policy::fcfs));
  for (std::uint64_t i = 0; i < 8; ++i) q.push(p.make(i, std::int64_t(i)));
  q.pop_front(2);
  CHECK(ids(q) == std::vector<std::uint64_t>{2, 3, 4, 5, 6, 7});
  std::vector<std::uint64_t> seen;
  const std::size_t removed = q.remove_if([&](request& r) {
    seen.push_back(r.id);
    if (r.id == 6) q.promote(r);  // a kept request may be promoted while removing
    return r.id % 2 == 1;
  });
  CHECK(removed == 3);
  CHECK(seen == std::vector<std::uint64_t>{2, 3, 4, 5, 6, 7});  // in order
  CHECK(ids(q) == std::vector<std::uint64_t>{6, 2, 4});
  q.pop_front(10);  // more than it holds
  CHECK(q.empty());
  q.push(p.make(9, 1));
  q.clear();
  CHECK(q.size() == 0);
  CHECK_THROWS_AS(request_queue(nullptr), std::invalid_argument);
}

TEST_CASE("request_queue: the lazy merge equals a full sort after every random operation") {
  for (const policy pol : {policy::fcfs, policy::priority, policy::sjf}) {
    CAPTURE(to_string(pol));
    pool p;
    request_queue q(make_queue_order(pol, sjf_key::predicted));
    std::vector<request*> model;  // the same requests, sorted from scratch each time
    std::mt19937_64 g(42);
    auto pick = [&](std::size_t n) { return std::size_t(g() % n); };
    for (int step = 0; step < 3000; ++step) {
      const std::size_t op = pick(10);
      if (op < 4 || model.empty()) {  // arrivals: times may tie
        request& r = p.make(p.all.size(), std::int64_t(pick(200)), std::int32_t(pick(4)), 1, 1,
                            std::uint32_t(1 + pick(50)));
        q.push(r);
        model.push_back(&r);
      } else if (op == 4) {
        request* r = model[pick(model.size())];
        q.promote(*r);
      } else if (op == 5) {  // a preemption: a request not in the queue comes back to its front
        request& r = p.make(p.all.size(), std::int64_t(pick(200)), std::int32_t(pick(4)));
        q.push_front(r);
        model.push_back(&r);
      } else if (op == 6) {
        const std::size_t n = pick(std::min<std::size_t>(model.size(), 4) + 1);
        std::sort(model.begin(), model.end(),
                  [&](const request* a, const request* b) { return q.before(*a, *b); });
        for (std::size_t i = 0; i < n; ++i) model[i]->resumed = model[i]->promoted = false;
        q.pop_front(n);
        model.erase(model.begin(), model.begin() + std::ptrdiff_t(n));
      } else if (op == 7) {
        const std::uint64_t mod = 2 + pick(5);
        q.remove_if([&](request& r) { return r.id % mod == 0; });
        model.erase(std::remove_if(model.begin(), model.end(),
                                   [&](const request* r) { return r->id % mod == 0; }),
                    model.end());
      } else {
        (void)q.at(pick(model.size()));  // a read in between
      }
      std::vector<request*> want = model;
      std::sort(want.begin(), want.end(),
                [&](const request* a, const request* b) { return q.before(*a, *b); });
      std::vector<request*> got(q.begin(), q.end());
      REQUIRE(got == want);
    }
  }
}

TEST_CASE("request_queue: policy names round-trip; a bad one lists the choices") {
  for (const policy pol : {policy::fcfs, policy::priority, policy::sjf})
    CHECK(parse_policy(to_string(pol)) == pol);
  for (const sjf_key k : {sjf_key::prompt, sjf_key::output, sjf_key::predicted})
    CHECK(parse_sjf_key(to_string(k)) == k);
  try {
    (void)parse_policy("lifo");
    FAIL("accepted lifo");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "policy: unknown value 'lifo' (choose fcfs, priority, sjf)");
  }
}
