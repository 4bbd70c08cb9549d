# The fleet's processes, for the CI stages that run it (.ci/stages/40-prometheus.sh,
# .ci/stages/42-native-histograms.sh). Sourced after tc_scratch (.ci/lib.sh): everything
# started here goes to $pids and is stopped on exit; files go to $work. Everything listens on
# 127.0.0.1 only.

# fleet_start EX "SERVER..." "MEDIAN_MS..." [REPLICA_ARG...]: starts replicas r1, r2, ... (one
# per server, examples/fleet/replica.cpp; 4000 requests each after 40 scrapes, of each format
# with --wait-formats, seeds 11, 12, ...), waits for their ports (30 s at most), and sets
# fleet_targets (the scrape targets, comma-separated), fleet_dumps and fleet_samples
# (NAME=FILE,... for fleet_check).
fleet_start() {
  local ex=$1 i n
  local -a servers medians
  read -r -a servers <<<"$2"
  read -r -a medians <<<"$3"
  shift 3
  fleet_targets="" fleet_dumps="" fleet_samples=""
  for i in "${!servers[@]}"; do
    n=r$((i + 1))
    "$ex/fleet_replica" --name "$n" --server "${servers[$i]}" --seed $((i + 11)) \
      --median-ms "${medians[$i]}" --requests 4000 --wait-scrapes 40 \
      --port-file "$work/$n.port" --dump "$work/$n.dump" --samples "$work/$n.samples" "$@" \
      >"$work/$n.log" 2>&1 &
    pids+=($!)
  done
  local end=$((SECONDS + 30))
  for i in "${!servers[@]}"; do
    n=r$((i + 1))
    while [ ! -s "$work/$n.port" ] && [ $SECONDS -lt $end ]; do sleep 0.1; done
    [ -s "$work/$n.port" ] || { echo "replica $n wrote no port within 30 s"; cat "$work/$n.log"; return 1; }
    fleet_targets+="${fleet_targets:+,}127.0.0.1:$(cat "$work/$n.port")"
    fleet_dumps+="${fleet_dumps:+,}$n=$work/$n.dump"
    fleet_samples+="${fleet_samples:+,}$n=$work/$n.samples"
  done
}

# fleet_prometheus NAME [PROMETHEUS_FLAG...]: a real Prometheus (tc_prometheus, .ci/lib.sh)
# scraping fleet_targets every 250 ms, its configuration, data and log under $work/NAME; sets
# fleet_address to its host:port.
fleet_prometheus() {
  local name=$1
  shift
  mkdir -p "$work/$name"
  TC_SCRAPE_INTERVAL=250ms tc_prometheus "$work/$name" fleet "$fleet_targets" "$@"
  fleet_address=127.0.0.1:$prom_port
}
