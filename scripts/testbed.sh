#!/usr/bin/env bash
# testbed.sh up|down|status|start CONFIG [NAME...] - the one-machine testbed
# (docs/design.md section 10, docs/operations.md "Testbed").
#
# Every host of CONFIG (agents and nodes) gets a network namespace skl-<name>;
# each switch runs in its own namespace skl-<switch name>. A port is one of
# two kinds (its vdev): net_af_packet (the testbed configs) reads and writes
# one end of a veth pair that this script makes before the switch starts,
# both ends named IFACE; net_tap makes its TAP in the switch's namespace, and
# this script moves it once the switch has started it. Inline: the other end
# (or the TAP) is in the namespace of the host the port names. One-arm: it
# joins a Linux bridge in namespace skl-fabric, to which every host is
# attached by a veth pair (eth0 inside the host). Processes log to
# RUN/logs/NAME.log and keep RUN/pids/NAME.pid; node data lives in
# RUN/data/NAME. All service traffic stays inside these namespaces: nothing
# of it is addressed in the root namespace.
#
# Metrics: when the config has a switch or node with metrics_listen, every
# switch, node and agent namespace also gets an interface mg0 on a management
# bridge (namespace skl-mgmt), which reaches the root namespace through one
# veth (skl-mg) with address .1 of a /24 of 198.18.0.0/15 (RFC 2544's
# benchmarking range; SKL_METRICS_NET=A.B.C picks it, else the first /24 free
# from one derived from the prefix). Prometheus in the root namespace scrapes
# them there; the route to that /24 goes only into these namespaces. Targets
# are written for Prometheus's file_sd to RUN/prometheus/targets-*.json
# (conf/prometheus/prometheus.yml reads run/testbed's).
#
#   up      bring everything up and wait until each switch reports every node
#           up (with replica groups, up in its view: caught up) and holds its
#           peers' leases; a testbed already up and healthy
#           is left alone, one that is marked up but broken is torn down and
#           brought up again
#   down    stop every process started with CONFIG (pid files, then command
#           line) and delete every namespace named by CONFIG; works after a
#           crash and when nothing is up
#   status  namespaces, processes, the switch's view of the nodes
#   start   (re)start the named processes (switch or node names; default all)
#           that are not running, re-plumb a switch's TAPs, wait for health; a
#           node of CONFIG that the running testbed has no namespace for (one
#           added for a ring change) is attached to the one-arm fabric and
#           started with --join
#
# Environment: SKL_RUN_DIR (default run/<config name>), SKL_BUILD (default
# build), SKL_SERVICE_TIME_US (node capacity emulation, default the config's),
# SKL_NODE_ARGS, SKL_SWITCH_ARGS (extra arguments), SKL_SWITCH_LCORES (EAL -l,
# default 0,1), SKL_NO_SWITCH=1 (nodes only), SKL_UP_TIMEOUT (seconds, default
# 30), SKL_NS_PREFIX (namespace names, default skl-; the tests use another so
# that they never collide with a testbed an operator has up), SKL_METRICS_NET.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
config=${2:-}
usage() { echo "usage: $0 up|down|status|start CONFIG [NAME...]" >&2; exit 64; }
[ -n "$cmd" ] && [ -n "$config" ] || usage
shift 2
[ -f "$config" ] || { echo "testbed: $config: no such file" >&2; exit 1; }
config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")
name=$(basename "$config" .json)
run=${SKL_RUN_DIR:-$repo/run/$name}
build=${SKL_BUILD:-$repo/build}
timeout_s=${SKL_UP_TIMEOUT:-30}
nsp=${SKL_NS_PREFIX:-skl-}
cdtctl=$build/switchd/cdtctl
[ "$(id -u)" = 0 ] || { echo "testbed: must run as root (network namespaces, TAP devices): sudo $0 $cmd $config" >&2; exit 1; }
for b in "$build/switchd/skewless-switchd" "$cdtctl" "$build/nodes/skewless-node" "$build/agent/skewless"; do
	[ -x "$b" ] || { echo "testbed: $b missing; build first (scripts/setup.sh, or ninja -C $build)" >&2; exit 1; }
done

