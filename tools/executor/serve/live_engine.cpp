// SPDX-License-Identifier: MIT
#include "live_engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include "tokchron/live/presets.hpp"

namespace batching::serve {

namespace {
using steady = std::chrono::steady_clock;
}

std::string metric_names_list() {
  std::string out;
  for (const std::string_view n : metric_names) {
    if (!out.empty()) out += '|';
    out += n;
  }
  return out;
}

bool known_metric_names(std::string_view names) noexcept {
  return std::find(std::begin(metric_names), std::end(metric_names), names) !=
         std::end(metric_names);
}

tokchron::live_options metric_options(std::string_view names, const std::string& model,
                                      std::uint32_t max_model_len) {
  if (names == "vllm") return tokchron::vllm_live_options(model, max_model_len);
  if (names == "tokchron")
    return tokchron::tokchron_live_options({"model_name"}, {model}, max_model_len);
  if (names == "sglang") return tokchron::sglang_live_options(model);
  if (names == "tgi")  // TGI's default max_input_tokens is max_total_tokens - 1
    return tokchron::tgi_live_options(max_model_len > 1 ? max_model_len - 1 : 1, max_model_len);
  if (names == "llamacpp") return tokchron::llamacpp_live_options();
  if (names == "trtllm") return tokchron::trtllm_live_options(model);
  if (names == "dynamo") return tokchron::dynamo_live_options(model);
  if (names == "lmdeploy") return tokchron::lmdeploy_live_options(model);
  if (names == "otel") {
    const char* opt_in = std::getenv("OTEL_SEMCONV_STABILITY_OPT_IN");
    return tokchron::otel_live_options(model, "tokchron", "chat",
                                       tokchron::otel_genai_semconv_from(opt_in ? opt_in : ""));
  }
  throw std::invalid_argument("--names '" + std::string(names) + "': expected " +
                              metric_names_list());
}

live_engine::live_engine(const scheduler_config& cfg, std::unique_ptr<backend> be,
                         live_metrics& metrics, trace_sink sink)
    : cfg_(cfg),
      be_(std::move(be)),
      metrics_(metrics),
      trace_sink_(std::move(sink)),
      sched_(cfg_, be_->kv_blocks(cfg_.block_size), be_.get()) {
  kv_total_ = sched_.kv().total();
  thread_ = std::thread([this] { loop(); });
}

live_engine::~live_engine() { stop(); }

time_point live_engine::now() noexcept {
  return time_point(std::chrono::duration_cast<duration>(steady::now().time_since_epoch()));
}

steady::time_point live_engine::steady(time_point t) noexcept {
  return steady::time_point(std::chrono::duration_cast<steady::duration>(t.time_since_epoch()));
}

bool live_engine::submit(std::shared_ptr<call> c) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    inbox_.push_back(std::move(c));
  }
  cv_.notify_one();
  return true;
}

void live_engine::cancel(const std::shared_ptr<call>& c) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    cancels_.push_back(c);
  }
  cv_.notify_one();
}

void live_engine::stop() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::string live_engine::failure() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void live_engine::loop() {
  try {
    step_loop();
  } catch (const std::exception& e) {  // the backend failed: abort everything, refuse more
    const time_point t = std::max(now(), clock_.now());
    std::vector<std::shared_ptr<call>> late;
    {
      const std::lock_guard<std::mutex> lock(mu_);
      failure_ = e.what();
      stopping_ = true;
      late.swap(inbox_);
    }
    sched_.abort_all(t);
    std::vector<request*> done;
    sched_.take_finished(done);
    for (const auto& [r, c] : active_) {
      (void)r;
      metrics_.fail(c->live, steady(t));
      if (c->sink) c->sink({c->req.generated, 0, true, tokchron::finish_reason::error, 0});
    }
    active_.clear();
    for (const auto& c : late) {
      metrics_.fail(c->live, steady(t));
      if (c->sink) c->sink({0, 0, true, tokchron::finish_reason::error, 0});
    }
  }
}

