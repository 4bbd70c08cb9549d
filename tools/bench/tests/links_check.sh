#!/bin/sh
# The shared libraries BINARY loads (ldd) include no CUDA and no BLAS: tokchron-bench is a
# client, and links neither the executor's backends nor anything they need. Exit 1 naming the
# libraries found, 77 without ldd. The same script run on batching-executor, where its cpu or
# cuda backend was built, must fail (the ctest tokchron_bench.links_check_catches_blas).
# Usage: links_check.sh BINARY
set -eu
bin=$1
command -v ldd >/dev/null 2>&1 || { echo "skipped: no ldd"; exit 77; }
libs=$(ldd "$bin") || { echo "ldd $bin failed"; exit 1; }
bad=$(printf '%s\n' "$libs" |
  grep -Ei 'lib(cuda|cudart|cublas|cublasLt|nvrtc|nvidia-[a-z]*|openblas|blas|cblas|lapack|mkl_[a-z_]*)[.]so' ||
  true)
if [ -n "$bad" ]; then
  echo "$bin loads CUDA or BLAS libraries:"
  printf '%s\n' "$bad"
  exit 1
fi
echo "ok: $bin loads no CUDA or BLAS library ($(printf '%s\n' "$libs" | wc -l) libraries)"