# One line per thing to make, from the config:
#   vip IP | mtu N | host NAME IP agent|node ID | switch ID NAME ROLE SOCKET
#   port SWITCH_ID SWITCH_NAME IFACE HOST|- DRIVER (net_tap, net_af_packet)
#   metrics switch|node|agent NAME PORT|- (PORT: of metrics_listen; - for agents)
# Read once (starting python3 takes about half a second here, and the plan is
# walked many times); `up` validates the config with the C loader first
# (skewless where).
read_plan() {
	python3 - "$config" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
svc = c["service"]
print("vip", svc["vip"])
# net_tap in DPDK 22.11 takes frames of at most 1522 bytes: MTU 1500.
print("mtu", min(svc.get("mtu", 1500), 1500))
for a in c.get("agents", []):
    print("host", a["name"], a["ip"], "agent", "-")
for n in c["nodes"]:
    print("host", n["name"], n["ip"], "node", n["id"])
for s in c.get("switches", []):
    sname = s.get("name", "s%d" % s["id"])
    print("switch", s["id"], sname, s.get("role", "inline"),
          s.get("control_socket", "/run/skewless/switch-%d.sock" % s["id"]))
    for p in s["ports"]:
        kv = [x.split("=", 1) for x in p.get("vdev", "").split(",") if "=" in x]
        iface = [v for k, v in kv if k == "iface"]
        driver = p.get("vdev", "").split(",")[0].rstrip("0123456789")
        print("port", s["id"], sname, iface[0] if iface else "-", p.get("host") or "-",
              driver or "-")
listen = [("switch", s.get("name", "s%d" % s["id"]), s.get("metrics_listen", ""))
          for s in c.get("switches", [])]
listen += [("node", n["name"], n.get("metrics_listen", "")) for n in c["nodes"]]
if any(l for _, _, l in listen):
    for kind, hname, l in listen:
        print("metrics", kind, hname, l.rsplit(":", 1)[1] if l else "-")
    for a in c.get("agents", []):
        print("metrics", "agent", a["name"], "-")
PY
}

# grep without -q after a pipe: -q quits at the first match, and under pipefail
# the writer's SIGPIPE would make a found match read as a failure.
ns_exists() { ip netns list | awk '{print $1}' | grep -x -- "$1" >/dev/null; }
log() { echo "testbed: $*"; }
die() { echo "testbed: $*" >&2; exit 1; }
prefix_of() { echo "$nsp$name-$1"; } # DPDK --file-prefix of switch NAME
plan_lines=$(read_plan) || die "$config: cannot read the config (skewless --config $config where probe says why)"
plan() { printf '%s\n' "$plan_lines"; }

# Does PID run a skewless process started with this config?
ours() {
	[ -r "/proc/$1/cmdline" ] && tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -xF -- "$config" >/dev/null
}

# kill_proc NAME: stop the process of pid file NAME (TERM, then KILL after 5 s).
kill_proc() {
	local f="$run/pids/$1.pid" pid
	[ -e "$f" ] || return 0
	pid=$(cat "$f")
	if ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do ours "$pid" || break; sleep 0.1; done
		ours "$pid" && kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

running() { [ -e "$run/pids/$1.pid" ] && ours "$(cat "$run/pids/$1.pid")"; }

wait_for() { # seconds description command...
	local secs=$1 what=$2 deadline=$((SECONDS + $1))
	shift 2
	while [ "$SECONDS" -lt "$deadline" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.02
	done
	echo "testbed: timed out after ${secs}s waiting for $what" >&2
	return 1
}

# switch_ready SOCKET [leases] [NODE...]: the switch behind SOCKET answers,
# reports the named nodes (default: every node) up (digests arriving; with
# replica groups, up in its view too: caught up, serving their groups) and
# knows their MACs (it can forward to them without an ARP round trip first);
# with "leases" and peer switches configured, it also holds every lease (they
# are in touch and share the hot set). Bringing a testbed up waits for both; a
# lease lost for a moment later does not make a running testbed unhealthy.
# Polled every 20 ms, so awk, not python3 (half a second to start here).
switch_ready() {
	local sock=$1 mode=${2:-}
	shift 2 2>/dev/null || shift $#
	{ "$cdtctl" --socket "$sock" nodes && "$cdtctl" --socket "$sock" peers; } 2>/dev/null |
		awk -v mode="$mode" -v named=" $* " '
		{	# key=value fields; a null value (a MAC not known yet) is left out
			delete f
			for (i = 1; i <= NF; i++)
				if ((eq = index($i, "=")) > 0)
					f[substr($i, 1, eq - 1)] = substr($i, eq + 1)
		}
		/^[a-z]+:$/ { section = $1 }
		/^  id=/ && section == "nodes:" {
			nodes++
			if (named != "  " && index(named, " " f["name"] " ") == 0)
				next
			# With replica groups, also up in the view (caught up).
			if (f["alive"] != "1" || f["state"] != "up" || !("mac" in f) ||
			    ("view" in f && f["view"] != "up"))
				not_ready = 1
		}
		/^[a-z]/ { for (k in f) top[k] = f[k] } # the peers answer: its own fields
		END {
			peers = "peers_configured" in top
			configured = top["peers_configured"]
			leased = top["leased"]
			exit !(nodes && !not_ready && peers &&
			       (mode != "leases" || configured == "0" || leased == "1"))
		}'
}

healthy() {
	local kind a b c d e
	while read -r kind a b c d e; do
		case $kind in
		host) if [ "$c" = node ] && ! running "$a"; then return 1; fi ;;
		switch) [ -z "${SKL_NO_SWITCH:-}" ] || continue
			running "$b" && switch_ready "$d" || return 1 ;;
		esac
	done < <(plan)
}

