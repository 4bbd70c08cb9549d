// SPDX-License-Identifier: MIT
#include "cli.hpp"
#ifdef BATCHING_HAVE_CPU_BACKEND
#include "cpu_backend.hpp"
#endif
#ifdef BATCHING_HAVE_CUDA_BACKEND
#include "cuda/cuda_backend.hpp"
#endif

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "cli/option_once.hpp"
#include "loadgen/options.hpp"

namespace batching {
namespace {

std::string canonical_name(std::string_view name) { return tokchron_loadgen::option_name(name); }

[[noreturn]] void bad_value(std::string_view opt, std::string_view value, const std::string& why) {
  tokchron_loadgen::bad_option_value(opt, value, why);
}

double to_number(std::string_view opt, std::string_view v) {
  return tokchron_loadgen::option_number(opt, v);
}

std::uint32_t to_u32(std::string_view opt, std::string_view v, std::uint32_t lo = 0) {
  return tokchron_loadgen::option_u32(opt, v, lo);
}

bool to_bool(std::string_view opt, std::string_view v) {
  if (v == "on" || v == "true" || v == "1" || v == "yes") return true;
  if (v == "off" || v == "false" || v == "0" || v == "no") return false;
  bad_value(opt, v, "expected on or off");
}

duration to_duration(std::string_view opt, std::string_view v) {
  return tokchron::from_seconds<duration>(tokchron_loadgen::option_seconds(opt, v));
}

// Wraps a parser that throws invalid_argument so the message names the option.
template <class F>
auto named(std::string_view opt, std::string_view v, F&& f) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    bad_value(opt, v, e.what());
  }
}

// Sets an option from its value; gets the option's name for its error messages.
using setter = std::function<void(run_config&, std::string_view opt, std::string_view value)>;
struct option_def {
  option_info info;
  setter set;
};

