#!/usr/bin/env bash
# bench/skew.sh [CONFIG] - skew absorbed by the coherence directory, on the testbed.
#
# Brings up the testbed (8 nodes of equal emulated capacity: SKL_SERVICE_TIME_US
# per request, 2 workers each), then in one invocation runs the same closed-loop
# workload three times from the agent host's namespace:
#   ring      zipf 0.99 over KEYS keys, directory off (ring only)
#   dir       the same, directory on
#   uniform   uniform keys, directory on: the balanced reference
# Keys are not preloaded: with emulated capacity a request costs the same
# service time whether its key exists or not, and the 5% writes create the
# hot keys at once. Prints a table and, as its last line,
#   ring_maxmean=A dir_maxmean=B ring_ops=C dir_ops=D uniform_ops=E
# (maxmean: requests served by the busiest node over the mean). Writes
# skew.png (per-node load and throughput per second) to the run directory.
#
# Environment: KEYS (1000000), DURATION (15 s per run), CONCURRENCY (48),
# SKL_SERVICE_TIME_US (1000), SKL_RUN_DIR.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
config=${1:-$repo/conf/testbed.json}
keys=${KEYS:-1000000}
duration=${DURATION:-15}
concurrency=${CONCURRENCY:-48}
export SKL_SERVICE_TIME_US=${SKL_SERVICE_TIME_US:-1000}
export SKL_RUN_DIR=${SKL_RUN_DIR:-$repo/run/skew}
run=$SKL_RUN_DIR

"$repo/scripts/setup.sh" >/dev/null
trap '"$repo/scripts/testbed.sh" down "$config" >/dev/null 2>&1 || true' EXIT
"$repo/scripts/testbed.sh" down "$config" >/dev/null 2>&1 || true
"$repo/scripts/testbed.sh" up "$config"

agent=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["agents"][0]["name"])' "$config")
socket=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["switches"][0]; print(s.get("control_socket","/run/skewless/switch-%d.sock" % s["id"]))' "$config")
cdtctl() { "$repo/build/switchd/cdtctl" --socket "$socket" "$@"; }

workload() { # label dist
	ip netns exec "skl-$agent" "$repo/build/agent/skewless" --config "$config" bench \
		--keys "$keys" --dist "$2" --read-ratio 0.95 --value-size 128 \
		--concurrency "$concurrency" --duration "$duration" --json "$run/$1.json" >/dev/null
}

echo "skew: $keys keys, read ratio 0.95, closed loop x$concurrency, ${duration}s per run," \
	"8 nodes x 2 workers at ${SKL_SERVICE_TIME_US} us per request"
cdtctl directory off >/dev/null
workload ring zipf:0.99
cdtctl directory on >/dev/null
workload dir zipf:0.99
workload uniform uniform
cdtctl stats >"$run/switch-stats.txt"

python3 - "$run" <<'PY'
import json, sys
run = sys.argv[1]
res = {l: json.load(open(f"{run}/{l}.json")) for l in ("ring", "dir", "uniform")}
nodes = list(res["ring"]["per_node"])
print(f"{'run':8} {'ops/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'max/mean':>8} {'errors':>6}  per-node counts")
for l, r in res.items():
    print(f"{l:8} {r['throughput_ops']:9.0f} {r['latency_us']['p50']/1e3:7.2f} "
          f"{r['latency_us']['p99']/1e3:7.2f} {r['load']['max_over_mean']:8.3f} {r['errors']:6d}  "
          + " ".join(str(r['per_node'][n]) for n in nodes))
with open(f"{run}/per_node.dat", "w") as f:
    for n in nodes:
        f.write(n + " " + " ".join(str(res[l]["per_node"][n] / res[l]["duration_s"]) for l in res) + "\n")
with open(f"{run}/timeline.dat", "w") as f:
    # Whole seconds only: the last, partial second would read as a collapse.
    for i in range(min(int(r["duration_s"]) for r in res.values())):
        f.write(str(i) + " " + " ".join(str(r["timeline"][i]["ops"]) if i < len(r["timeline"]) else "NaN"
                                         for r in res.values()) + "\n")
print(f"ring_maxmean={res['ring']['load']['max_over_mean']:.3f} "
      f"dir_maxmean={res['dir']['load']['max_over_mean']:.3f} "
      f"ring_ops={res['ring']['throughput_ops']:.0f} dir_ops={res['dir']['throughput_ops']:.0f} "
      f"uniform_ops={res['uniform']['throughput_ops']:.0f}", file=open(f"{run}/last_line", "w"))
PY
gnuplot <<EOF
set terminal png size 1100,420
set output "$run/skew.png"
set multiplot layout 1,2
set key outside bottom center horizontal
set title "requests/s served per node"
set style data histograms
set style fill solid 0.8
set yrange [0:*]
plot "$run/per_node.dat" using 2:xtic(1) title "ring only", "" using 3 title "directory", "" using 4 title "uniform"
set title "throughput (ops/s) per second"
set style data linespoints
set xlabel "s"
plot "$run/timeline.dat" using 1:2 title "ring only", "" using 1:3 title "directory", "" using 1:4 title "uniform"
unset multiplot
EOF
echo "skew: plot $run/skew.png, switch counters $run/switch-stats.txt"
cat "$run/last_line"
