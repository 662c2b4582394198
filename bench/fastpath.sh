#!/usr/bin/env bash
# bench/fastpath.sh - switch fast-path throughput against dpdk-testpmd (macswap)
# on the same vdevs and the same pcap, one worker lcore each.
#
#   bench/fastpath.sh [SECONDS]        (default 5 s of measurement per run)
#
# Input: bench_pcapgen's pcap of 2048 distinct-key requests (GET, every 10th
# PUT) to the VIP, replayed by net_pcap (rx_pcap=...,infinite_rx=1); output:
# net_null. switchd runs with 1024 keys pinned in the directory (every other
# key; replica sets of 3 nodes) and 8, then 64 nodes, all reachable through
# the net_null port (static neighbours). Throughput is the TX counter delta of
# the output port over the measurement window; cycles/packet = TSC Hz / pps
# (the worker is a busy poller) and, for switchd, also the worker's own
# cycles per packet while busy. Last line:
#   switchd_mpps=X testpmd_mpps=Y ratio=Z     (X: the 8-node run)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-5}
BUILD=${BUILD:-build}
[ -x "$BUILD/switchd/skewless-switchd" ] || { echo "fastpath.sh: build first (ninja -C $BUILD)" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "fastpath.sh: dpdk-testpmd missing (apt-get install dpdk-dev)" >&2; exit 1; }