const std::vector<option_def>& defs() {
  static const std::vector<option_def> all = [] {
    std::vector<option_def> d;
    auto add = [&](std::string name, std::string value, std::string help, setter s) {
      d.push_back({{std::move(name), std::move(value), std::move(help)}, std::move(s)});
    };
    // An option whose value (one of `parse`'s names) `parse` turns into the member `*field(c)`;
    // a value it refuses is reported under the option's name.
    auto add_choice = [&](const std::string& name, std::string value, std::string help, auto field,
                          auto parse) {
      add(name, std::move(value), std::move(help),
          [field, parse](run_config& c, std::string_view opt, std::string_view v) {
            *field(c) = named(opt, v, [&] { return parse(v); });
          });
    };
    // backend
    add("backend", "sim",
        "what runs the steps (sim: the roofline model on a virtual clock; cpu: a real model on "
        "OpenBLAS; cuda: on cuBLAS, exit 77 without a GPU)",
        [](run_config& c, std::string_view, std::string_view v) { c.backend = std::string(v); });
    add("compute", "KEY=VALUE",
        "cpu/cuda backend setting: model layers, hidden, heads, ffn, vocab, seed; kv_memory "
        "(bytes); cpu threads (OpenBLAS, default 1); cuda device; repeatable",
        [](run_config& c, std::string_view opt, std::string_view v) {
          const auto eq = v.find('=');
          if (eq == std::string_view::npos) bad_value(opt, v, "expected KEY=VALUE");
          c.compute.emplace_back(std::string(v.substr(0, eq)), std::string(v.substr(eq + 1)));
        });
    add("hw", "NAME", "sim hardware: a10g (default), a100-80g, h100, h200",
        [](run_config& c, std::string_view opt, std::string_view v) {
          named(opt, v, [&] {
            c.sim.set_hardware(v);
            return 0;
          });
        });
    add("model", "NAME", "sim model: llama2-7b (default), llama3-8b, llama3.1-8b",
        [](run_config& c, std::string_view opt, std::string_view v) {
          named(opt, v, [&] {
            c.sim.set_model(v);
            return 0;
          });
        });
    add("precision", "NAME",
        "sim weights, KV and tensor throughput: fp16 (default), bf16, fp8 (weights and KV), "
        "fp8-weights (KV in 16 bits); --sim overrides given later win",
        [](run_config& c, std::string_view opt, std::string_view v) {
          named(opt, v, [&] {
            c.sim.set_precision(v);
            return 0;
          });
        });
    add("sim", "KEY=VALUE",
        std::string("override a sim constant (") + sim_config::keys() + "), base units; repeatable",
        [](run_config& c, std::string_view opt, std::string_view v) {
          const auto eq = v.find('=');
          if (eq == std::string_view::npos) bad_value(opt, v, "expected KEY=VALUE");
          const double x = to_number(opt, v.substr(eq + 1));
          named(opt, v, [&] {
            c.sim.set(v.substr(0, eq), x);
            return 0;
          });
        });
    // workload (tools/loadgen); the seed is the sim's too
    for (const option_info& o : tokchron_loadgen::workload_options()) {
      if (o.name == "seed") {
        add(o.name, o.value_name, "seed of the workload and of the sim's step jitter (default 1)",
            [](run_config& c, std::string_view opt, std::string_view v) {
              tokchron_loadgen::set_workload_option(c.load, c.warmup_s, opt, v);
              c.sim.seed = c.load.seed;
            });
        continue;
      }
      add(o.name, o.value_name, o.help,
          [](run_config& c, std::string_view opt, std::string_view v) {
            tokchron_loadgen::set_workload_option(c.load, c.warmup_s, opt, v);
          });
    }
    // scheduler
    add("max_batch_size", "N", "running sequences at most (default 16)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.max_batch_size = to_u32(opt, v, 1);
        });
    add("max_num_batched_tokens", "N", "tokens a step at most (default 2048)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.max_num_batched_tokens = to_u32(opt, v, 1);
        });
    add("chunked_prefill", "on|off", "cut prompts to fit the token budget (default on)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.chunked_prefill = to_bool(opt, v);
        });
    add("prefill_priority", "off|always|slo_aware",
        "off: decode-first, stall-free (default); always (or on): prefill-first; slo_aware: "
        "prefill-first when the oldest waiter would miss the TTFT target",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.prefill = v == "on" ? prefill_priority::always
                                      : named(opt, v, [&] { return parse_prefill_priority(v); });
        });
    add_choice(
        "policy", "fcfs|priority|sjf", "waiting-queue order (default fcfs)",
        [](run_config& c) { return &c.sched.order; }, parse_policy);
    add_choice(
        "sjf_key", "prompt|output|predicted", "what sjf sorts by (default prompt)",
        [](run_config& c) { return &c.sched.sjf; }, parse_sjf_key);
    add("starvation_steps", "N", "sjf/priority: promote a request waiting N steps (0: never; 256)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.starvation_steps = to_u32(opt, v);
        });
    add("max_queue_time", "SECONDS|none",
        "a request not scheduled within this is rejected or promoted (the seed's max_waiting_time)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          if (v == "none")
            c.sched.max_queue_time.reset();
          else
            c.sched.max_queue_time = to_duration(opt, v);
        });
    add_choice(
        "on_queue_timeout", "reject|promote", "what max_queue_time does (default reject)",
        [](run_config& c) { return &c.sched.on_queue_timeout; }, parse_queue_timeout_action);
    add("max_batch_delay", "SECONDS", "hold admissions to form a batch (Triton's queue delay; 0)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.max_batch_delay = to_duration(opt, v);
        });
    add("block_size", "N", "tokens per KV block (default 16)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.block_size = to_u32(opt, v, 1);
        });
    add_choice(
        "kv_policy", "max_utilization|guaranteed_no_evict",
        "allocate as needed and preempt (default), or reserve prompt + output at admission",
        [](run_config& c) { return &c.sched.kv; }, parse_kv_policy);
    add("ttft_target", "SECONDS", "slo_aware's TTFT target (default: the --slo on ttft)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.ttft_target = to_duration(opt, v);
        });
    add("prefix_caching", "on|off",
        "reuse the cached KV blocks of the shared prefix (vLLM's automatic prefix caching; on)",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.prefix_caching = to_bool(opt, v);
        });
    add("prefill_tokens_per_s", "R", "prefill speed assumed when the backend cannot predict",
        [](run_config& c, std::string_view opt, std::string_view v) {
          c.sched.prefill_tokens_per_s = to_number(opt, v);
          if (!(c.sched.prefill_tokens_per_s > 0)) bad_value(opt, v, "must be > 0");
        });
    return d;
  }();
  return all;
}

const option_def* find_def(std::string_view name) {
  const std::string n = canonical_name(name);
  for (const auto& d : defs())
    if (d.info.name == n) return &d;
  return nullptr;
}

// Splits a sweep's values: on ';' when the list has one (values that contain commas, such as
// uniform:75,225), otherwise on ','.
std::vector<std::string> split_values(std::string_view list) {
  const char sep = list.find(';') != std::string_view::npos ? ';' : ',';
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t at = list.find(sep, pos);
    out.emplace_back(
        list.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos));
    if (at == std::string_view::npos) break;
    pos = at + 1;
  }
  return out;
}

}  // namespace

