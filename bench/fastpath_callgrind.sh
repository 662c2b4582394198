#!/usr/bin/env bash
# bench/fastpath_callgrind.sh - instructions per packet of the fast path,
# counted exactly by valgrind's callgrind: the figure that does not move with
# the load of a shared machine, as bench/fastpath.sh's Mpps do.
#
#   bench/fastpath_callgrind.sh switchd|l3fwd [SECONDS] [OUT]
#
# The same input as bench/fastpath.sh: bench_pcapgen's 2048 requests (1000
# client ports) replayed by net_pcap, TX to net_null; switchd with 8 nodes
# and 1024 keys pinned (replica sets of 3), or l3fwd -E with one rule per
# flow (built by bench/fastpath.sh into $BUILD/l3fwd). PCAP=rep replays the
# nodes' replies instead (switchd only). The program runs under
# `valgrind --tool=callgrind --instr-atstart=no`; instrumentation is on for
# SECONDS (default 5) of the forwarding loop only. Instructions: the
# worker's loop inclusive (switchd: pipeline_poll, l3fwd: em_main_loop);
# packets: the calls of net_null's per-packet free in that window (exact).
# OUT (default /tmp/skl-callgrind.<program>.out, --dump-instr=yes) is for
# callgrind_annotate. Last line:
#   program=P packets=N instructions=I per_packet=X
set -euo pipefail
cd "$(dirname "$0")/.."
WHICH=${1:?usage: bench/fastpath_callgrind.sh switchd|l3fwd [SECONDS] [OUT]}
SECS=${2:-5}
OUT=${3:-/tmp/skl-callgrind.$WHICH.out}
BUILD=${BUILD:-build}
PCAP=${PCAP:-req}
PFX=${SKL_BENCH_PREFIX:-skl-fpcg-$$-}
command -v callgrind_control >/dev/null || { echo "fastpath_callgrind.sh: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
case $WHICH in
switchd) [ -x "$BUILD/switchd/skewless-switchd" ] || { echo "fastpath_callgrind.sh: build first (ninja -C $BUILD)" >&2; exit 1; } ;;
l3fwd) [ -x "$BUILD/l3fwd/l3fwd/build/l3fwd" ] || { echo "fastpath_callgrind.sh: run bench/fastpath.sh once first: it builds l3fwd" >&2; exit 1; } ;;
*) echo "fastpath_callgrind.sh: switchd or l3fwd, not '$WHICH'" >&2; exit 1 ;;
esac

TMP=$(mktemp -d /tmp/skl-fpcg.XXXXXX)
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$TMP" /var/run/dpdk/"$PFX"* # the EAL's runtime directories
}
trap cleanup EXIT INT TERM
"$BUILD/bench/bench_pcapgen" "$TMP/req.pcap" "$TMP/keys.txt" 2048 >/dev/null
"$BUILD/bench/bench_pcapgen" "$TMP/rep.pcap" /dev/null 2048 replies 8 >/dev/null
VG=(valgrind --tool=callgrind --instr-atstart=no --fair-sched=yes --dump-instr=yes
	--callgrind-out-file="$OUT")

if [ "$WHICH" = l3fwd ]; then
	for sport in $(seq 40000 40999); do
		echo "R10.77.0.100 10.77.0.201 7447 $sport 0x11 1"
	done >"$TMP/v4.cfg"
	"${VG[@]}" "$BUILD/l3fwd/l3fwd/build/l3fwd" -l 1 --no-huge -m 1024 --no-pci \
		--file-prefix "${PFX}l3" --log-level lib.eal:error \
		--vdev "net_pcap0,rx_pcap=$TMP/req.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" -- \
		-p 0x3 -E --parse-ptype --config="(0,0,1),(1,0,1)" \
		--rule_ipv4="$TMP/v4.cfg" --rule_ipv6="$BUILD/l3fwd/l3fwd/em_default_v6.cfg" \
		>"$TMP/log" 2>&1 &
	PID=$!
	for _ in $(seq 600); do grep -q "entering main loop" "$TMP/log" && break; sleep 0.2; done
	grep -q "entering main loop" "$TMP/log" || { cat "$TMP/log" >&2; exit 1; }
	LOOP=em_main_loop
