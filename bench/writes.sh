#!/usr/bin/env bash
# bench/writes.sh - the directory against the ring as writes grow, at steep skew.
#
# The demo's node-bound setup (scripts/demo.sh: the nodes' emulated capacity
# sized to 40% of this machine's ceiling, 192 in flight, 10,000 keys
# preloaded), swept over write ratios WRITES (0 5 20 50 100, percent) and
# skews ZIPFS (0.99 1.2 1.5 1.8). At each write ratio it runs uniform keys
# (directory on: the balanced ceiling), then each zipf with the directory off
# (ring only) and on. Throughput counts successes only.
#
# Prints a table of gains (directory over ring, same zipf and ratio) and of
# directory over uniform, draws RUN/writes.png (gain against write ratio, one
# line per zipf), and ends with
#   w0= w5= w20= w50= w100= min_gain= min_vs_uniform_5=
# (w: zipf-0.99 gains; min_gain: the lowest gain over every zipf and ratio;
# min_vs_uniform_5: the lowest directory/uniform at 5% writes over the zipfs).
# Exits 3 when a run's errors are above 0.1% of its attempts.
#
# Environment: WRITES, ZIPFS, DURATION (10 s measured per run), and every
# variable of scripts/demo.sh (SKL_RUN_DIR defaults to run/writes).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
writes=${WRITES:-0 5 20 50 100}
export SKL_RUN_DIR=${SKL_RUN_DIR:-$repo/run/writes}
export SKL_DEMO_ZIPFS=${ZIPFS:-0.99 1.2 1.5 1.8}
export SKL_DEMO_DURATION=${DURATION:-10}
export SKL_DEMO_READ_RATIOS
SKL_DEMO_READ_RATIOS=$(for w in $writes; do python3 -c "print(round(1 - $w / 100, 4))"; done | xargs)

status=0
"$repo/scripts/demo.sh" || status=$?
# 3: a run over 0.1% errors (the table flags it); anything else: the demo failed.
[ "$status" = 0 ] || [ "$status" = 3 ] || exit "$status"
python3 "$repo/bench/writes_report.py" --png "$SKL_RUN_DIR/writes.png" "$SKL_RUN_DIR/results" \
	"$writes" "$SKL_DEMO_ZIPFS" || status=$?
exit "$status"
