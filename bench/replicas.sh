#!/usr/bin/env bash
# bench/replicas.sh - replica groups on the demo's node-bound setup.
#
# conf/testbed.json (1 inline switch, 8 RocksDB nodes), the nodes' emulated
# capacity sized as scripts/demo.sh sizes it (40% of the testbed's own
# ceiling; SKL_SERVICE_TIME_US skips the sizing), 192 in flight, zipf 0.99,
# 95% reads over 10,000 preloaded keys, the directory on. Runs R = 1, 2 and 3
# (service.replicas), each on its own testbed, DURATION seconds measured after
# 3 s of warm-up; then R = 2 again with n3 killed -9 a third into the window
# (not restarted; service.repair_after_ms 2000, so that its repair runs in the
# window: a line before the last says when n3 was left out and how long the
# joins took), and a read pass over every key after it. Throughput counts
# successes only. Last line:
#   r1_ops= r2_ops= r3_ops= r2_vs_r1= kill_errors= kill_dip= lost_acked=
# (kill_dip: throughput from 1 s after the kill to the end over throughput
# before it; with 8 nodes, 7/8 is what the seven left can carry; lost_acked:
# keys whose last acknowledged write the read pass did not see). Exits 3 when
# the kill run's errors are over 0.1%, a write was lost, or the repair did not end.
#
# Environment: DURATION (15 s), SKL_SERVICE_TIME_US, SKL_TEST_PREFIX
# (namespaces, default skl-bench-). Needs root and a build in build/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "replicas.sh: must run as root (network namespaces): sudo $0" >&2; exit 1; }
exec python3 "$repo/bench/replicas.py" "${SKL_BUILD:-$repo/build}"