TMP=$(mktemp -d /tmp/skl-fastpath.XXXXXX)
SW_PID=
cleanup() {
	[ -n "$SW_PID" ] && kill "$SW_PID" 2>/dev/null && wait "$SW_PID" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

"$BUILD/bench/bench_pcapgen" "$TMP/req.pcap" "$TMP/keys.txt" 2048
"$BUILD/bench/bench_pcapgen" "$TMP/rep.pcap" /dev/null 2048 replies 8

# make_config NODES PCAP -> $TMP/fp-NODES.json
make_config() {
	python3 - "$1" "$TMP" "$2" <<'PY'
import json, sys
n, tmp, pcap = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cfg = {
  "service": {"vip": "10.77.0.100", "port": 7447, "mac": "02:53:4b:4c:00:64", "mtu": 1500},
  "switches": [{"id": 1, "name": "bench", "role": "inline", "lcores": [1],
                "control_socket": f"{tmp}/sw.sock", "idle_sleep_us": 0,
                "ports": [{"name": "in", "vdev": f"net_pcap0,rx_pcap={tmp}/{pcap},infinite_rx=1"},
                          {"name": "out", "vdev": "net_null0,no-rx=1"}]}],
  "nodes": [{"id": i, "name": f"n{i}", "ip": f"10.78.{i // 250}.{i % 250 + 1}", "port": 7447}
            for i in range(1, n + 1)],
  # The 1024 entries are pinned by hand: hot-key management (and its
  # sampling) stays off so that it cannot take the slots first.
  "directory": {"max_keys": 1024, "enabled": False},
}
json.dump(cfg, open(f"{tmp}/fp-{n}.json", "w"), indent=1)
PY
}

# stat EXPR: evaluate a Python expression over cdtctl stats --json (as s).
stat() {
	"$BUILD/switchd/cdtctl" --socket "$TMP/sw.sock" --json stats |
		python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

run_switchd() { # NODES [PCAP] -> prints "mpps busy_cpp hz"
	local n=$1 pcap=${2:-req.pcap}
	make_config "$n" "$pcap"
	"$BUILD/switchd/skewless-switchd" -l 0,1 --no-huge -m 256 --no-pci \
		--file-prefix "skl-fp-$$-$n" --log-level lib.eal:error -- \
		--config "$TMP/fp-$n.json" --switch bench --no-digest-timeout \
		>"$TMP/sw-$n.log" 2>&1 &
	SW_PID=$!
	for _ in $(seq 50); do [ -S "$TMP/sw.sock" ] && break; sleep 0.1; done
	[ -S "$TMP/sw.sock" ] || { cat "$TMP/sw-$n.log" >&2; exit 1; }
	local ctl="$BUILD/switchd/cdtctl --socket $TMP/sw.sock"
	for i in $(seq 1 "$n"); do
		$ctl neigh add "10.78.$((i / 250)).$((i % 250 + 1))" "02:00:00:00:$(printf %02x $((i / 256))):$(printf %02x $((i % 256)))" out >/dev/null
	done
	# The client, for the replies' way back.
	$ctl neigh add 10.77.0.201 02:00:00:00:00:c1 out >/dev/null
	# 1024 keys, replica sets of 3 rotating over the nodes.
	split -n l/4 -d "$TMP/keys.txt" "$TMP/kpart."
	local g=0
	for f in "$TMP"/kpart.*; do
		local a=$((g % n + 1)) b=$(((g + 1) % n + 1)) c=$(((g + 2) % n + 1))
		$ctl cdt pin - --force "n$a,n$b,n$c" <"$f" >/dev/null
		g=$((g + 3))
	done
	[ "$(stat 's["cdt_entries"]')" = 1024 ] || { echo "fastpath.sh: pinning failed" >&2; exit 1; }
	sleep 1
	local t0 c0 t1 c1 b0 p0 b1 p1
	t0=$(date +%s.%N); c0=$(stat 's["ports"][1]["tx"]-s["ports"][1]["tx_dropped"]')
	b0=$(stat 's["workers"][0]["busy_cycles"]'); p0=$(stat 's["workers"][0]["busy_packets"]')
	local d0; d0=$(stat 'sum(s["drops"].values())')
	sleep "$SECS"
	t1=$(date +%s.%N); c1=$(stat 's["ports"][1]["tx"]-s["ports"][1]["tx_dropped"]')
	b1=$(stat 's["workers"][0]["busy_cycles"]'); p1=$(stat 's["workers"][0]["busy_packets"]')
	local hz drops
	hz=$(stat 's["tsc_hz"]')
	drops=$(($(stat 'sum(s["drops"].values())') - d0))
	kill -INT "$SW_PID"; wait "$SW_PID" || true; SW_PID=
	[ "$drops" = 0 ] || echo "fastpath.sh: warning: switchd dropped $drops frames while measured (nodes=$n)" >&2
	python3 -c "print('%.3f %.1f %s' % (($c1-$c0)/($t1-$t0)/1e6, ($b1-$b0)/max(1,$p1-$p0), $hz))"
}

run_testpmd() { # -> prints mpps
	local out="$TMP/testpmd.log"
	{
		sleep 3; echo "start"; sleep 1
		echo "show port stats 1"; sleep "$SECS"; echo "show port stats 1"
		echo "stop"; echo "quit"
	} | timeout $((SECS + 30)) dpdk-testpmd -l 0,1 --no-huge -m 256 --no-pci \
		--file-prefix "skl-fp-tp-$$" --log-level lib.eal:error \
		--vdev "net_pcap0,rx_pcap=$TMP/req.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" -- \
		-i --forward-mode=macswap --nb-cores=1 --total-num-mbufs=16384 >"$out" 2>&1 || true
	python3 - "$out" "$SECS" <<'PY'
import re, sys
txt = open(sys.argv[1]).read()
tx = [int(x) for x in re.findall(r"TX-packets:\s*(\d+)", txt)]
if len(tx) < 2:
    sys.exit("fastpath.sh: could not read testpmd's port stats:\n" + txt[-2000:])
print("%.3f" % ((tx[1] - tx[0]) / float(sys.argv[2]) / 1e6))
PY
}

echo "fast path: 1 worker lcore, net_pcap (2048 keys, infinite_rx) -> net_null, ${SECS} s per run"
read -r SW8 CPP8 HZ < <(run_switchd 8)
echo "switchd   8 nodes, 1024 CDT entries: ${SW8} Mpps, $(python3 -c "print('%.0f' % ($HZ/($SW8*1e6)))") cycles/packet (wall), ${CPP8} cycles/packet (busy polls)"
read -r SW64 CPP64 _ < <(run_switchd 64)
echo "switchd  64 nodes, 1024 CDT entries: ${SW64} Mpps, $(python3 -c "print('%.0f' % ($HZ/($SW64*1e6)))") cycles/packet (wall), ${CPP64} cycles/packet (busy polls)"
read -r SWR CPPR _ < <(run_switchd 8 rep.pcap)
echo "switchd   8 nodes, replies to the same:  ${SWR} Mpps, $(python3 -c "print('%.0f' % ($HZ/($SWR*1e6)))") cycles/packet (wall), ${CPPR} cycles/packet (busy polls)"
TP=$(run_testpmd)
echo "testpmd macswap, same vdevs and pcap: ${TP} Mpps, $(python3 -c "print('%.0f' % ($HZ/($TP*1e6)))") cycles/packet (wall)"
echo "switchd_mpps=${SW8} testpmd_mpps=${TP} ratio=$(python3 -c "print('%.2f' % ($SW8/$TP))")"
