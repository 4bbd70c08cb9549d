// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_DETAIL_STATE_HPP
#define TOKCHRON_LIVE_DETAIL_STATE_HPP

/// \file
/// Internals of `live/`: the per-series blocks of counters and fixed-bucket histograms, a side
/// of a shard (what one writer records between two scrapes), the lock-free label-value table,
/// the shared state and the thread-local shard cache, and the definitions of live/detail/core.hpp.
/// Light (no `<thread>`, `<mutex>`, `<map>`, `<functional>`, `<algorithm>`): the recording header
/// includes it, except under `TOKCHRON_SEPARATE_INSTANTIATION` (then only
/// tokchron/record_instantiate.hpp and the scrape do). Not part of the API.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/collect/detail/shard.hpp"
#include "tokchron/config.hpp"
#include "tokchron/live/detail/core.hpp"
#include "tokchron/live/options.hpp"

TOKCHRON_BEGIN_NAMESPACE
namespace detail {

/// True if histogram family `f` is kept by finish reason: it counts some reasons only or
/// labels its points by reason.
[[nodiscard]] inline bool live_by_reason(const live_family& f) noexcept {
  return f.source == live_source::histogram && (f.reasons != 0 || !f.label.empty());
}

/// True if the recorder observes histogram `h` only when a request finishes (its reason known)
/// under `rules`: the histograms a family may keep by finish reason.
[[nodiscard]] constexpr bool live_observed_at_finish(live_histogram h,
                                                     const live_rules& rules) noexcept {
  switch (h) {
    case live_histogram::e2e:
    case live_histogram::tpot:
    case live_histogram::prefill_time:
    case live_histogram::decode_time:
    case live_histogram::inference_time:
    case live_histogram::validation_time:
    case live_histogram::generation_tokens:
    case live_histogram::prefill_computed_tokens: return true;
    case live_histogram::ttft: return rules.ttft_at_finish;
    case live_histogram::queue_time: return !rules.queue_at_schedule;
    default: return false;
  }
}

/// Where each histogram's bucket counts and sums live in a block, computed once from the
/// options: the edges of the families it feeds (a histogram no family exports keeps one +Inf
/// bucket). A histogram kept by finish reason (`by_reason`: a family of it selects reasons or
/// adds a label, live_family) has one set of buckets and one sum per reason, in reason order.
struct live_layout {
  std::array<std::vector<double>, live_histogram_count> bounds;
  std::array<std::uint32_t, live_histogram_count> offset{};  // first bucket count of each
  std::array<std::uint32_t, live_histogram_count> sum_at{};  // its (first) sum
  std::array<bool, live_histogram_count> by_reason{};
  std::uint32_t spec_offset = lc_count;       // first per-position acceptance counter
  std::uint32_t counts = lc_count;            // total uint64 slots per block
  std::uint32_t sums = live_histogram_count;  // total sums per block
  std::uint32_t series = 1;  // blocks per side: max_series + 1 (the overflow series)

  /// The part of histogram `h` a sample of a request finished for reason `reason` goes to.
  [[nodiscard]] std::uint32_t part(std::size_t h, std::uint32_t reason) const noexcept {
    return by_reason[h] ? reason : 0;
  }
  /// The bucket of `v` in part `part` of histogram `h`: the first bound >= v, or the +Inf
  /// bucket.
  [[nodiscard]] std::uint32_t bucket(std::size_t h, double v,
                                     std::uint32_t part = 0) const noexcept {
    const std::vector<double>& b = bounds[h];
    std::size_t lo = 0, hi = b.size();
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (b[mid] < v)
        lo = mid + 1;
      else
        hi = mid;
    }
    return offset[h] + part * static_cast<std::uint32_t>(b.size() + 1) +
           static_cast<std::uint32_t>(lo);
  }
};

/// a + b, or 2^64 - 1 when that overflows.
[[nodiscard]] constexpr std::uint64_t live_sat_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a + b < a ? ~std::uint64_t{0} : a + b;
}

/// One series' numbers: counters, then each histogram's non-cumulative bucket counts (its last
/// slot the +Inf bucket), and each histogram's sum.
struct live_block {
  std::uint64_t* n = nullptr;
  double* sum = nullptr;
};

/// What one writer records between two scrapes (one side of a shard), or a scrape's running
/// total. Blocks are allocated the first time a series is touched (nothrow: a failed
/// allocation drops that sample and counts it in `dropped`).
class live_side {
 public:
  explicit live_side(const live_layout& layout) : layout_(&layout), blocks_(layout.series) {}
  live_side(const live_side& o) : layout_(o.layout_), blocks_(o.layout_->series) {}
  live_side& operator=(const live_side&) = delete;
  ~live_side() {
    for (auto& b : blocks_) {
      delete[] b.n;
      delete[] b.sum;
    }
  }

