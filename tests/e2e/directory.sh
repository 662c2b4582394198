#!/usr/bin/env bash
# tests/e2e/directory.sh BUILD - the coherence directory on the testbed.
#
#  1. Under a skewed stream the top keys are in the directory within 1 s, and
#     reads of the hottest key are served by at least 3 nodes.
#  2. Linearizability: concurrent writers and readers on a few hot keys, in
#     inpath and in hint mode, while the directory installs and retires them
#     (it is switched off and on every 300 ms) and while replicas ack late
#     (nodes hold each RC_ACK 20 ms). The recorded histories go through
#     tests/lincheck/lincheck.py.
# Exits 77 (skipped) when namespaces or TAP devices cannot be made here.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$repo/build}
template=${SKL_TESTBED_CONFIG:-$repo/conf/testbed.json}
export SKL_BUILD=$build
# Every test's prefix (SKL_TEST_PREFIX, default skl-test-): scripts/sweep.sh
# clears what a killed run left.
prefix=${SKL_TEST_PREFIX:-skl-test-}
"$repo/scripts/sweep.sh" "$prefix" || exit 1
export SKL_RUN_DIR=$(mktemp -d /tmp/${prefix}dir.XXXXXX)
export SKL_NS_PREFIX=${prefix}dir- # never the namespaces of an operator's testbed
export SKL_SERVICE_TIME_US=200
export SKL_NODE_ARGS="--ack-delay-ms 20"
run=$SKL_RUN_DIR

if [ "$(id -u)" != 0 ] || [ ! -c /dev/net/tun ] ||
	! ip netns add "${SKL_NS_PREFIX}probe-$$" 2>/dev/null; then
	echo "directory e2e: SKIP: needs root, /dev/net/tun and network namespaces"
	exit 77
fi
ip netns del "${SKL_NS_PREFIX}probe-$$"
config=$run/testbed.json # private sockets and path: see private_config.py
# Sets sized by the default replica_factor (2), not conf/testbed.json's 1: the
# hottest key of step 1's stream (8% of the load, zipf 0.99 over 100,000 keys)
# then wants 3 copies, 1 + ceil(2 x 0.08 x 8), and step 1 checks that its reads
# are spread over them. A push cost of 0 copies keys whatever their writes
# (docs/design.md section 13), so that the lincheck steps, 30% writes, read
# from copies while the keys are written.
python3 "$repo/tests/e2e/private_config.py" "$template" "$config" \
	'{"directory": {"replica_factor": 2, "push_cost": 0}}'

cleanup() {
	"$repo/scripts/testbed.sh" down "$config" >/dev/null 2>&1 || true
	rm -rf "$run"
}
trap cleanup EXIT
"$repo/scripts/testbed.sh" up "$config" >/dev/null
cdtctl() { "$build/switchd/cdtctl" --config "$config" --switch 1 "$@"; }
agent=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["agents"][0]["name"])' "$config")
bench() { ip netns exec "$SKL_NS_PREFIX$agent" "$build/agent/skewless" --config "$config" bench "$@" >/dev/null; }
fail() { echo "directory e2e: FAIL: $*"; exit 1; }

# ---- 1. hot keys within 1 s; the hottest read from >= 3 nodes. ----------------
bench --keys 100000 --dist zipf:0.99 --read-ratio 0.95 --concurrency 32 --duration 4 \
	--history "$run/skew.history" --json "$run/skew.json" &
bench_pid=$!
sleep 1
cdtctl --json cdt show >"$run/cdt_1s.json"
wait $bench_pid
python3 - "$run" <<'PY' || fail "hot keys were not absorbed (see above)"
import json, sys
from collections import Counter, defaultdict
run = sys.argv[1]
cdt = json.load(open(f"{run}/cdt_1s.json"))
installed = {e["key"] for e in cdt["entries"]}
top = [f"key:{i}" for i in range(3)]
missing = [k for k in top if k not in installed]
print(f"after 1 s: {len(installed)} directory entries; top keys missing: {missing}")
served = defaultdict(Counter)
for line in open(f"{run}/skew.history"):
    op = json.loads(line)
    if op["op"] == "get" and op["status"] == "OK":
        served[op["key"]][op["node"]] += 1
hot = served["key:0"]
print(f"reads of key:0 served by {len(hot)} nodes: {dict(hot)}")
sys.exit(1 if missing or len(hot) < 3 else 0)
PY

# ---- 2. linearizability under churn and late acks, inpath and hint. ------------
churn() { # flip the directory off and on: every flip retires and re-installs
	for _ in $(seq 30); do
		cdtctl directory off >/dev/null; sleep 0.15
		cdtctl directory on >/dev/null; sleep 0.15
	done
}
for mode in inpath hint; do
	churn &
	churn_pid=$!
	bench --mode "$mode" --key-prefix "lin-$mode:" --keys 6 --dist zipf:0.99 --read-ratio 0.7 --value-size 24 \
		--concurrency 12 --duration 5 --history "$run/lin-$mode.history" \
		--json "$run/lin-$mode.json"
	kill $churn_pid 2>/dev/null || true
	wait $churn_pid 2>/dev/null || true
	cdtctl directory on >/dev/null
	python3 "$repo/tests/lincheck/lincheck.py" "$run/lin-$mode.history" ||
		fail "$mode mode: the history is not linearizable"
	python3 - "$run/lin-$mode.json" "$mode" <<'PY' || fail "$mode: replicas never served a read"
import json, sys
r = json.load(open(sys.argv[1]))
reads = {n: c for n, c in r["per_node"].items() if c}
print(f"{sys.argv[2]}: {r['ops']} ops, errors {r['errors']}, served by {len(reads)} nodes")
sys.exit(0 if len(reads) >= 3 else 1)
PY
done
cdtctl --json stats >"$run/stats.json"
python3 - "$run/stats.json" <<'PY' || fail "no install/retire churn happened"
import json, sys
d = json.load(open(sys.argv[1]))["directory"]
print(f"directory: {d['installs']} installs, {d['retires']} retires, replication lag "
      f"{d['replication_lag_us_mean']:.0f} us mean, {d['replica_reads']} replica reads")
sys.exit(0 if d["installs"] > 0 and d["retires"] > 0 else 1)
PY
echo "1 passed, 0 failed"
