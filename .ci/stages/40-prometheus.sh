# Exporters against the real tools (Debian's prometheus, prometheus-cpp-dev, libcpp-httplib-dev):
# promtool checks every exporter output; the prometheus-cpp adaptor test runs; then the fleet
# test: three replicas (two through prometheus-cpp's Exposer, one through cpp-httplib speaking
# OpenMetrics) and a real Prometheus server, all on 127.0.0.1 with a temporary config and data
# dir, and examples/fleet's checker compares PromQL's histogram_quantile with tokchron's merged
# P95. Everything started here is stopped on exit, failure included.
tc_need_pkgs prometheus prometheus-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libprotobuf-dev \
  protobuf-compiler
tc_scratch  # $work, and $pids: stopped on exit
dir=$(tc_dir g++-c++17)
# Stage 10 ran the exporter tests and checked the golden files; this stage builds, in stage 10's
# optimised tree, only what needs the packages installed above (configuring the tree again finds
# them when stage 10 ran before they were installed).
tc_build g++-c++17 tokchron_prometheus_cpp_test fleet_replica fleet_check
golden=$TOKCHRON_ROOT/tests/data/golden/export

echo "--- the prometheus-cpp adaptor test (a real Exposer on 127.0.0.1)"
"$dir/tests/tokchron_prometheus_cpp_test"

echo "--- promtool check metrics on every exporter output"
for f in "$golden"/*.prom; do
  if [[ $f == *vllm* ]]; then
    # vLLM's own names contain ':' (promtool reserves it for recording rules); nothing else may
    # be reported.
    out=$(promtool check metrics <"$f" 2>&1 || true)
    other=$(grep -v "should not contain ':'" <<<"$out" || true)
    [ -z "$other" ] || { echo "$f: $other"; exit 1; }
  else
    promtool check metrics <"$f"
  fi
  echo "ok $(basename "$f")"
done
# OpenMetrics: promtool's backfill parses it with Prometheus' strict OpenMetrics parser (it
# wants timestamps, so one is added to every sample).
for f in "$golden"/*.openmetrics; do
  sed -E '/^#/!s/$/ 1700000000/' "$f" >"$work/om.txt"
  promtool tsdb create-blocks-from openmetrics "$work/om.txt" "$work/om-blocks" >/dev/null
  echo "ok $(basename "$f") (OpenMetrics parser)"
done

echo "--- fleet: three replicas and a real Prometheus server on 127.0.0.1"
source "$TOKCHRON_ROOT/examples/fleet/fleet.sh"
ex=$dir/examples/fleet
# Different TTFT distributions, so the merge matters.
fleet_start "$ex" "prometheus-cpp prometheus-cpp httplib" "150 250 400"
fleet_prometheus prometheus
if ! "$ex/fleet_check" --prometheus "$fleet_address" --replicas "$fleet_dumps" --q 0.95 \
    --timeout 120; then
  echo "--- fleet check failed; logs:"
  tail -n 20 "$work"/*.log "$work"/*/prometheus.log
  exit 1
fi
# The httplib replica was scraped as OpenMetrics (Prometheus asks for it), and its scrapes
# parsed (the checker saw every replica's samples).
grep -q "OpenMetrics scrapes: [1-9]" "$work/r3.log" || { cat "$work/r3.log"; exit 1; }