  /// The block of series `s`, allocated on first use; nullptr when memory ran out.
  live_block* block(std::uint32_t s) noexcept {
    live_block& b = blocks_[s];
    if (TOKCHRON_UNLIKELY(b.n == nullptr)) {
      auto* n = new (std::nothrow) std::uint64_t[layout_->counts]();
      auto* sum = new (std::nothrow) double[layout_->sums]();
      if (n == nullptr || sum == nullptr) {
        delete[] n;
        delete[] sum;
        ++dropped;
        return nullptr;
      }
      b.n = n;
      b.sum = sum;
    }
    return &b;
  }
  /// The block of series `s` if it was ever touched.
  [[nodiscard]] const live_block* find(std::uint32_t s) const noexcept {
    return blocks_[s].n != nullptr ? &blocks_[s] : nullptr;
  }

  /// Adds `delta` to `counter` of series `s`. The gauge deltas (running, waiting) wrap (two's
  /// complement: ~0 is -1); every other slot saturates at 2^64 - 1, so a hostile token count
  /// never makes a counter go backwards (which Prometheus would read as a reset).
  void count(std::uint32_t s, std::uint32_t counter, std::uint64_t delta) noexcept {
    if (live_block* b = block(s)) add(b->n[counter], delta, counter);
  }
  /// `a += d` for slot `slot`: wrapping for the gauge deltas, saturating for the rest.
  static void add(std::uint64_t& a, std::uint64_t d, std::uint32_t slot) noexcept {
    if (slot == lc_running || slot == lc_waiting || slot == lc_before_first)
      a += d;
    else
      a = live_sat_add(a, d);
  }
  /// Observes `v` `times` times in histogram `h`; `reason`: the finish reason of the request,
  /// for a histogram kept by reason (observed at the finish only: live_check_families).
  void observe(std::uint32_t s, live_histogram h, double v, std::uint64_t times = 1,
               std::uint32_t reason = 0) noexcept {
    if (live_block* b = block(s)) {
      const auto i = static_cast<std::size_t>(h);
      const std::uint32_t part = layout_->part(i, reason);
      const std::uint32_t at = layout_->bucket(i, v, part);
      add(b->n[at], times, at);
      b->sum[layout_->sum_at[i] + part] += v * static_cast<double>(times);
    }
  }

  /// Adds everything into `total`; false (nothing changed in `total` for the series not yet
  /// merged, this side keeps them) when `total` cannot allocate a block.
  bool merge_into(live_side& total) noexcept {
    bool all = true;
    for (std::uint32_t s = 0; s < blocks_.size(); ++s) {
      live_block& b = blocks_[s];
      if (b.n == nullptr) continue;
      live_block* t = total.block(s);
      if (t == nullptr) {
        all = false;
        continue;
      }
      for (std::uint32_t i = 0; i < layout_->counts; ++i) add(t->n[i], b.n[i], i);
      for (std::uint32_t i = 0; i < layout_->sums; ++i) t->sum[i] += b.sum[i];
      for (std::uint32_t i = 0; i < layout_->counts; ++i) b.n[i] = 0;
      for (std::uint32_t i = 0; i < layout_->sums; ++i) b.sum[i] = 0;
    }
    total.misuse += misuse;
    total.dropped += dropped;
    misuse = dropped = 0;
    return all;
  }

  std::uint64_t misuse = 0;   ///< recording calls refused (see live_metrics::misuse)
  std::uint64_t dropped = 0;  ///< samples lost because a block could not be allocated

 private:
  const live_layout* layout_;
  std::vector<live_block> blocks_;
};

/// True if `s` is valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF): the
/// Prometheus text format and OpenMetrics carry label values as UTF-8, and a scraper refuses
/// the whole exposition for one bad byte.
[[nodiscard]] inline bool live_valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07u;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0u) != 0x80u) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += len;
  }
  return true;
}

/// `s` cut to at most `max` bytes on a character boundary (`s` is valid UTF-8): the bytes of
/// an incomplete last character are left out with it. Allocates nothing.
[[nodiscard]] inline std::string_view live_cut(std::string_view s, std::size_t max) noexcept {
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0u) == 0x80u) --n;
  return s.substr(0, n);
}

/// Shard ownership: `owned` by a thread, `retired` (its thread let it go; both sides belong to
/// the scrapes and the next thread may claim it), `draining` (a scrape is emptying a retired
/// shard; nobody may claim it).
enum live_owner : std::uint8_t { lo_owned, lo_retired, lo_draining };

/// One writer thread's shard: the collector's two-sided hand-over, a claim state and a link in
/// the state's lock-free list (push-front only; shards live as long as the state).
struct live_shard {
  live_shard(const live_side& prototype, bool asymmetric) : core(prototype, asymmetric, 0) {}
  collector_shard<live_side> core;
  std::atomic<std::uint8_t> owner{lo_owned};
  live_shard* next = nullptr;
};

