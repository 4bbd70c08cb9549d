#!/usr/bin/env bash
# The cuda backend's one-command GPU check (docs/tools/gpu-check.md). On a machine with an NVIDIA GPU
# and nvcc, in one run of at most GPU_CHECK_BUDGET_S seconds (default 460, under 8 minutes):
#   1. builds the cuda backend (Release) for the GPU present (its compute capability);
#   2. runs cross_check_cuda, then under compute-sanitizer memcheck and racecheck;
#   3. cuda-roofline: decode step times at batch 1..64 and prefills up to 2048 tokens for the
#      default model and a llama2-7b-sized one, beside the GPU's bandwidth and compute floors
#      and the sim's h200 (or matching) preset, and the sim constants that fit them;
#   4. a short `batching-executor --backend cuda` sweep.
# Writes the report to stdout and to DIR/report.md (DIR: the first argument, else $OUT, else
# build/gpu-check/report), each step's full log beside it. GPU_CHECK_BUDGET_S overrides the
# budget, GPU_CHECK_BUILD the build directory (default build/gpu-check/build).
#
#   bash tools/executor/backends/cuda/gpu_check.sh [DIR]
#
# Exit status: 0 every check passed; 1 a check failed, timed out or could not run (the report
# says which); 2 bad usage; 77 no GPU (no nvidia-smi or no device) or no nvcc: nothing ran.
# Every step runs under `timeout`, capped by what is left of the budget; a step that would
# start with too little time left is skipped (and the run fails), so a hang cannot outlast it.
set -uo pipefail

start_s=$(date +%s)
budget_s=${GPU_CHECK_BUDGET_S:-460}  # + at most 10 s for a killed step: under 8 minutes

die_no_gpu() {
  echo "gpu_check: $*" >&2
  echo "gpu_check: nothing was built or run (exit 77)." >&2
  exit 77
}

if [ $# -gt 1 ] || [[ ${1:-} == -* ]]; then
  echo "usage: $0 [REPORT_DIR]   (default: \$OUT, else build/gpu-check/report)" >&2
  exit 2
fi
case $budget_s in
  '' | *[!0-9]*)
    echo "gpu_check: GPU_CHECK_BUDGET_S must be a whole number of seconds" >&2
    exit 2
    ;;
esac

# The repository root: the nearest directory above this script with .ci/lib.sh.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
while [ "$root" != / ] && [ ! -f "$root/.ci/lib.sh" ]; do root=$(dirname "$root"); done
if [ ! -f "$root/.ci/lib.sh" ]; then
  echo "gpu_check: cannot find the repository root (.ci/lib.sh) above $0" >&2
  exit 2
fi
cd "$root" || exit 2

# CUDA numbers devices fastest first unless told otherwise; PCI order makes device 0 the GPU
# that nvidia-smi lists first, the one this report describes.
export CUDA_DEVICE_ORDER=PCI_BUS_ID

# --- Is there a GPU and a compiler? -------------------------------------------------------
command -v nvidia-smi >/dev/null 2>&1 ||
  die_no_gpu "no nvidia-smi on PATH: no NVIDIA driver on this machine, so no GPU to check."
if ! gpus=$(timeout 30 nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version \
  --format=csv,noheader 2>&1); then
  die_no_gpu "nvidia-smi found no usable GPU: $(echo "$gpus" | head -3)"
fi
gpu=$(echo "$gpus" | head -1)
[ -n "$gpu" ] || die_no_gpu "nvidia-smi lists no GPU."
gpu_name=$(echo "$gpu" | cut -d, -f1 | sed 's/^ *//; s/ *$//')
gpu_cc=$(echo "$gpu" | cut -d, -f2 | tr -d ' ')

nvcc=""
for c in "$(command -v nvcc 2>/dev/null)" "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" \
  /usr/local/cuda/bin/nvcc; do
  if [ -n "$c" ] && [ -x "$c" ]; then
    nvcc=$c
    break
  fi
done
[ -n "$nvcc" ] ||
  die_no_gpu "no nvcc (not on PATH, not in \$CUDA_HOME/bin or /usr/local/cuda/bin): install the CUDA toolkit."
