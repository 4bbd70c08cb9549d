#!/bin/sh
# Runs a command (a tool) under a virtual-memory limit and checks its exit code and that its
# output (stdout and stderr together) contains a text. A ctest driver (CMakeLists.txt).
#   cli_check.sh RC TEXT MEMORY_KB COMMAND [ARG...]     MEMORY_KB 0: no limit (sanitizer builds)
want=$1
text=$2
mem=$3
shift 3
# The limit bounds what the run allocates: the shared libraries the program maps (the cuda
# backend's cuBLAS alone is over 500 MB of address space) come on top of it.
if [ "$mem" -gt 0 ]; then
  libs_kb=$(ldd "$1" 2>/dev/null | awk '$3 ~ /^\// {print $3}' | xargs -r stat -L -c %s |
    awk '{s += $1} END {printf "%d", s / 1024 + 1}')
  ulimit -v "$((mem + ${libs_kb:-0}))" || exit 1
fi
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 4
if [ "$rc" -ne "$want" ]; then
  echo "cli_check: exit code $rc, expected $want"
  exit 1
fi
case $out in
  *"$text"*) ;;
  *) echo "cli_check: the output lacks '$text'"; exit 1 ;;
esac