std::optional<std::string> note_option(tokchron_cli::option_once& once, std::string_view name,
                                       std::string_view value) {
  const std::string n = canonical_name(name);
  if (n == "slo" || n == "sweep") return std::nullopt;  // lists (a --sweep axis: by its name)
  if (n == "sim" || n == "compute") {                   // KEY=VALUE lists: each key once
    const auto eq = value.find('=');
    if (eq == std::string_view::npos) return std::nullopt;  // refused by its setter
    return once.note(tokchron_loadgen::option_dashes(n) + " " + std::string(value.substr(0, eq)),
                     std::string(value.substr(eq + 1)));
  }
  return once.note(tokchron_loadgen::option_dashes(n), std::string(value));
}

const std::vector<option_info>& run_options() {
  static const std::vector<option_info> all = [] {
    std::vector<option_info> v;
    for (const auto& d : defs()) v.push_back(d.info);
    return v;
  }();
  return all;
}

void set_option(run_config& c, std::string_view name, std::string_view value) {
  const option_def* d = find_def(name);
  if (!d) throw std::invalid_argument("unknown option '" + canonical_name(name) + "'");
  d->set(c, d->info.name, value);
}

std::string usage() {
  std::string u =
      "usage: batching-executor [OPTIONS]\n"
      "A continuous-batching executor: a load generator, an iteration-level scheduler and a\n"
      "backend; prints the run summary (tokchron) and SLA verdicts, or one row per swept\n"
      "configuration and the capacity planner's choice.\n\nRun options (also sweepable by their "
      "underscore names):\n";
  for (const auto& o : run_options()) {
    std::string flag = "  --" + o.name;
    for (char& ch : flag)
      if (ch == '_') ch = '-';
    flag += " " + o.value_name;
    u += flag + "\n      " + o.help + "\n";
  }
  u += "\nOutput options:\n"
       "  --sweep NAME=V1,V2,...   run every combination (values split on ';' when any has a "
       "comma)\n"
       "  --slo SPEC               an objective such as 'p95(ttft)<1.5s'; repeatable\n"
       "  --profile NAME           the tokchron profile of the summary (default canonical)\n"
       "  --percentiles LIST       e.g. 50,90,95,99 (default: the profile's)\n"
       "  --format table|json      json: the tokchron-report schema per configuration\n"
       "  --trace-out FILE         every request as tokchron JSONL (a sweep: FILE-1.jsonl, ...)\n"
       "  --metrics-out FILE       Prometheus text exposition of the run(s)\n"
       "  --plot DIR               pictures (gnuplot SVG/PNG, their data) and DIR/index.html\n"
       "  --progress auto|never    a progress bar on stderr when it is a terminal (auto)\n"
       "  --interleave on|off      run the configurations at once, their steps in turns, the\n"
       "                           least measured first (virtual-time backends; default off)\n"
       "  --memory-limit SIZE      what the runs may keep: bytes, KiB, MiB, GiB (default 2GiB);\n"
       "                           a configuration that needs more is refused, a run stopped\n"
       "  --help\n"
       "\nAn option given twice is refused, naming it and both values, except the lists: --slo,\n"
       "--sweep (each option swept once), --sim and --compute (each KEY once).\n"
       "\nDistributions (DIST): 300, fixed:300, uniform:75,225, normal:300,90, lognormal:150,60,\n"
       "exp:25, trace:FILE, none. Times: seconds, or with an s / ms suffix.\n";
  return u;
}

std::uint64_t parse_memory_size(std::string_view text) {
  std::uint64_t scale = 1;
  std::string_view n = text;
  for (const auto& [suffix, s] : {std::pair<std::string_view, std::uint64_t>{"KiB", 1u << 10},
                                  {"MiB", 1u << 20},
                                  {"GiB", std::uint64_t(1) << 30}})
    if (n.size() > suffix.size() && n.substr(n.size() - suffix.size()) == suffix) {
      n.remove_suffix(suffix.size());
      scale = s;
    }
  const auto v = parse_decimal(n);
  // 2^53 bytes: 8 PiB, past any machine, and exact in a double.
  if (!v || !(*v * double(scale) >= 1) || *v * double(scale) > 9007199254740992.0)
    throw std::invalid_argument("memory size '" + std::string(text) +
                                "': expected bytes > 0, or a number with KiB, MiB or GiB");
  return static_cast<std::uint64_t>(*v * double(scale));
}

