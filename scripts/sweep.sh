#!/usr/bin/env bash
# sweep.sh [--check] [PREFIX] - remove what test runs under PREFIX left
# behind (default skl-test-, the prefix of every test in tests/).
#
# A test whose driver was killed with SIGKILL never runs its own teardown.
# Everything a test makes is named under one prefix, so the next run (each
# scenario calls this first) and the end of the suite can find it:
#   network namespaces  PREFIX*       every process inside is killed first
#   processes           whose pid file is under /tmp/PREFIX*/, or whose
#                       command line names a file there (a root-namespace
#                       switchd); only skewless binaries and python3 drivers
#   DPDK runtime dirs   /var/run/dpdk/PREFIX*
#   run folders         /tmp/PREFIX*
#   Debian packages     those /tmp/PREFIXpkg-installed lists, purged
#                       (tests/packaging/debian.sh installs them)
# --check removes nothing: it lists what is left and exits 1 if anything is.
set -uo pipefail
check=
if [ "${1:-}" = --check ]; then check=1; shift; fi
prefix=${1:-skl-test-}
case $prefix in skl-?*) ;; *) echo "sweep: refusing prefix '$prefix' (must start with skl-)" >&2; exit 64 ;; esac

namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -F -- "$prefix" | grep -E "^$prefix" || true; }

# Pids of skewless processes that belong to PREFIX's run folders.
processes() {
	local f pid
	for f in /tmp/"$prefix"*/pids/*.pid /tmp/"$prefix"*/*/pids/*.pid; do
		[ -e "$f" ] && pid=$(cat "$f" 2>/dev/null) && [ -d "/proc/$pid" ] && echo "$pid"
	done
	pgrep -f -- "(skewless|python3).* /tmp/$prefix" 2>/dev/null || true
}

leftovers() {
	local what
	what=$(namespaces | sed 's/^/namespace /')
	what+=$'\n'$(processes | sort -u | while read -r p; do
		[ -n "$p" ] && echo "process $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-120)"
	done)
	what+=$'\n'$(ls -d /var/run/dpdk/"$prefix"* /tmp/"$prefix"* 2>/dev/null | sed 's/^/path /')
	echo "$what" | sed '/^$/d'
}

if [ -n "$check" ]; then
	left=$(leftovers)
	if [ -n "$left" ]; then
		echo "sweep: left behind under $prefix:"
		echo "$left" | sed 's/^/  /'
		exit 1
	fi
	echo "sweep: nothing left under $prefix"
	exit 0
fi

for ns in $(namespaces); do
	ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
done
processes | sort -u | xargs -r kill -KILL 2>/dev/null
# A killed process is gone from its namespace once reaped; give them a moment.
for _ in $(seq 50); do [ -z "$(processes)" ] && break; sleep 0.1; done
for ns in $(namespaces); do ip netns del "$ns" 2>/dev/null; done
marker=/tmp/"$prefix"pkg-installed
if [ -s "$marker" ]; then
	while read -r p; do
		if dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qvx not-installed; then
			echo "$p"
		fi
	done <"$marker" | xargs -r env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q \
		-o DPkg::Lock::Timeout=300 >/dev/null ||
		{ echo "sweep: could not purge the packages $marker lists" >&2; exit 1; }
fi
rm -rf /var/run/dpdk/"$prefix"* /tmp/"$prefix"*
left=$(leftovers)
[ -z "$left" ] || { echo "sweep: could not remove under $prefix:"; echo "$left" | sed 's/^/  /'; exit 1; }