cuda_bin=$(dirname "$nvcc")
sanitizer=""
for c in "$cuda_bin/compute-sanitizer" "$(command -v compute-sanitizer 2>/dev/null)"; do
  if [ -n "$c" ] && [ -x "$c" ]; then
    sanitizer=$c
    break
  fi
done

# compute capability "9.0" -> CMake architecture "90".
if [[ $gpu_cc =~ ^([0-9]+)\.([0-9]+)$ ]]; then
  arch="${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
  if ! "$nvcc" --list-gpu-arch 2>/dev/null | grep -qx "compute_$arch"; then
    echo "gpu_check: $nvcc cannot compile for compute capability $gpu_cc (compute_$arch):" \
      "a newer CUDA toolkit is needed" >&2
    exit 1
  fi
else
  arch=native  # an old driver without compute_cap: CMake asks the GPU itself
fi

# --- The report ------------------------------------------------------------------------------
dir=${1:-${OUT:-$root/build/gpu-check/report}}
mkdir -p "$dir/logs" || {
  echo "gpu_check: cannot create the report directory '$dir'" >&2
  exit 2
}
dir=$(cd "$dir" && pwd)
report=$dir/report.md
: >"$report"
say() { printf '%s\n' "$*" | tee -a "$report"; }
failures=()
summary=()

left() { echo $((budget_s - ($(date +%s) - start_s))); }

# step NAME CAP_S MIN_S CMD...: runs CMD under timeout (CAP_S, or what is left of the budget),
# its output in logs/NAME.log; skipped when less than MIN_S seconds are left. Sets step_rc.
step() {
  local name=$1 cap=$2 min=$3
  shift 3
  local remain t0 limit
  remain=$(left)
  if [ "$remain" -lt "$min" ]; then
    say "- **$name: SKIPPED**: ${remain} s of the ${budget_s} s budget left, it needs ${min} s"
    failures+=("$name (skipped: time budget)")
    summary+=("| $name | skipped (time budget) | 0 |")
    step_rc=124
    return 0
  fi
  limit=$((cap < remain ? cap : remain))
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$dir/logs/$name.log" 2>&1
  step_rc=$?
  local status=ok
  step_took=$(($(date +%s) - t0))
  if [ $step_rc -eq 124 ] || [ $step_rc -eq 137 ]; then
    status="TIMED OUT after ${limit} s"
  elif [ $step_rc -ne 0 ]; then
    status="FAILED (exit $step_rc)"
  fi
  summary+=("| $name | $status | $step_took |")
  [ "$status" = ok ] || failures+=("$name: $status")
  return 0
}

# The last N lines of a step's log, indented as a code block: tail_log NAME N.
tail_log() { tail -n "$2" "$dir/logs/$1.log" | sed 's/^/    /' | tee -a "$report"; }

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "not a git checkout")
say "# tokchron GPU check"
say ""
say "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit: $commit"
say "- GPU 0: $gpu_name, compute capability ${gpu_cc:-unknown} (CMAKE_CUDA_ARCHITECTURES=$arch)," \
  "$(echo "$gpu" | cut -d, -f3 | sed 's/^ *//'), driver $(echo "$gpu" | cut -d, -f4 | tr -d ' ')"
[ "$(echo "$gpus" | wc -l)" -gt 1 ] && say "- $(echo "$gpus" | wc -l) GPUs present; every step uses device 0"
say "- nvcc: $("$nvcc" --version | tail -2 | head -1); compute-sanitizer: ${sanitizer:-NOT FOUND}"
say "- host: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)," \
  "budget ${budget_s} s; logs: $dir/logs"
say ""

# --- 1. Build (-lineinfo: the sanitizers name our kernels' source lines) ---------------------
say "## Build"
pkgs=(build-essential cmake ninja-build pkg-config libboost-dev doctest-dev nlohmann-json3-dev
  libopenblas-dev)
# .ci/lib.sh's tc_need_pkgs installs only what is missing (nothing, usually).
# shellcheck disable=SC2016 # $0 and $@ are the inner bash's
step packages 150 30 bash -c 'source "$0/.ci/lib.sh" && tc_need_pkgs "$@"' "$root" "${pkgs[@]}"
if [ $step_rc -ne 0 ]; then
  say "gpu_check: the Debian packages the build needs (${pkgs[*]}) are missing and could not be" \
    "installed (exit $step_rc):"
  tail_log packages 10
  exit 1
