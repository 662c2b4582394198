#!/usr/bin/env bash
# bench/sim.sh - the cluster beyond one machine, in skewless-sim.
#
# The simulator routes with the switch's own policy code (docs/benchmarks.md,
# "bench/sim.sh"). For each of NODES (8 16 32 64 128 256 512 1024) it runs, closed
# loop with 6 requests in flight per node, 95% reads over KEYS (1M) keys, the
# directory with up to MAX_REPLICAS (128) replicas per key (directory.max_replicas):
#   uniform   uniform keys, directory on (the balanced reference)
#   ring      zipf 0.99 and 1.2, directory off
#   dir       zipf 0.99 and 1.2, directory on
# then the reaction to hot-in changes (zipf 0.99, the 128 coldest keys become
# the hottest every 2 s, directory on) at 64 and 1024 nodes; at 1024 nodes the
# same at READ_MOSTLY (0.999) reads (zipf 0.99, and its hot-in), read-only
# with up to 16 replicas per key (the bound before), and the replicas,
# entries and switch memory max/mean <= 1.10 needs; and the simulator's speed
# (10 s simulated at 1M ops/s, 1024 nodes, 1M keys).
# Nodes: 2 workers, 1000 us mean service time (exponential), 25 us per hop.
# Prints the scaling table and, as its last line,
#   nodes=1024 ring_maxmean=A dir_maxmean=B dir_vs_ring=C dir_vs_uniform=D rebalance_ms=E
# (zipf 0.99; ratios of throughput). Writes sim.png (throughput against
# nodes) and every run's JSON to the run directory.
#
# Environment: NODES, KEYS (1000000), SECONDS_RUN (3 simulated seconds
# measured, after 1 of warm-up), SEED (1), MAX_REPLICAS (128), READ_MOSTLY
# (0.999), WRITE_THROUGH (on: homes push
# writes of directory keys to their holders, as nodes/repl.c does; off: the
# protocol before it), SKL_RUN_DIR (run/sim).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
nodes_list=${NODES:-8 16 32 64 128 256 512 1024}
keys=${KEYS:-1000000}
seconds=${SECONDS_RUN:-3}
seed=${SEED:-1}
through=${WRITE_THROUGH:-on}
max_replicas=${MAX_REPLICAS:-128}
read_mostly=${READ_MOSTLY:-0.999}
run=${SKL_RUN_DIR:-$repo/run/sim}
sim=$repo/build/sim/skewless-sim
mkdir -p "$run"

if [ ! -x "$sim" ]; then
	(cd "$repo" && (test -d build || meson setup build >/dev/null) && ninja -C build sim/skewless-sim >/dev/null)
fi

one() { # label nodes dist directory [extra args...]
	local label=$1 n=$2 dist=$3 dir=$4
	shift 4
	"$sim" --nodes "$n" --keys "$keys" --dist "$dist" --read-ratio 0.95 --directory "$dir" \
		--seconds "$seconds" --warmup 1 --seed "$seed" --concurrency $((6 * n)) \
		--write-through "$through" --max-replicas "$max_replicas" "$@" \
		--json "$run/$label.json" >/dev/null
}

start=$(date +%s)
echo "sim: $keys keys, read ratio 0.95, closed loop x6 per node, ${seconds} s measured after 1 s," \
	"2 workers x 1000 us (exponential) per node, 25 us per hop, write-through $through," \
	"up to $max_replicas replicas per key"
for n in $nodes_list; do
	one "n$n-uniform" "$n" uniform on
	for s in 0.99 1.2; do
		one "n$n-ring-$s" "$n" "zipf:$s" off
		one "n$n-dir-$s" "$n" "zipf:$s" on
	done
done
for n in 64 1024; do
	case " $nodes_list " in *" $n "*) ;; *) continue ;; esac
	one "n$n-hotin" "$n" zipf:0.99 on --dynamic hot-in:2 --seconds 6
done
case " $nodes_list " in
*" 1024 "*)
	one n1024-mostly 1024 zipf:0.99 on --read-ratio "$read_mostly"
	one n1024-mostly-hotin 1024 zipf:0.99 on --read-ratio "$read_mostly" --dynamic hot-in:2 --seconds 6
	one n1024-readonly-16 1024 zipf:0.99 on --read-ratio 1 --max-replicas 16
	# Speed: 10 simulated seconds at 1M requests/s (open loop), 1024 nodes, 1M keys.
	"$sim" --nodes 1024 --keys 1000000 --dist zipf:0.99 --read-ratio 0.95 --directory on \
		--rate 1000000 --seconds 10 --warmup 0 --seed "$seed" --write-through "$through" \
		--max-replicas "$max_replicas" \
		--json "$run/speed.json" >/dev/null
	;;
esac
python3 "$repo/bench/sim_report.py" "$run" $nodes_list
echo "($(($(date +%s) - start)) s)" >&2
