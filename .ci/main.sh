#!/usr/bin/env bash
# tokchron's main job: installs what is missing from Debian's packages, builds in Release and
# runs the example (for now the quickstart; the batching executor's sweep replaces it).
set -euo pipefail
TOKCHRON_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TOKCHRON_ROOT
cd "$TOKCHRON_ROOT"
# shellcheck source=lib.sh
source .ci/lib.sh
need_pkgs "${TOKCHRON_BASE_PKGS[@]}"
build=$TOKCHRON_ROOT/build/main
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOKCHRON_BUILD_TESTS=OFF \
  -DTOKCHRON_BUILD_BENCHMARKS=OFF >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(tc_jobs)" --target quickstart >&2
exec "$build/examples/quickstart/quickstart" "$@"
