#!/usr/bin/env bash
# demo.sh - the main job: skew absorbed by the switch, on the testbed, bound by
# the storage nodes and not by this machine.
#
# Installs what is missing and builds (scripts/setup.sh), then on
# conf/testbed.json (1 inline switch, 8 RocksDB nodes, 1 agent host; another
# config with SKL_DEMO_CONFIG, as bench/scale.sh does with 64 nodes):
#  1. Sizes the scale model. It measures the testbed's own ceiling: no
#     emulated service time, directory off, the same agent and concurrency as
#     the runs. It then gives every node an emulated capacity (node.workers
#     workers, each holding a request for the service time) such that the
#     cluster's total is CEILING_SHARE (40%) of that ceiling: the hottest node,
#     not the machine, limits a ring-only run.
#  2. Runs the same closed loop (95% reads, 192 in flight: 6 per emulated
#     server, so that a uniform run keeps the nodes busy and is bound by
#     them, not by how long a request takes) five times, each
#     measured after a warm-up of the same load (WARMUP, 3 s: a closed loop
#     needs a few seconds to pile its requests up at the hottest node, and the
#     directory to learn the hot set; what runs before is not steady state,
#     and only ops answered inside the window count): uniform
#     keys (directory on, the balanced reference), then at zipf 0.99 and at
#     zipf 1.2, ring only (directory off) and with the directory on.
#  3. Prints throughput (successes only), the error rate, the gain (directory
#     over ring at the same skew) beside per-node max/mean, draws
#     RUN/demo.png, and tears everything down, also on failure or Ctrl-C.
# Last line:
#   gain_099=X gain_12=Y dir_vs_uniform=Z dir_maxmean_099=A dir_maxmean_12=B
# (dir_vs_uniform: the zipf-0.99 directory run over the uniform run). Exits 3
# when a run's error rate is above 0.1% (flagged in the table).
#
# After each run, RUN/results/ also holds LABEL.stats.json and LABEL.cdt.json
# (the switch's counters and directory) and LABEL.rss (the nodes' total RSS,
# kB).
#
# Environment: SKL_DEMO_CONFIG (conf/testbed.json), SKL_RUN_DIR (run/demo),
# SKL_DEMO_KEYS (10000), SKL_DEMO_PRELOAD (1; 0: keys not preloaded),
# SKL_DEMO_CONCURRENCY (192), SKL_DEMO_WORKERS (4 per node), SKL_DEMO_DURATION (15 s per run),
# SKL_DEMO_WARMUP (3 s before each),
# SKL_DEMO_ZIPFS ("0.99 1.2"), SKL_DEMO_READ_RATIOS ("0.95"; each ratio runs
# uniform and every zipf, ring and directory; runs at ratios other than 0.95
# are labelled LABEL@wNN, NN the percentage of writes), CEILING_SHARE (0.4), SKL_SERVICE_TIME_US (skip
# the sizing and use this), SKL_DEMO_SKIP_SETUP=1 (do not run scripts/setup.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
[ "$(id -u)" = 0 ] || { echo "demo: must run as root (packages, network namespaces); as another user: sudo $0" >&2; exit 1; }
run=${SKL_RUN_DIR:-$repo/run/demo}
export SKL_RUN_DIR=$run
keys=${SKL_DEMO_KEYS:-10000}
concurrency=${SKL_DEMO_CONCURRENCY:-192}
duration=${SKL_DEMO_DURATION:-15}
warmup=${SKL_DEMO_WARMUP:-3}
zipfs=${SKL_DEMO_ZIPFS:-0.99 1.2}
read_ratios=${SKL_DEMO_READ_RATIOS:-0.95}
share=${CEILING_SHARE:-0.4}
t_start=$(date +%s)