/// An interned label-value set. Immutable once published, except the server-set gauge.
struct live_series_entry {
  std::uint64_t hash = 0;
  std::vector<std::string> values;
  std::atomic<std::uint32_t> index{~std::uint32_t{0}};  // assigned after the slot is won
};

/// FNV-1a over the values, each cut to `max` bytes (live_cut), separated so ("ab","c") and
/// ("a","bc") differ.
[[nodiscard]] inline std::uint64_t live_hash(const std::string_view* v, std::size_t n,
                                             std::size_t max) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) {
    for (const char c : live_cut(v[i], max)) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
    h ^= 0xffu;
    h *= 1099511628211ull;
  }
  return h;
}

/// A series' most recent KV-cache transfer (the last-transfer gauges), behind a sequence
/// number: odd while a writer stores, so that a scrape reads a time and a size of one transfer.
struct live_last_transfer {
  std::atomic<std::uint32_t> seq{0};  ///< 0: never set; odd: being written
  std::atomic<double> seconds{0};
  std::atomic<std::uint64_t> bytes{0};

  /// Stores a transfer, unless another writer is storing one (then that one is kept).
  void store(double s, std::uint64_t b) noexcept {
    std::uint32_t e = seq.load(std::memory_order_relaxed);
    if ((e & 1u) != 0 || !seq.compare_exchange_strong(e, e + 1, std::memory_order_acquire,
                                                      std::memory_order_relaxed))
      return;
    std::atomic_thread_fence(std::memory_order_release);
    seconds.store(s, std::memory_order_relaxed);
    bytes.store(b, std::memory_order_relaxed);
    seq.store(e + 2, std::memory_order_release);
  }
  /// The transfer stored last as {seconds, bytes}; false if none was.
  bool load(double& s, std::uint64_t& b) const noexcept {
    for (;;) {
      const std::uint32_t before = seq.load(std::memory_order_acquire);
      if (before == 0) return false;
      if ((before & 1u) != 0) continue;
      s = seconds.load(std::memory_order_relaxed);
      b = bytes.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (seq.load(std::memory_order_relaxed) == before) return true;
    }
  }
};

/// Everything a live_metrics object shares with its writer threads' shard caches and with the
/// scrapes. Reference counted: the owner holds one reference and every thread-local cache entry
/// one, so a thread that exits after the metrics object was destroyed still finds its shard.
struct live_state {
  explicit live_state(live_options o)
      : options(std::move(o)), layout(make_layout(options)), prototype(layout), total(layout) {
    std::size_t cap = 2;
    while (cap < 2 * options.max_series) cap *= 2;
    slots = std::vector<std::atomic<live_series_entry*>>(cap);
    by_index = std::vector<std::atomic<live_series_entry*>>(layout.series);
    kv_cache_usage = std::vector<std::atomic<double>>(layout.series);
    for (auto& g : kv_cache_usage) g.store(not_set(), std::memory_order_relaxed);
    last_transfer = std::vector<live_last_transfer>(layout.series);
  }
  live_state(const live_state&) = delete;
  live_state& operator=(const live_state&) = delete;
  ~live_state() {
    live_shard* s = head.load(std::memory_order_acquire);
    while (s != nullptr) {
      live_shard* n = s->next;
      delete s;
      s = n;
    }
    for (auto& e : slots) delete e.load(std::memory_order_relaxed);
  }

  live_options options;
  live_layout layout;
  live_side prototype;  // empty, for new shards
  std::atomic<std::size_t> refs{1};
  std::uint64_t id = next_id();
  bool asymmetric = asymmetric_barrier::available();
  std::atomic<live_shard*> head{nullptr};
  std::atomic<std::uint64_t> lost_shards{0};  // recording calls dropped: no shard (memory)
  std::atomic<std::uint64_t> misuse{0};       // refused recording calls since construction
  std::atomic<std::uint32_t> features{0};     // live_feature bits: families recorded into

  // Label values: an open-addressing table of 2^k >= 2 * max_series slots, and by index.
  std::vector<std::atomic<live_series_entry*>> slots;
  std::vector<std::atomic<live_series_entry*>> by_index;  // max_series + 1 (overflow last)
  std::atomic<std::uint32_t> next_index{0};
  std::atomic<std::uint64_t> overflowed_lookups{0};
  std::atomic<std::uint64_t> long_label_values{0};  // lookups with a value over the bound
  std::vector<std::atomic<double>> kv_cache_usage;  // by series; NaN = never set
  std::vector<live_last_transfer> last_transfer;    // by series
  std::atomic<bool> prefix_cache_used{false};

