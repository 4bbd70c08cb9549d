// SPDX-License-Identifier: MIT
// The reference continuous-batching executor on a GPU, driven through its public interface:
// a closed-loop workload runs on the `cuda` backend (cuBLAS and tokchron's kernels, one GPU),
// and tokchron measures it from the requests' timelines. The executor itself (scheduler,
// paged KV cache, backends, load generator, `batching-executor` and `serve`) lives in
// tools/executor/; docs/tools/executor.md describes it and docs/tools/gpu-check.md its GPU check.
//
//   cuda-executor [--backend cuda|cpu] [--users N] [--duration SECONDS]
//
// Exit 0 with a summary; 77 when the cuda backend was asked for and no GPU is usable (the
// "skipped" code of ctest); 2 for a bad command line; 1 when the run failed.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <tokchron/tokchron.hpp>

#include "cli.hpp"      // run_config, set_option, make_backend (tools/executor/app)
#include "loadgen.hpp"  // run: the engine fed by the load generator
#ifdef BATCHING_HAVE_CUDA_BACKEND
#include "cuda/cuda_backend.hpp"  // cuda_unavailable_reason, exit_no_gpu
#endif

namespace {

constexpr int exit_skipped = 77;

int usage(const char* why) {
  std::fprintf(stderr,
               "cuda-executor: %s\n"
               "usage: cuda-executor [--backend cuda|cpu] [--users N] [--duration SECONDS]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "cuda", users = "8", duration = "5";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) return usage("every option takes a value");
    if (a == "--backend") {
      backend = argv[++i];
    } else if (a == "--users") {
      users = argv[++i];
    } else if (a == "--duration") {
      duration = argv[++i];
    } else {
      return usage(("unknown option " + std::string(a)).c_str());
    }
  }
  if (backend != "cuda" && backend != "cpu") return usage("--backend is cuda or cpu");
  if (backend == "cuda") {
#ifdef BATCHING_HAVE_CUDA_BACKEND
    if (const auto why = batching::cuda_unavailable_reason()) {
      std::printf("cuda-executor: skipped: %s\n", why->c_str());
      return exit_skipped;
    }
#else
    std::printf(
        "cuda-executor: skipped: built without the cuda backend (TOKCHRON_CUDA=OFF, or no nvcc)\n");
    return exit_skipped;
#endif
  }

  try {
    // Every setting goes through the executor's own option setters, the ones the command line
    // of batching-executor uses, so the names and checks are the documented ones.
    batching::run_config cfg;
    const std::vector<std::pair<const char*, std::string>> options = {
        {"backend", backend},
        {"users", users},
        {"duration", duration},
        {"prompt_len", "uniform:32,96"},
        {"output_len", "uniform:16,48"},
        {"max_batch_size", "8"},
        {"compute", "layers=2"},
        {"compute", "hidden=256"},
        {"compute", "heads=4"},
        {"compute", "ffn=512"},
        {"compute", "vocab=2048"},
        {"seed", "1"}};
    for (const auto& [name, value] : options) batching::set_option(cfg, name, value);
    cfg.sched.validate();
    cfg.load.validate();
    const auto be = batching::make_backend(cfg);
    const batching::run_result result = batching::run(cfg.sched, cfg.load, *be);

    // tokchron over the finished requests: the canonical TTFT and TPOT of each timeline into
    // a log_histogram (1 % relative error on every quantile).
    tokchron::log_histogram ttft, tpot;
    std::size_t done = 0;
    for (const auto& r : result.requests) {
      if (!r.tl.finished()) continue;
      ++done;
      if (const auto t = tokchron::ttft(r.tl)) ttft.add(tokchron::to_seconds(*t));
      if (const auto t = tokchron::tpot(r.tl)) tpot.add(tokchron::to_seconds(*t));
    }
    std::printf("cuda-executor: backend %s, %zu requests finished, %llu steps\n", backend.c_str(),
                done, static_cast<unsigned long long>(result.engine.steps));
    const auto ms = [](const tokchron::log_histogram& h, double q) {
      return h.quantile(q).value_or(0.0) * 1e3;
    };
    std::printf("  TTFT p50 %.3f ms  p95 %.3f ms\n", ms(ttft, 0.5), ms(ttft, 0.95));
    std::printf("  TPOT p50 %.3f ms  p95 %.3f ms\n", ms(tpot, 0.5), ms(tpot, 0.95));
    return done > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda-executor: %s\n", e.what());
    return 1;
  }
}
