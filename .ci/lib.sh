# Shared helpers for tokchron's scripts (sourced, not run).
# need_pkgs PKG...: installs the Debian packages that are missing (as root, or through sudo).
need_pkgs() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tokchron: installing missing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
}

# The packages every build needs.
TOKCHRON_BASE_PKGS=(build-essential g++ clang cmake ninja-build pkg-config ccache
                    libboost-dev doctest-dev libbenchmark-dev nlohmann-json3-dev
                    libopenblas-dev catch2)

# ccache for every CMake build the scripts configure (configure_build, and stages or scripts
# that call cmake themselves): CMake (3.17 and later) reads the launcher from the environment.
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

# tc_serve_url LOG: the http://127.0.0.1:PORT that `batching-executor serve` printed to LOG
# ("listening on ..."), waiting up to 10 s for it; prints LOG and fails when it never came.
# shellcheck source=../tools/executor/serve/tests/serve_url.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tools/executor/serve/tests/serve_url.sh"
tc_serve_url() { serve_url "$1"; }

# tc_enter_root PKG...: what a script run from anywhere does first: sets and exports
# TOKCHRON_ROOT (the repository this lib.sh is in), changes to it and installs the base packages
# and PKG... where missing.
tc_enter_root() {
  TOKCHRON_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  export TOKCHRON_ROOT
  cd "$TOKCHRON_ROOT"
  need_pkgs "${TOKCHRON_BASE_PKGS[@]}" "$@"
}

# tc_release_build DIR TARGET: configures DIR as a Release build without tests, benchmarks or
# CUDA (the configure log goes to DIR.configure.log, printed on failure) and builds TARGET.
tc_release_build() {
  local dir=$1 target=$2
  mkdir -p "$dir"
  cmake -S "$TOKCHRON_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOKCHRON_BUILD_TESTS=OFF \
    -DTOKCHRON_BUILD_BENCHMARKS=OFF -DTOKCHRON_CUDA=OFF >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$(tc_jobs)" --target "$target" >&2
}

# configure_build DIR [cmake args...]: configures (Ninja, warnings as errors, ccache when
# present: see above) and builds DIR.
configure_build() {
  local dir=$1; shift
  cmake -S "$TOKCHRON_ROOT" -B "$dir" -G Ninja -DTOKCHRON_WERROR=ON "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$(tc_jobs)"
}

# tc_tsan_configure DIR: configures DIR as the clang++ ThreadSanitizer build (Debug, -O1, every
# finding fatal) that stages 30 and 32 share, so either reuses the other's directory and objects.
tc_tsan_configure() {
  local dir=$1
  cmake -S "$TOKCHRON_ROOT" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
    -DTOKCHRON_BUILD_BENCHMARKS=OFF -DTOKCHRON_HEADER_ALONE=OFF -DTOKCHRON_CUDA=OFF \
    -DCMAKE_CXX_FLAGS="-O1 -g -fsanitize=thread -fno-sanitize-recover=all" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
}
