# The OTLP export checked by OpenTelemetry's own code: tests/export/otlp_dump.cpp writes
# tokchron's OTLP/JSON ExponentialHistogram export (export/otlp.hpp) of known samples and the
# same request as OTLP/HTTP protobuf (export/otlp_protobuf.hpp), and
# tests/export/otlp_node/otlp_check.js decodes both with the opentelemetry-proto messages that
# @opentelemetry/otlp-transformer ships and checks every field, every bucket against
# @opentelemetry/sdk-metrics' own index mapping and aggregation, and the sum within its derived
# bound (docs/library/exporters.md#otlp-checked-by-opentelemetrys-own-code); then the GenAI
# server metrics of a seeded run under otel_live_options the same way (genai_check.js), and the
# GenAI client metrics tokchron-bench exports (--otlp) of a scripted run with failed requests
# (tools/bench/tests/otlp_client_dump.cpp; the bench library is built by stage 10). The npm packages are
# pinned by package-lock.json and installed by `npm ci` once into the CI build tree, reused while
# the lock file is unchanged.
tc_need_node
tc_need_pkgs nlohmann-json3-dev libprotobuf-dev protobuf-compiler libboost-dev libssl-dev
tc_scratch  # $work: removed on exit

src=$TOKCHRON_ROOT/tests/export/otlp_node
lock_sum=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)
npmdir=$TOKCHRON_CI_BUILD/npm-otlp-$lock_sum
echo "--- node $(node --version), npm $(npm --version), the packages of $src/package-lock.json"
if [ ! -f "$npmdir/node_modules/@opentelemetry/sdk-metrics/package.json" ]; then
  rm -rf "$npmdir" && mkdir -p "$npmdir"
  cp "$src/package.json" "$src/package-lock.json" "$npmdir/"
  (cd "$npmdir" && npm ci --no-audit --no-fund --silent >/dev/null)
fi
# Node resolves require() next to the script: run copies beside node_modules.
cp "$src/otlp_common.js" "$src/otlp_check.js" "$src/genai_check.js" "$npmdir/"

dir=$(tc_dir g++-c++17)
tc_build g++-c++17 tokchron_otlp_dump
echo "--- tokchron's OTLP export of known samples, decoded by OpenTelemetry's packages"
"$dir/tests/tokchron_otlp_dump" "$work/request.json" "$work/known.json" "$work/request.pb"
node "$npmdir/otlp_check.js" "$work/request.json" "$work/known.json" "$work/request.pb"

echo "--- OpenTelemetry's GenAI server metrics (otel_live_options) exported as OTLP, decoded by"
echo "    OpenTelemetry's packages: names, units, buckets and attributes as the conventions say"
"$dir/tests/tokchron_otlp_dump" --genai "$work/genai.json" "$work/genai_known.json" \
  "$work/genai.pb"
node "$npmdir/genai_check.js" "$work/genai.json" "$work/genai_known.json" "$work/genai.pb"

echo "--- tokchron-bench's GenAI client metrics (--otlp) of a scripted run, decoded by"
echo "    OpenTelemetry's packages: names, units, buckets, attributes and error.type"
tc_build g++-c++17 tokchron_bench_otlp_dump
"$dir/tools/bench/tokchron_bench_otlp_dump" "$work/client.json" "$work/client_known.json"
node "$npmdir/genai_check.js" "$work/client.json" "$work/client_known.json"
