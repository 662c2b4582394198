#!/usr/bin/env bash
# bench/fastpath.sh - switch fast-path throughput against DPDK's l3fwd in
# exact-match mode (the fair reference: it parses, looks the 5-tuple up in an
# rte_hash and rewrites the MACs) and dpdk-testpmd in macswap mode (the I/O
# ceiling), on the same vdevs and the same pcap, one worker lcore each.
#
#   bench/fastpath.sh [SECONDS]        (default 5 s of measurement per run)
#
# Input: bench_pcapgen's pcap of 2048 distinct-key requests (GET, every 10th
# PUT) from 1000 client ports to the VIP, replayed by net_pcap
# (rx_pcap=...,infinite_rx=1); output: net_null. switchd runs with 1024 keys
# pinned in the directory (every other key; replica sets of 3 nodes) and 8,
# then 64 nodes, all reachable through the net_null port (static neighbours).
# l3fwd (-E, built once from dpdk-doc's /usr/share/dpdk/examples into
# $BUILD/l3fwd, its RX offloads masked to what the vdev supports) has one
# rule per flow of the pcap, all to the net_null port.
#
# l3fwd and switchd (8 nodes) run interleaved, ROUNDS times each (default 2:
# l3fwd, switchd, l3fwd, switchd), and the median of each is reported: the
# machine is shared, so only figures of one invocation compare. Throughput is
# the TX counter delta of the output port over the measurement window
# (switchd: its control socket; l3fwd: DPDK telemetry, /ethdev/stats,1;
# testpmd: its port stats); cycles/packet = TSC Hz / pps (every worker is a
# busy poller) and, for switchd, also the worker's own cycles per packet
# while busy. Every program's one worker runs on lcore 1 (switchd and testpmd
# keep their main thread on lcore 0, l3fwd forwards on its main lcore). EAL
# file prefixes start with $SKL_BENCH_PREFIX (default skl-fp-PID-). Last line:
#   switchd_mpps=X l3fwd_mpps=Y testpmd_mpps=Z ratio=X/Y     (X: 8 nodes)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-5}
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-2}
PFX=${SKL_BENCH_PREFIX:-skl-fp-$$-}
L3FWD_SRC=${L3FWD_SRC:-/usr/share/dpdk/examples}
# BASELINE_SWITCHD=PATH: another skewless-switchd (say, built from an older
# tree; the cdtctl beside it drives it) runs after switchd in every round, 8
# nodes, same pcap and config; its median and switchd/baseline are printed
# before the last line. Only figures of one invocation compare.
BASELINE_SWITCHD=${BASELINE_SWITCHD:-}
if [ -n "$BASELINE_SWITCHD" ] && ! [ -x "$BASELINE_SWITCHD" -a -x "$(dirname "$BASELINE_SWITCHD")/cdtctl" ]; then
	echo "fastpath.sh: BASELINE_SWITCHD=$BASELINE_SWITCHD: no such program, or no cdtctl beside it" >&2
	exit 1
fi
[ -x "$BUILD/switchd/skewless-switchd" ] || { echo "fastpath.sh: build first (ninja -C $BUILD)" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "fastpath.sh: dpdk-testpmd missing (apt-get install dpdk-dev)" >&2; exit 1; }
[ -f "$L3FWD_SRC/l3fwd/main.c" ] || { echo "fastpath.sh: $L3FWD_SRC/l3fwd missing (apt-get install dpdk-doc)" >&2; exit 1; }

TMP=$(mktemp -d /tmp/skl-fastpath.XXXXXX)
SW_PID=
L3_PID=
cleanup() {
	[ -n "$SW_PID" ] && kill "$SW_PID" 2>/dev/null && wait "$SW_PID" 2>/dev/null || true
	[ -n "$L3_PID" ] && kill "$L3_PID" 2>/dev/null && wait "$L3_PID" 2>/dev/null || true
	rm -rf "$TMP" /var/run/dpdk/"$PFX"* # the EAL's runtime directories, one per process
}
trap cleanup EXIT INT TERM

"$BUILD/bench/bench_pcapgen" "$TMP/req.pcap" "$TMP/keys.txt" 2048
"$BUILD/bench/bench_pcapgen" "$TMP/rep.pcap" /dev/null 2048 replies 8