command_line parse_command_line(const std::vector<std::string>& args) {
  command_line cl;
  tokchron_cli::option_once once;
  std::vector<std::pair<std::string, std::string>> sets;  // applied in order given
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + a + "'");
    a = a.substr(2);
    std::optional<std::string> value;
    if (const auto eq = a.find('='); eq != std::string::npos) {  // --name=value
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    const std::string name = canonical_name(a);
    if (name == "help") {
      cl.help = true;
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) throw usage_error("--" + a + " needs a value");
      value = args[++i];
    }
    if (auto repeated = note_option(once, name, *value)) throw usage_error(*repeated);
    if (name == "sweep") {
      const auto eq = value->find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value->size())
        throw usage_error("--sweep '" + *value + "': expected NAME=V1,V2,...");
      const std::string key = canonical_name(value->substr(0, eq));
      if (!find_def(key)) throw usage_error("--sweep: unknown option '" + key + "'");
      if (auto repeated =
              once.note("sweep " + tokchron_loadgen::option_dashes(key), value->substr(eq + 1)))
        throw usage_error(*repeated + " (one --sweep per option; list all its values there)");
      cl.sweeps.emplace_back(key, split_values(std::string_view(*value).substr(eq + 1)));
    } else if (name == "slo") {
      cl.slos.push_back(*value);
    } else if (name == "profile") {
      cl.profile = *value;
    } else if (name == "percentiles") {
      cl.percentiles = *value;
    } else if (name == "format") {
      if (*value != "table" && *value != "json")
        throw usage_error("--format '" + *value + "': expected table or json");
      cl.format = *value;
    } else if (name == "trace_out") {
      cl.trace_out = *value;
    } else if (name == "metrics_out") {
      cl.metrics_out = *value;
    } else if (name == "plot") {
      cl.plot = *value;
    } else if (name == "memory_limit") {
      try {
        cl.memory_limit = parse_memory_size(*value);
      } catch (const std::invalid_argument& e) {
        throw usage_error(std::string("--memory-limit: ") + e.what());
      }
    } else if (name == "interleave") {
      if (*value != "on" && *value != "off")
        throw usage_error("--interleave '" + *value + "': expected on or off");
      cl.interleave = *value == "on";
    } else if (name == "progress") {
      if (*value != "auto" && *value != "never")
        throw usage_error("--progress '" + *value + "': expected auto or never");
      cl.progress = *value;
    } else if (find_def(name)) {
      sets.emplace_back(name, *value);
    } else {
      throw usage_error("unknown option --" + a);
    }
  }
  try {
    for (const auto& [k, v] : sets) set_option(cl.base, k, v);
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  return cl;
}

std::vector<configuration> expand(const command_line& cl) {
  std::vector<configuration> out;
  configuration first;
  first.cfg = cl.base;
  out.push_back(first);
  for (const auto& [key, values] : cl.sweeps) {
    std::vector<configuration> next;
    for (const configuration& c : out)
      for (const std::string& v : values) {
        configuration d = c;
        try {
          set_option(d.cfg, key, v);
        } catch (const std::invalid_argument& e) {
          throw usage_error(std::string("--sweep: ") + e.what());
        }
        d.parameters.emplace_back(key, v);
        next.push_back(std::move(d));
      }
    out = std::move(next);
  }
  for (configuration& c : out) {
    for (const auto& [k, v] : c.parameters) c.name += (c.name.empty() ? "" : " ") + k + "=" + v;
    if (c.name.empty()) c.name = "run";
  }
  return out;
}

std::unique_ptr<backend> make_backend(const run_config& c) {
  if (c.backend == "sim") return std::make_unique<sim_backend>(c.sim);
  // The real-compute backends keep per-sequence state that a shared block table would bypass.
  if (c.load.shared_prefix > 0 && c.sched.prefix_caching)
    throw std::invalid_argument(
        "--shared-prefix with --prefix-caching on needs --backend sim "
        "(or --prefix-caching off)");
#ifdef BATCHING_HAVE_CPU_BACKEND
  if (c.backend == "cpu") {
    cpu_backend_config k;
    for (const auto& kv : c.compute)  // not a structured binding: clang 14 cannot capture one
      named("compute", kv.first + "=" + kv.second, [&] {
        k.set(kv.first, kv.second);
        return 0;
      });
    return std::make_unique<cpu_backend>(k);
  }
#endif
#ifdef BATCHING_HAVE_CUDA_BACKEND
  if (c.backend == "cuda") {
    cuda_backend_config k;
    for (const auto& kv : c.compute)  // not a structured binding: clang 14 cannot capture one
      named("compute", kv.first + "=" + kv.second, [&] {
        k.set(kv.first, kv.second);
        return 0;
      });
    return std::make_unique<cuda_backend>(k);  // throws no_gpu_error without a GPU
  }
#endif
  throw std::invalid_argument("--backend '" + c.backend +
                              "': unknown (available: sim"
#ifdef BATCHING_HAVE_CPU_BACKEND
                              ", cpu"
#endif
#ifdef BATCHING_HAVE_CUDA_BACKEND
                              ", cuda"
#else
                              "; cuda not built: nvcc not found"
#endif
                              ")");
}

}  // namespace batching