[ -n "${SKL_DEMO_SKIP_SETUP:-}" ] || scripts/setup.sh --release
build=${SKL_BUILD:-$repo/build}
cdtctl=$build/switchd/cdtctl
mkdir -p "$run"
# The testbed's config with a 500 ms agent timeout: at the hottest node of a
# ring-only run the queue reaches tens of ms, and queueing is not loss. Nodes
# read the same value: they drop queued requests older than it (nobody waits
# for them any more). R = 1 (service.replicas): the demo measures the
# directory alone; with replica groups a ring-only run already spreads each
# key's reads over its R members (bench/replicas.sh measures groups).
template=${SKL_DEMO_CONFIG:-$repo/conf/testbed.json}
config=$run/$(basename "$template")
# Writes the copy; prints what the demo needs of it: the switch's control
# socket, the agent host, the number of nodes and their workers.
read -r socket agent_host nnodes workers < <(python3 - "$template" "$config" "${SKL_DEMO_WORKERS:-4}" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
agent = c.setdefault("agent", {})
agent["timeout_ms"] = max(agent.get("timeout_ms", 50), 500)
c.setdefault("node", {})["workers"] = int(sys.argv[3])
c["service"]["replicas"] = 1
json.dump(c, open(sys.argv[2], "w"), indent=1)
s = c["switches"][0]
print(s.get("control_socket", "/run/skewless/switch-%d.sock" % s["id"]), c["agents"][0]["name"],
      len(c["nodes"]), c["node"]["workers"])
PY
)
agent_ns=skl-$agent_host

teardown() { scripts/testbed.sh down "$config" >/dev/null 2>&1 || true; }
trap teardown EXIT
trap 'exit 130' INT TERM

teardown # a demo that crashed may have left its testbed behind
rm -rf "$run/data" "$run/results"
mkdir -p "$run/results"
agent() { ip netns exec "$agent_ns" "$build/agent/skewless" --config "$config" "$@"; }

# Wait until the nodes have answered what the switch forwarded them. A run's
# agent leaves its requests still queued behind (a ring-only run, several
# seconds' worth at its hottest node), and the nodes serve them; they are not
# the next run's load. Prints the wait; stops when the count has not fallen
# for 2 s (a reply lost on its way leaves its request counted), or after 60 s.
drain() {
	python3 - "$cdtctl" "$socket" <<'PY'
import json, subprocess, sys, time
t0 = time.monotonic()
seen = []  # (time, requests still forwarded)
while True:
    nodes = json.loads(subprocess.run([sys.argv[1], "--socket", sys.argv[2], "--json", "nodes"],
                                      capture_output=True, text=True).stdout)["nodes"]
    left = sum(max(n["inflight"], 0) for n in nodes)
    now = time.monotonic()
    seen.append((now, left))
    stuck = [l for t, l in seen if now - t >= 2]
    if left == 0 or (stuck and stuck[-1] <= left) or now - t0 > 60:
        break
    time.sleep(0.5)
print(f"demo: the nodes answered what was left of the last run in {time.monotonic() - t0:.1f} s"
      f" ({left} requests still forwarded)")
PY
}

# bench LABEL DIST on|off [SECONDS] [READ_RATIO]: one measured run into
# results/LABEL.json, then the switch's counters and directory and the nodes'
# RSS beside it.
bench() {
	local r=$run/results/$1
	drain
	"$cdtctl" --socket "$socket" directory "$3" >/dev/null
	# The switch's counters as the window opens, and the directory as it
	# stands three quarters into it.
	(sleep "$warmup"
	 "$cdtctl" --socket "$socket" --json stats >"$r.stats0.json"
	 sleep "$(python3 -c "print(0.75 * ${4:-$duration})")"
	 "$cdtctl" --socket "$socket" --json cdt show >"$r.cdt.json") &
	agent bench --keys "$keys" --dist "$2" --read-ratio "${5:-0.95}" --concurrency "$concurrency" \
		--warmup "$warmup" --duration "${4:-$duration}" --seed 7 --json "$r.json" >"$r.txt"
	"$cdtctl" --socket "$socket" --json stats >"$r.stats.json"
	wait
	cat "$run"/pids/n*.pid 2>/dev/null | while read -r pid; do
		awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null
	done | awk '{s += $1} END {print s + 0}' >"$r.rss"
}
ops_of() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["throughput_ops"]))' "$1"; }

