#!/usr/bin/env bash
# Regenerates the pictures in docs/images/ (README.md and docs/tools/pictures.md show them): the
# throughput/latency frontier of the main job's sweep (.ci/main.sh --plot) and the latency
# spectrum of the planner's choice's trace under four tools' definitions (tokchron-report
# --plot); both are built in .ci/lib.sh's release tree (build/ci/release). Installs what is missing from Debian's packages (gnuplot-nox,
# fonts-dejavu-core besides the build's). Deterministic: the sweep is seeded.
#   docs/regenerate-images.sh          (from anywhere in the repository)
set -euo pipefail
# shellcheck source=../.ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../.ci/lib.sh"
tc_enter_root gnuplot-nox fonts-dejavu-core
build=$(tc_dir release)
tc_build release tokchron-report
out=$build/plots
rm -rf "$out"
mkdir -p "$out"
rc=0  # the main job itself (.ci/main.sh passes extra arguments to batching-executor)
.ci/main.sh --format json --progress never --trace-out "$out/trace.jsonl" --plot "$out/sweep" \
  >"$out/sweep.json" || rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] || { echo "the main job exited $rc" >&2; exit 1; }
# The trace of the planner's choice (else the first configuration): trace-N.jsonl, N from 1.
n=$(python3 - "$out/sweep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [r["configuration"] for r in d["runs"]]
c = d.get("choice") or ""
print(names.index(c) + 1 if c in names else int(c[1:]) if c[1:].isdigit() else 1)
PY
)
"$build/tools/report/tokchron-report" --profile canonical,vllm,genai_perf,llmperf \
  --plot "$out/trace" "$out/trace-$n.jsonl" >"$out/trace.txt"
mkdir -p docs/images
for f in frontier.svg frontier.png; do cp "$out/sweep/$f" docs/images/; done
for f in spectrum.svg spectrum.png; do cp "$out/trace/$f" "docs/images/trace-$f"; done
echo "docs/images/: frontier.{svg,png} (sweep: $out/sweep/index.html), trace-spectrum.{svg,png} (trace-$n.jsonl: $out/trace/index.html)"
