#!/usr/bin/env bash
# tokchron's main job: installs what is missing from Debian's packages, builds the batching
# executor in Release and runs the seed-style sweep on the simulated backend
# (docs/tools/executor.md, "The main job: a capacity study"): 50 closed-loop users on an A10G
# with Llama-2-7B, prompts ~300 and outputs ~150 tokens, the customer-service SLA, batch
# 8 / 16 / 32 x prefill priority off / on,
# for users who do not think (the seed's load) and who think 10 s or 25 s (exponential) between
# requests. Extra arguments are passed to batching-executor (e.g. --format json).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tc_enter_root
tc_build release batching-executor
exec "$(tc_dir release)/tools/executor/batching-executor" \
  --backend sim --hw a10g --model llama2-7b --users 50 \
  --prompt-len normal:300,90 --output-len uniform:75,225 --duration 600 --warmup 60 --seed 1 \
  --slo 'p95(ttft)<1.5s' --slo 'p95(tpot)<100ms' \
  --sweep think_time=none,exp:10,exp:25 --sweep max_batch_size=8,16,32 \
  --sweep prefill_priority=off,always "$@"
