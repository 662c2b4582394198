#!/usr/bin/env bash
# tap_smoke.sh BUILD_DIR - skewless-switchd end to end on real TAP ports (inline):
# two net_tap ports moved into two network namespaces it creates (a client and a
# node), a python node answering one GET. The client's request must come back
# through the switch from the VIP with the node's value; the switch must have
# learnt the node by ARP. Skips (77) without root or namespaces; removes what it
# made, also on failure.
set -u
BUILD=${1:?usage: tap_smoke.sh BUILD_DIR}
[ "$(id -u)" = 0 ] || { echo "tap_smoke: skipped (needs root)"; exit 77; }
# Every test's prefix, skl-test-: scripts/sweep.sh clears what a killed run left.
"$(dirname "$0")/../../scripts/sweep.sh" skl-test-smoke- || exit 1
NS_A=skl-test-smoke-a NS_N=skl-test-smoke-n IF_A=sks-a$$ IF_N=sks-n$$
ip netns add "$NS_A" 2>/dev/null || { echo "tap_smoke: skipped (cannot create namespaces)"; exit 77; }
T=$(mktemp -d /tmp/skl-test-smoke-XXXXXX) P=
cleanup() {
	[ -n "$P" ] && { kill -INT "$P" 2>/dev/null; sleep 0.5; kill -9 "$P" 2>/dev/null; }
	ip netns del "$NS_A" 2>/dev/null; ip netns del "$NS_N" 2>/dev/null
	rm -rf "$T" "/var/run/dpdk/skl-test-smoke-$$"
}
trap cleanup EXIT
fail() { echo "tap_smoke: FAIL: $*"; cat "$T/log"; exit 1; }
ip netns add "$NS_N" || fail "netns"
cat >"$T/c.json" <<J
{"service": {"vip": "10.79.0.100", "mac": "02:53:4b:4c:00:64"},
 "switches": [{"id": 1, "lcores": [1], "control_socket": "$T/sw.sock", "idle_sleep_us": 100,
   "ports": [{"name": "to-a1", "vdev": "net_tap0,iface=$IF_A"}, {"name": "to-n1", "vdev": "net_tap1,iface=$IF_N"}]}],
 "nodes": [{"id": 1, "name": "n1", "ip": "10.79.0.1"}], "agents": [{"name": "a1", "ip": "10.79.0.201"}]}
J
"$BUILD/switchd/skewless-switchd" -l 0,1 --no-huge -m 256 --no-pci --file-prefix "skl-test-smoke-$$" \
	--log-level lib.eal:error -- --config "$T/c.json" --switch 1 --no-digest-timeout >"$T/log" 2>&1 &
P=$!
for _ in $(seq 50); do [ -S "$T/sw.sock" ] && break; sleep 0.1; done
[ -S "$T/sw.sock" ] || fail "switchd did not start"
ip link set "$IF_A" netns "$NS_A" && ip link set "$IF_N" netns "$NS_N" || fail "moving TAPs"
ip -n "$NS_A" addr add 10.79.0.201/24 dev "$IF_A" && ip -n "$NS_A" link set "$IF_A" up
ip -n "$NS_N" addr add 10.79.0.1/24 dev "$IF_N" && ip -n "$NS_N" link set "$IF_N" up
cat >"$T/node.py" <<'PY'
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.79.0.1", 7447)); s.settimeout(8)
d, a = s.recvfrom(2048)
h = bytearray(d[:48]); kl = struct.unpack("!H", h[42:44])[0]
h[3] |= 0x80; h[24:32] = struct.pack("!Q", 9); h[32:34] = struct.pack("!H", 1); h[44:48] = struct.pack("!I", 2)
s.sendto(bytes(h) + d[48:48 + kl] + b"ok", a)
PY
cat >"$T/client.py" <<'PY'
import socket, struct, ctypes, sys
x = ctypes.CDLL("libxxhash.so.0"); x.XXH3_64bits.restype = ctypes.c_uint64
x.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
key = b"alpha"
h = struct.pack("!HBBHBBQQQHHIHHI", 0x5047, 1, 1, 0, 0, 0, 1, x.XXH3_64bits(key, len(key)),
                0, 0, 0, 0, 0, len(key), 0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.79.0.201", 0)); s.settimeout(5)
for _ in range(3):  # the first request may be dropped while the switch ARPs for the node
    s.sendto(h + key, ("10.79.0.100", 7447))
    try:
        d, a = s.recvfrom(2048)
        break
    except socket.timeout:
        continue
else:
    sys.exit("no reply")
ok = a == ("10.79.0.100", 7447) and d[3] == 0x81 and d[48 + len(key):] == b"ok"
print("client: reply from %s op=%#x value=%r" % (a, d[3], d[48 + len(key):]))
sys.exit(0 if ok else 1)
PY
sleep 1.5
ip netns exec "$NS_N" timeout 10 python3 "$T/node.py" &
NP=$!
sleep 0.3
ip netns exec "$NS_A" timeout 20 python3 "$T/client.py" || fail "client"
wait "$NP" || fail "node"
"$BUILD/switchd/cdtctl" --socket "$T/sw.sock" --json nodes | grep -q '"port": "to-n1"' || fail "node not learnt"
echo "tap_smoke: ok"