stop_all() {
	local f
	for f in "$run"/pids/*.pid; do
		[ -e "$f" ] || continue
		if ours "$(cat "$f")"; then kill -TERM "$(cat "$f")" 2>/dev/null || true; fi
	done
	for f in "$run"/pids/*.pid; do
		if [ -e "$f" ]; then kill_proc "$(basename "$f" .pid)"; fi
	done
	# Whatever is left (pid files lost, a run dir removed): by command line.
	local pat
	pat=$(printf '%s' "$config" | sed 's/[][\.*^$+?(){}|]/\\&/g')
	pkill -KILL -f "skewless-(switchd|node) .*--config $pat( |\$)" 2>/dev/null || true
	for _ in $(seq 30); do
		pgrep -f "skewless-(switchd|node) .*--config $pat( |\$)" >/dev/null || break
		sleep 0.1
	done
}

down() {
	stop_all
	local kind a b c d e
	while read -r kind a b c d e; do
		case $kind in
		host) if ns_exists "$nsp$a"; then ip netns del "$nsp$a"; fi ;;
		switch) if ns_exists "$nsp$b"; then ip netns del "$nsp$b"; fi
			rm -f "$d"
			rm -rf "/var/run/dpdk/$(prefix_of "$b")" ;;
		esac
	done < <(plan)
	if ns_exists "${nsp}fabric"; then ip netns del "${nsp}fabric"; fi
	# The management bridge; deleting it takes the root namespace's veth along.
	if ns_exists "${nsp}mgmt"; then ip netns del "${nsp}mgmt"; fi
	# (A leftover whose namespace is gone; the veth may also still be going away.)
	ip link del "${nsp}mg" >/dev/null 2>&1 || true
	rm -f "$run/up"
	log "$name is down (logs kept in $run/logs)"
}

# Refuse to touch names and addresses that something else already uses.
check_free() {
	local kind a b c d e
	while read -r kind a b c d e; do
		case $kind in
		vip) if ip -o addr show | grep " inet $a/" >/dev/null; then
			die "address $a (VIP) is already in use in the root namespace"; fi ;;
		host) if ns_exists "$nsp$a"; then
			die "namespace $nsp$a already exists; if it is a leftover: $0 down $config"; fi
			if ip -o addr show | grep " inet $b/" >/dev/null; then
				die "address $b ($a) is already in use in the root namespace"; fi ;;
		switch) if ns_exists "$nsp$b"; then
			die "namespace $nsp$b already exists; if it is a leftover: $0 down $config"; fi
			if [ -S "$d" ]; then
				if "$cdtctl" --socket "$d" stats >/dev/null 2>&1; then
					die "control socket $d is in use by a running switch (another testbed?)"; fi
				rm -f "$d"
			fi ;;
		port) if [ "$c" != - ] && ip link show "$c" >/dev/null 2>&1; then
			die "interface $c already exists in the root namespace"; fi ;;
		esac
	done < <(plan)
	if [ -n "$(plan | awk '$1 == "switch" && $4 == "one-arm"')" ] && ns_exists "${nsp}fabric"; then
		die "namespace ${nsp}fabric already exists; if it is a leftover: $0 down $config"
	fi
	if [ -n "$(plan | awk '$1 == "metrics"')" ]; then
		if ns_exists "${nsp}mgmt"; then
			die "namespace ${nsp}mgmt already exists; if it is a leftover: $0 down $config"; fi
		if ip link show "${nsp}mg" >/dev/null 2>&1; then
			die "interface ${nsp}mg already exists in the root namespace; if it is a leftover: $0 down $config"; fi
	fi
	local pat
	pat=$(printf '%s' "$config" | sed 's/[][\.*^$+?(){}|]/\\&/g')
	if pgrep -f "skewless-(switchd|node) .*--config $pat( |\$)" >/dev/null; then
		die "processes started with $config are running; $0 down $config"; fi
}

# spawn NAME NAMESPACE COMMAND...: start a process in NAMESPACE, detached from
# this shell's session, logging to RUN/logs/NAME.log (appended).
spawn() {
	local pname=$1 ns=$2
	shift 2
	echo "=== $(date '+%F %T') start: $*" >>"$run/logs/$pname.log"
	setsid ip netns exec "$ns" "$@" </dev/null >>"$run/logs/$pname.log" 2>&1 &
	echo $! >"$run/pids/$pname.pid"
}

# host_side NAMESPACE IFACE: the host's end of a switch port: MTU, and no
# transmit checksum offload. Over a veth the kernel would leave a UDP
# checksum for the "hardware" to finish; net_af_packet hands the switch the
# frame as it is, and the switch, which updates checksums incrementally,
# would forward a wrong one.
host_side() {
	ip -n "$1" link set "$2" mtu "$mtu"
	ip netns exec "$1" ethtool -K "$2" tx off >/dev/null
}

# veth_port SWITCH_NAME IFACE HOST ROLE: the veth pair of a net_af_packet
# port, unless a run of the switch before this one made it: IFACE in the
# switch's namespace, IFACE at the other end (the host's namespace inline,
# the fabric's bridge one-arm).
veth_port() {
	local sname=$1 c=$2 d=$3 role=$4
	ip -n "$nsp$sname" link show "$c" >/dev/null 2>&1 && return 0
	if [ "$role" = one-arm ]; then
		ip -n "$nsp$sname" link add "$c" mtu "$mtu" type veth peer name "$c" netns "${nsp}fabric"
		ip -n "${nsp}fabric" link set "$c" mtu "$mtu" master br0 up
	else
		[ "$d" != - ] || { echo "testbed: inline port $c names no host" >&2; return 1; }
		ip -n "$nsp$sname" link add "$c" mtu "$mtu" type veth peer name "$c" netns "$nsp$d"
		host_side "$nsp$d" "$c"
		ip -n "$nsp$d" addr add "${ip_of[$d]}/24" dev "$c"
		ip -n "$nsp$d" link set "$c" up
	fi
	ip -n "$nsp$sname" link set "$c" up
}

start_switch() { # id name role socket
	local id=$1 sname=$2 role=$3 sock=$4 kind a b c d e
	mkdir -p "$(dirname "$sock")"
	rm -rf "/var/run/dpdk/$(prefix_of "$sname")"
	while read -r kind a b c d e; do
		[ "$kind" = port ] && [ "$a" = "$id" ] && [ "$c" != - ] && [ "$e" = net_af_packet ] || continue
		veth_port "$sname" "$c" "$d" "$role" || return 1
	done < <(plan)
	# --no-pci: never let EAL take the machine's own NIC; no hugepages here.
	# shellcheck disable=SC2086
	spawn "$sname" "$nsp$sname" "$build/switchd/skewless-switchd" -l "${SKL_SWITCH_LCORES:-0,1}" \
		--no-pci --no-huge -m 256 --file-prefix "$(prefix_of "$sname")" \
		--log-level=lib.member:crit -- --config "$config" --switch "$id" ${SKL_SWITCH_ARGS:-}
	# Wait for each port to start before the nodes do (their first ARP and
	# digests would be lost). The switch creates its TAPs in its own
	# namespace; hand each to its place as soon as the switch has started it
	# (net_tap finds its interface by name until then: moved earlier, the port
	# fails to start). Nodes cannot reach a switch before that, so every
	# moment counts: it already times silence.
	while read -r kind a b c d e; do
		[ "$kind" = port ] && [ "$a" = "$id" ] && [ "$c" != - ] || continue
		wait_for "$timeout_s" "switch $sname to start port $c (log: $run/logs/$sname.log)" \
			port_started "$nsp$sname" "$c" "$sock" || return 1
		[ "$e" = net_tap ] || continue
		# txqueuelen: the kernel's queue of frames waiting for the switch to
		# read them from the TAP. Its default of 1000 overflows (counted as
		# the TAP's TX drops) when the switch's lcore loses the CPU for a
		# few ms to the many processes of a large testbed on 2 cores; every
		# frame lost there costs an agent timeout.
		if [ "$role" = one-arm ]; then
			ip -n "$nsp$sname" link set "$c" netns "${nsp}fabric"
			ip -n "${nsp}fabric" link set "$c" mtu "$mtu" txqueuelen 10000 master br0 up
		else
			[ "$d" != - ] || { echo "testbed: inline port $c names no host" >&2; return 1; }
			ip -n "$nsp$sname" link set "$c" netns "$nsp$d"
			ip -n "$nsp$d" link set "$c" mtu "$mtu" txqueuelen 10000 up
			ip -n "$nsp$d" addr add "${ip_of[$d]}/24" dev "$c"
		fi
	done < <(plan)
}

# port_started NAMESPACE IFACE SOCKET: the switch has started its port on
# IFACE: promiscuous mode is the last thing it sets by name, or, for a device
# that refuses it, the control socket answers (every port is set up by then).
port_started() {
	ip -n "$1" link show "$2" 2>/dev/null | grep 'PROMISC' >/dev/null && return 0
	ip -n "$1" link show "$2" >/dev/null 2>&1 && "$cdtctl" --socket "$3" stats >/dev/null 2>&1
}

start_node() { # name [extra args]
	local st=() name=$1
	shift
	[ -n "${SKL_SERVICE_TIME_US:-}" ] && st=(--service-time-us "$SKL_SERVICE_TIME_US")
	# shellcheck disable=SC2086
	spawn "$name" "$nsp$name" "$build/nodes/skewless-node" --config "$config" --node "$name" \
		--data-dir "$run/data/$name" "${st[@]}" "$@" ${SKL_NODE_ARGS:-}
}

# join_host NAME: a node that is in CONFIG but not in the running testbed (a
# ring change adds it, docs/operations.md "Changing the ring"): its namespace
# and its veth into the one-arm fabric. An inline switch has no port for it.
join_host() {
	local h=$1
	ns_exists "${nsp}fabric" ||
		die "node $h is not in the running testbed and there is no one-arm fabric to attach it to (inline switches have a port per host: use a one-arm config)"
	ip netns add "$nsp$h"
	ip -n "$nsp$h" link set lo up
	ip netns exec "$nsp$h" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1 || true
	ip link add "v-$h" mtu "$mtu" netns "${nsp}fabric" type veth peer name eth0 mtu "$mtu" netns "$nsp$h"
	ip -n "${nsp}fabric" link set "v-$h" master br0 up
	host_side "$nsp$h" eth0
	ip -n "$nsp$h" addr add "${ip_of[$h]}/24" dev eth0
	ip -n "$nsp$h" link set eth0 up
}

# start [NAME...]: start the named (default: all) processes not running, in
# order switches then nodes, and wait until every switch sees the named nodes
# (default: every node) up.
declare -A ip_of
mtu=1500
start() {
	local kind a b c d e want=" $* " named=()
	while read -r kind a b c d e; do
		case $kind in
		host) ip_of[$a]=$b
			[ "$c" = node ] && [[ "$want" == *" $a "* ]] && named+=("$a") ;;
		mtu) mtu=$a ;;
		esac
	done < <(plan)
	mkdir -p "$run/logs" "$run/pids" "$run/data"
	if [ -z "${SKL_NO_SWITCH:-}" ]; then
		while read -r kind a b c d e; do
			[ "$kind" = switch ] || continue
			[ "$want" = "  " ] || [[ "$want" == *" $b "* ]] || continue
			running "$b" && continue
			start_switch "$a" "$b" "$c" "$d" || return 1
		done < <(plan)
	fi
	while read -r kind a b c d e; do
		[ "$kind" = host ] && [ "$c" = node ] || continue
		[ "$want" = "  " ] || [[ "$want" == *" $a "* ]] || continue
		running "$a" && continue
		if ns_exists "$nsp$a"; then
			start_node "$a"
		else
			# New in CONFIG: it joins the running cluster (serves nothing until
			# `cdtctl ring apply` tells it the change).
			join_host "$a"
			start_node "$a" --join
		fi
	done < <(plan)
	if [ -z "${SKL_NO_SWITCH:-}" ]; then
		while read -r kind a b c d e; do
			[ "$kind" = switch ] || continue
			wait_for "$timeout_s" "switch $b to report every node up and its peers' leases ($cdtctl --socket $d nodes|peers; logs in $run/logs)" \
				switch_ready "$d" leases "${named[@]}" || return 1
		done < <(plan)
	else
		sleep 0.5
	fi
	local f
	for f in "$run"/pids/*.pid; do
		[ "$want" = "  " ] || [[ "$want" == *" $(basename "$f" .pid) "* ]] || continue
		running "$(basename "$f" .pid)" || { echo "testbed: $(basename "$f" .pid) exited (log: $run/logs/$(basename "$f" .pid).log)" >&2; return 1; }
	done
}

# Is the /24 A.B.C free in the root namespace: no address in it, and no route
# to it or inside it but the default route (so ours shadows nothing)?
net_free() {
	! ip -o -4 addr show | grep -F " inet $1." >/dev/null &&
		[ -z "$(ip -4 route show match "$1.0/24" | grep -v '^default')" ] &&
		[ -z "$(ip -4 route show root "$1.0/24")" ]
}

# The management /24 (A.B.C): SKL_METRICS_NET, or the first free one of
# 198.18.0.0/15 from one derived from the prefix (the default prefix: 198.18.0).
metrics_net() {
	if [ -n "${SKL_METRICS_NET:-}" ]; then
		[[ $SKL_METRICS_NET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
			die "SKL_METRICS_NET: expected A.B.C (a /24), got \"$SKL_METRICS_NET\""
		net_free "$SKL_METRICS_NET" || die "SKL_METRICS_NET $SKL_METRICS_NET.0/24 is in use in the root namespace"
		echo "$SKL_METRICS_NET"
		return
	fi
	local start=0 i n
	[ "$nsp" = skl- ] || start=$(( $(printf '%s' "$nsp" | cksum | cut -d' ' -f1) % 512 ))
	for i in $(seq 0 511); do
		n=$(( (start + i) % 512 ))
		if net_free "198.$((18 + n / 256)).$((n % 256))"; then
			echo "198.$((18 + n / 256)).$((n % 256))"
			return
		fi
	done
	die "no free /24 in 198.18.0.0/15 for the metrics network (set SKL_METRICS_NET)"
}

# The management bridge: mg0 in every switch, node and agent namespace, one
# veth to the root namespace (.1), and Prometheus file_sd targets.
metrics_up() {
	local net kind what hname port i=10 ns
	net=$(metrics_net)
	ip netns add "${nsp}mgmt"
	ip -n "${nsp}mgmt" link add br0 type bridge
	ip -n "${nsp}mgmt" link set br0 up
	ip link add "${nsp}mg" type veth peer name root netns "${nsp}mgmt"
	ip -n "${nsp}mgmt" link set root master br0 up
	ip addr add "$net.1/24" dev "${nsp}mg"
	ip link set "${nsp}mg" up
	mkdir -p "$run/prometheus"
	local sw=() nd=() ag=()
	while read -r kind what hname port; do
		[ "$kind" = metrics ] || continue
		ns=$nsp$hname
		ip link add "m-$hname" netns "${nsp}mgmt" type veth peer name mg0 netns "$ns"
		ip -n "${nsp}mgmt" link set "m-$hname" master br0 up
		ip -n "$ns" addr add "$net.$i/24" dev mg0
		ip -n "$ns" link set mg0 up
		[ "$what" = agent ] && port=9449 # skewless bench --metrics 0.0.0.0:9449
		local t="{\"targets\": [\"$net.$i:$port\"], \"labels\": {\"$what\": \"$hname\"}}"
		if [ "$port" != - ]; then
			case $what in switch) sw+=("$t") ;; node) nd+=("$t") ;; agent) ag+=("$t") ;; esac
		fi
		i=$((i + 1))
	done < <(plan)
	(IFS=,; echo "[${sw[*]}]") >"$run/prometheus/targets-switches.json"
	(IFS=,; echo "[${nd[*]}]") >"$run/prometheus/targets-nodes.json"
	(IFS=,; echo "[${ag[*]}]") >"$run/prometheus/targets-agents.json"
	log "metrics on $net.0/24 (root namespace: ${nsp}mg $net.1); targets in $run/prometheus"
}

# Namespaces, bridge and veths; then the processes.
up() {
	if [ -e "$run/up" ]; then
		if healthy; then
			log "$name is already up (run: $run)"
			return 0
		fi
		log "$name is marked up but not healthy: tearing it down first"
		down >/dev/null
	fi
	[ -c /dev/net/tun ] || die "/dev/net/tun is missing (modprobe tun)"
	command -v ethtool >/dev/null || die "ethtool is missing (apt-get install ethtool, or scripts/setup.sh)"
	"$build/agent/skewless" --config "$config" where probe >/dev/null || exit 1
	check_free
	mkdir -p "$run/logs" "$run/pids" "$run/data"
	trap 'echo "testbed: bring-up failed; tearing down (logs in $run/logs)" >&2; down >/dev/null 2>&1 || true; exit 1' ERR

	local kind a b c d e
	while read -r kind a b c d e; do
		case $kind in
		mtu) mtu=$a ;;
		host|switch)
			local ns=$nsp$a
			[ "$kind" = switch ] && ns=$nsp$b
			ip netns add "$ns"
			ip -n "$ns" link set lo up
			# No IPv6 chatter (router solicitations, DAD) on the switch's ports.
			ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
				net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1 || true ;;
		esac
		if [ "$kind" = host ]; then ip_of[$a]=$b; fi
	done < <(plan)

	if [ -n "$(plan | awk '$1 == "switch" && $4 == "one-arm"')" ]; then
		ip netns add "${nsp}fabric"
		ip -n "${nsp}fabric" link add br0 type bridge
		ip -n "${nsp}fabric" link set br0 up
		for h in "${!ip_of[@]}"; do
			ip link add "v-$h" mtu "$mtu" netns "${nsp}fabric" type veth peer name eth0 mtu "$mtu" netns "$nsp$h"
			ip -n "${nsp}fabric" link set "v-$h" master br0 up
			ip netns exec "$nsp$h" sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1 >/dev/null 2>&1 || true
			host_side "$nsp$h" eth0
			ip -n "$nsp$h" addr add "${ip_of[$h]}/24" dev eth0
			ip -n "$nsp$h" link set eth0 up
		done
	fi
	if [ -n "$(plan | awk '$1 == "metrics"')" ]; then metrics_up; fi
	start
	trap - ERR
	touch "$run/up"
	log "$name is up (run: $run)"
}

status() {
	local kind a b c d e rc=0
	while read -r kind a b c d e; do
		case $kind in
		host) printf '%-8s %-6s %-15s namespace %s\n' "$c" "$a" "$b" \
			"$(ns_exists "$nsp$a" && echo present || echo absent)" ;;
		switch) printf 'switch   %-6s %-15s namespace %s, socket %s\n' "$b" "$c" \
			"$(ns_exists "$nsp$b" && echo present || echo absent)" "$d"
			[ -S "$d" ] && "$cdtctl" --socket "$d" nodes || true ;;
		esac
	done < <(plan)
	local f
	for f in "$run"/pids/*.pid; do
		[ -e "$f" ] || continue
		printf 'process  %-10s pid %-8s %s\n' "$(basename "$f" .pid)" "$(cat "$f")" \
			"$(running "$(basename "$f" .pid)" && echo running || echo dead)"
	done
	if [ -e "$run/up" ] && healthy; then
		echo "$name: up, healthy (run: $run)"
	elif [ -e "$run/up" ]; then
		echo "$name: up, NOT healthy (logs in $run/logs)"
		rc=1
	else
		echo "$name: down"
		rc=3
	fi
	return $rc
}

case $cmd in
up) up ;;
down) down ;;
status) status ;;
start) start "$@" && log "started ${*:-everything}" ;;
*) usage ;;
esac
