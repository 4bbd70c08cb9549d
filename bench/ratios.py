#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Ratios inside one tokchron_bench run, from its JSON output (--benchmark_out=FILE).

Per benchmark: the median CPU time per item (per sample for inserts, per query, per merge of
8 shards). Then today's log_histogram over the baseline (`v0_histogram`, tokchron's first
log_histogram, bench/baseline/log_histogram_v0.hpp) for every benchmark that exists in both forms,
and the batch over the single add in each separate translation unit (batch_tu/...). A ratio below 1 means today's is faster.

  tokchron_bench --benchmark_filter=... --benchmark_repetitions=5 \\
      --benchmark_enable_random_interleaving=true --benchmark_out=run.json
  python3 bench/ratios.py run.json
"""
import json
import sys


def per_item_ns(row):
    """Median CPU nanoseconds per item (items_per_second when set, else per iteration)."""
    if row.get("items_per_second"):
        return 1e9 / row["items_per_second"]
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[row.get("time_unit", "ns")]
    return row["cpu_time"] * scale


def main(path):
    with open(path) as f:
        rows = json.load(f)["benchmarks"]
    med = {}
    for r in rows:
        if r.get("run_type") == "aggregate" and r.get("aggregate_name") != "median":
            continue
        name = r.get("run_name", r["name"])
        med[name] = r
    med = dict(sorted(med.items()))
    print("| benchmark | median ns per item |")
    print("|---|---|")
    for name, r in med.items():
        print(f"| `{name}` | {per_item_ns(r):.3f} |")
    counters = ("memory_bytes", "serialized_bytes", "err_p50", "err_p99", "err_p999")
    print()
    print("| benchmark | " + " | ".join(counters) + " |")
    print("|---|" + "---|" * len(counters))
    for name, r in med.items():
        if "memory_bytes" in r or ("err_p50" in r and "histogram" in name):
            print(f"| `{name}` | " + " | ".join(f"{r.get(c, float('nan')):.6g}" for c in counters) + " |")
    print()
    print("| today / baseline (v0) | ratio |")
    print("|---|---|")
    for name, r in med.items():
        if name.startswith("BM_footprint"):  # its counters are the point, not its time
            continue
        for now, old in (("tokchron::log_histogram", "v0_histogram"), ("/now/", "/v0/")):
            if now in name and name.replace(now, old) in med:
                ratio = per_item_ns(r) / per_item_ns(med[name.replace(now, old)])
                print(f"| `{name}` | {ratio:.3f} |")
    print()
    print("| batch / add(x), per sample | ratio |")
    print("|---|---|")
    for name, r in med.items():
        if name.startswith("BM_insert_batch256<"):
            single = name.replace("BM_insert_batch256<", "BM_insert<")
            if single in med:
                print(f"| `{name}` | {per_item_ns(r) / per_item_ns(med[single]):.3f} |")
    print()
    print("| batch / add(x), per sample, own translation unit | ratio |")
    print("|---|---|")
    for name, r in med.items():
        if name.startswith("batch_tu/") and "/add_batch256/" in name:
            single = name.replace("/add_batch256/", "/add_x/")
            if single in med:
                print(f"| `{name}` | {per_item_ns(r) / per_item_ns(med[single]):.3f} |")


if __name__ == "__main__":
    main(sys.argv[1])
