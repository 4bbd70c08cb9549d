// SPDX-License-Identifier: MIT
#include "loadgen/options.hpp"

#include <cmath>
#include <functional>
#include <limits>

#include "tokchron/clock.hpp"

namespace tokchron_loadgen {
namespace {

// Sets an option of the workload (or the warm-up) from its value; gets the option's name for
// its error messages.
using workload_setter =
    std::function<void(workload&, double& warmup_s, std::string_view opt, std::string_view v)>;
struct workload_option {
  option_info info;
  workload_setter set;
};

// A time option as the schedule keeps it: seconds, in whole nanoseconds.
double schedule_seconds(std::string_view opt, std::string_view v) {
  return tokchron::to_seconds(tokchron::from_seconds<duration>(option_seconds(opt, v)));
}

// A distribution's spec, refused under the option's name.
distribution option_distribution(std::string_view opt, std::string_view v, quantity q) {
  try {
    return distribution::parse(v, q);
  } catch (const std::invalid_argument& e) {
    bad_option_value(opt, v, e.what());
  }
}

const std::vector<workload_option>& workload_defs() {
  static const std::vector<workload_option> all = [] {
    std::vector<workload_option> d;
    auto add = [&](std::string name, std::string value, std::string help, workload_setter s) {
      d.push_back({{std::move(name), std::move(value), std::move(help)}, std::move(s)});
    };
    add("seed", "N", "seed of the workload's draws (default 1)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.seed = option_count(opt, v, 0, std::numeric_limits<std::uint32_t>::max());
        });
    add("users", "N", "closed loop: concurrent users, each waiting for its response (default 50)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.users = option_u32(opt, v, 1);
          w.mode = arrival_mode::closed;
        });
    add("think_time", "DIST", "closed loop: pause after each response (default none; e.g. exp:25)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.think = option_distribution(opt, v, quantity::seconds);
        });
    add("rate", "R", "open loop: mean requests per second (switches to open loop)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.rate = option_number(opt, v);
          if (!(w.rate > 0)) bad_option_value(opt, v, "must be > 0");
          w.mode = arrival_mode::open;
        });
    add("burstiness", "K", "open loop: gamma shape of the gaps (1 = Poisson, < 1 burstier)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.burstiness = option_number(opt, v);
          if (!(w.burstiness > 0)) bad_option_value(opt, v, "must be > 0");
        });
    add("prompt_len", "DIST", "prompt lengths (default normal:300,90)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.prompt = option_distribution(opt, v, quantity::prompt_length);
        });
    add("output_len", "DIST", "output lengths (default uniform:75,225)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.output = option_distribution(opt, v, quantity::output_length);
        });
    add("duration", "SECONDS",
        "requests arriving within this many seconds are the run; the load continues until they "
        "finish (default 600)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.duration_s = schedule_seconds(opt, v);
          if (!(w.duration_s > 0)) bad_option_value(opt, v, "must be > 0");
        });
    add("ramp_up", "SECONDS", "closed loop: spread the first requests over this long",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.ramp_up_s = schedule_seconds(opt, v);
        });
    add("warmup", "SECONDS",
        "requests arriving earlier run but are not summarised or traced (default 0)",
        [](workload&, double& warmup_s, std::string_view opt, std::string_view v) {
          warmup_s = schedule_seconds(opt, v);
        });
    add("priority_levels", "N", "priorities drawn uniformly from [0, N) (priority policy)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.priority_levels = option_u32(opt, v, 1);
        });
    add("predict_noise", "SIGMA", "sd of log(predicted/true output length) for sjf_key predicted",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.predict_noise = option_number(opt, v);
          if (!(w.predict_noise >= 0)) bad_option_value(opt, v, "must be >= 0");
        });
    add("max_requests", "N", "stop issuing after N requests (0: no limit)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.max_requests = option_count(opt, v, 0, std::uint64_t(1) << 40);
        });
    add("shared_prefix", "TOKENS",
        "a shared system prompt of TOKENS heads every prompt (before --prompt-len's tokens); "
        "the prefix cache reuses its full KV blocks (sim backend; default 0: none)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.shared_prefix = static_cast<std::uint32_t>(option_count(opt, v, 0, max_shared_prefix));
        });
    add("reasoning_fraction", "F",
        "the first round(F x output) tokens of every answer are reasoning tokens, streamed and "
        "traced as such (default 0)",
        [](workload& w, double&, std::string_view opt, std::string_view v) {
          w.reasoning_fraction = option_number(opt, v);
          if (!(w.reasoning_fraction >= 0 && w.reasoning_fraction <= 1))
            bad_option_value(opt, v, "must be in [0, 1]");
        });
    return d;
  }();
  return all;
}

const workload_option* find_workload_option(std::string_view name) {
  const std::string n = option_name(name);
  for (const auto& d : workload_defs())
    if (d.info.name == n) return &d;
  return nullptr;
}

}  // namespace

const std::vector<option_info>& workload_options() {
  static const std::vector<option_info> all = [] {
    std::vector<option_info> v;
    for (const auto& d : workload_defs()) v.push_back(d.info);
    return v;
  }();
  return all;
}

bool is_workload_option(std::string_view name) { return find_workload_option(name) != nullptr; }

void set_workload_option(workload& w, double& warmup_s, std::string_view name,
                         std::string_view value) {
  const workload_option* d = find_workload_option(name);
  if (!d) throw std::invalid_argument("unknown option '" + option_name(name) + "'");
  d->set(w, warmup_s, d->info.name, value);
}

std::string option_name(std::string_view name) {
  std::string s(name);
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

std::string option_dashes(std::string_view name) {
  std::string s(name);
  for (char& c : s)
    if (c == '_') c = '-';
  return s;
}

void bad_option_value(std::string_view opt, std::string_view value, const std::string& why) {
  // Named as the docs and the help spell it (--prompt-len), whichever spelling was given.
  throw std::invalid_argument("--" + option_dashes(opt) + " '" + std::string(value) + "': " + why);
}

double option_number(std::string_view opt, std::string_view value) {
  const auto x = parse_decimal(value);
  if (!x) bad_option_value(opt, value, "not a number");
  return *x;
}

std::uint64_t option_count(std::string_view opt, std::string_view value, std::uint64_t lo,
                           std::uint64_t hi) {
  const double x = option_number(opt, value);
  if (x != std::floor(x) || x < double(lo) || x > double(hi))
    bad_option_value(
        opt, value,
        "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<std::uint64_t>(x);
}

std::uint32_t option_u32(std::string_view opt, std::string_view value, std::uint32_t lo) {
  return static_cast<std::uint32_t>(
      option_count(opt, value, lo, std::numeric_limits<std::uint32_t>::max()));
}

double option_seconds(std::string_view opt, std::string_view value) {
  double s = 0;
  try {
    s = parse_seconds(value);
  } catch (const std::invalid_argument& e) {
    bad_option_value(opt, value, e.what());
  }
  if (s < 0 || s > 1e7) bad_option_value(opt, value, "must be in [0, 1e7] seconds");
  if (s > 0 && s < 1e-9)
    bad_option_value(
        opt, value,
        "is below the clock's resolution of 1 ns (it would be 0); give 0 or at least 1e-9");
  return s;
}

}  // namespace tokchron_loadgen
