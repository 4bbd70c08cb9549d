#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Capacity planning on llama-server: measure four closed loops (1, 2, 4 and 8 users), calibrate
# the batching executor's sim on three of them, and predict the fourth, which the calibration
# never read (docs/tools/capacity-planning.md, "A real engine: llama-server").
#
#   examples/llama_cpp/capacity_check.sh --url URL --bench TOKCHRON_BENCH --bx BATCHING_EXECUTOR
#       --out DIR [--slots N] [--requests N] [--rounds R] [--hold-out USERS] [--label NAME]
#       [--max-throughput-error F] [--max-ttft-error F] [--reuse]
#
# The server must run with N slots (-np N, default 4) and the model of build.sh (make_model.py's
# defaults: 2 layers, width 256, feed-forward 512, F32 weights, F16 KV). Each load is a closed
# loop of tokchron-bench (chat, prompts of a 64-word prefix every request shares, as a system
# prompt, then uniform(8, 200) words of their own, outputs uniform(1, 32) tokens, streamed,
# keep-alive: with the prompt cache on, a slot reuses the prefix), REQUESTS requests (default 120) in R rounds (default 3): every round
# runs the four loads one after the other (in a rotated order), so a neighbour that comes and
# goes on the machine slows every load alike; the traces are DIR/uUSERS-rROUND.jsonl, and
# calibrate replays each round on its own and pools them (FILE+FILE).
# `batching-executor calibrate` fits every constant of the sim that such a server has (step
# costs, the batch-size term, the time outside the engine loop, the client's round trip) to the
# three other loads, replaying each request's cached prompt tokens as cached; `calibrate
# --evaluate` then scores the fitted constants on the held-out load. Prints the residuals and
# fails (exit 1) when the held-out output throughput or P95 TTFT is off by more than the bounds,
# "off by" being max(r, 1/r) - 1 for r = predicted / measured (default 0.15 and 0.25, issue
# 44's target; the page gives what was measured, and stage 49 the bounds a loaded machine
# needs).
# Writes DIR/fit.json and DIR/heldout.json (calibrate's --json-out). --reuse: measure nothing,
# calibrate and predict from the traces already in DIR (then --url and --bench are not needed).
set -euo pipefail

url="" bench="" bx="" out="" reuse=0 slots=4 requests=120 rounds=3 hold=4 label="" max_tput=0.15 max_ttft=0.25
while [ $# -gt 0 ]; do
  case $1 in
    --url) url=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    --bx) bx=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --reuse) reuse=1; shift ;;
    --slots) slots=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --hold-out) hold=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --max-throughput-error) max_tput=$2; shift 2 ;;
    --max-ttft-error) max_ttft=$2; shift 2 ;;
    -h|--help) sed -n '3,25p' "$0"; exit 0 ;;
    *) echo "capacity_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
need=(bx out)
[ "$reuse" = 1 ] || need+=(url bench)
for v in "${need[@]}"; do
  [ -n "${!v}" ] || { echo "capacity_check.sh: --${v} is required" >&2; exit 2; }
done
mkdir -p "$out"
loads=(1 2 4 8)
case " ${loads[*]} " in *" $hold "*) ;; *) echo "capacity_check.sh: --hold-out is one of ${loads[*]}" >&2; exit 2 ;; esac

# 1. Measure.
if [ "$reuse" = 0 ]; then
per_round=$(( (requests + rounds - 1) / rounds ))
for r in $(seq "$rounds"); do
  for i in 0 1 2 3; do
    u=${loads[$(( (i + r) % 4 ))]}
    f=$out/u$u-r$r
    "$bench" --url "$url" --endpoint chat --model m --users "$u" --max-requests "$per_round" \
      --duration 600 --shared-prefix 64 --prompt-len uniform:8,200 --output-len uniform:1,32 \
      --seed "$((100 * r + u))" --id-prefix "cap$u-r$r-" --keep-alive on --progress never \
      --format json --trace-out "$f.jsonl" >"$f.json" 2>"$f.err" ||
      { echo "capacity_check.sh: tokchron-bench at $u users exited with $?" >&2; cat "$f.err" >&2; exit 1; }
  done
done
fi
joined() {  # the rounds of load $1, as calibrate takes them
  local r list=""
  for r in $(seq "$rounds"); do list+=${list:++}$out/u$1-r$r.jsonl; done
  echo "$list"
}