if [ -z "${SKL_SERVICE_TIME_US:-}" ]; then
	echo "demo: sizing: the testbed's own ceiling (no service time, directory off, $concurrency in flight)"
	SKL_SERVICE_TIME_US=0 scripts/testbed.sh up "$config" >/dev/null
	bench ceiling zipf:0.99 off 5
	ceiling=$(ops_of "$run/results/ceiling.json")
	teardown
	# Cluster capacity = nodes x workers / service time = share x ceiling.
	SKL_SERVICE_TIME_US=$(python3 -c "import math; print(math.ceil($nnodes * $workers * 1e6 / ($share * $ceiling)))")
	echo "demo: ceiling $ceiling ops/s; $nnodes nodes x $workers workers at $SKL_SERVICE_TIME_US us per" \
		"request = $((nnodes * workers * 1000000 / SKL_SERVICE_TIME_US)) ops/s, $(python3 -c "print(round(100 * $share))")% of it"
fi
export SKL_SERVICE_TIME_US
# The agent's timeout (nodes read it too: they drop requests queued longer)
# at least twice the longest queue a ring-only run builds: every request in
# flight waiting at the hottest node, served by its workers one service time
# each. On a slow or busy machine the sizing gives longer service times, and
# a fixed timeout would turn queueing into errors.
python3 - "$config" "$concurrency" "$workers" "$SKL_SERVICE_TIME_US" <<'PY'
import json, math, sys
path, inflight, workers, service_us = sys.argv[1], *map(int, sys.argv[2:])
c = json.load(open(path))
queue_ms = inflight / workers * service_us / 1000
c["agent"]["timeout_ms"] = max(c["agent"]["timeout_ms"], math.ceil(2 * queue_ms))
json.dump(c, open(path, "w"), indent=1)
print(f"demo: agent timeout {c['agent']['timeout_ms']} ms (the longest queue: {queue_ms:.0f} ms)")
PY
echo "demo: bringing up $config (service time $SKL_SERVICE_TIME_US us per request, run dir $run)"
scripts/testbed.sh up "$config"
if [ "${SKL_DEMO_PRELOAD:-1}" = 1 ]; then
	echo "demo: preloading $keys keys"
	agent bench --keys "$keys" --preload --duration 0.1 --read-ratio 1 \
		--json "$run/results/preload.json" >/dev/null
fi

runs=()
measure() { # LABEL DIST on|off READ_RATIO
	echo "demo: run '$1': $2, directory $3, $(python3 -c "print(round(100 * $4))")% reads, $concurrency in flight (closed loop), ${warmup}s warm-up, ${duration}s measured"
	bench "$1" "$2" "$3" "$duration" "$4"
	runs+=("$1=$run/results/$1.json")
}
for ratio in $read_ratios; do
	suffix=$(python3 -c "r = $ratio; print('' if r == 0.95 else '@w%d' % round(100 * (1 - r)))")
	measure "uniform$suffix" uniform on "$ratio"
	for s in $zipfs; do
		measure "ring-$s$suffix" "zipf:$s" off "$ratio"
		measure "dir-$s$suffix" "zipf:$s" on "$ratio"
	done
done

capacity=$((workers * 1000000 / SKL_SERVICE_TIME_US)) # one node, ops/s
report=0
python3 scripts/demo_report.py --png "$run/demo.png" --capacity "$capacity" "${runs[@]}" |
	tee "$run/results/table.txt" || report=$?
teardown
trap - EXIT
echo "demo: done in $(($(date +%s) - t_start)) s; picture: $run/demo.png, results and logs: $run"
python3 - "$run/results" <<'PY'
import json, os, sys
labels = ("uniform", "ring-0.99", "dir-0.99", "ring-1.2", "dir-1.2")
res = {l: json.load(open(os.path.join(sys.argv[1], l + ".json"))) for l in labels
       if os.path.exists(os.path.join(sys.argv[1], l + ".json"))}
def ops(label):
    return res[label]["throughput_ops"] if label in res else float("nan")
def mm(label):
    return res[label]["load"]["max_over_mean"] if label in res else float("nan")
print(f"gain_099={ops('dir-0.99') / ops('ring-0.99'):.2f} gain_12={ops('dir-1.2') / ops('ring-1.2'):.2f} "
      f"dir_vs_uniform={ops('dir-0.99') / ops('uniform'):.2f} "
      f"dir_maxmean_099={mm('dir-0.99'):.3f} dir_maxmean_12={mm('dir-1.2'):.3f}")
PY
exit "$report"
