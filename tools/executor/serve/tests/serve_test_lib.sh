# What the serve ctest scripts share (POSIX sh, sourced): serve_test_begin BX WORK checks for
# python3 (exit 77 without it), makes WORK afresh and sources tools/cli/serve_url.sh; serve_test_start
# ARGS... starts `BX serve` on 127.0.0.1, any port, with ARGS, its output in WORK/serve.log, and
# sets `pid` and `url` (it is killed on exit unless the script stops it first).
serve_test_begin() {
  serve_test_bx=$1
  work=$2
  command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
  . "$serve_test_dir/../../../cli/serve_url.sh"
  rm -rf "$work" && mkdir -p "$work"
}
serve_test_start() {
  "$serve_test_bx" serve --host 127.0.0.1 --port 0 "$@" >"$work/serve.log" 2>&1 &
  pid=$!
  trap 'kill "$pid" 2>/dev/null || true' EXIT
  url=$(serve_url "$work/serve.log")
}
