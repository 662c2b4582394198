#!/usr/bin/env bash
# debian.sh SOURCE_ROOT - the Debian packages, end to end, on this machine:
#   1. build them (dpkg-buildpackage -us -uc -b) from a copy of the tree in
#      /tmp/<prefix>pkg-XXXXXX, so that the checkout stays clean;
#   2. install them (apt-get install ./*.deb);
#   3. check the installed units (systemd-analyze verify, silent and 0);
#   4. build tests/packaging/client.c against the installed library through
#      pkg-config and have it PUT and GET through a skewless-node started from
#      /usr/bin as the packages' system user, then read the key with the
#      installed CLI;
#   5. purge the packages and check that none of their files, directories,
#      data or user is left, nor any package apt pulled in for them.
# Cleans up on failure too (trap). Skipped (77) without root, apt-get or the
# packaging tools, and where skewless is installed by someone else: that
# install is not the test's to remove. A run killed before its purge leaves a
# marker (/tmp/<prefix>pkg-installed); the next run purges what it installed.
set -euo pipefail

src=$(cd "${1:?usage: debian.sh SOURCE_ROOT}" && pwd)
prefix=${SKL_TEST_PREFIX:-skl-test-}
marker=/tmp/${prefix}pkg-installed
packages=(skewless-switchd skewless-node skewless-tools libskewless0 libskewless-dev)
apt=(apt-get -y -q -o DPkg::Lock::Timeout=300)
export DEBIAN_FRONTEND=noninteractive
start=$(date +%s)

skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || skip "installs packages: run as root"
command -v apt-get >/dev/null || skip "apt-get not found: not a Debian system"
for tool in dpkg-buildpackage dh systemd-analyze pkg-config cc setpriv; do
	command -v "$tool" >/dev/null || skip "$tool not found (scripts/setup.sh installs it)"
done

installed() {
	dpkg-query -W -f='${db:Status-Status}\n' "$1" 2>/dev/null | grep -qvx not-installed
}