  // Scrape side: serialised by `scrape_lock` (a scrape spins; writers never take it).
  std::atomic_flag scrape_lock = ATOMIC_FLAG_INIT;
  live_side total;
  /// The decode throughput gauge's window (`live_source::decode_throughput`): by series, the
  /// decode steps and decode microseconds as of the previous scrape.
  std::vector<std::array<std::uint64_t, 2>> window;

  [[nodiscard]] std::uint32_t overflow_index() const noexcept { return layout.series - 1; }

 private:
  static std::uint64_t next_id() noexcept {
    static std::atomic<std::uint64_t> ids{0};
    return ids.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  static live_layout make_layout(const live_options& o) {
    live_layout l;
    for (const live_family& f : o.families) {  // live_check: one set of edges per histogram
      if (f.source == live_source::histogram) {
        const auto h = static_cast<std::size_t>(f.histogram);
        l.bounds[h] = f.buckets;
        l.by_reason[h] = l.by_reason[h] || live_by_reason(f);
      }
      if (f.source == live_source::stage_histograms)
        for (const live_histogram h : f.stages) l.bounds[static_cast<std::size_t>(h)] = f.buckets;
    }
    std::uint32_t at = lc_count, sum = 0;
    for (std::size_t h = 0; h < live_histogram_count; ++h) {
      const std::uint32_t parts = l.by_reason[h] ? finish_reason_count : 1;
      l.offset[h] = at;
      at += (static_cast<std::uint32_t>(l.bounds[h].size()) + 1) * parts;
      l.sum_at[h] = sum;
      sum += parts;
    }
    l.sums = sum;
    l.spec_offset = at;
    at += static_cast<std::uint32_t>(o.speculative_positions);
    l.counts = at;
    l.series = static_cast<std::uint32_t>(o.max_series) + 1;
    return l;
  }

 public:
  /// The value a server-set gauge holds until first set.
  static constexpr double not_set() noexcept { return -1.0; }
};

inline void live_release(live_state* s) noexcept {
  if (s != nullptr && s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
}

/// The calling thread's shard of `st`, claiming or creating one on first use; nullptr when
/// memory ran out. Lock-free: a retired shard is claimed by compare-and-swap, a new one pushed
/// onto the list by compare-and-swap.
inline live_shard* live_claim(live_state& st) noexcept {
  for (live_shard* s = st.head.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    std::uint8_t expect = lo_retired;
    if (s->owner.compare_exchange_strong(expect, lo_owned, std::memory_order_acq_rel)) return s;
  }
  live_shard* s = nullptr;
  TOKCHRON_TRY { s = new (std::nothrow) live_shard(st.prototype, st.asymmetric); }
  TOKCHRON_CATCH_ALL { s = nullptr; }
  if (s == nullptr) return nullptr;
  live_shard* h = st.head.load(std::memory_order_relaxed);
  do {
    s->next = h;
  } while (
      !st.head.compare_exchange_weak(h, s, std::memory_order_release, std::memory_order_relaxed));
  return s;
}

/// The thread-local cache of (state, shard) pairs: a few direct-mapped entries. An evicted
/// entry or an exiting thread retires its shard (release: after its last recording call) and
/// drops its reference to the state.
struct live_thread_cache {
  struct entry {
    live_state* state = nullptr;
    live_shard* shard = nullptr;
  };
  static constexpr std::size_t ways = 8;
  std::array<entry, ways> entries{};

  live_thread_cache() = default;
  live_thread_cache(const live_thread_cache&) = delete;
  live_thread_cache& operator=(const live_thread_cache&) = delete;
  ~live_thread_cache() {
    for (auto& e : entries) evict(e);
  }

  static void evict(entry& e) noexcept {
    if (e.state == nullptr) return;
    e.shard->owner.store(lo_retired, std::memory_order_release);
    live_release(e.state);
    e = entry{};
  }

  live_shard* get(live_state& st) noexcept {
    entry& e = entries[st.id % ways];
    if (TOKCHRON_LIKELY(e.state == &st)) return e.shard;
    live_shard* s = live_claim(st);
    if (s == nullptr) return nullptr;
    evict(e);
    st.refs.fetch_add(1, std::memory_order_relaxed);
    e.state = &st;
    e.shard = s;
    return s;
  }
};

inline live_thread_cache& live_this_thread() noexcept {
  thread_local live_thread_cache cache;
  return cache;
}

// --- live/detail/core.hpp ---------------------------------------------------------------------

/// True if `n` label values can be a series of their own: valid UTF-8, and not every value
/// (cut to `max` bytes) `overflow` (the overflow series' label set; with no labels, every set
/// is the default).
/// (This and the next three are templates so that they are compiled only where live_core<> is:
/// record_instantiate.hpp, or header-only the files that construct or label a live_metrics.)
template <int = 0>
[[nodiscard]] bool live_exportable(const std::string_view* v, std::size_t n,
                                   std::string_view overflow, std::size_t max) noexcept {
  bool all_overflow = n > 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!live_valid_utf8(v[i])) return false;
    all_overflow = all_overflow && live_cut(v[i], max) == overflow;
  }
  return !all_overflow;
}

