#!/bin/sh
# tokchron-bench multi-turn sessions against `batching-executor serve` (sim backend in real
# time; docs/tools/workloads-sessions.md, "Checked against serve"): synthetic sessions, then a
# sessions file with a system message, run with their session logs; check_sessions.py then
# joins each turn to serve's trace by request id and checks that every turn's prompt, as serve
# counted it, is the previous turn's prompt plus the reply serve streamed for it plus the new
# user message, exactly. Usage: sessions_serve.sh EXECUTOR BENCH WORKDIR
set -eu
. "$(dirname "$0")/../../cli/serve_url.sh"
exe=$1 bench=$2 dir=$3
here=$(dirname "$0")
mkdir -p "$dir"
rm -f "$dir"/*
"$exe" serve --port 0 --trace-out "$dir/server.jsonl" >"$dir/serve.out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
url=$(serve_url "$dir/serve.out")
"$bench" --url "$url" --endpoint chat --model tokchron-sim --session-turns uniform:2,6 \
  --prompt-len uniform:5,40 --output-len uniform:3,12 --turn-think uniform:0,0.05 --users 4 \
  --max-sessions 12 --duration 60 --request-timeout 60 --keep-alive on --id-prefix syn- \
  --session-log "$dir/synthetic.log" --profile canonical --format json --progress never \
  >"$dir/synthetic.json"
cat >"$dir/sessions.jsonl" <<'JSONL'
{"session_id": "file-1", "system": "answer in one line please", "turns": [{"text": "what is a token", "output_length": 9}, {"text": "and a stream of them", "delay": 20, "output_length": 5}, {"input_length": 33, "output_length": 12}]}
{"id": "file-2", "messages": [{"role": "user", "content": "first question here"}, {"role": "assistant", "content": "a recorded answer the client must not send"}, {"role": "user", "content": "second"}, {"role": "assistant", "content": "x"}, {"role": "user", "content": "third and last"}]}
{"session_id": "file-3", "input_length": 17, "output_length": 3}
{"session_id": "file-3", "text": "tab\tand\nnewline separated words", "delay": 10}
JSONL
"$bench" --url "$url" --endpoint chat --model tokchron-sim --sessions "$dir/sessions.jsonl" \
  --output-len fixed:7 --rate 20 --request-timeout 60 --id-prefix file- \
  --session-log "$dir/file.log" --profile canonical --progress never >"$dir/file.txt"
grep -q "^Sessions: 3 started, 3 completed every turn" "$dir/file.txt" ||
  { echo "report:"; cat "$dir/file.txt"; exit 1; }
kill -TERM $pid
wait $pid || true
trap - EXIT
python3 "$here/check_sessions.py" --server "$dir/server.jsonl" --report "$dir/synthetic.json" \
  --log "$dir/synthetic.log" --log "$dir/file.log" --system file-1=5
