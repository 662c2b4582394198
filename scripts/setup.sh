#!/usr/bin/env bash
# Install the Debian packages skewless needs (only those missing), then
# configure and build: build/ (optimised) and build-asan/ (AddressSanitizer +
# UndefinedBehaviorSanitizer, used by the unit tests). Safe to run again.
# --release: build/ only (what the demo and the testbed run).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
	build-essential meson ninja-build pkg-config	# toolchain
	libdpdk-dev dpdk-dev libnuma-dev libpcap-dev	# switchd, dpdk-testpmd for bench/
	dpdk-doc					# l3fwd's source for bench/fastpath.sh
	valgrind					# bench/fastpath_callgrind.sh
	librocksdb-dev					# nodes
	libjansson-dev libxxhash-dev libmd-dev libssl-dev	# conf, proto
	libmicrohttpd-dev				# /metrics (base/httpd.c)
	prometheus					# promtool in the tests, the scrape e2e test
	check libsubunit-dev				# unit tests
	clang libclang-rt-14-dev			# libFuzzer target
	nutcracker memcached python3			# twemproxy ketama comparison
	redis-server redis-tools python3-redis		# skewless-proxy's tests, bench/resp.sh, bench/node.sh
	iproute2 ethtool gnuplot-nox procps		# testbed, demo plots
	debhelper dpkg-dev systemd			# Debian packages (debian/), their test
	nftables					# e2e switch-loss: frames dropped on the fabric
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "setup.sh: missing packages: ${missing[*]}; run as root (as another user: sudo $0)" >&2
		exit 1
	fi
	echo "setup.sh: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
fi

# Configured once; ninja re-runs meson by itself when a meson.build changes.
[ -f build/build.ninja ] || meson setup build --buildtype=release
if [ "${1:-}" = --release ]; then ninja -C build; exit 0; fi
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build
ninja -C build-asan