# 2. Calibrate. The server as the sim sees it: make_model.py's model (1.44 M parameters, 5.8 MB
# of F32 weights, 2 layers x 2 x 256 F16 KV values a token), N slots, llama.cpp's batch of 2048
# tokens (a longer prompt is split). The ceilings are this machine's peaks, not measurements:
# 2 cores x 32 fp32 FLOP a cycle (two 8-wide FMA units) x 3 GHz, and 100 GB/s for weights that
# stay in cache; the fitted efficiencies are fractions of them.
model=(--sim params=1.44e6 --sim weight_bytes=5.76e6 --sim kv_bytes_per_token=2048
  --sim layers=2 --sim hidden=256 --sim bandwidth=1e11 --sim flops=1.92e11
  --sim memory=1e9 --sim mem_util=1 --sim activation_reserve=0)
sched=(--max-batch-size "$slots" --max-num-batched-tokens 2048 --chunked-prefill on)
train=()
for u in "${loads[@]}"; do
  [ "$u" = "$hold" ] || train+=(--trace "$(joined "$u"),concurrency=$u,closed=on")
done
# Where the search starts: a step of a fraction of a millisecond, a request's work outside the
# engine and the client's round trip of a few (the orders of magnitude seen on a quiet machine).
start=(--sim eta_bw=0.5 --sim eta_compute=0.05 --sim t_fixed=0.0005 --sim t_seq=0.0001
  --sim t_seq2=0.00001 --sim t_request=0.001 --sim t_front=0.002 --sim t_client=0.002)
"$bx" calibrate "${model[@]}" "${start[@]}" "${sched[@]}" \
  --fit eta_bw,eta_compute,t_fixed,t_seq,t_seq2,t_request,t_front,t_client \
  "${train[@]}" --json-out "$out/fit.json" >"$out/fit.txt" ||
  { echo "capacity_check.sh: calibrate exited with $?" >&2; cat "$out/fit.txt" >&2; exit 1; }
sed -n '/^fitted constants/,/^RMS log error/p' "$out/fit.txt"

# 3. Predict the held-out load with the fitted constants.
fitted=()
while read -r kv; do fitted+=(--sim "$kv"); done < <(python3 -c '
import json, sys
for k, v in json.load(open(sys.argv[1]))["constants"].items():
    print(f"{k}={v!r}")' "$out/fit.json")
"$bx" calibrate --evaluate "${model[@]}" "${fitted[@]}" "${sched[@]}" \
  --trace "$(joined "$hold"),concurrency=$hold,closed=on" --json-out "$out/heldout.json" \
  >"$out/heldout.txt" ||
  { echo "capacity_check.sh: calibrate --evaluate exited with $?" >&2; cat "$out/heldout.txt" >&2; exit 1; }

# 4. The verdict.
python3 - "$out/fit.json" "$out/heldout.json" "$hold" "$max_tput" "$max_ttft" "$label" <<'PY'
import json, sys
fit, held = (json.load(open(p)) for p in sys.argv[1:3])
hold, max_tput, max_ttft, label = sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
def ratio(t, metric, p):
    for r in t["residuals"]:
        if r["metric"] == metric and r["percentile"] == p:
            return r
    raise SystemExit(f"no {metric} P{p} in {t['label']}")
name = f"[{label}] " if label else ""
for t in fit["traces"]:
    tp, tt = ratio(t, "throughput", 0), ratio(t, "ttft", 95)
    print(f"{name}calibrated on {t['label'].split('/')[-1].split('-r')[0]}: out tok/s {tp['ratio']:.3f}, "
          f"P95 TTFT {tt['ratio']:.3f} (simulated / measured)")
t = held["traces"][0]
tp, tt, tpot = ratio(t, "throughput", 0), ratio(t, "ttft", 95), ratio(t, "tpot", 95)
print(f"{name}held out, {hold} users: out tok/s {tp['measured']:.1f} measured, "
      f"{tp['simulated']:.1f} predicted ({tp['ratio']:.3f}); P95 TTFT "
      f"{tt['measured'] * 1e3:.2f} ms measured, {tt['simulated'] * 1e3:.2f} ms predicted "
      f"({tt['ratio']:.3f}); P95 TPOT {tpot['ratio']:.3f}; RMS log {t['rms']:.3f}")
def off(r):
    return max(r, 1 / r) - 1 if r > 0 else float("inf")
bad = []
if off(tp["ratio"]) > max_tput:
    bad.append(f"throughput off by {off(tp['ratio']):.1%} (bound {max_tput:.0%})")
if off(tt["ratio"]) > max_ttft:
    bad.append(f"P95 TTFT off by {off(tt['ratio']):.1%} (bound {max_ttft:.0%})")
if bad:
    print(f"{name}held-out prediction: " + "; ".join(bad))
    sys.exit(1)
PY
