#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds llama.cpp's llama-server with tokchron in it, and a random-weight model to run it on.
#
#   examples/llama_cpp/build.sh [--tokchron-prefix DIR] [--cache DIR] [--jobs N] [--opt LEVEL]
#
# 1. fetches the npm package node-llama-cpp@3.21.1 (npm pack; its shasum is checked), which
#    ships one llama.cpp release as a git bundle (llama/gitRelease.bundle; llama.cpp.info.json
#    names the tag), and clones the bundle;
# 2. applies tokchron-llama-server.patch and copies server-tokchron.{h,cpp} into tools/server/;
# 3. installs tokchron from this repository into CACHE/tokchron (unless --tokchron-prefix names
#    an installed one) and builds the llama-server target only (CPU, portable ggml, no web UI,
#    ccache when present), finding tokchron with find_package; llama.cpp's Release flags, or
#    -O LEVEL with --opt LEVEL (its own build directory: build-O1 for --opt 1). CI builds with
#    --opt 1: three of the heaviest files (llama-grammar.cpp, ggml-cpu/ops.cpp,
#    server-context.cpp) took 32 s of compiler time at -O1 against 45 s at -O3;
# 4. writes CACHE/model.gguf with the release's gguf-py (make_model.py; python3 + numpy).
#
# Everything goes under CACHE (default ${XDG_CACHE_HOME:-~/.cache}/tokchron/llama.cpp), outside
# the source tree; a second run reuses the clone, the build and the model. It prints the paths
# it made as `KEY=VALUE` lines on stdout (llama_server=, model=, llama_src=, tag=); everything
# else goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
version=3.21.1
shasum=f7579ace3d45c8e93856cebbd8671fa43c2eef1b  # npm's shasum of node-llama-cpp-3.21.1.tgz
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tokchron/llama.cpp
prefix=""
jobs=$(nproc 2>/dev/null || echo 2)
opt=3
while [ $# -gt 0 ]; do
  case $1 in
    --tokchron-prefix) prefix=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --opt) opt=$2; shift 2 ;;
    -h|--help) sed -n '3,22p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
