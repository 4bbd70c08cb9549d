// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#include "workloads.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <istream>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "loadgen/arrivals.hpp"
#include "tokchron/io/trace_json_reader.hpp"

namespace tokchron_bench {

std::optional<replay_format> replay_format_named(std::string_view name) {
  if (name == "tokchron") return replay_format::tokchron;
  if (name == "mooncake") return replay_format::mooncake;
  if (name == "burstgpt") return replay_format::burstgpt;
  return std::nullopt;
}

const char* replay_format_name(replay_format f) noexcept {
  switch (f) {
    case replay_format::mooncake: return "mooncake";
    case replay_format::burstgpt: return "burstgpt";
    case replay_format::tokchron: break;
  }
  return "tokchron";
}

namespace {

// The latest recorded time a replay takes, in seconds after its earliest request (as the load
// generator's latest arrival: within 64-bit nanoseconds).
constexpr double max_recorded_s = tokchron_loadgen::max_arrival_s;

struct line_error {
  const std::string& name;
  std::uint64_t line;
  [[noreturn]] void operator()(const std::string& field, const std::string& why) const {
    throw replay_error(name + ": line " + std::to_string(line) +
                       (field.empty() ? std::string() : ": field " + field) + ": " + why);
  }
};

// A recorded time in seconds, checked, as nanoseconds.
std::int64_t time_ns(double s, const line_error& bad, const std::string& field, bool signed_ok) {
  if (!std::isfinite(s) || std::fabs(s) > max_recorded_s || (!signed_ok && s < 0))
    bad(field, signed_ok ? "must be a finite number of seconds within 9e9 of 0"
                         : "must be a non-negative number within 9e9 seconds");
  return std::llround(s * 1e9);
}

// A recorded length: [0, max_replay_length] (0 kept: the caller decides).
std::uint32_t length(std::uint64_t v, const line_error& bad, const std::string& field) {
  if (v > max_replay_length)
    bad(field, std::to_string(v) + " tokens, more than a replay sends (" +
                   std::to_string(max_replay_length) + ")");
  return static_cast<std::uint32_t>(v);
}

std::uint32_t json_length(const nlohmann::json& j, const char* key, const line_error& bad) {
  const auto it = j.find(key);
  if (it == j.end()) bad(key, "missing");
  if (!it->is_number_unsigned()) bad(key, "must be a non-negative integer");
  return length(it->get<std::uint64_t>(), bad, key);
}

void read_mooncake(const std::string& line, const line_error& bad, replay_plan& p,
                   replay_request& q) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad("", "not a JSON object");
  const auto ts = j.find("timestamp");
  if (ts == j.end()) bad("timestamp", "missing");
  if (!ts->is_number()) bad("timestamp", "must be a number (milliseconds)");
  q.at_ns = time_ns(ts->get<double>() / 1e3, bad, "timestamp", false);
  q.prompt_tokens = json_length(j, "input_length", bad);
  if (q.prompt_tokens == 0) bad("input_length", "must be at least 1");
  q.output_tokens = json_length(j, "output_length", bad);
  const auto h = j.find("hash_ids");
  if (h == j.end()) return;
  if (!h->is_array()) bad("hash_ids", "must be an array of non-negative integers");
  const std::uint64_t most =
      (std::uint64_t{q.prompt_tokens} + mooncake_block_tokens - 1) / mooncake_block_tokens;
  if (h->size() > most)
    bad("hash_ids", std::to_string(h->size()) + " blocks of " +
                        std::to_string(mooncake_block_tokens) + " tokens, more than input_length " +
                        std::to_string(q.prompt_tokens) + " fills (" + std::to_string(most) + ")");
  q.first_block = p.blocks.size();
  q.block_count = static_cast<std::uint32_t>(h->size());
  for (std::size_t i = 0; i < h->size(); ++i) {
    if (!(*h)[i].is_number_unsigned())
      bad("hash_ids[" + std::to_string(i) + "]", "must be a non-negative integer");
    p.blocks.push_back((*h)[i].get<std::uint64_t>());
  }
}

void read_tokchron(const std::string& line, const line_error& bad, tc::trace_record& rec,
                   replay_request& q) {
  std::optional<tc::trace_error> e;
  if (!tc::parse_trace_line(line, static_cast<std::size_t>(bad.line), rec, e))
    bad(e ? e->field : std::string(), e ? e->message : std::string("not a record"));
  q.at_ns = time_ns(rec.arrival.value_or(rec.send), bad, rec.arrival ? "arrival" : "send", true);
  if (!rec.prompt_tokens) bad("prompt_tokens", "missing (a replay sends the recorded length)");
  q.prompt_tokens = std::max<std::uint32_t>(1, length(*rec.prompt_tokens, bad, "prompt_tokens"));
  std::uint64_t out = 0;
  if (rec.usage_output_tokens) {
    out = *rec.usage_output_tokens;
  } else {
    for (const tc::trace_chunk& c : rec.chunks)
      if (c.kind == tc::chunk_kind::text || c.kind == tc::chunk_kind::reasoning) out += c.tokens;
  }
  q.output_tokens = length(out, bad, rec.usage_output_tokens ? "usage_output_tokens" : "chunks");
}

// One CSV record (RFC 4180: a quoted field may hold commas and doubled quotes).
std::vector<std::string> csv_fields(const std::string& line, const line_error& bad) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') {
        f.back() += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        f.back() += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      f.emplace_back();
    } else if (c != '\r' || i + 1 != line.size()) {
      f.back() += c;
    }
  }
  if (quoted) bad("", "a quoted CSV field does not end on its line");
  return f;
}

