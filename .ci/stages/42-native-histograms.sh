# Prometheus native histograms against a real Prometheus (Debian's 2.42): three replicas of the
# fleet example, each answering what the scraper's Accept header asks for, are scraped by two
# Prometheus servers on 127.0.0.1: one with --enable-feature=native-histograms (it asks for the
# protobuf exposition and stores the native histograms tokchron writes from its log_histograms)
# and one without (it asks for OpenMetrics and stores the classic buckets served alongside).
# examples/fleet's checker asks both for the fleet's P95 TTFT over sum(rate(...)) and requires:
# each answer equal to PromQL's algorithm on the replicas' own buckets; the native answer within
# its bucket bound (0.54 % at schema 7) of the exact P95 of all 12000 requests; and the classic
# answer outside that bound (the replicas put a narrow mode of requests just above a classic
# bucket edge, which linear interpolation across the 4.43 % wide classic bucket misplaces).
# It prints both errors next to the bound. Reuses stage 40's build tree and the fleet's
# binaries; everything started here is stopped on exit, failure included.
tc_need_pkgs prometheus prometheus-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libprotobuf-dev \
  protobuf-compiler
tc_scratch  # $work, and $pids: stopped on exit
dir=$(tc_dir g++-c++17)
tc_build g++-c++17 fleet_replica fleet_check
source "$TOKCHRON_ROOT/examples/fleet/fleet.sh"
ex=$dir/examples/fleet

echo "--- native histograms: three replicas, a native and a classic Prometheus on 127.0.0.1"
# Each replica's burst waits for 40 scrapes of each format, so both Prometheus servers, whichever
# started later, hold its state before the burst (rate()'s first sample).
fleet_start "$ex" "httplib httplib httplib" "150 250 400" --cluster-s 1 --cluster-share 0.08 \
  --wait-formats openmetrics,protobuf
fleet_prometheus classic
classic=$fleet_address
fleet_prometheus native --enable-feature=native-histograms
native=$fleet_address
if ! "$ex/fleet_check" --prometheus "$classic" --native-prometheus "$native" \
    --replicas "$fleet_dumps" --samples "$fleet_samples" --q 0.95 --timeout 120 --separate; then
  echo "--- native-histogram check failed; logs:"
  tail -n 20 "$work"/*.log "$work"/*/prometheus.log
  exit 1
fi
# Content negotiation: every replica was scraped as protobuf by the native Prometheus and as
# OpenMetrics by the other.
for i in 1 2 3; do
  grep -q "OpenMetrics scrapes: [1-9][0-9]*, protobuf scrapes: [1-9]" "$work/r$i.log" ||
    { cat "$work/r$i.log"; exit 1; }
done