/// Throws std::invalid_argument for rules the recorder does not implement.
template <int = 0>
void live_check_rules(const live_rules& r) {
  if (r.itl != itl_grain::per_chunk && r.itl != itl_grain::per_token_split &&
      r.itl != itl_grain::per_token_with_first)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_rules.itl must be per_chunk, per_token_split or "
                   "per_token_with_first");
  if (r.tpot != tpot_span::token_span && r.tpot != tpot_span::origin_to_last_over_n)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_rules.tpot must be token_span or origin_to_last_over_n");
  if (r.tpot_small_n != small_n_rule::excluded && r.tpot_small_n != small_n_rule::zero)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_rules.tpot_small_n must be excluded or zero");
  if (r.reasons >= (1u << finish_reason_count))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: live_rules.reasons: not a set of reasons");
}

/// True if `n` is a valid label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`).
[[nodiscard]] inline bool live_label_name(const std::string& n) noexcept {
  bool ok = !n.empty() && !(n.size() >= 2 && n[0] == '_' && n[1] == '_');
  for (std::size_t i = 0; ok && i < n.size(); ++i) {
    const char c = n[i];
    ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (i > 0 && c >= '0' && c <= '9');
  }
  return ok;
}

/// Throws std::invalid_argument, naming the family, for families the scrape could not write:
/// an empty or repeated name, a kind its source cannot have, an unknown source or histogram,
/// edges not finite and strictly increasing or unlike another family's of the same histogram,
/// a missing or invalid label where the source adds one (or one equal to a series label), the
/// requests' values not one per finish reason, the sources' not three, a reason set beyond
/// the reasons.
template <int = 0>
void live_check_families(const live_options& o) {
  const auto& fs = o.families;
  for (std::size_t k = 0; k < fs.size(); ++k) {
    const live_family& f = fs[k];
    auto fail = [&](const char* what) {
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: live_options.families: '" + f.name + "': " + what);
    };
    if (f.name.empty()) fail("empty name");
    for (std::size_t j = 0; j < k; ++j)
      if (fs[j].name == f.name) fail("name given twice");
    if (static_cast<unsigned>(f.source) > static_cast<unsigned>(live_source::dropped))
      fail("unknown source");
    const metric_kind want = live_kind_of(f.source);
    if (f.kind != want && !(want == metric_kind::counter && f.kind == metric_kind::gauge))
      fail("a kind its source cannot have");
    // The histograms a family reads: its one, or one per stage.
    const bool staged = f.source == live_source::stage_histograms;
    std::vector<live_histogram> reads;
    if (f.source == live_source::histogram) reads.push_back(f.histogram);
    if (staged) reads = f.stages;
    if (f.source == live_source::histogram || staged) {
      for (const live_histogram h : reads)
        if (static_cast<std::size_t>(h) >= live_histogram_count) fail("unknown histogram");
      const auto& b = f.buckets;
      for (std::size_t i = 0; i < b.size(); ++i)
        if (!(b[i] == b[i] && b[i] - b[i] == 0) || (i > 0 && !(b[i] > b[i - 1])))
          fail("buckets must be finite and strictly increasing");
      for (std::size_t j = 0; j < k; ++j)
        for (const live_histogram h : reads) {
          bool same = fs[j].source == live_source::histogram && fs[j].histogram == h;
          if (fs[j].source == live_source::stage_histograms)
            for (const live_histogram g : fs[j].stages) same = same || g == h;
          if (same && fs[j].buckets != f.buckets)
            fail("buckets unlike those of another family of the same histogram");
        }
    } else if (!f.buckets.empty()) {
      fail("buckets on a family that is not a histogram");
    }
    if (staged && (f.stages.empty() || f.stages.size() != f.label_values.size()))
      fail("stage histograms need one histogram per label value");
    if (!staged && !f.stages.empty()) fail("stages on a family that has none");
    const bool labelled = f.source == live_source::requests ||
                          f.source == live_source::prompt_tokens_by_source ||
                          f.source == live_source::spec_accepted_per_position ||
                          (f.source == live_source::histogram && !f.label.empty()) || staged;
    if (labelled) {
      bool clash = f.label == "le";
      for (const std::string& n : o.label_names) clash = clash || n == f.label;
      if (!live_label_name(f.label) || clash) fail("its label name is invalid or a series label");
    } else if (!f.label.empty()) {
      fail("a label on a family whose source adds none");
    }
    if (f.source == live_source::requests && f.label_values.size() < finish_reason_count)
      fail("the requests counter needs a label value per finish reason");
    if (!f.second_label.empty() || !f.second_label_values.empty()) {
      bool clash = f.second_label == "le" || f.second_label == f.label;
      for (const std::string& n : o.label_names) clash = clash || n == f.second_label;
      for (const label& c : f.const_labels) clash = clash || c.name == f.second_label;
      if (f.source != live_source::requests || !live_label_name(f.second_label) || clash)
        fail(
            "a second label on a family other than the requests counter, or its name invalid, "
            "a series, constant or first label");
      if (f.second_label_values.size() != f.label_values.size())
        fail("the second label needs a value beside each label value");
      for (const std::string& v : f.second_label_values)
        if (!live_valid_utf8(v)) fail("a label value is not valid UTF-8");
    }
    if (f.source == live_source::prompt_tokens_by_source && f.label_values.size() != 3)
      fail("prompt tokens by source need three label values");
    if (f.source == live_source::histogram && !f.label.empty() &&
        f.label_values.size() != finish_reason_count)
      fail("a histogram labelled by finish reason needs one label value per reason");
    if (live_by_reason(f) && !live_observed_at_finish(f.histogram, o.rules))
      fail("kept by finish reason, but not observed at the finish under these rules");
    for (const std::string& v : f.label_values)
      if (!live_valid_utf8(v)) fail("a label value is not valid UTF-8");
    if (f.reasons >= (1u << finish_reason_count)) fail("reasons: not a set of reasons");
    for (std::size_t i = 0; i < f.const_labels.size(); ++i) {
      const label& c = f.const_labels[i];
      bool clash = c.name == "le" || c.name == f.label;
      for (const std::string& n : o.label_names) clash = clash || n == c.name;
      for (std::size_t j = 0; j < i; ++j) clash = clash || f.const_labels[j].name == c.name;
      if (!live_label_name(c.name) || clash || !live_valid_utf8(c.value))
        fail("a constant label is invalid, repeated, or a series label");
    }
    if (f.sum_series && (f.source == live_source::histogram || labelled))
      fail("a sum over the series of a histogram or of a labelled family");
  }
}