# l3fwd from dpdk-doc's examples, built once into $BUILD/l3fwd (with
# examples/common beside it, as its Makefile expects). net_pcap offers no RX
# offloads and l3fwd asks for checksum offload unconditionally: the copy masks
# the request with what the device reports (one line, before the port is
# configured), the only change to it.
L3FWD="$BUILD/l3fwd/l3fwd/build/l3fwd"
if [ ! -x "$L3FWD" ]; then
	rm -rf "$BUILD/l3fwd" && mkdir -p "$BUILD/l3fwd"
	cp -r "$L3FWD_SRC/l3fwd" "$L3FWD_SRC/common" "$BUILD/l3fwd/"
	sed -i 's|^\t\tret = config_port_max_pkt_len(&local_port_conf, &dev_info);|\t\tlocal_port_conf.rxmode.offloads = port_conf.rxmode.offloads \&= dev_info.rx_offload_capa;\n&|' \
		"$BUILD/l3fwd/l3fwd/main.c"
	grep -q 'offloads &= dev_info.rx_offload_capa' "$BUILD/l3fwd/l3fwd/main.c" ||
		{ echo "fastpath.sh: could not mask l3fwd's RX offloads (main.c changed?)" >&2; exit 1; }
	echo "fastpath.sh: building l3fwd in $BUILD/l3fwd" >&2
	make -C "$BUILD/l3fwd/l3fwd" -j2 >"$BUILD/l3fwd/make.log" 2>&1 ||
		{ tail -20 "$BUILD/l3fwd/make.log" >&2; exit 1; }
fi
# One exact-match rule per flow of the pcap (client 10.77.0.201, ports
# 40000-40999, to the VIP's service port), all to port 1 (net_null). A rule
# lists the destination first.
for sport in $(seq 40000 40999); do
	echo "R10.77.0.100 10.77.0.201 7447 $sport 0x11 1"
done >"$TMP/l3fwd_v4.cfg"

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
	"${CDTCTL:-$BUILD/switchd/cdtctl}" --socket "$TMP/sw.sock" --json stats |
		python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

run_switchd() { # NODES [PCAP] -> prints "mpps busy_cpp hz" (SWITCHD, CDTCTL: other binaries)
	local n=$1 pcap=${2:-req.pcap}
	make_config "$n" "$pcap"
	"${SWITCHD:-$BUILD/switchd/skewless-switchd}" -l 0,1 --no-huge -m 256 --no-pci \
		--file-prefix "${PFX}sw-$n" --log-level lib.eal:error -- \
		--config "$TMP/fp-$n.json" --switch bench --no-digest-timeout \
		>"$TMP/sw-$n.log" 2>&1 &
	SW_PID=$!
	for _ in $(seq 50); do [ -S "$TMP/sw.sock" ] && break; sleep 0.1; done
	[ -S "$TMP/sw.sock" ] || { cat "$TMP/sw-$n.log" >&2; exit 1; }
	local ctl="${CDTCTL:-$BUILD/switchd/cdtctl} --socket $TMP/sw.sock"
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
	[ "$c1" != "$c0" ] || echo "fastpath.sh: warning: switchd forwarded nothing in ${SECS} s (nodes=$n; worker starved?)" >&2
	[ "$drops" = 0 ] || echo "fastpath.sh: warning: switchd dropped $drops frames while measured (nodes=$n)" >&2
	python3 -c "print('%.3f %.1f %s' % (($c1-$c0)/($t1-$t0)/1e6, ($b1-$b0)/max(1,$p1-$p0), $hz))"
}

# l3fwd_tx: port 1's TX packet count, from l3fwd's telemetry socket.
l3fwd_tx() {
	python3 - "/var/run/dpdk/${PFX}l3/dpdk_telemetry.v2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(4096)  # the greeting
s.send(b"/ethdev/stats,1")
print(json.loads(s.recv(65536))["/ethdev/stats"]["opackets"])
PY
}

run_l3fwd() { # -> prints mpps
	local sock="/var/run/dpdk/${PFX}l3/dpdk_telemetry.v2"
	# -l 1 alone: l3fwd wants a TX queue per lcore and net_pcap has one.
	"$L3FWD" -l 1 --no-huge -m 1024 --no-pci --file-prefix "${PFX}l3" \
		--log-level lib.eal:error \
		--vdev "net_pcap0,rx_pcap=$TMP/req.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" -- \
		-p 0x3 -E --parse-ptype --config="(0,0,1),(1,0,1)" \
		--rule_ipv4="$TMP/l3fwd_v4.cfg" --rule_ipv6="$BUILD/l3fwd/l3fwd/em_default_v6.cfg" \
		>"$TMP/l3fwd.log" 2>&1 &
	L3_PID=$!
	for _ in $(seq 100); do
		grep "entering main loop" "$TMP/l3fwd.log" >/dev/null && [ -S "$sock" ] && break
		sleep 0.1
	done
	grep "entering main loop" "$TMP/l3fwd.log" >/dev/null || { cat "$TMP/l3fwd.log" >&2; exit 1; }
	sleep 1
	local t0 c0 t1 c1
	t0=$(date +%s.%N); c0=$(l3fwd_tx)
	sleep "$SECS"
	t1=$(date +%s.%N); c1=$(l3fwd_tx)
	kill -INT "$L3_PID"; wait "$L3_PID" || true; L3_PID=
	[ "$c1" != "$c0" ] || echo "fastpath.sh: warning: l3fwd forwarded nothing in ${SECS} s (worker starved?)" >&2
	python3 -c "print('%.3f' % (($c1-$c0)/($t1-$t0)/1e6))"
}