# Purge what the marker lists and is still installed: this run's packages and
# whatever apt pulled in for them. The marker stays if apt-get fails.
purge_marked() {
	local p todo=()

	while read -r p; do
		installed "$p" && todo+=("$p")
	done <"$marker"
	if [ ${#todo[@]} -gt 0 ]; then
		"${apt[@]}" purge "${todo[@]}" || return 1
	fi
	rm -f "$marker"
}

# Leftovers of a run of this prefix that did not get to its purge.
if [ -e "$marker" ]; then
	echo "purging the packages a killed run left installed"
	purge_marked >/dev/null
fi
rm -rf /tmp/"${prefix}"pkg-??????
for p in "${packages[@]}"; do
	installed "$p" && skip "$p is installed on this machine; not touching it"
done
for path in /etc/skewless /var/lib/skewless; do
	[ -e "$path" ] && skip "$path exists on this machine; not touching it"
done
getent passwd skewless >/dev/null && skip "user skewless exists on this machine; not touching it"

work=$(mktemp -d /tmp/"${prefix}"pkg-XXXXXX)
chmod 755 "$work" # the node, as user skewless, reads its config here
node_pid=

cleanup() {
	local rc=$?

	trap - EXIT
	if [ -n "$node_pid" ]; then
		kill "$node_pid" 2>/dev/null || true
		wait "$node_pid" 2>/dev/null || true
	fi
	if [ -e "$marker" ]; then
		purge_marked >/dev/null || rc=1
	fi
	rm -rf "$work"
	echo "debian.sh: $(($(date +%s) - start)) s"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# 1. Build, from a copy: the tracked and untracked files git would commit, or
# the whole tree without build folders when it is not a git checkout.
mkdir "$work/src"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$src" ls-files -z -co --exclude-standard | tar -C "$src" --null -T - -cf - |
		tar -C "$work/src" -xf -
else
	tar -C "$src" --exclude-tag-all=build.ninja --exclude=./run -cf - . | tar -C "$work/src" -xf -
fi
echo "building the packages (log: build.log)"
if ! (cd "$work/src" && DEB_BUILD_OPTIONS="nocheck noddebs parallel=2" \
	dpkg-buildpackage -us -uc -b -j2) >"$work/build.log" 2>&1; then
	tail -40 "$work/build.log"
	fail "dpkg-buildpackage failed"
fi
echo "built in $(($(date +%s) - start)) s"
debs=()
for p in "${packages[@]}"; do
	deb=$(ls "$work/${p}_"*.deb 2>/dev/null) || fail "no package $p was built"
	debs+=("$deb")
	dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' >>"$work/files"
done

# 2. Install; the marker first, so that whatever gets installed is purged.
dpkg-query -W -f='${Package}\n' | sort >"$work/before"
printf '%s\n' "${packages[@]}" >"$marker"
"${apt[@]}" install --no-install-recommends "${debs[@]}" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; fail "apt-get install failed"; }
dpkg-query -W -f='${Package}\n' | sort | comm -13 "$work/before" - >"$marker"
for p in "${packages[@]}"; do
	installed "$p" || fail "$p is not installed after apt-get install"
done
[ -d /var/lib/skewless ] && [ "$(stat -c %U:%G:%a /var/lib/skewless)" = skewless:skewless:750 ] ||
	fail "/var/lib/skewless: expected a directory skewless:skewless 750"

# 3. The units, one instance each; with man(1) installed, their Documentation=
# pages are checked too.
man=no
command -v man >/dev/null && man=yes
for unit in skewless-switchd@1.service skewless-node@kv01.service; do
	out=$(systemd-analyze verify --man="$man" "/lib/systemd/system/$unit" 2>&1) && [ -z "$out" ] ||
		fail "systemd-analyze verify $unit: $out"
done
echo "units verified"

# 4. A program against the installed library, and a node from /usr/bin.
unset PKG_CONFIG_PATH
[ "$(pkg-config --modversion skewless)" = "$(dpkg-query -W -f='${Version}' libskewless-dev)" ] ||
	fail "pkg-config skewless: $(pkg-config --modversion skewless 2>&1)"
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -Wall -Werror -o "$work/client" "$src/tests/packaging/client.c" \
	$(pkg-config --cflags --libs skewless) || fail "cannot build a program against libskewless"
libs=$(ldd "$work/client")
grep -Eq 'libskewless\.so\.0 => (/usr)?/lib/' <<<"$libs" ||
	fail "client does not load the installed libskewless.so.0: $libs"

port=$((40000 + ($$ % 2000) * 10))
data=/var/lib/skewless/$(basename "$work")
cat >"$work/cluster.json" <<JSON
{"service": {"vip": "127.0.0.1", "port": $port},
 "switches": [{"id": 1, "name": "s1", "role": "one-arm",
               "ports": [{"name": "p", "vdev": "net_tap0,iface=t0"}]}],
 "nodes": [{"id": 1, "name": "n1", "ip": "127.0.0.1", "port": $((port + 1)), "data_dir": "$data"}]}
JSON
chmod 644 "$work/cluster.json"
setpriv --reuid=skewless --regid=skewless --init-groups --pdeathsig=KILL \
	/usr/bin/skewless-node --config "$work/cluster.json" --node n1 --log-level warn &
node_pid=$!
value="installed-$$"
timeout 60 "$work/client" "$work/cluster.json" pkg:key "$value" ||
	fail "the client's round trip through the installed node failed"
got=$(timeout 30 /usr/bin/skewless --config "$work/cluster.json" --mode direct get pkg:key) ||
	fail "skewless get pkg:key failed"
[ "$got" = "$value" ] || fail "skewless get pkg:key: \"$got\", expected \"$value\""
[ -d "$data" ] && [ "$(stat -c %U "$data")" = skewless ] || fail "$data: not made by the node as skewless"
kill "$node_pid"
wait "$node_pid" || true
node_pid=

# 5. Purge; then nothing of the packages may be left.
cp "$marker" "$work/installed"
purge_marked >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "apt-get purge failed"; }
left=()
while read -r f; do
	[ -e "$f" ] || [ -L "$f" ] && left+=("$f")
done <"$work/files"
for path in /etc/skewless /var/lib/skewless; do
	[ -e "$path" ] && left+=("$path")
done
getent passwd skewless >/dev/null && left+=("user skewless")
getent group skewless >/dev/null && left+=("group skewless")
while read -r p; do
	installed "$p" && left+=("package $p")
done <"$work/installed"
[ ${#left[@]} -eq 0 ] || fail "left after apt-get purge: ${left[*]}"
echo "PASS: built, installed, verified, round trip through the installed node, purged clean"
