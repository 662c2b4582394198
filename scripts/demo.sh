#!/usr/bin/env bash
# demo.sh - the main job: a skewed workload through the switch on the testbed.
#
# Installs what is missing and builds (scripts/setup.sh), brings up
# conf/testbed.json (1 switch, 8 RocksDB nodes with emulated capacity, 1 agent
# host) under RUN, preloads the keys, runs a zipf-0.99 closed-loop workload
# from the agent namespace through the switch once per labelled run, prints
# throughput, latency and per-node load side by side, draws RUN/demo.png
# (per-node load bars, throughput timeline) and tears the testbed down, also on
# failure or Ctrl-C.
#
# Capacity: each node has node.workers (2) workers holding every request for
# SKL_SERVICE_TIME_US (default 1000 us), so a node serves at most 2,000 ops/s
# and the 8 together 16,000; this 2-core machine pushes ~37,000 ops/s through
# switch, agent and nodes with no emulation (docs/operations.md "Testbed"), so
# the nodes, not the machine, are the bottleneck.
#
# Environment: SKL_RUN_DIR (default run/demo), SKL_SERVICE_TIME_US (1000),
# SKL_DEMO_KEYS (10000), SKL_DEMO_CONCURRENCY (64), SKL_DEMO_DURATION (15 s),
# SKL_DEMO_SKIP_SETUP=1 (do not run scripts/setup.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
[ "$(id -u)" = 0 ] || { echo "demo: must run as root (packages, network namespaces): sudo $0" >&2; exit 1; }
config=$repo/conf/testbed.json
run=${SKL_RUN_DIR:-$repo/run/demo}
export SKL_RUN_DIR=$run
export SKL_SERVICE_TIME_US=${SKL_SERVICE_TIME_US:-1000}
keys=${SKL_DEMO_KEYS:-10000}
concurrency=${SKL_DEMO_CONCURRENCY:-64}
duration=${SKL_DEMO_DURATION:-15}
# The emulated queue at the hottest node reaches concurrency x service time /
# workers (32 ms at the defaults): a long agent timeout keeps that queueing
# from being mistaken for loss (retries would only add load).
timeout_ms=500
t_start=$(date +%s)

[ -n "${SKL_DEMO_SKIP_SETUP:-}" ] || scripts/setup.sh --release
build=${SKL_BUILD:-$repo/build}
cdtctl=$build/switchd/cdtctl
socket=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["switches"][0]; print(s.get("control_socket", "/run/skewless/switch-%d.sock" % s["id"]))' "$config")

teardown() { scripts/testbed.sh down "$config" >/dev/null 2>&1 || true; }
trap teardown EXIT
trap 'exit 130' INT TERM

# A previous demo that crashed may have left its testbed behind.
scripts/testbed.sh down "$config" >/dev/null
rm -rf "$run/data" "$run/results"
mkdir -p "$run/results"
echo "demo: bringing up $config (service time ${SKL_SERVICE_TIME_US} us per request, run dir $run)"
scripts/testbed.sh up "$config"

agent() { ip netns exec skl-a1 "$build/agent/skewless" --config "$config" "$@"; }

echo "demo: preloading $keys keys"
agent bench --keys "$keys" --preload --duration 0.1 --read-ratio 1 --timeout "$timeout_ms" \
	--json "$run/results/preload.json" >/dev/null

# workload LABEL on|off: one measured run, the directory on or off, into results/LABEL.json.
runs=()
workload() {
	local label=$1
	"$cdtctl" --socket "$socket" directory "$2" >/dev/null
	echo "demo: run '$label': zipf-0.99, 95% reads, $concurrency in flight (closed loop), ${duration}s"
	agent bench --keys "$keys" --dist zipf:0.99 --read-ratio 0.95 --concurrency "$concurrency" \
		--duration "$duration" --timeout "$timeout_ms" --seed 7 \
		--json "$run/results/$label.json" >"$run/results/$label.txt"
	runs+=("$label=$run/results/$label.json")
}

workload ring off
workload directory on

# One node's capacity: node.workers / service time.
capacity=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); t=int(sys.argv[2])
print(c.get("node", {}).get("workers", 2) * 1000000 // t if t else 0)' "$config" "$SKL_SERVICE_TIME_US")
python3 scripts/demo_report.py --png "$run/demo.png" --capacity "$capacity" "${runs[@]}" | tee "$run/results/table.txt"
teardown
trap - EXIT
echo "demo: done in $(($(date +%s) - t_start)) s; picture: $run/demo.png, results and logs: $run"