struct burstgpt_columns {
  std::size_t count = 0, timestamp = 0, request = 0, response = 0;
};

// BurstGPT's header (its README's schema: Timestamp, Model, Request tokens, Response tokens,
// Total tokens, Log Type): the three columns a replay needs, found by name.
burstgpt_columns burstgpt_header(const std::string& line, const line_error& bad) {
  const auto f = csv_fields(line, bad);
  burstgpt_columns c;
  c.count = f.size();
  const auto find = [&](const char* name) {
    const auto it = std::find(f.begin(), f.end(), name);
    if (it == f.end()) bad(name, "missing from the CSV header");
    return static_cast<std::size_t>(it - f.begin());
  };
  c.timestamp = find("Timestamp");
  c.request = find("Request tokens");
  c.response = find("Response tokens");
  return c;
}

void read_burstgpt(const std::string& line, const line_error& bad, const burstgpt_columns& c,
                   replay_request& q) {
  const auto f = csv_fields(line, bad);
  if (f.size() != c.count)
    bad("", std::to_string(f.size()) + " fields, the header has " + std::to_string(c.count));
  const auto integer = [&](std::size_t col, const char* name) {
    const std::string& v = f[col];
    if (v.empty() || v.size() > 10 ||
        !std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      bad(name, "'" + v.substr(0, 40) + "' is not a non-negative integer");
    return length(std::stoull(v), bad, name);
  };
  const std::string& ts = f[c.timestamp];
  char* end = nullptr;
  const double s = ts.empty() ? 0 : std::strtod(ts.c_str(), &end);
  if (ts.empty() || end != ts.c_str() + ts.size())
    bad("Timestamp", "'" + ts.substr(0, 40) + "' is not a number (seconds)");
  q.at_ns = time_ns(s, bad, "Timestamp", false);
  q.prompt_tokens = std::max<std::uint32_t>(1, integer(c.request, "Request tokens"));
  q.output_tokens = integer(c.response, "Response tokens");
}

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

}  // namespace

