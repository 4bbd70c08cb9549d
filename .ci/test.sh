#!/usr/bin/env bash
# Runs every tokchron test: installs what is missing from Debian's packages, then runs each
# stage in .ci/stages/ in order (g++/clang++ x C++17/C++20, packaging, and the stages later
# components add). TOKCHRON_STAGES="10 20" runs only the stages whose names start so.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tc_enter_root
export TOKCHRON_CI_BUILD=${TOKCHRON_CI_BUILD:-$TOKCHRON_ROOT/build/ci}
mkdir -p "$TOKCHRON_CI_BUILD"

start_all=$(date +%s)
cpu_log=$(mktemp)
trap 'rm -f "$cpu_log"' EXIT
TIMEFORMAT='%3U %3S'  # for the stages' `time`: user and system seconds
failed=()
times=()
for stage in .ci/stages/*.sh; do
  name=$(basename "$stage" .sh)
  if [ -n "${TOKCHRON_STAGES:-}" ]; then
    keep=0
    for s in $TOKCHRON_STAGES; do [[ $name == "$s"* ]] && keep=1; done
    [ $keep -eq 1 ] || continue
  fi
  echo "=== stage $name ==="
  t0=$(date +%s)
  # The processor time the stage and everything it waited for used (user + system): on a machine
  # shared with other work the wall time grows, this much less, so the two together tell a slow
  # stage from a busy machine.
  if { time bash -euo pipefail -c 'source .ci/lib.sh; source "$0"' "$stage" 2>&1; } 2>"$cpu_log"; then
    result="passed in"
  else
    result="FAILED after"
    failed+=("$name")
  fi
  cpu=$(tail -n 1 "$cpu_log" | awk '{printf "%.0f", $1 + $2}')
  echo "=== stage $name $result $(( $(date +%s) - t0 )) s (CPU $cpu s) ==="
  times+=("$name $(( $(date +%s) - t0 )) s, CPU $cpu s")
done
total=$(( $(date +%s) - start_all ))
echo "=== all stages done in $total s ==="
printf '  %s\n' "${times[@]}"
# CI gives the whole run 60 minutes on 2 cores; say so before it becomes a timeout.
budget=${TOKCHRON_CI_BUDGET_S:-3600}
if [ -z "${TOKCHRON_STAGES:-}" ] && [ "$total" -gt $(( budget * 3 / 4 )) ]; then
  echo "WARNING: the stages took $total s, over 3/4 of CI's $budget s budget"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "ALL TESTS PASSED"
