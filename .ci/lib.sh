# Shared helpers for tokchron's scripts (sourced, not run).
# tc_need_pkgs PKG...: installs the Debian packages that are missing (as root, or through sudo).
tc_need_pkgs() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tokchron: installing missing Debian packages: ${missing[*]}" >&2
  local sudo="" rc=0
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "tokchron: cannot install ${missing[*]}: not root and no sudo; install them as root" >&2
      return 1
    }
    sudo="sudo"
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || rc=$?
  [ "$rc" -eq 0 ] || {
    echo "tokchron: 'apt-get update' failed (exit $rc, its messages above): is Debian's package" \
      "registry reachable, and is no other apt or dpkg running?" >&2
    return 1
  }
  # Some of the packages are services Debian starts when it installs them (nginx on port 80,
  # prometheus on 9090): the stages start their own on free ports of 127.0.0.1, and a system
  # service started by the install would hold its port for good, or fail the install where the
  # port is taken. Debian's policy-rc.d (exit 101: "action forbidden") keeps them stopped; one
  # the machine has already is left as it is.
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if ! [ -e "$policy" ] && printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null &&
    $sudo chmod 755 "$policy"; then
    made_policy=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2 || rc=$?
  [ "$made_policy" -eq 0 ] || $sudo rm -f "$policy"
  [ "$rc" -eq 0 ] || {
    echo "tokchron: 'apt-get install ${missing[*]}' failed (exit $rc, its messages above)" >&2
    return 1
  }
}

# tc_need_node: Node.js and npm, Debian's (nodejs npm) unless both are on PATH already. A machine
# may carry another distribution's nodejs package with npm inside it, which Debian's npm package
# conflicts with: asking apt for npm there would fail for nothing.
tc_need_node() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && return 0
  tc_need_pkgs nodejs npm
}

# The packages every build needs. protobuf is here, not only in the stages that scrape, so that
# stage 10's compilers and stage 30's sanitizers build and run the protobuf exporters' tests;
# OpenSSL (libssl-dev) for tokchron-bench's https://, openssl and python3 for its TLS test.
TOKCHRON_BASE_PKGS=(build-essential g++ clang cmake ninja-build pkg-config ccache
                    libboost-dev doctest-dev libbenchmark-dev nlohmann-json3-dev
                    libopenblas-dev catch2 libprotobuf-dev protobuf-compiler libssl-dev openssl
                    python3)

# ccache for every CMake build the scripts configure (tc_tree, and scripts that call cmake
# themselves): CMake (3.17 and later) reads the launcher from the environment.
# Paths are hashed relative to the repository, so two build directories configured alike share
# their objects within a run and a later run (or a second clone) reuses them. A launcher the
# caller set already is kept; TOKCHRON_CCACHE=0 turns it off.
if [ "${TOKCHRON_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  export CMAKE_CUDA_COMPILER_LAUNCHER=${CMAKE_CUDA_COMPILER_LAUNCHER:-ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-${TOKCHRON_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  # Without a writable home the cache lives in the build tree (ignored by git).
  if [ -z "${CCACHE_DIR:-}" ] && ! [ -w "${HOME:-/nonexistent}" ]; then
    export CCACHE_DIR=$CCACHE_BASEDIR/build/ccache
  fi
fi

tc_jobs() { nproc 2>/dev/null || echo 2; }

# tc_tests_start NAME [CTEST_ARG...]: starts tree NAME's tests (ctest, one job per core, the
# output kept in NAME.tests.log) in the background, so that the stage can build its next tree
# meanwhile: a test run leaves a core idle for much of its time (one long test at its end,
# tests waiting on their servers), which the next build then uses. The tests' verdicts hold on a
# loaded machine (each time bound carries a margin measured on one, stated beside it), so running
# them beside a build changes their time, not their result. tc_tests_wait collects the run.
tc_tests_start() {
  local name=$1 dir
  shift
  dir=$(tc_dir "$name")
  tc_tests_name=$name
  tc_tests_log=$dir.tests.log
  (cd "$dir" && exec ctest --output-on-failure -j "$(tc_jobs)" "$@") >"$tc_tests_log" 2>&1 &
  tc_tests_pid=$!
  trap tc_tests_stop EXIT
}
# tc_tests_wait: waits for the run tc_tests_start started, prints its output and returns its
# status (no run started: returns 0).
tc_tests_wait() {
  [ -n "${tc_tests_pid:-}" ] || return 0
  local rc=0
  wait "$tc_tests_pid" || rc=$?
  tc_tests_pid=
  echo "--- $tc_tests_name: tests"
  cat "$tc_tests_log"
  return $rc
}
# The stage's exit handler while a test run is in the background: a stage that fails meanwhile
# (its next build, say) stops the run rather than leaving it behind.
tc_tests_stop() {
  [ -n "${tc_tests_pid:-}" ] || return 0
  pkill -TERM -P "$tc_tests_pid" 2>/dev/null || true
  kill "$tc_tests_pid" 2>/dev/null || true
  wait "$tc_tests_pid" 2>/dev/null || true
  echo "--- $tc_tests_name: tests stopped (the stage failed while they ran); their output so far:"
  cat "$tc_tests_log" 2>/dev/null || true
}

# tc_scratch: for a stage that starts servers. Sets `work` to a new temporary directory and
# `pids` to an empty array; on exit, failure included, kills and reaps every process whose id
# the stage appended to `pids`, then removes `work`.
tc_scratch() {
  work=$(mktemp -d)
  pids=()
  trap tc_scratch_cleanup EXIT
}
tc_scratch_cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}

