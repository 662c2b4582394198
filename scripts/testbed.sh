#!/usr/bin/env bash
# testbed.sh up|down|status CONFIG - the one-machine testbed (DESIGN.md 10).
#
# Every host of CONFIG (agents and nodes) gets a network namespace skl-<name>;
# each switch runs in its own namespace skl-<switch name>. Inline switches own
# one net_tap port per host, moved into that host's namespace. A one-arm
# switch's single TAP sits on a Linux bridge in namespace skl-fabric, with the
# hosts attached by veth pairs. Processes log and keep pid files under the run
# directory (SKL_RUN_DIR, default run/<config name>). All traffic stays inside
# these namespaces: nothing is addressed in the root namespace.
#
# Environment: SKL_RUN_DIR, SKL_BUILD (default build), SKL_SERVICE_TIME_US
# (node capacity emulation, default 0), SKL_SWITCH_ARGS (extra switchd args),
# SKL_NO_SWITCH=1 (nodes only).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
config=${2:-}
usage() { echo "usage: $0 up|down|status CONFIG" >&2; exit 64; }
[ -n "$cmd" ] && [ -n "$config" ] || usage
[ -f "$config" ] || { echo "testbed: $config: no such file" >&2; exit 1; }
config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")
name=$(basename "$config" .json)
run=${SKL_RUN_DIR:-$repo/run/$name}
build=${SKL_BUILD:-$repo/build}
[ "$(id -u)" = 0 ] || { echo "testbed: must run as root (network namespaces, TAP devices)" >&2; exit 1; }

# One line per thing to make, from the config (validated by skewless first).
plan() {
	python3 - "$config" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for a in c.get("agents", []):
    print("host", a["name"], a["ip"], "agent", "-")
for n in c["nodes"]:
    print("host", n["name"], n["ip"], "node", n["id"])
for s in c.get("switches", []):
    sname = s.get("name", "s%d" % s["id"])
    print("switch", s["id"], sname, s.get("role", "inline"), s.get("control_socket", "/run/skewless/switch-%d.sock" % s["id"]))
    for p in s["ports"]:
        vdev = p.get("vdev", "")
        iface = [kv.split("=", 1)[1] for kv in vdev.split(",") if kv.startswith("iface=")]
        print("port", s["id"], sname, iface[0] if iface else "-", p.get("host", "-") or "-")
PY
}

ns_exists() { ip netns list | awk '{print $1}' | grep -qx "$1"; }