fi
build=${GPU_CHECK_BUILD:-$root/build/gpu-check/build}
launcher=()
command -v ccache >/dev/null 2>&1 &&
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
step configure 120 30 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTOKCHRON_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DCMAKE_CUDA_FLAGS=-lineinfo \
  -DTOKCHRON_BUILD_TESTS=ON -DTOKCHRON_BUILD_BENCHMARKS=OFF -DTOKCHRON_BUILD_EXAMPLES=ON -DTOKCHRON_BUILD_TOOLS=ON \
  -DTOKCHRON_INSTALL=OFF "${launcher[@]}"
if [ $step_rc -ne 0 ] || ! grep -q "CUDA backend enabled" "$dir/logs/configure.log"; then
  say "configure did not enable the cuda backend (exit $step_rc):"
  grep -E "tokchron:|Error|error" "$dir/logs/configure.log" | head -20 | sed 's/^/    /' |
    tee -a "$report"
  exit 1
fi
step build 300 60 cmake --build "$build" -j "$(nproc)" \
  --target cross_check_cuda cuda-roofline batching-executor
if [ $step_rc -ne 0 ]; then
  if [ $step_rc -eq 124 ] || [ $step_rc -eq 137 ]; then
    say "the build timed out (a rerun continues it: the build directory is kept); its last lines:"
  else
    say "the build failed (exit $step_rc); its errors:"
  fi
  grep -E "error|FAILED" "$dir/logs/build.log" | head -20 | sed 's/^/    /' | tee -a "$report"
  tail_log build 5
  exit 1
fi
find_bin() { find "$build" -type f -name "$1" -perm -u+x | head -1; }
cross=$(find_bin cross_check_cuda)
roofline=$(find_bin cuda-roofline)
executor=$(find_bin batching-executor)
say "built in $step_took s: cross_check_cuda, cuda-roofline, batching-executor (Release," \
  "CMAKE_CUDA_ARCHITECTURES=$arch)"
say ""

# --- 2. Correctness ------------------------------------------------------------------------
say "## Cross-check (GPU vs CPU) and compute-sanitizer"
step cross_check 90 20 "$cross"
if [ $step_rc -eq 77 ]; then  # nvidia-smi sees a GPU, the CUDA runtime does not (driver too old?)
  tail_log cross_check 3
  say "gpu_check: the CUDA runtime cannot use the GPU that nvidia-smi lists (driver" \
    "$(echo "$gpu" | cut -d, -f4 | tr -d ' ') against nvcc's runtime): nothing else can run."
  exit 77
fi
grep -E "^(device|cross-check cuda half)|MISMATCH|near tie|non-finite|SUCCESS|FAILED|ERROR" \
  "$dir/logs/cross_check.log" | head -40 | sed 's/^/    /' | tee -a "$report"
for tool in memcheck racecheck; do
  if [ -z "$sanitizer" ]; then
    say "- **$tool: NOT RUN**: compute-sanitizer not found beside nvcc or on PATH"
    failures+=("$tool (compute-sanitizer not found)")
    summary+=("| $tool | not run (no compute-sanitizer) | 0 |")
    continue
  fi
  step "$tool" 120 30 "$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 20 "$cross"
  say "- $tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$dir/logs/$tool.log" |
    tail -1 || true) (exit $step_rc)"
done
say ""

# --- 3. Step times against the floors -------------------------------------------------------
say "## Step times against the roofline (cuda-roofline)"
small_tsv=$dir/roofline-default.tsv
large_tsv=$dir/roofline-7b.tsv
step roofline_default 60 20 "$roofline" repeats=10 "data=$small_tsv"
sed -n '1,/^$/p;/^decode/,$p' "$dir/logs/roofline_default.log" | tee -a "$report"
say ""
# llama2-7b's bytes and FLOPs a step: 32 layers of d 4096 (32 heads), a two-matrix MLP of 16512
# (the parameters of llama's three of 11008), vocabulary 32000: 6.74e9 parameters, 13.5 GB fp16.
step roofline_7b 150 60 "$roofline" layers=32 hidden=4096 heads=32 ffn=16512 vocab=32000 \
  repeat_layer=1 repeats=5 "data=$large_tsv"