# tc_free_port: a TCP port free on 127.0.0.1 now.
tc_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# tc_prometheus DIR JOB TARGETS [LABEL=VALUE] [--FLAG...]: starts Debian's prometheus on
# 127.0.0.1 (a free port) with a temporary config in DIR (data in DIR/data) scraping TARGETS
# (host:port, comma-separated) every $TC_SCRAPE_INTERVAL (200ms unless set) as job JOB, the
# targets labelled LABEL=VALUE when given, with prometheus' own --FLAGs. Sets `prom_port` and
# `prom_pid`, and appends the pid to `pids` (tc_scratch stops it on exit).
tc_prometheus() {
  local dir=$1 job=$2 targets=$3 label="" every=${TC_SCRAPE_INTERVAL:-200ms}
  shift 3
  if [ $# -gt 0 ] && [[ $1 != --* ]]; then label=$1; shift; fi
  prom_port=$(tc_free_port)
  {
    printf 'global:\n  scrape_interval: %s\n  scrape_timeout: %s\n' "$every" "$every"
    printf 'scrape_configs:\n  - job_name: %s\n    static_configs:\n' "$job"
    printf "      - targets: ['%s']\n" "${targets//,/\', \'}"
    [ -z "$label" ] || printf '        labels:\n          %s: %s\n' "${label%%=*}" "${label#*=}"
  } >"$dir/prometheus.yml"
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --web.listen-address="127.0.0.1:$prom_port" "$@" >"$dir/prometheus.log" 2>&1 &
  prom_pid=$!
  pids+=("$prom_pid")
}

# tc_serve_url LOG: the http://127.0.0.1:PORT that `batching-executor serve` printed to LOG
# ("listening on ..."), waiting up to 30 s for it; prints LOG and fails when it never came.
# shellcheck source=../tools/cli/serve_url.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tools/cli/serve_url.sh"
tc_serve_url() { serve_url "$1"; }

# tc_enter_root PKG...: what a script run from anywhere does first: sets and exports
# TOKCHRON_ROOT (the repository this lib.sh is in), changes to it and installs the base packages
# and PKG... where missing.
tc_enter_root() {
  TOKCHRON_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  export TOKCHRON_ROOT
  cd "$TOKCHRON_ROOT"
  tc_need_pkgs "${TOKCHRON_BASE_PKGS[@]}" "$@"
}


# The build trees, one per configuration, each named once here. A stage that needs a build asks
# for a tree by name (tc_build NAME TARGET...): two stages that ask for the same tree share its
# directory, configuration and objects. The trees live in $TOKCHRON_CI_BUILD/NAME (build/ci/NAME
# when unset). docs/testing.md lists which stage uses which tree.
#   g++-c++17      g++ -std=c++17 -O2 (assertions on): tests, examples, tools, benchmarks, the
#                  header-alone check and the CUDA backend where nvcc is (stage 10); configured
#                  again by the later stages, it finds the packages they installed (prometheus-cpp,
#                  cpp-httplib) and builds what needs them (40-45), and the tools that stages
#                  44-50 run (tc_release_tools)
#   clang++-c++20  clang++ -std=c++20 -O0, no benchmarks (stage 10)
#   g++-c++20      g++ -std=c++20 -O0, no benchmarks (stage 10)
#   asan-ubsan     clang++ -std=c++17 -O1, ASan + UBSan, every finding fatal (stage 30)
#   tsan           clang++ -O1, ThreadSanitizer, every finding fatal (stages 30, 32)
#   release        Release without tests, benchmarks or CUDA: the main job's executor
#                  (main.sh, docs/regenerate-images.sh)
#   install        the README's pure install: the library alone, default warnings (stage 20)
# Every tree but install turns warnings into errors.
# tc_tree_args NAME: prints the CMake arguments of tree NAME, one a line.
tc_tree_args() {
  [ "$1" = install ] || echo -DTOKCHRON_WERROR=ON
  local strict=(-DCMAKE_CXX_STANDARD_REQUIRED=ON -DCMAKE_CXX_EXTENSIONS=OFF)
  local lean=(-DTOKCHRON_BUILD_BENCHMARKS=OFF -DTOKCHRON_HEADER_ALONE=OFF -DTOKCHRON_CUDA=OFF)
  # The C++20 and sanitizer trees compile each target's sources in batches of eight, one
  # translation unit a batch (CMake's unity build): the headers every test and tool includes are
  # parsed once a batch instead of once a file. g++-c++17 (one file a unit, and the header-alone
  # check) is the tree that proves each file and header includes what it uses.
  local unity=-DCMAKE_UNITY_BUILD=ON
  case $1 in
    g++-c++17) printf '%s\n' -DCMAKE_CXX_COMPILER=g++ -DCMAKE_CXX_STANDARD=17 "${strict[@]}" \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O2 -DTOKCHRON_BUILD_BENCHMARKS=ON \
      -DTOKCHRON_HEADER_ALONE=ON -DTOKCHRON_CUDA=ON ;;
    clang++-c++20|g++-c++20) printf '%s\n' -DCMAKE_CXX_COMPILER="${1%%-c++20}" \
      -DCMAKE_CXX_STANDARD=20 "${strict[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
      "${lean[@]}" "$unity" ;;
    asan-ubsan) printf '%s\n' -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_STANDARD=17 "${strict[@]}" \
      -DCMAKE_BUILD_TYPE=Debug "${lean[@]}" "$unity" \
      "-DCMAKE_CXX_FLAGS=-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" ;;
    tsan) printf '%s\n' -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug "${lean[@]}" "$unity" \
      "-DCMAKE_CXX_FLAGS=-O1 -g -fsanitize=thread -fno-sanitize-recover=all" \
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" ;;
    release) printf '%s\n' -DCMAKE_BUILD_TYPE=Release -DTOKCHRON_BUILD_TESTS=OFF "${lean[@]}" ;;
    install) printf '%s\n' -DTOKCHRON_BUILD_TESTS=OFF -DTOKCHRON_BUILD_EXAMPLES=OFF \
      -DTOKCHRON_BUILD_TOOLS=OFF -DTOKCHRON_BUILD_BENCHMARKS=OFF ;;
    *) echo "tc_tree_args: no build tree named '$1'" >&2; return 1 ;;
  esac
}