/// Throws std::invalid_argument for options a live_metrics object refuses (recorder.hpp).
template <int = 0>
void live_check(const live_options& o) {
  if (o.max_series == 0 || o.max_series > (std::uint32_t{1} << 20))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: live_options.max_series must be 1..2^20");
  live_check_rules(o.rules);
  if (static_cast<unsigned>(o.role) > static_cast<unsigned>(live_role::decode))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: live_options.role: not a role");
  if (o.speculative_positions > 64)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_options.speculative_positions must be 0..64");
  if (o.default_label_values.size() != o.label_names.size())
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_options.default_label_values needs one value per label name");
  for (std::size_t k = 0; k < o.label_names.size(); ++k) {
    const std::string& n = o.label_names[k];
    for (std::size_t j = 0; j < k; ++j)
      if (o.label_names[j] == n)
        TOKCHRON_THROW(std::invalid_argument, "tokchron: live_options: duplicate label name");
    if (!live_label_name(n) || n == "le")
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: live_options: invalid label name '" + n + "'");
  }
  live_check_families(o);
  if (!live_valid_utf8(o.overflow_value))
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_options.overflow_value is not valid UTF-8");
  if (o.max_label_value_bytes == 0)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_options.max_label_value_bytes must be at least 1");
  if (o.overflow_value.size() > o.max_label_value_bytes)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_options.overflow_value is longer than max_label_value_bytes");
  for (const std::string& v : o.default_label_values)
    if (v.size() > o.max_label_value_bytes)
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: live_options.default_label_values: a value is longer than "
                     "max_label_value_bytes (" +
                         std::to_string(v.size()) + " > " +
                         std::to_string(o.max_label_value_bytes) + " bytes)");
  const std::vector<std::string_view> d(o.default_label_values.begin(),
                                        o.default_label_values.end());
  if (!live_exportable(d.data(), d.size(), o.overflow_value, o.max_label_value_bytes))
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: live_options.default_label_values: not valid UTF-8, or the "
                   "overflow series' own values");
}