sed -n '1,/^$/p;/^decode/,$p' "$dir/logs/roofline_7b.log" | tee -a "$report"
say ""

# The sim's step model t = t_fixed + max(bytes / (eta_bw BW), FLOPs / (eta_c F)) fitted to the
# measurements: eta_bw BW and t_fixed from the two models' batch-1 decodes (memory bound, bytes
# 69 MB vs 13.2 GB), eta_c from the 7b's longest prefill; then every row against the fit.
if [ -s "$small_tsv" ] && [ -s "$large_tsv" ]; then
  say "### The sim's step model fitted to these step times"
  preset=$(sed -n 's/^sim preset \([^:]*\):.*/\1/p' "$dir/logs/roofline_7b.log")
  awk -F'\t' -v preset="${preset:-PRESET}" '
    FNR == 1 { next }
    FILENAME == ARGV[1] && $1 == "decode" && $2 == 1 { bs = $4; ts = $6 }
    FILENAME == ARGV[2] && $1 == "decode" && $2 == 1 {
      bl = $4; tl = $6; peak_bw = $11; peak_f = $12
    }
    FILENAME == ARGV[2] && $1 == "prefill" && $2 > pn { pn = $2; pf = $5; pt = $6 }
    {
      kind[NR] = (FILENAME == ARGV[1] ? "default" : "7b") " " $1 " " $2
      by[NR] = $4; fl[NR] = $5; t[NR] = $6
    }
    END {
      if (tl <= ts || peak_bw <= 0 || pt <= 0) {
        print "    (no fit: the 7b batch-1 step is not slower, or no sim preset for this GPU)"
        exit
      }
      ebw = (bl - bs) / (tl - ts); tf = ts - bs / ebw; if (tf < 0) tf = 0
      ec = pf / (pt > tf ? pt - tf : pt)
      printf "fitted: t_fixed %.3f ms, effective bandwidth %.2f TB/s = eta_bw %.2f of %.2f TB/s; ",
        tf * 1e3, ebw / 1e12, ebw / peak_bw, peak_bw / 1e12
      printf "prefill of %d tokens: %.0f TFLOP/s = eta_compute %.2f of %.0f TFLOP/s\n",
        pn, ec / 1e12, ec / peak_f, peak_f / 1e12
      printf "sim flags: --hw %s --sim t_fixed=%.3g --sim eta_bw=%.3f --sim eta_compute=%.3f\n\n",
        preset, tf, ebw / peak_bw, ec / peak_f
      print "| row | measured ms | fitted sim ms | measured / fitted |"
      print "|---|---|---|---|"
      for (i = 1; i <= NR; ++i) if (i in kind) {
        p = tf + (by[i] / ebw > fl[i] / ec ? by[i] / ebw : fl[i] / ec)
        printf "| %s | %.4g | %.4g | %.2f |\n", kind[i], t[i] * 1e3, p * 1e3, t[i] / p
      }
    }' "$small_tsv" "$large_tsv" | tee -a "$report"
  say ""
fi

# --- 4. The executor on the GPU -------------------------------------------------------------
say "## batching-executor --backend cuda (default model; closed loop, 64 users, 128 in / 64 out)"
step sweep 100 40 "$executor" --backend cuda --users 64 --prompt-len 128 --output-len 64 \
  --duration 8 --sweep max_batch_size=1,16,64 --progress never
sed -n '/^|/p' "$dir/logs/sweep.log" | head -12 | tee -a "$report"
[ $step_rc -ne 0 ] && tail_log sweep 10
say ""

# --- Summary -------------------------------------------------------------------------------
say "## Summary ($(($(date +%s) - start_s)) s of the ${budget_s} s budget)"
say "| step | status | seconds |"
say "|---|---|---|"
for row in "${summary[@]}"; do say "$row"; done
say ""
if [ ${#failures[@]} -gt 0 ]; then
  say "GPU CHECK FAILED: ${failures[*]}"
  say "(report: $report; full logs: $dir/logs)"
  exit 1
fi
say "GPU CHECK PASSED (report: $report)"