# tc_tree NAME [DIR]: configures tree NAME in DIR ($TOKCHRON_CI_BUILD/NAME by default; Ninja,
# ccache when present) and prints DIR; configuring again is cheap and picks up new packages. The
# configure log goes to DIR.configure.log, printed on failure. A tree configured before a
# package it can use was installed finds it on the next tc_tree (CMake re-runs the checks that
# failed, as the QUIET find_package calls are not cached as found).
tc_tree() {
  local name=$1 dir=${2:-${TOKCHRON_CI_BUILD:-$TOKCHRON_ROOT/build/ci}/$1} args
  args=$(tc_tree_args "$name") || return 1
  mkdir -p "$dir"
  local -a a
  mapfile -t a <<<"$args"
  cmake -S "$TOKCHRON_ROOT" -B "$dir" -G Ninja "${a[@]}" \
    >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; return 1; }
  echo "$dir"
}

# tc_build NAME [TARGET...]: tc_tree NAME, then builds TARGET... there (everything when none),
# with one job per core.
tc_build() {
  local name=$1 dir
  shift
  dir=$(tc_tree "$name") || return 1
  local t=()
  local x
  for x in "$@"; do t+=(--target "$x"); done
  cmake --build "$dir" -j "$(tc_jobs)" "${t[@]}" >&2
}

# tc_dir NAME: the directory of tree NAME (configured or not).
tc_dir() { echo "${TOKCHRON_CI_BUILD:-$TOKCHRON_ROOT/build/ci}/$1"; }

# tc_release_tools [TARGET...]: builds batching-executor and tokchron-bench (and TARGET...)
# optimised, in stage 10's g++-c++17 tree (-O2 as a release build compiles them, with assertions
# on: a broken invariant under load stops the run), and sets `bx`, `bench` and `report` to
# batching-executor, tokchron-bench and tokchron-report there. After stage 10 this builds
# nothing: the stages that run the tools under load share stage 10's build.
tc_release_tools() {
  local dir
  dir=$(tc_dir g++-c++17)
  tc_build g++-c++17 batching-executor tokchron-bench "$@" || return 1
  bx=$dir/tools/executor/batching-executor
  bench=$dir/tools/bench/tokchron-bench
  report=$dir/tools/report/tokchron-report
}