template <int = 0>
[[nodiscard]] bool live_equal(const std::vector<std::string>& a, const std::string_view* v,
                              std::size_t n, std::size_t max) noexcept {
  if (a.size() != n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (std::string_view(a[i]) != live_cut(v[i], max)) return false;
  return true;
}

/// Interns a label-value set, each value cut to `live_options::max_label_value_bytes`: its
/// index, or the overflow index when the table is full or memory ran out. Lock-free: probing reads
/// published entries; a new entry is published by compare-and-swap into an empty slot and only then
/// given an index.
template <int = 0>
std::uint32_t live_intern(live_state& st, const std::string_view* v, std::size_t n) noexcept {
  const std::size_t max = st.options.max_label_value_bytes;
  const std::uint64_t h = live_hash(v, n, max);
  const std::size_t mask = st.slots.size() - 1;
  live_series_entry* mine = nullptr;
  bool rescanned = false;
  for (std::size_t probe = 0, i = h & mask; probe <= mask; ++probe, i = (i + 1) & mask) {
    live_series_entry* e = st.slots[i].load(std::memory_order_acquire);
    if (e == nullptr) {
      if (st.next_index.load(std::memory_order_acquire) >= st.options.max_series) {
        // Full. The set may have been published at a slot this probe passed while it was
        // empty: every entry that gets a real index is published before its fetch_add, so all
        // of them are visible now (acquire on the count). Probe once more from the start; an
        // empty slot then means the set has no real index, and a later insertion of it gets
        // the overflow index too, so every thread gets the same answer for a set.
        if (rescanned) break;
        rescanned = true;
        probe = ~std::size_t{0};  // the loop's increment makes it 0
        i = (h - 1) & mask;       // and this h & mask
        continue;
      }
      if (mine == nullptr) {
        TOKCHRON_TRY {
          mine = new (std::nothrow) live_series_entry;
          if (mine != nullptr) {
            mine->hash = h;
            mine->values.reserve(n);
            for (std::size_t k = 0; k < n; ++k) mine->values.emplace_back(live_cut(v[k], max));
          }
        }
        TOKCHRON_CATCH_ALL {
          delete mine;
          mine = nullptr;
        }
        if (mine == nullptr) break;
      }
      if (st.slots[i].compare_exchange_strong(e, mine, std::memory_order_acq_rel)) {
        std::uint32_t idx = st.next_index.fetch_add(1, std::memory_order_acq_rel);
        if (idx >= st.options.max_series)
          idx = st.overflow_index();
        else
          st.by_index[idx].store(mine, std::memory_order_release);
        mine->index.store(idx, std::memory_order_release);
        if (idx == st.overflow_index())
          st.overflowed_lookups.fetch_add(1, std::memory_order_relaxed);
        return idx;
      }
      // Lost the race: `e` is the winner; compare it below.
    }
    if (e->hash == h && live_equal(e->values, v, n, max)) {
      std::uint32_t idx;
      while ((idx = e->index.load(std::memory_order_acquire)) == ~std::uint32_t{0}) {
      }
      delete mine;
      if (idx == st.overflow_index()) st.overflowed_lookups.fetch_add(1, std::memory_order_relaxed);
      return idx;
    }
  }
  delete mine;
  st.overflowed_lookups.fetch_add(1, std::memory_order_relaxed);
  return st.overflow_index();
}

template <int I>
live_state* live_core<I>::create(live_options&& options) {
  live_check(options);
  struct guard {
    live_state* s;
    ~guard() { live_release(s); }
  } g{new live_state(std::move(options))};
  const auto& d = g.s->options.default_label_values;
  const std::vector<std::string_view> v(d.begin(), d.end());
  (void)live_intern(*g.s, v.data(), v.size());  // the default series: index 0
  live_state* s = g.s;
  g.s = nullptr;
  return s;
}

template <int I>
void live_core<I>::release(live_state* s) noexcept {
  live_release(s);
}

template <int I>
live_hot_options live_core<I>::hot(const live_state& s) noexcept {
  live_hot_options h;
  h.id = s.id;
  h.overflow_index = s.overflow_index();
  h.labelled = !s.options.label_names.empty();
  h.rules = s.options.rules;
  h.inclusion = s.options.inclusion;
  h.spec_offset = s.layout.spec_offset;
  h.spec_positions = static_cast<std::uint32_t>(s.options.speculative_positions);
  h.role = s.options.role;
  return h;
}

template <int I>
const live_options& live_core<I>::options(const live_state& s) noexcept {
  return s.options;
}

template <int I>
std::uint32_t live_core<I>::series(live_state& s, const std::string_view* values,
                                   std::size_t n) noexcept {
  const live_hot_options h = hot(s);
  const std::size_t max = s.options.max_label_value_bytes;
  if (n != s.options.label_names.size() ||
      !live_exportable(values, n, s.options.overflow_value, max)) {
    count_misuse(s);
    return live_resolve(h, h.overflow_index);
  }
  bool long_value = false;
  for (std::size_t i = 0; i < n; ++i) long_value = long_value || values[i].size() > max;
  if (long_value) {
    s.long_label_values.fetch_add(1, std::memory_order_relaxed);
    if (s.options.long_label_value == live_long_label_value::overflow) {
      s.overflowed_lookups.fetch_add(1, std::memory_order_relaxed);
      return live_resolve(h, h.overflow_index);
    }
  }
  return live_resolve(h, live_intern(s, values, n));
}

template <int I>
std::uint32_t live_core<I>::named_series(live_state& s, const live_label* labels, std::size_t n) {
  const std::vector<std::string>& names = s.options.label_names;
  auto listed = [&] {
    std::string all;
    for (const std::string& k : names) all += (all.empty() ? "" : ", ") + k;
    return "(the options name: " + (all.empty() ? std::string("no labels") : all) + ")";
  };
  std::vector<std::string_view> values(names.size());
  std::vector<bool> given(names.size(), false);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t k = 0;
    while (k < names.size() && names[k] != labels[i].name) ++k;
    if (k == names.size())
      TOKCHRON_THROW(std::invalid_argument, "tokchron: live series: unknown label '" +
                                                std::string(labels[i].name) + "' " + listed());
    if (given[k])
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: live series: label '" + names[k] + "' given twice");
    given[k] = true;
    values[k] = labels[i].value;
  }
  for (std::size_t k = 0; k < names.size(); ++k)
    if (!given[k])
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: live series: no value for label '" + names[k] + "' " + listed());
  return series(s, values.data(), values.size());
}

