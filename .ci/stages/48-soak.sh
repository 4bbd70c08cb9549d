# Soak: `batching-executor serve` (sim backend, 127.0.0.1) for a fixed time under tokchron-bench
# (closed loop, keep-alive, a modest rate) and a crowd of bad clients at once
# (tools/executor/serve/tests/bad_crowd.py: slow headers, slow bodies, streams never read,
# streams reset mid-way, connection floods past --max-connections). At the end:
#  - every well-behaved request succeeded (tokchron-bench's exit code, its report: none failed,
#    and every line of its trace ok);
#  - serve's peak RSS (VmHWM of /proc/PID/status) stayed under the bound derived below from the
#    options;
#  - every bad client is in /metrics: each kind's counter equals what the crowd sent;
#  - /health still answers.
# Bounded: about 80 s of load, everything on 127.0.0.1, stopped on exit (tc_scratch).
# docs/tools/serve.md ("Soak") has the bound's derivation and the figures.
tc_need_pkgs curl python3
tc_scratch  # $work, and $pids: stopped on exit

tc_release_tools
crowd=$TOKCHRON_ROOT/tools/executor/serve/tests/bad_crowd.py
seconds=${TOKCHRON_SOAK_SECONDS:-75}

# The limits the crowd runs into, small so that each kind is dropped within seconds.
max_conn=48 max_body=65536 max_header=8192 max_buffered=8192 max_model_len=4096
header_timeout=2 body_timeout=3
echo "--- serve: --max-connections $max_conn --max-body $max_body --max-buffered $max_buffered"
"$bx" serve --host 127.0.0.1 --port 0 --hw h200 --served-model tokchron-sim \
  --max-connections $max_conn --max-body $max_body --max-header $max_header \
  --max-buffered $max_buffered --max-model-len $max_model_len --write-timeout 2 \
  --header-timeout $header_timeout --body-timeout $body_timeout --request-timeout 6 \
  --idle-timeout 30 >"$work/serve.log" 2>&1 &
server=$!
pids+=("$server")
base=$(tc_serve_url "$work/serve.log")
start_rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$server/status")

echo "--- $seconds s: tokchron-bench (4 users, keep-alive) and the bad crowd"
python3 "$crowd" --url "$base" --seconds "$seconds" --header-timeout $header_timeout \
  --body-timeout $body_timeout --flood $((max_conn + 24)) --flood-every 15 \
  >"$work/crowd.json" 2>"$work/crowd.err" &
crowd_pid=$!
pids+=("$crowd_pid")
bench_rc=0
"$bench" --url "$base" --endpoint completions --model tokchron-sim --users 4 \
  --think-time uniform:0.2,0.6 --ramp-up 1 --duration "$seconds" --prompt-len uniform:16,128 \
  --output-len uniform:8,48 --seed 48 --request-timeout 60 --keep-alive on --profile canonical \
  --format json --progress never --trace-out "$work/client.jsonl" \
  >"$work/report.json" 2>"$work/bench.err" || bench_rc=$?
crowd_rc=0
wait "$crowd_pid" || crowd_rc=$?
peak_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$server/status")
# Every bad client's counter in /metrics beside what the crowd sent. serve may still be closing
# the crowd's last connections when it exits (a reset's abort reaches the engine's counter a
# moment later): /metrics is polled until every pair agrees, for at most 30 s, and the verdict
# below is on the last poll (metrics.txt; polled.json).
python3 - "$work" "$base" <<'PY'
import json, sys, time, urllib.request
work, base = sys.argv[1], sys.argv[2]
try:
    sent = json.load(open(f"{work}/crowd.json"))["sent"]
except (OSError, ValueError, KeyError):
    sent = None  # the crowd failed: one poll, and the verdict says so
t0 = time.time()
while True:
    text = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()
    m = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        m[name] = float(value)
    def closed(reason):
        return int(m.get(f'tokchron_serve_closed_connections_total{{reason="{reason}"}}', -1))
    aborts = int(sum(v for k, v in m.items() if k.startswith("vllm:request_success_total")
                     and 'finished_reason="abort"' in k))
    pairs = [] if sent is None else [
        ("slow headers", sent["slow_headers"], closed("header_timeout")),
        ("slow bodies", sent["slow_body"], closed("body_timeout")),
        ("never-read streams", sent["never_read"], closed("write_timeout") + closed("write_buffer")),
        ("mid-stream resets", sent["reset"], closed("client_gone")),
        ("refused past the cap", sent["flood_refused"] + sent["refused"],
         int(m.get("tokchron_serve_refused_connections_total", -1))),
        ("aborts in the engine (never-read + resets)", sent["never_read"] + sent["reset"], aborts),
    ]
    agree = all(c == s for _, c, s in pairs)
    if agree or sent is None or time.time() - t0 > 30:
        break
    time.sleep(0.2)