else
	python3 - "$TMP" "$PCAP" <<'PY'
import json, sys
tmp, pcap = sys.argv[1], sys.argv[2]
cfg = {"service": {"vip": "10.77.0.100", "port": 7447, "mac": "02:53:4b:4c:00:64", "mtu": 1500},
       "switches": [{"id": 1, "name": "bench", "role": "inline", "lcores": [1],
                     "control_socket": f"{tmp}/sw.sock", "idle_sleep_us": 0,
                     "ports": [{"name": "in", "vdev": f"net_pcap0,rx_pcap={tmp}/{pcap}.pcap,infinite_rx=1"},
                               {"name": "out", "vdev": "net_null0,no-rx=1"}]}],
       "nodes": [{"id": i, "name": f"n{i}", "ip": f"10.78.0.{i + 1}", "port": 7447} for i in range(1, 9)],
       "directory": {"max_keys": 1024, "enabled": False}}
json.dump(cfg, open(f"{tmp}/fp.json", "w"))
PY
	"${VG[@]}" "$BUILD/switchd/skewless-switchd" -l 0,1 --no-huge -m 256 --no-pci \
		--file-prefix "${PFX}sw" --log-level lib.eal:error -- \
		--config "$TMP/fp.json" --switch bench --no-digest-timeout >"$TMP/log" 2>&1 &
	PID=$!
	for _ in $(seq 600); do [ -S "$TMP/sw.sock" ] && break; sleep 0.2; done
	[ -S "$TMP/sw.sock" ] || { cat "$TMP/log" >&2; exit 1; }
	ctl="$BUILD/switchd/cdtctl --socket $TMP/sw.sock"
	for i in $(seq 1 8); do
		$ctl neigh add "10.78.0.$((i + 1))" "02:00:00:00:00:$(printf %02x "$i")" out >/dev/null
	done
	$ctl neigh add 10.77.0.201 02:00:00:00:00:c1 out >/dev/null
	# As bench/fastpath.sh: 1024 keys, replica sets of 3 rotating over the nodes.
	split -n l/4 -d "$TMP/keys.txt" "$TMP/kpart."
	g=0
	for f in "$TMP"/kpart.*; do
		$ctl cdt pin - --force "n$((g % 8 + 1)),n$(((g + 1) % 8 + 1)),n$(((g + 2) % 8 + 1))" <"$f" >/dev/null
		g=$((g + 3))
	done
	LOOP=pipeline_poll
fi
sleep 2
callgrind_control -i on "$PID" >/dev/null 2>&1
sleep "$SECS"
callgrind_control -i off "$PID" >/dev/null 2>&1
kill -INT "$PID"
wait "$PID" || true
PID=
python3 - "$OUT" "$LOOP" "$WHICH" <<'PY'
import re, subprocess, sys
out, loop, which = sys.argv[1:]
def annotate(*args):
    return subprocess.run(["callgrind_annotate", *args, out], capture_output=True, text=True).stdout.splitlines()
# (l3fwd's loop is em_main_loop.cold: GCC moved it out of em_main_loop.)
ir = next(int(l.split()[0].replace(",", "")) for l in annotate("--inclusive=yes")
          if re.search(r":%s(\.cold)? " % loop, l))
# net_null's TX burst frees each packet with one call of a function of its
# own: the calls from inside librte_net_null to a librte_net_null function.
tree = annotate("--tree=caller")
packets = 0
for i, l in enumerate(tree):
    if not re.search(r"\*  .*librte_net_null", l):
        continue
    j, calls = i - 1, 0
    while j >= 0 and " < " in tree[j]:
        if "librte_net_null" in tree[j]:
            calls += int(re.search(r"\(([\d,]+)x\)", tree[j]).group(1).replace(",", ""))
        j -= 1
    packets = max(packets, calls)
if not packets:
    sys.exit("fastpath_callgrind.sh: no packets counted (did the program forward any?)")
print("program=%s packets=%d instructions=%d per_packet=%.1f" % (which, packets, ir, ir / packets))
PY