template <int I>
std::vector<std::string> live_core<I>::label_values(const live_state& s, std::uint32_t series) {
  if (series >= s.overflow_index() || s.by_index[series].load(std::memory_order_acquire) == nullptr)
    return std::vector<std::string>(s.options.label_names.size(), s.options.overflow_value);
  return s.by_index[series].load(std::memory_order_acquire)->values;
}

template <int I>
void live_core<I>::set_kv_cache_usage(live_state& s, std::uint32_t series,
                                      double fraction) noexcept {
  if (!(fraction >= 0 && fraction <= std::numeric_limits<double>::max())) {
    count_misuse(s);
    return;
  }
  s.kv_cache_usage[live_resolve(hot(s), series)].store(fraction, std::memory_order_relaxed);
}

template <int I>
void live_core<I>::add_prefix_cache(live_state& s, std::uint32_t series, std::uint64_t queries,
                                    std::uint64_t hits) noexcept {
  if (!s.prefix_cache_used.load(std::memory_order_relaxed))
    s.prefix_cache_used.store(true, std::memory_order_relaxed);
  const std::uint32_t i = live_resolve(hot(s), series);
  live_writer<I> w(s);
  if (!w) return;
  w.count(i, lc_prefix_queries, queries);
  w.count(i, lc_prefix_hits, hits);
}

template <int I>
void live_core<I>::note_kv_transfer(live_state& s, std::uint32_t series, double seconds,
                                    std::uint64_t bytes) noexcept {
  if (series < s.last_transfer.size()) s.last_transfer[series].store(seconds, bytes);
}

template <int I>
void live_core<I>::count_misuse(live_state& s) noexcept {
  s.misuse.fetch_add(1, std::memory_order_relaxed);
  live_writer<I> w(s);
  if (w) w.count_misuse();
}

template <int I>
std::uint64_t live_core<I>::misuse(const live_state& s) noexcept {
  return s.misuse.load(std::memory_order_relaxed);
}

template <int I>
std::uint64_t live_core<I>::overflowed_lookups(const live_state& s) noexcept {
  return s.overflowed_lookups.load(std::memory_order_relaxed);
}

template <int I>
std::uint64_t live_core<I>::long_label_values(const live_state& s) noexcept {
  return s.long_label_values.load(std::memory_order_relaxed);
}

template <int I>
live_writer<I>::live_writer(live_state& s) noexcept
    : state_(&s), shard_(live_this_thread().get(s)) {
  if (TOKCHRON_UNLIKELY(shard_ == nullptr)) {
    s.lost_shards.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  side_ = &shard_->core.enter();
}

template <int I>
live_writer<I>::~live_writer() {
  if (side_ != nullptr) shard_->core.leave();
}

template <int I>
void live_writer<I>::count(std::uint32_t s, std::uint32_t counter, std::uint64_t delta) noexcept {
  side_->count(s, counter, delta);
}

template <int I>
void live_writer<I>::observe(std::uint32_t s, live_histogram h, double v, std::uint64_t times,
                             std::uint32_t reason) noexcept {
  side_->observe(s, h, v, times, reason);
}

template <int I>
void live_writer<I>::count_misuse() noexcept {
  ++side_->misuse;
}

template <int I>
void live_writer<I>::use(std::uint32_t feature) noexcept {
  if ((state_->features.load(std::memory_order_relaxed) & feature) != feature)
    state_->features.fetch_or(feature, std::memory_order_relaxed);
}

}  // namespace detail
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_DETAIL_STATE_HPP
