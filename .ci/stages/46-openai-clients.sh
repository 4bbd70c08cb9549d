# Real clients nobody here wrote against `batching-executor serve` (docs/tools/serve.md): the official
# OpenAI Node SDK (npm `openai`, pinned, on Debian's nodejs) and `curl -N` stream chat and
# completions with stream_options.include_usage from a server on 127.0.0.1. Both must parse
# every event without error, and their content-chunk counts, token counts, usage and finish
# reasons must equal the server's own trace (tests/data/openai/stream_client.mjs). The server is
# stopped with SIGINT (which writes the trace) and everything started here is stopped on exit,
# failure included.
tc_need_node
tc_need_pkgs curl
openai_version=5.23.2  # no dependencies; states Node 20+, runs on Debian 12's Node 18 (tested in CI)
tc_scratch  # $work, and $pids: stopped on exit

echo "--- node $(node --version), npm $(npm --version), openai@$openai_version"
# The SDK is installed once into the CI build tree and reused while its version matches.
sdk=$TOKCHRON_CI_BUILD/npm-openai-$openai_version
if [ ! -f "$sdk/node_modules/openai/package.json" ]; then
  rm -rf "$sdk" && mkdir -p "$sdk"
  (cd "$sdk" && npm init -y >/dev/null &&
    npm install --no-audit --no-fund --silent "openai@$openai_version" >/dev/null)
fi
# Node resolves `import 'openai'` next to the script: run a copy beside node_modules.
cp "$TOKCHRON_ROOT/tests/data/openai/stream_client.mjs" "$sdk/stream_client.mjs"
client=$sdk/stream_client.mjs

tc_release_tools

echo "--- serve on 127.0.0.1 (sim h200, so steps take a few ms)"
"$bx" serve --host 127.0.0.1 --port 0 --hw h200 --served-model tokchron-sim \
  --trace-out "$work/trace.jsonl" >"$work/serve.log" 2>&1 &
server=$!
pids+=("$server")
base=$(tc_serve_url "$work/serve.log")
curl -fsS "$base/health" >/dev/null

echo "--- the OpenAI Node SDK: chat and completions, streamed with include_usage"
node "$client" sdk "$base/v1" tokchron-sim chat 40 "$work/sdk-chat.json"
node "$client" sdk "$base/v1" tokchron-sim completions 33 "$work/sdk-completions.json"

echo "--- curl -N: chat and completions"
curl -fsS -N "$base/v1/chat/completions" -H 'Content-Type: application/json' -d \
  '{"model":"tokchron-sim","messages":[{"role":"user","content":"hello from curl"}],"max_tokens":25,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' \
  >"$work/curl-chat.sse"
curl -fsS -N "$base/v1/completions" -H 'Content-Type: application/json' -d \
  '{"model":"tokchron-sim","prompt":"hello from curl","max_tokens":17,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' \
  >"$work/curl-completions.sse"
node "$client" sse "$work/curl-chat.sse" "$work/curl-chat.json"
node "$client" sse "$work/curl-completions.sse" "$work/curl-completions.json"

echo "--- stop the server (SIGINT writes its trace) and compare"
kill -INT "$server"
wait "$server" || { echo "serve exited with $?"; cat "$work/serve.log"; exit 1; }
pids=()
[ "$(wc -l <"$work/trace.jsonl")" -eq 4 ] || { echo "the trace has $(wc -l <"$work/trace.jsonl") requests, 4 were sent"; cat "$work/trace.jsonl"; exit 1; }
node "$client" check "$work/trace.jsonl" "$work"/sdk-chat.json "$work"/sdk-completions.json \
  "$work"/curl-chat.json "$work"/curl-completions.json