# Stop every process the testbed started, by pid file, then by command line.
stop_processes() {
	local f pid
	for f in "$run"/pids/*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		kill -TERM "$pid" 2>/dev/null || true
	done
	for _ in $(seq 50); do
		local alive=0
		for f in "$run"/pids/*.pid; do
			[ -e "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && alive=1
		done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for f in "$run"/pids/*.pid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
		rm -f "$f"
	done
	pkill -KILL -f "skewless-(switchd|node) .*--config $config" 2>/dev/null || true
}

down() {
	stop_processes
	local kind a b c d e
	while read -r kind a b c d e; do
		case $kind in
		host) ns_exists "skl-$a" && ip netns del "skl-$a" ;;
		switch) ns_exists "skl-$b" && ip netns del "skl-$b" ;;
		esac
	done < <(plan)
	ns_exists skl-fabric && ip netns del skl-fabric
	rm -f "$run/up"
	echo "testbed: $name is down"
}

start_switch() { # id name role socket
	local id=$1 sname=$2 log="$run/logs/$2.log" lcores
	lcores=${SKL_SWITCH_LCORES:-0,1}
	mkdir -p "$(dirname "$4")"
	# --no-pci: never let EAL take the machine's own NIC; no hugepages here.
	ip netns exec "skl-$sname" "$build/switchd/skewless-switchd" -l "$lcores" --no-pci \
		--no-huge -m 256 --file-prefix "skl-$name-$sname" --log-level=lib.member:crit \
		-- --config "$config" --switch "$id" ${SKL_SWITCH_ARGS:-} >"$log" 2>&1 &
	echo $! >"$run/pids/$sname.pid"
}

wait_for() { # seconds description command...
	local secs=$1 what=$2
	shift 2
	for _ in $(seq $((secs * 10))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "testbed: timed out after ${secs}s waiting for $what" >&2
	return 1
}

up() {
	if [ -e "$run/up" ]; then
		echo "testbed: $name is already up (run: $run)"
		return 0
	fi
	"$build/agent/skewless" --config "$config" where probe >/dev/null || exit 1
	local kind a b c d e
	# Refuse names and addresses already in use by something else.
	while read -r kind a b c d e; do
		case $kind in
		host) ns_exists "skl-$a" && { echo "testbed: namespace skl-$a already exists; run '$0 down $config' or remove it" >&2; exit 1; }
		      ip -o addr show | grep -q " $b/" && { echo "testbed: address $b is already in use in the root namespace" >&2; exit 1; } ;;
		switch) ns_exists "skl-$b" && { echo "testbed: namespace skl-$b already exists" >&2; exit 1; } ;;
		port) [ "$c" != - ] && ip link show "$c" >/dev/null 2>&1 && { echo "testbed: interface $c already exists" >&2; exit 1; } ;;
		esac
	done < <(plan)
	mkdir -p "$run/logs" "$run/pids" "$run/data"
	trap 'echo "testbed: bring-up failed; tearing down (logs in $run/logs)" >&2; down >/dev/null 2>&1 || true' ERR

	declare -A ip_of
	while read -r kind a b c d e; do
		[ "$kind" = host ] || continue
		ip netns add "skl-$a"
		ip -n "skl-$a" link set lo up
		ip_of[$a]=$b
	done < <(plan)

	local have_fabric=0
	while read -r kind a b c d e; do
		[ "$kind" = switch ] || continue
		ip netns add "skl-$b"
		ip -n "skl-$b" link set lo up
		if [ "$c" = one-arm ] && [ $have_fabric = 0 ]; then
			have_fabric=1
			ip netns add skl-fabric
			ip -n skl-fabric link add br0 type bridge
			ip -n skl-fabric link set br0 up
			for h in "${!ip_of[@]}"; do
				ip link add "v-$h" mtu 1500 netns skl-fabric type veth peer name eth0 mtu 1500 netns "skl-$h"
				ip -n skl-fabric link set "v-$h" master br0 up
				ip -n "skl-$h" addr add "${ip_of[$h]}/24" dev eth0
				ip -n "skl-$h" link set eth0 up
			done
		fi
		[ -n "${SKL_NO_SWITCH:-}" ] || start_switch "$a" "$b" "$c" "$d"
	done < <(plan)

	# The switch created its TAPs in its own namespace: hand each to its host.
	if [ -z "${SKL_NO_SWITCH:-}" ]; then
		while read -r kind a b c d e; do
			[ "$kind" = port ] && [ "$c" != - ] || continue
			wait_for 30 "switch $b to create $c" ip -n "skl-$b" link show "$c"
			if [ "$d" = - ]; then # one-arm: the TAP joins the fabric bridge
				ip -n "skl-$b" link set "$c" netns skl-fabric
				ip -n skl-fabric link set "$c" mtu 1500 master br0 up
			else
				ip -n "skl-$b" link set "$c" netns "skl-$d"
				ip -n "skl-$d" link set "$c" mtu 1500 up
				ip -n "skl-$d" addr add "${ip_of[$d]}/24" dev "$c"
			fi
		done < <(plan)
	fi

	while read -r kind a b c d e; do
		[ "$kind" = host ] && [ "$c" = node ] || continue
		ip netns exec "skl-$a" "$build/nodes/skewless-node" --config "$config" --node "$a" \
			--data-dir "$run/data/$a" --service-time-us "${SKL_SERVICE_TIME_US:-0}" ${SKL_NODE_ARGS:-} \
			>"$run/logs/$a.log" 2>&1 &
		echo $! >"$run/pids/$a.pid"
	done < <(plan)

	if [ -z "${SKL_NO_SWITCH:-}" ]; then
		while read -r kind a b c d e; do
			[ "$kind" = switch ] || continue
			wait_for 30 "switch $b to see every node alive" all_alive "$d"
		done < <(plan)
	fi
	trap - ERR
	touch "$run/up"
	echo "testbed: $name is up (run: $run)"
}

# Succeeds when the switch behind SOCKET reports every configured node alive.
all_alive() {
	"$build/switchd/cdtctl" --socket "$1" --json nodes | python3 -c '
import json, sys
nodes = json.load(sys.stdin)["nodes"]
sys.exit(0 if nodes and all(n["alive"] for n in nodes) else 1)'
}

status() {
	local kind a b c d e
	while read -r kind a b c d e; do
		case $kind in
		host) printf '%-8s %-6s %-15s namespace %s\n' "$c" "$a" "$b" \
			"$(ns_exists "skl-$a" && echo up || echo absent)" ;;
		switch) printf 'switch   %-6s %-15s namespace %s\n' "$b" "$c" \
			"$(ns_exists "skl-$b" && echo up || echo absent)"
			[ -S "$d" ] && "$build/switchd/cdtctl" --socket "$d" nodes || true ;;
		esac
	done < <(plan)
	for f in "$run"/pids/*.pid; do
		[ -e "$f" ] || continue
		printf 'process  %-10s pid %-8s %s\n' "$(basename "$f" .pid)" "$(cat "$f")" \
			"$(kill -0 "$(cat "$f")" 2>/dev/null && echo running || echo dead)"
	done
}

case $cmd in
up) up ;;
down) down ;;
status) status ;;
*) usage ;;
esac