void live_engine::step_loop() {
  std::vector<std::shared_ptr<call>> fresh, gone;
  std::vector<request*> done;
  std::vector<std::pair<call*, step_event>> events;
  std::vector<std::uint32_t> before;
  std::vector<tokchron::trace_record> records;  // finished in this step, for the trace sink
  step_plan plan;
  bool runnable = false;  // the last schedule() found work: do not sleep
  // The next scheduler wake-up (batch delay, queue timeout); max: none. (A plain value, not
  // an optional: g++ 12 -O3 misreports an optional's payload as maybe uninitialised here.)
  time_point wake = time_point::max();
  const bool virt = be_->virtual_time();

  auto publish_kv = [&] {
    kv_used_.store(sched_.kv().used());
    metrics_.set_kv_cache_usage(tokchron::live_series{},
                                kv_total_ ? double(sched_.kv().used()) / kv_total_ : 0.0);
  };
  // Finished requests: record them, hand their trace records to the sink (before their sessions
  // are told, in deliver).
  auto collect = [&](time_point t) {
    done.clear();
    records.clear();
    sched_.take_finished(done);
    for (request* r : done) {
      const auto it = active_.find(r);
      if (it == active_.end()) continue;
      call& c = *it->second;
      const tokchron::finish_reason why = r->tl.reason().value_or(tokchron::finish_reason::error);
      const auto st = steady(r->tl.finish_time().value_or(t));
      if (why == tokchron::finish_reason::aborted)
        metrics_.abort(c.live, st);
      else if (why == tokchron::finish_reason::rejected)
        metrics_.reject(c.live, st);
      else
        metrics_.finish(c.live, st, why);
      bool merged = false;
      for (auto& [ec, ev] : events)
        if (ec == &c) {
          ev.finished = true;
          ev.reason = why;
          merged = true;
        }
      if (!merged) events.push_back({&c, {c.req.generated, 0, true, why, r->cached_tokens}});
      if (trace_sink_) {
        tokchron::trace_record rec = tokchron::to_trace_record(r->tl, time_point{}, c.name);
        rec.prompt_tokens = c.gen.prompt_tokens;
        rec.usage_output_tokens = r->generated;
        rec.usage_from = tokchron::usage_source::server;  // its own count, sent or not
        records.push_back(std::move(rec));
      }
    }
    if (!records.empty()) trace_sink_(records);
  };
  // Hands the step's events to the sessions, then forgets finished requests.
  auto deliver = [&] {
    for (auto& [c, ev] : events)
      if (c->sink) c->sink(ev);
    for (auto& [c, ev] : events)
      if (ev.finished) active_.erase(&c->req);
    events.clear();
  };

  for (;;) {
    bool stop_now = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return stopping_ || !inbox_.empty() || !cancels_.empty(); };
      if (!runnable) {
        if (wake != time_point::max())
          cv_.wait_until(lock, steady(wake), ready);
        else
          cv_.wait(lock, ready);
      }
      fresh.swap(inbox_);
      gone.swap(cancels_);
      stop_now = stopping_;
    }
    time_point t = std::max(now(), clock_.now());
    clock_.set(t.time_since_epoch());
    for (auto& c : fresh) {
      request& r = c->req;
      r.id = c->id;
      r.prompt_tokens = c->gen.prompt_tokens;
      r.block_hashes = std::move(c->gen.block_hashes);
      r.output_tokens = c->gen.output_tokens;
      r.reasoning_tokens = c->gen.reasoning_tokens;
      r.predicted_output = c->gen.output_tokens;
      r.arrival = c->received;
      (void)r.tl.arrive(c->received);
      (void)r.tl.send(c->received);
      active_.emplace(&r, c);
      sched_.add(r, t);
      if (r.state == request_state::waiting) metrics_.queued(c->live, steady(t));
    }
    fresh.clear();
    for (auto& c : gone)
      if (active_.count(&c->req)) (void)sched_.abort(c->req, t);
    gone.clear();
    if (stop_now) sched_.abort_all(t);
    collect(t);
    deliver();
    publish_kv();  // aborts released blocks
    if (stop_now) break;

    runnable = sched_.schedule(t, plan);
    if (!runnable) {
      wake = sched_.next_wakeup(t).value_or(time_point::max());
      continue;
    }
    wake = time_point::max();
    // Live running/waiting: newly scheduled, and preempted since the last step.
    for (auto& [r, c] : active_) {
      const bool running = r->state == request_state::running;
      if (running && !c->live_running) {
        metrics_.scheduled(c->live, steady(t));
        // The prefix cache's share of the prompt, known once scheduled and before the first
        // token: the cached-prompt counter and vLLM's prefix-cache queries / hits (in tokens).
        if (cfg_.prefix_caching && !r->tl.first_token_time()) {
          (void)metrics_.set_cached_prompt_tokens(c->live, r->cached_tokens);
          if (r->tl.preemptions() == 0)
            metrics_.add_prefix_cache(tokchron::live_series{}, r->prompt_tokens, r->cached_tokens);
        }
      }
      if (!running && c->live_running) metrics_.preempted(c->live, steady(t));
      c->live_running = running;
    }
    before.resize(plan.reqs.size());
    for (std::size_t i = 0; i < plan.reqs.size(); ++i) before[i] = plan.reqs[i]->generated;

    const auto wall0 = steady::now();
    step_result res = be_->step(plan.work);
    if (virt) std::this_thread::sleep_until(wall0 + res.elapsed);  // the modelled step time
    // The deterministic stop: a request without ignore_eos ends with "stop" at its length.
    for (std::size_t i = 0; i < plan.reqs.size() && i < res.outputs.size(); ++i) {
      const request& r = *plan.reqs[i];
      const call& c = *active_.at(&r);
      if (plan.work.seqs[i].samples && c.gen.stops &&
          r.generated + std::max<std::uint32_t>(res.outputs[i].tokens, 1) >= r.output_tokens)
        res.outputs[i].stop = true;
    }
    const time_point end = std::max(now(), t + duration(1));
    res.elapsed = end - t;
    clock_.set(end.time_since_epoch());
    sched_.complete(plan, res, end);
    publish_kv();
    for (std::size_t i = 0; i < plan.reqs.size(); ++i) {
      request& r = *plan.reqs[i];
      const std::uint32_t k = r.generated - before[i];
      if (k == 0) continue;
      call& c = *active_.at(&r);
      // The answer's first reasoning_tokens are reasoning chunks (the reasoning counter).
      const std::uint32_t thinking =
          std::min(r.generated, r.reasoning_tokens) - std::min(before[i], r.reasoning_tokens);
      if (thinking > 0)
        metrics_.chunk(c.live, steady(end), thinking, tokchron::chunk_kind::reasoning);
      if (k > thinking) metrics_.chunk(c.live, steady(end), k - thinking);
      events.push_back({&c, {before[i], k, false, tokchron::finish_reason::stop, r.cached_tokens}});
    }
    collect(end);
    deliver();
  }
}

}  // namespace batching::serve
