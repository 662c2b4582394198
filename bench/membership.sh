#!/usr/bin/env bash
# bench/membership.sh [--history FILE] - the cluster changes size under load.
#
# On a private one-arm testbed (conf/testbed-onearm.json, 8 nodes), a closed
# loop (8 in flight, 50% writes, uniform over 2000 keys) runs for DURATION
# seconds while a 9th node is added (`cdtctl ring apply`, the node started with
# `testbed.sh start`, --join) and, once that change is complete, node n3 is
# removed (weight 0: drained at ring.warmup_keys_per_s 40, ramp 5 s). Then a
# read-only pass reads the keys back. The
# driver is the e2e scenario (tests/e2e/e2e.py membership), which also checks
# the figures; its last line is printed last here:
#   ops=N errors=N moved_keys=N migrated=N seconds_to_migrate=S lost_acked=N
#   linearizable=yes|no
# ops and errors: the load's operations and its failed ones; moved_keys: keys
# whose home differs between the first and the last config; migrated: records
# the nodes moved (read through plus pushed by the warm-ups); seconds_to_migrate:
# the two changes, apply to complete; lost_acked: keys whose last acknowledged
# write a later read did not see; linearizable: tests/lincheck over the load
# and the read pass. With --history FILE, the load's history (the format of
# `skewless bench --history`) is copied to FILE.
#
# Environment: DURATION (40 s), SKL_TEST_PREFIX (namespaces, default
# skl-bench-; never a prefix another run uses). Needs root, a build in build/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
history=
while [ $# -gt 0 ]; do
	case $1 in
	--history) [ $# -ge 2 ] || { echo "membership.sh: --history needs a file" >&2; exit 64; }
		history=$(realpath -m "$2"); shift 2 ;;
	-h|--help) sed -n '2,23p' "$0"; exit 0 ;;
	*) echo "usage: $0 [--history FILE]" >&2; exit 64 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "membership.sh: must run as root (network namespaces): sudo $0" >&2; exit 1; }
build=${SKL_BUILD:-$repo/build}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
SKL_TEST_PREFIX=${SKL_TEST_PREFIX:-skl-bench-} SKL_MEMBERSHIP_SECONDS=${DURATION:-40} \
	SKL_MEMBERSHIP_HISTORY=$history \
	python3 "$repo/tests/e2e/e2e.py" "$build" membership 2>&1 | tee "$out" | grep -v '^ops='
rc=${PIPESTATUS[0]}
set -e
grep '^ops=' "$out" | tail -1
exit "$rc"
