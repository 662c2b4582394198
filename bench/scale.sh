#!/usr/bin/env bash
# bench/scale.sh - the 64-node scale model: 64 real skewless-node processes
# (conf/scale64.json: one one-arm switch whose single TAP port joins a fabric
# bridge holding every node's and the agent's address; RocksDB per node with a
# 1 MB block cache and 1 MB memtables), where skew hurts most.
#
# Runs scripts/demo.sh's engine on it: the testbed's ceiling is measured
# first (no service time, directory off, the same agent and concurrency), the
# nodes get 40% of it as emulated capacity, then uniform keys, ring only and
# the directory at zipf 0.99 over 1M keys (not preloaded: with emulated
# capacity a request costs the same whether its key exists or not), CONCURRENCY
# (384) in flight, DURATION (60 s) each, measured after WARMUP (10 s) of the
# same load: a ring-only run needs about CONCURRENCY / one node's capacity
# (384 / 44 ops/s, some 9 s) to pile its requests up at the hottest node, and
# runs faster than its steady state until then. 60 s, because max/mean is of
# counts: a node serves some 30 requests a second, and over 20 s the largest
# of 64 counts drawn around the same mean is already about 1.10 times it
# (counting noise, sd 1 / sqrt(600) each); over 60 s about 1.06.
# Prints the demo's table, then the directory's own figures during the
# directory run (installs and retires per second, replication lag, the
# replica sets of the hottest keys) and the nodes' total RSS, and as its last
# line:
#   nodes=64 ring_ops=A dir_ops=B uniform_ops=C ring_maxmean=D dir_maxmean=E dir_err=F
# Exits 3 when a run's error rate passed 0.1% (flagged in the table).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
run=${SKL_RUN_DIR:-$repo/run/scale64}
export SKL_RUN_DIR=$run SKL_UP_TIMEOUT=${SKL_UP_TIMEOUT:-120}
SKL_DEMO_CONFIG=$repo/conf/scale64.json SKL_DEMO_KEYS=1000000 SKL_DEMO_PRELOAD=0 \
	SKL_DEMO_WORKERS=2 SKL_DEMO_ZIPFS=0.99 SKL_DEMO_CONCURRENCY=${CONCURRENCY:-384} \
	SKL_DEMO_DURATION=${DURATION:-60} SKL_DEMO_WARMUP=${WARMUP:-10} "$repo/scripts/demo.sh"
rc=$?
[ -f "$run/results/dir-0.99.json" ] || { echo "scale: the runs did not complete (exit $rc)"; exit "${rc/#0/1}"; }
python3 - "$run/results" <<'PY'
import json, sys
d = sys.argv[1]
res = {l: json.load(open(f"{d}/{l}.json")) for l in ("uniform", "ring-0.99", "dir-0.99")}
s0 = json.load(open(f"{d}/dir-0.99.stats0.json"))["directory"]
s1 = json.load(open(f"{d}/dir-0.99.stats.json"))["directory"]
secs = res["dir-0.99"]["duration_s"]
cdt = json.load(open(f"{d}/dir-0.99.cdt.json"))["entries"]
hot = sorted(cdt, key=lambda e: -(e["reads"] + e["replica_reads"]))[:8]
rss = int(open(f"{d}/dir-0.99.rss").read()) / 1024
print(f"scale: directory during the zipf-0.99 run: {len(cdt)} entries at 3/4 of the run, "
      f"{(s1['installs'] - s0['installs']) / secs:.1f} installs/s, "
      f"{(s1['retires'] - s0['retires']) / secs:.1f} retires/s, "
      f"replication lag {s1['replication_lag_us_mean'] / 1000:.2f} ms mean, "
      f"{s1['replicates_sent'] - s0['replicates_sent']} REPLICATEs")
for e in hot:
    print(f"scale:   {e['key']:<12}"
          f" reads {e['reads'] + e['replica_reads']:>7} ({e['replica_reads']} at copies)"
          f"  replicas {len(e['replicas']):>2} (want {e['want_replicas']})  home {e['home']}")
print(f"scale: nodes' total RSS {rss:.0f} MB")
# A closed loop piles its requests up at the slowest nodes over the first
# seconds: the second half of each run is its steady state.
for l, x in res.items():
    tl = [t["ops"] for t in x["timeline"] if t["t"] + 1 <= x["duration_s"]]
    half = tl[len(tl) // 2:]
    print(f"scale: {l}: {sum(half) / len(half):.0f} ops/s over the second half of the run")
r, di, u = res["ring-0.99"], res["dir-0.99"], res["uniform"]
print(f"nodes=64 ring_ops={r['throughput_ops']:.0f} dir_ops={di['throughput_ops']:.0f} "
      f"uniform_ops={u['throughput_ops']:.0f} ring_maxmean={r['load']['max_over_mean']:.3f} "
      f"dir_maxmean={di['load']['max_over_mean']:.3f} dir_err={di['error_rate']:.4f}")
PY
exit "$rc"