open(f"{work}/metrics.txt", "w").write(text)
json.dump({"pairs": pairs, "metrics": m}, open(f"{work}/polled.json", "w"))
print(f"/metrics polled for {time.time() - t0:.2f} s until " +
      ("its counters agreed with the crowd" if agree else "the 30 s deadline (they differ)"))
PY
curl -fsS -o /dev/null -w '%{http_code}\n' "$base/health" >"$work/health.txt" || true
kill -INT "$server"
wait "$server" || { echo "serve exited with $?"; cat "$work/serve.log"; exit 1; }
pids=()
[ "$bench_rc" -eq 0 ] || { echo "tokchron-bench exited with $bench_rc"; cat "$work/bench.err"; }
[ "$crowd_rc" -eq 0 ] || { echo "the crowd reported problems"; cat "$work/crowd.err"; }

python3 - "$work" "$bench_rc" "$crowd_rc" "$start_rss_kb" "$peak_kb" \
  $max_conn $max_body $max_header $max_buffered $max_model_len <<'PY'
import json, sys
work, bench_rc, crowd_rc, start_kb, peak_kb = sys.argv[1], *map(int, sys.argv[2:6])
max_conn, max_body, max_header, max_buffered, max_model_len = map(int, sys.argv[6:11])
ok = True
def check(cond, text):
    global ok
    print(("ok   " if cond else "FAIL ") + text)
    ok = ok and cond

# Well-behaved requests: the bench's exit code, its report and every trace line.
rows = [json.loads(l) for l in open(f"{work}/client.jsonl")]
bad = [r for r in rows if r.get("ok") is False or r.get("finish_reason") not in (None, "stop", "length")]
check(bench_rc == 0, f"tokchron-bench exit code {bench_rc}")
report = json.load(open(f"{work}/report.json"))
report = report[0] if isinstance(report, list) else report
check(report.get("failed") == 0 and report.get("completed") == len(rows),
      f"tokchron-bench's report: {report.get('completed')} completed, {report.get('failed')} failed")
check(len(rows) > 0 and not bad,
      f"good requests: {len(rows)} sent, {len(rows) - len(bad)} succeeded"
      + (f" (first failure: {bad[0]})" if bad else ""))

# Every bad client in /metrics.
crowd = json.load(open(f"{work}/crowd.json"))
sent, problems = crowd["sent"], crowd["problems"]
check(crowd_rc == 0 and not problems, f"the crowd saw what it expected ({len(problems)} problems: {problems[:3]})")
polled = json.load(open(f"{work}/polled.json"))
pairs, m = polled["pairs"], polled["metrics"]
def closed(reason):
    return int(m.get(f'tokchron_serve_closed_connections_total{{reason="{reason}"}}', -1))
check(len(pairs) == 6, f"{len(pairs)} kinds of bad client compared (6 expected)")
print(f"bad clients by kind (crowd / serve's /metrics); floods also opened {sent['flood_accepted']} "
      "connections under the cap, closed idle:")
for what, crowd_n, server_n in pairs:
    check(crowd_n == server_n and crowd_n > 0, f"  {what}: {crowd_n} / {server_n}")
for reason in ("request_timeout", "header_too_large", "body_too_large", "bad_http", "read_buffer"):
    check(closed(reason) == 0, f"  closed for {reason}: {closed(reason)} (none expected)")

# Peak RSS against the bound the options give: per connection, a header being read (max_header
# plus one 64 KiB read) or a body (max_body plus the 64 KiB read and the 4 KiB watch read),
# the queued response bytes (max_buffered) plus the one being written (a whole non-streamed
# answer: at most max_model_len words of 8 bytes and 1 KiB of JSON), and the request's timeline
# (16 bytes a chunk, one chunk a token at most); twice that for the allocator's free lists and
# arenas; on top of serve's RSS when it started listening.
per_conn = max(max_header + 65536, max_body + 65536 + 4096) + max_buffered \
    + (8 * max_model_len + 1024) + 16 * max_model_len
bound_kb = start_kb + 2 * max_conn * per_conn // 1024
check(peak_kb <= bound_kb, f"peak RSS {peak_kb} kB <= bound {bound_kb} kB "
      f"(start {start_kb} kB + 2 x {max_conn} connections x {per_conn // 1024} KiB)")
health = open(f"{work}/health.txt").read().strip()
check(health == "200", f"/health answers {health}")
sys.exit(0 if ok else 1)
PY