replay_plan read_replay(std::istream& in, const std::string& name,
                        std::optional<replay_format> format) {
  replay_plan p;
  std::string line;
  tc::trace_record rec;
  std::optional<burstgpt_columns> columns;
  bool first = true;
  while (std::getline(in, line)) {
    ++p.lines;
    const line_error bad{name, p.lines};
    if (first && line.rfind("\xef\xbb\xbf", 0) == 0) line.erase(0, 3);  // a UTF-8 BOM
    if (blank(line)) continue;
    if (first) {
      first = false;
      const std::size_t lead = line.find_first_not_of(" \t");
      const bool json = line[lead] == '{';
      if (!format) {
        if (json) {
          const auto j = nlohmann::json::parse(line, nullptr, false);
          format = j.is_object() && j.contains("input_length") ? replay_format::mooncake
                                                               : replay_format::tokchron;
        } else if (line.find("Timestamp") != std::string::npos) {
          format = replay_format::burstgpt;
        } else {
          bad("",
              "not a trace --replay reads (a JSON object, or BurstGPT's CSV header with a "
              "Timestamp column); name the format with --replay-format");
        }
      }
      p.format = *format;
      if (p.format == replay_format::burstgpt) {
        columns = burstgpt_header(line, bad);
        continue;
      }
    }
    replay_request q;
    q.line = p.lines;
    switch (p.format) {
      case replay_format::mooncake: read_mooncake(line, bad, p, q); break;
      case replay_format::burstgpt: read_burstgpt(line, bad, *columns, q); break;
      case replay_format::tokchron: read_tokchron(line, bad, rec, q); break;
    }
    if (q.output_tokens == 0) {
      ++p.no_output;
      p.blocks.resize(p.blocks.size() - q.block_count);
      continue;
    }
    p.requests.push_back(q);
  }
  if (in.bad()) throw replay_error(name + ": read error after line " + std::to_string(p.lines));
  if (first && format) p.format = *format;
  if (p.requests.empty())
    throw replay_error(name + ": no request to replay (" + std::to_string(p.lines) + " lines, " +
                       std::to_string(p.no_output) + " without output)");
  std::stable_sort(
      p.requests.begin(), p.requests.end(),
      [](const replay_request& a, const replay_request& b) { return a.at_ns < b.at_ns; });
  const std::int64_t t0 = p.requests.front().at_ns;
  for (replay_request& q : p.requests) q.at_ns -= t0;
  if (static_cast<double>(p.requests.back().at_ns) > max_recorded_s * 1e9)
    throw replay_error(name + ": line " + std::to_string(p.requests.back().line) +
                       ": its time is more than 9e9 seconds after the earliest request's");
  return p;
}

namespace {

class replay_source final : public tokchron_loadgen::arrival_source {
 public:
  using time_point = tokchron_loadgen::time_point;
  replay_source(std::shared_ptr<const replay_plan> p, const replay_settings& s)
      : plan_(std::move(p)) {
    limit_ = plan_->requests.size();
    if (s.max_requests > 0 && s.max_requests < limit_) limit_ = s.max_requests;
    // Scaled times; one past the latest arrival a run takes is never sent.
    for (std::size_t i = 0; i < limit_; ++i) {
      const double at_s = static_cast<double>(plan_->requests[i].at_ns) / 1e9 / s.speed;
      if (at_s > tokchron_loadgen::max_arrival_s) {
        limit_ = i;
        break;
      }
    }
    speed_ = s.speed;
    if (s.until_s)
      end_ = time_point(std::chrono::duration_cast<tokchron_loadgen::duration>(
          std::chrono::duration<double>(*s.until_s)));
  }
  [[nodiscard]] time_point end() const noexcept override { return end_; }
  [[nodiscard]] std::optional<time_point> next_arrival() const override {
    if (next_ >= limit_) return std::nullopt;
    return at(next_);
  }
  void release(time_point now, std::vector<tokchron_loadgen::arrival>& out) override {
    while (next_ < limit_ && at(next_) <= now) {
      const replay_request& q = plan_->requests[next_];
      tokchron_loadgen::arrival& a = out.emplace_back();
      a.id = next_;
      a.at = at(next_);
      a.prompt_tokens = q.prompt_tokens;
      a.output_tokens = q.output_tokens;
      a.predicted_output = q.output_tokens;
      ++next_;
    }
  }
  void on_finish(const tokchron_loadgen::arrival&, time_point) override {}