say() { echo "build.sh: $*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || { say "$1 is missing ($2)"; exit 1; }; }
need npm "Debian: apt-get install npm"
need git "Debian: apt-get install git"
need cmake "Debian: apt-get install cmake"
need ninja "Debian: apt-get install ninja-build"
# Debian's python3 with Debian's numpy (a pyenv or venv python earlier on PATH may lack it).
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null || { say "$py has no numpy (Debian: apt-get install python3-numpy)"; exit 1; }

mkdir -p "$cache/node-llama-cpp-$version"
# Absolute, as CMake records the paths of its build trees (drop_foreign_tree compares them) and
# ccache wants its base directory.
cache=$(cd "$cache" && pwd)
work=$cache/node-llama-cpp-$version
cd "$work"

# 1. The package and the release it carries.
tgz=node-llama-cpp-$version.tgz
if [ ! -f "$tgz" ] || [ "$(sha1sum "$tgz" | cut -d' ' -f1)" != "$shasum" ]; then
  say "fetching node-llama-cpp@$version with npm"
  rm -f "$tgz"
  npm pack "node-llama-cpp@$version" --silent --pack-destination "$work" >/dev/null ||
    { say "npm pack node-llama-cpp@$version failed (no network or no npm registry?)"; exit 1; }
fi
got=$(sha1sum "$tgz" | cut -d' ' -f1)
[ "$got" = "$shasum" ] || { say "$tgz has shasum $got, not $shasum"; exit 1; }
if [ ! -f package/llama/gitRelease.bundle ]; then
  tar -xzf "$tgz" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
fi
tag=$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' package/llama/llama.cpp.info.json)
[ -n "$tag" ] || { say "no tag in package/llama/llama.cpp.info.json"; exit 1; }
if [ ! -d llama.cpp/.git ]; then
  say "cloning llama.cpp $tag from the package's git bundle"
  rm -rf llama.cpp
  git clone -q package/llama/gitRelease.bundle llama.cpp 2>/dev/null
fi
src=$work/llama.cpp

# 2. The patch and the new files. Already applied (a second run): left as it is, and a new
# file copied only when it changed, so that the build recompiles only what did change.
patch=$here/tokchron-llama-server.patch
if git -C "$src" apply --check -R "$patch" 2>/dev/null; then
  say "tokchron patch already applied"
else
  say "applying tokchron-llama-server.patch to llama.cpp $tag"
  git -C "$src" checkout -q -f HEAD
  git -C "$src" clean -q -f tools/server
  git -C "$src" apply "$patch"
fi
for f in server-tokchron.h server-tokchron.cpp; do
  cmp -s "$here/$f" "$src/tools/server/$f" || cp "$here/$f" "$src/tools/server/$f"
done

# A build tree CMake configured for another source or another place (the cache filled from
# another checkout, or copied or restored under another home) cannot be configured again: CMake
# refuses it. Such a tree is removed and configured afresh (ccache keeps its objects).
drop_foreign_tree() {
  local dir=$1 source=$2
  [ -f "$dir/CMakeCache.txt" ] || return 0
  if ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$source" "$dir/CMakeCache.txt" ||
    ! grep -qxF "CMAKE_CACHEFILE_DIR:INTERNAL=$dir" "$dir/CMakeCache.txt"; then
    say "$dir was configured for another source or place: configuring it afresh"
    rm -rf "$dir"
  fi
}

# 3. tokchron, installed as a user installs it (the README's pure install), then llama-server.
if [ -z "$prefix" ]; then
  prefix=$work/tokchron
  say "installing tokchron from $root into $prefix"
  drop_foreign_tree "$work/tokchron-build" "$root"
  cmake -S "$root" -B "$work/tokchron-build" -G Ninja -DTOKCHRON_BUILD_TESTS=OFF \
    -DTOKCHRON_BUILD_EXAMPLES=OFF -DTOKCHRON_BUILD_TOOLS=OFF -DTOKCHRON_BUILD_BENCHMARKS=OFF \
    >"$work/tokchron-build.log" 2>&1 || { cat "$work/tokchron-build.log" >&2; exit 1; }
  cmake --install "$work/tokchron-build" --prefix "$prefix" >>"$work/tokchron-build.log" 2>&1 ||
    { cat "$work/tokchron-build.log" >&2; exit 1; }
fi
# ccache (llama.cpp's CMake uses it when present), its paths relative to the cache directory so
# that another checkout or cache location hits the same objects.
export CCACHE_BASEDIR=$cache CCACHE_NOHASHDIR=1
case $opt in
  3) build=$work/build; optflags=() ;;
  0|1|2|s) build=$work/build-O$opt
    optflags=("-DCMAKE_C_FLAGS_RELEASE=-O$opt -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O$opt -DNDEBUG") ;;
  *) say "--opt takes 0, 1, 2, 3 or s, not $opt"; exit 2 ;;
esac
drop_foreign_tree "$build" "$src"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${optflags[@]}" -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_NATIVE=OFF \
  -DCMAKE_PREFIX_PATH="$prefix" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log" >&2; exit 1; }
say "building llama-server (-O$opt, -j$jobs); the log is $build.log"
start=$(date +%s)
cmake --build "$build" --target llama-server -j "$jobs" >"$build.log" 2>&1 ||
  { tail -n 60 "$build.log" >&2; exit 1; }
say "llama-server built in $(( $(date +%s) - start )) s"

# 4. The model.
if [ ! -f "$work/model.gguf" ] || [ "$here/make_model.py" -nt "$work/model.gguf" ]; then
  PYTHONPATH=$src/gguf-py "$py" "$here/make_model.py" --out "$work/model.gguf.tmp" >&2
  mv "$work/model.gguf.tmp" "$work/model.gguf"
fi

echo "llama_server=$build/bin/llama-server"
echo "model=$work/model.gguf"
echo "llama_src=$src"
echo "tag=$tag"