run_testpmd() { # -> prints mpps
	local out="$TMP/testpmd.log"
	{
		sleep 3; echo "start"; sleep 1
		echo "show port stats 1"; sleep "$SECS"; echo "show port stats 1"
		echo "stop"; echo "quit"
	} | timeout $((SECS + 30)) dpdk-testpmd -l 0,1 --no-huge -m 256 --no-pci \
		--file-prefix "${PFX}tp" --log-level lib.eal:error \
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

# MPPS -> cycles/packet (wall); "-" when nothing was forwarded (a starved worker).
cpp() { python3 -c "print('%.0f' % ($HZ/($1*1e6)) if $1 > 0 else '-')"; }
median() { python3 -c "import statistics, sys; print('%.6g' % statistics.median(map(float, sys.argv[1:])))" "$@"; }

echo "fast path: 1 worker lcore, net_pcap (2048 keys, 1000 flows, infinite_rx) -> net_null, ${SECS} s per run"
L3S=() SW8S=() CPP8S=() B8S=() BCPP8S=()
for r in $(seq "$ROUNDS"); do
	L3=$(run_l3fwd)
	L3S+=("$L3")
	read -r SW8 CPP8 HZ < <(run_switchd 8)
	SW8S+=("$SW8") CPP8S+=("$CPP8")
	echo "round $r: l3fwd -E ${L3} Mpps ($(cpp "$L3") cycles/packet), switchd 8 nodes ${SW8} Mpps ($(cpp "$SW8") cycles/packet, ${CPP8} busy)"
	[ -z "$BASELINE_SWITCHD" ] && continue
	read -r B8 BCPP8 _ < <(SWITCHD=$BASELINE_SWITCHD CDTCTL=$(dirname "$BASELINE_SWITCHD")/cdtctl run_switchd 8)
	B8S+=("$B8") BCPP8S+=("$BCPP8")
	echo "round $r: baseline switchd 8 nodes ${B8} Mpps ($(cpp "$B8") cycles/packet, ${BCPP8} busy)"
done
L3=$(median "${L3S[@]}") SW8=$(median "${SW8S[@]}") CPP8=$(median "${CPP8S[@]}")
echo "l3fwd -E, one rule per flow:          ${L3} Mpps, $(cpp "$L3") cycles/packet (wall), median of ${ROUNDS}"
echo "switchd   8 nodes, 1024 CDT entries: ${SW8} Mpps, $(cpp "$SW8") cycles/packet (wall), ${CPP8} cycles/packet (busy polls), median of ${ROUNDS}"
read -r SW64 CPP64 _ < <(run_switchd 64)
echo "switchd  64 nodes, 1024 CDT entries: ${SW64} Mpps, $(cpp "$SW64") cycles/packet (wall), ${CPP64} cycles/packet (busy polls)"
read -r SWR CPPR _ < <(run_switchd 8 rep.pcap)
echo "switchd   8 nodes, replies to the same:  ${SWR} Mpps, $(cpp "$SWR") cycles/packet (wall), ${CPPR} cycles/packet (busy polls)"
TP=$(run_testpmd)
echo "testpmd macswap, same vdevs and pcap: ${TP} Mpps, $(cpp "$TP") cycles/packet (wall)"
if [ -n "$BASELINE_SWITCHD" ]; then
	B8=$(median "${B8S[@]}") BCPP8=$(median "${BCPP8S[@]}")
	echo "baseline $BASELINE_SWITCHD, 8 nodes: ${B8} Mpps, ${BCPP8} cycles/packet (busy polls), median of ${ROUNDS}"
	echo "switchd_vs_baseline: switchd_mpps=${SW8} baseline_mpps=${B8} ratio=$(python3 -c "print('%.3f' % ($SW8/$B8) if $B8 > 0 else 'nan')") busy_cpp=${CPP8} baseline_busy_cpp=${BCPP8}"
fi
echo "switchd_mpps=${SW8} l3fwd_mpps=${L3} testpmd_mpps=${TP} ratio=$(python3 -c "print('%.2f' % ($SW8/$L3) if $L3 > 0 else 'nan')")"
