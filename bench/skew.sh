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
#   ring_err=F dir_err=G uniform_err=H
# (ops: successful operations per second; maxmean: successes served by the
# busiest node over the mean; err: errors as a fraction of attempts). Writes
# skew.png (per-node load and throughput per second, scripts/demo_report.py)
# to the run directory. Exits 3 when a run's error rate is above 0.1%
# (flagged in the table). scripts/demo.sh sizes the node capacity to the
# machine and covers zipf 1.2 too; this one keeps a fixed capacity.
#
# Environment: KEYS (1000000), DURATION (15 s per run), CONCURRENCY (48),
# SKL_SERVICE_TIME_US (1000), SKL_RUN_DIR.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
template=${1:-$repo/conf/testbed.json}
keys=${KEYS:-1000000}
duration=${DURATION:-15}
concurrency=${CONCURRENCY:-48}
export SKL_SERVICE_TIME_US=${SKL_SERVICE_TIME_US:-1000}
export SKL_RUN_DIR=${SKL_RUN_DIR:-$repo/run/skew}
run=$SKL_RUN_DIR
# A copy with R = 1: this measures the directory alone (with replica groups
# a ring-only run already spreads each key's reads over its members).
mkdir -p "$run"
config=$run/$(basename "$template")
python3 "$repo/tests/e2e/private_config.py" "$template" "$config" '{"service": {"replicas": 1}}'

"$repo/scripts/setup.sh" --release >/dev/null
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

# Table and picture as the demo draws them; then the figures as one line.
capacity=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); t=int(sys.argv[2])
print(c.get("node", {}).get("workers", 2) * 1000000 // t if t else 0)' "$config" "$SKL_SERVICE_TIME_US")
report=0
python3 "$repo/scripts/demo_report.py" --png "$run/skew.png" --capacity "$capacity" \
	"ring-0.99=$run/ring.json" "dir-0.99=$run/dir.json" "uniform=$run/uniform.json" || report=$?
echo "skew: plot $run/skew.png, switch counters $run/switch-stats.txt"
python3 - "$run" <<'PY'
import json, sys
res = {l: json.load(open(f"{sys.argv[1]}/{l}.json")) for l in ("ring", "dir", "uniform")}
print(f"ring_maxmean={res['ring']['load']['max_over_mean']:.3f} "
      f"dir_maxmean={res['dir']['load']['max_over_mean']:.3f} "
      f"ring_ops={res['ring']['throughput_ops']:.0f} dir_ops={res['dir']['throughput_ops']:.0f} "
      f"uniform_ops={res['uniform']['throughput_ops']:.0f} "
      f"ring_err={res['ring']['error_rate']:.4f} dir_err={res['dir']['error_rate']:.4f} "
      f"uniform_err={res['uniform']['error_rate']:.4f}")
PY
exit "$report"
