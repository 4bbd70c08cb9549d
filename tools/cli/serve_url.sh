# serve_url LOG: prints the http://127.0.0.1:PORT that `batching-executor serve` wrote to LOG
# ("listening on ..."), waiting up to 30 s for it (LOG may not exist yet: the shell that started
# serve in the background creates it); prints LOG to stderr and fails when it never came. POSIX
# sh, sourced by the ctest scripts and by .ci/lib.sh.
serve_url() {
  serve_url_port=""
  serve_url_try=0
  while [ $serve_url_try -lt 300 ]; do
    serve_url_port=$( (sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1" \
      2>/dev/null) || true)
    [ -n "$serve_url_port" ] && break
    serve_url_try=$((serve_url_try + 1))
    sleep 0.1
  done
  [ -n "$serve_url_port" ] || { echo "serve did not start:" >&2; cat "$1" >&2 || true; return 1; }
  echo "http://127.0.0.1:$serve_url_port"
}