 private:
  [[nodiscard]] time_point at(std::size_t i) const {
    // Nanoseconds, rounded (the constructor keeps them within the latest arrival a run takes).
    return time_point(
        std::chrono::duration_cast<tokchron_loadgen::duration>(std::chrono::nanoseconds(
            std::llround(static_cast<double>(plan_->requests[i].at_ns) / speed_))));
  }

  std::shared_ptr<const replay_plan> plan_;
  double speed_ = 1;
  std::size_t next_ = 0, limit_ = 0;
  time_point end_ = time_point::max();
};

}  // namespace

workload_hooks replay_hooks(std::shared_ptr<const replay_plan> plan, const replay_settings& s) {
  if (!(s.speed > 0) || !std::isfinite(s.speed))
    throw std::invalid_argument("--replay-speed must be a positive number");
  workload_hooks h;
  h.schedule = [plan, s] { return std::make_unique<replay_source>(plan, s); };
  // Each block's longest run of tokens sent so far (a block sent in part shares that part).
  auto sent = std::make_shared<std::unordered_map<std::uint64_t, std::uint32_t>>();
  h.body = [plan, seed = s.seed, sent, counts = h.counts](const target& t,
                                                          const tokchron_loadgen::arrival& r) {
    const replay_request& q = plan->requests.at(r.id);
    std::string prompt;
    prompt.reserve(std::size_t{5} * q.prompt_tokens);
    std::uint32_t left = q.prompt_tokens;
    bool reusing = true;  // a cache reuses a block only after every earlier one
    for (std::uint32_t b = 0; b < q.block_count && left > 0; ++b) {
      const std::uint64_t id = plan->blocks[q.first_block + b];
      const std::uint32_t n = std::min(left, mooncake_block_tokens);
      append_words(prompt, block_key(seed, id), 0, n, b > 0);
      std::uint32_t& before = (*sent)[id];
      if (reusing) counts->reusable_tokens += std::min(n, before);
      reusing = reusing && before >= n;
      before = std::max(before, n);
      left -= n;
    }
    if (left > 0) append_words(prompt, own_key(seed, r.id), 1, left, left != q.prompt_tokens);
    ++counts->prompts;
    counts->prompt_tokens += q.prompt_tokens;
    return request_body(t, std::move(prompt), q.output_tokens);
  };
  return h;
}

workload_hooks prefix_group_hooks(std::uint32_t groups, std::uint64_t seed) {
  if (groups == 0 || groups > max_prefix_groups)
    throw std::invalid_argument("--prefix-groups must be in [1, " +
                                std::to_string(max_prefix_groups) + "]");
  workload_hooks h;
  auto sent = std::make_shared<std::vector<bool>>(groups, false);
  h.body = [groups, seed, sent, counts = h.counts](const target& t,
                                                   const tokchron_loadgen::arrival& r) {
    const std::uint32_t prefix = std::min(r.prefix_tokens, r.prompt_tokens);
    const std::uint64_t g = r.id % groups;
    std::string prompt;
    prompt.reserve(std::size_t{5} * r.prompt_tokens);
    append_words(prompt, block_key(seed, g), 0, prefix, false);
    append_words(prompt, own_key(seed, r.id), 1, r.prompt_tokens - prefix, prefix > 0);
    if (prefix > 0 && (*sent)[g]) counts->reusable_tokens += prefix;
    if (prefix > 0) (*sent)[g] = true;
    ++counts->prompts;
    counts->prompt_tokens += r.prompt_tokens;
    return request_body(t, std::move(prompt), r.output_tokens);
  };
  return h;
}

}  // namespace tokchron_bench
