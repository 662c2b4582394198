#!/usr/bin/env python3
"""Fuzz the running daemons: mutated datagrams at an ASan-built node and switch.

usage: fuzz_daemons.py [--build DIR] [--count N] [--seconds S] [--batch B] [--seed X]

Brings up, in a network namespace of its own (SKL_TEST_PREFIX + "fz", default
skl-test-fz), one AddressSanitizer + UBSan build of skewless-switchd (one-arm,
its port a net_tap whose interface stays in that namespace) and one of
skewless-node behind it. A corpus of valid datagrams of every op and every
payload (GET, PUT, DEL, PROBE, HINT and the replies of each, RC_REQ of a value
and of a tombstone, RC_ACK, REPLICATE with 1..16 targets, UNREPLICATE,
DIGEST, SYNC SCORES / CANDIDATES / OWNED) is first sent as it is, and must
cost neither daemon a single decode error. Then N mutated datagrams (bit
flips, boundary values in the header's length, op, flag, status and node
fields, truncation, extension, splices of two frames, cross-op bodies, 1-4
at a time) go, half to the node (raw IPv4, from the address the op's sender
has: the switch's VIP for REPLICATE, the other node's for RC_REQ, a client
for data ops) and half into the switch's port (raw Ethernet frames, from the
node's address for replies, RC_ACK and DIGEST, from the peer switch's VIP
for SYNC). After every batch both must still answer valid requests: a PUT
and a GET straight at the node (the value read back), a GET through the
switch (answered, whatever the status: a fuzzed DIGEST may have lowered the
node's health). At the end both are stopped with SIGTERM and must exit 0
with no AddressSanitizer, LeakSanitizer or UBSan report in their logs.

Bounded by --count (default 20,000) and --seconds (default 45), whichever
comes first. Long run (docs/operations.md, "Fuzzing the running daemons"):
--count 1000000 --seconds 7200.
Exit 0 pass, 1 fail, 77 skipped (not root, no namespaces or TAP devices, no
ASan build).
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("SKL_SOURCE_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
NSP = os.environ.get("SKL_TEST_PREFIX", "skl-test-")
NS = f"{NSP}fz"
SKIP = 77

VIP, PEER_VIP, NODE1, NODE2, CLIENT = "10.99.2.100", "10.99.2.101", "10.99.2.1", "10.99.2.2", \
    "10.99.2.50"
VIP_MAC = "02:53:4b:4c:46:01"
PORT = 7447
IFACE = "fzsw"
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "SUMMARY: UndefinedBehaviorSanitizer")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- The corpus: valid datagrams of every op and payload (docs/protocol.md). ----------------

def datagram(op, key=b"", value=b"", flags=0, status=0, version=0, node=0, load=0, ret_ip=0,
             ret_port=0, keyhash=0, req_id=None):
    rid = req_id if req_id is not None else (0x46 << 56) | random.getrandbits(40)
    return struct.pack("!HBBHBBQQQHHIHHI", 0x5047, 1, op, flags, status, 0, rid, keyhash,
                       version, node, load, ret_ip, ret_port, len(key), len(value)) + key + value


def ipv4(s):
    return struct.unpack("!I", socket.inet_aton(s))[0]


def digest_payload(seq, queue=10):
    return struct.pack("!BBHIIQIIIBBBBBBBB", 1, 0, 100, seq, 0x46465a5a,
                       int(time.time() * 1e6), queue, 800, 1200, queue, 4, 2, 3, 1, 5, 90, 0)


def sync_payload(kind, items, count, extra=b"", seq=1):
    hdr = struct.pack("!BBHIIIQQQHHQQQ", 2, kind, 2, 0x46460001, seq, 0,
                      int(time.monotonic() * 1e6), 0, 0, count, 0, 1 << 20, 1 << 20, 0)
    return hdr + extra + items


def corpus(keys):
    """[(name, datagram)] for every op and payload, each fitting one 1500-byte frame;
    keys: [(bytes, keyhash)]."""
    out = []
    ret = dict(ret_ip=ipv4(CLIENT), ret_port=40000)
    for i, (k, kh) in enumerate(keys):
        for flags in (0, 0x1, 0x2, 0x4):
            out.append(("GET", datagram(0x01, k, flags=flags, keyhash=kh)))
            out.append(("DEL", datagram(0x03, k, flags=flags, keyhash=kh)))
        for vlen in (0, 1, 100, 1000):
            out.append(("PUT", datagram(0x02, k, bytes(random.getrandbits(8)
                                                      for _ in range(vlen)), keyhash=kh,
                                        version=5000 if vlen == 1 else 0)))
        for cond, action in ((0, 0), (1, 0), (2, 2), (0, 3), (2, 1)):
            prefix = struct.pack("!BBBBQ", cond, action, 0, 0, 60000 if action == 2 else 0)
            out.append(("CAS", datagram(0x04, k, prefix + (b"v" * 10 if action == 0 else b""),
                                        keyhash=kh, version=i)))
        out.append(("PROBE", datagram(0x21, k, keyhash=kh)))
        out.append(("HINT", datagram(0x22, k, keyhash=kh)))
        for status in range(8):
            out.append(("GET_REPLY", datagram(0x81, k, b"v" * (status * 3), status=status,
                                              version=7 + i, node=1, keyhash=kh, flags=0x2,
                                              **ret)))
        out.append(("PUT_REPLY", datagram(0x82, k, version=9, node=1, keyhash=kh, **ret)))
        out.append(("DEL_REPLY", datagram(0x83, k, status=1, version=10, node=1, keyhash=kh,
                                          **ret)))
        out.append(("PROBE_REPLY", datagram(0xa1, k, version=3, node=1, keyhash=kh)))
        out.append(("HINT_REPLY", datagram(0xa2, k, version=3, node=1, keyhash=kh)))
        for kind, val in ((0, b"copy" * (i + 1)), (1, b"")):
            prefix = struct.pack("!HBBI", 1, kind, 0, 2500 * i)
            out.append(("RC_REQ", datagram(0x10, k, prefix + val, version=7 + i, node=1,
                                           keyhash=kh)))
        out.append(("RC_ACK", datagram(0x11, k, version=7 + i, node=1, keyhash=kh)))
        for n in (1, 2, 16):
            targets = b"".join(struct.pack("!H", 1 + (t % 2)) for t in range(n))
            out.append(("REPLICATE", datagram(0x12, k, struct.pack("!H", 1) + targets,
                                              flags=0x2, version=7 + i, node=1, keyhash=kh)))
        out.append(("REPLICATE_REPLY", datagram(0x92, k, version=7 + i, node=1, keyhash=kh)))
        out.append(("UNREPLICATE", datagram(0x13, k, flags=0x2, version=i, node=1,
                                            keyhash=kh)))
        out.append(("UNREPLICATE_REPLY", datagram(0x93, k, node=1, keyhash=kh)))
        # Ring changes: FETCH (new home -> previous home) and MIGRATE (the record's
        # prefix and value), and their replies.
        out.append(("FETCH", datagram(0x15, k, version=0, node=1, keyhash=kh)))
        for kind, val in ((0, b"moved" * (i + 1)), (1, b"")):
            # {kind, 0, ring version & 0xffff, TTL ms}: a tombstone has no TTL
            prefix = struct.pack("!BBHI", kind, 0, 1, 0 if kind else 1000 * i)
            out.append(("MIGRATE", datagram(0x16, k, prefix + val, version=3 + i, node=1,
                                            keyhash=kh)))
            out.append(("FETCH_REPLY", datagram(0x95, k, prefix + val, version=3 + i, node=1,
                                                keyhash=kh)))
        out.append(("MIGRATE_REPLY", datagram(0x96, k, version=3 + i, node=1, keyhash=kh)))
    for seq in (1, 2, 1000):
        out.append(("DIGEST", datagram(0x20, value=digest_payload(seq), node=1)))
    # A node's RING reply (to the switch's control thread): its epoch; u8 flags, be32
    # arcs done, be64 version floor. RING requests themselves are left out: a valid
    # one begins a ring change at the node.
    for flags in (0, 1):
        out.append(("RING_REPLY", datagram(0x94, value=struct.pack("!BIQ", flags, 3, 40),
                                           version=1, node=1)))
    scores = struct.pack("!HBBI", 1, 97, 1, 40) + struct.pack("!HBBI", 2, 0, 0, 0xffffffff)
    out.append(("SYNC_SCORES", datagram(0x30, value=sync_payload(0, scores, 2), flags=0x2)))
    cands = b"".join(struct.pack("!QIH", kh, 10 + j, min(len(k), 256)) + k[:256]
                     for j, (k, kh) in enumerate(keys))
    out.append(("SYNC_CANDIDATES", datagram(0x30, value=sync_payload(
        1, cands, len(keys), struct.pack("!QQ", 77, 1000)), flags=0x2)))
    owned = b"".join(struct.pack("!QH", kh, min(len(k), 256)) + k[:256]
                     for k, kh in sorted(keys, key=lambda x: x[1]))
    out.append(("SYNC_OWNED", datagram(0x30, value=sync_payload(
        2, owned, len(keys), struct.pack("!QHH", 5, len(keys), 0)), flags=0x2)))
    return [(name, d) for name, d in out if len(d) <= 1400]


# ---- Mutations. ---------------------------------------------------------------------------

INTERESTING16 = (0, 1, 0x7f, 0x80, 0xff, 0x100, 0x3ff, 0x400, 0x401, 0x7fff, 0x8000, 0xffff)
INTERESTING32 = (0, 1, 0x7f, 0xff, 0x400, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff)
OPS = (0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12, 0x13, 0x15, 0x16, 0x20, 0x21, 0x22, 0x30)


def mutate(rng, d, pool):
    b = bytearray(d)
    for _ in range(rng.randint(1, 4)):
        m = rng.randrange(12)
        if m == 0 and b:  # bit flips
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
        elif m == 1 and b:  # an interesting byte
            b[rng.randrange(len(b))] = rng.choice((0, 1, 0x7f, 0x80, 0xff))
        elif m == 2 and len(b) >= 48:  # key_len / node / load / ret_port / flags
            off = rng.choice((4, 32, 34, 40, 42))
            struct.pack_into("!H", b, off, rng.choice(INTERESTING16))
        elif m == 3 and len(b) >= 48:  # val_len / ret_ip
            struct.pack_into("!I", b, rng.choice((36, 44)), rng.choice(INTERESTING32))
        elif m == 4 and len(b) >= 48:  # another op or its reply, same body
            b[3] = rng.choice(OPS) | (0x80 if rng.random() < 0.3 else 0)
        elif m == 5 and len(b) >= 48:  # status
            b[6] = rng.randrange(10)
        elif m == 6 and b:  # truncate
            del b[rng.randrange(len(b)):]
        elif m == 7:  # extend
            b += bytes(rng.getrandbits(8) for _ in range(rng.choice((1, 2, 8, 32, 100))))
        elif m == 8:  # splice with another frame
            other = rng.choice(pool)[1]
            cut = rng.randrange(len(b) + 1)
            b = b[:cut] + other[rng.randrange(len(other) + 1):]
        elif m == 9 and len(b) > 48:  # a payload byte or word
            i = rng.randrange(48, len(b))
            b[i] = rng.getrandbits(8)
            if i + 4 <= len(b) and rng.random() < 0.5:
                struct.pack_into("!I", b, i, rng.choice(INTERESTING32))
        elif m == 10 and len(b) > 4:  # duplicate a chunk
            i = rng.randrange(len(b))
            j = min(len(b), i + rng.randint(1, 64))
            b[i:i] = b[i:j]
        elif m == 11 and b:  # zero a range
            i = rng.randrange(len(b))
            b[i:i + rng.randint(1, 16)] = bytes(len(b[i:i + rng.randint(1, 16)]))
    return bytes(b[:1400])


# ---- Inside the namespace: send, check. -------------------------------------------------------

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def ip_header(src, dst, length):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + length, random.getrandbits(16), 0, 64, 17,
                    0, socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:]


def node_source(op, rng=None):
    """The address the op's sender has (docs/protocol.md "Control ops"); with rng, now
    and then another."""
    if rng and rng.random() < 0.15:
        return rng.choice((VIP, NODE2, CLIENT))
    op &= 0x7f
    if op == 0x12:
        return VIP
    if op == 0x13:
        return rng.choice((NODE2, VIP)) if rng else VIP
    if op in (0x10, 0x15, 0x16):
        return NODE2
    return CLIENT


def switch_source(op, rng=None):
    if rng and rng.random() < 0.15:
        return rng.choice((NODE1, PEER_VIP, CLIENT))
    if op & 0x80 or op & 0x7f in (0x11, 0x20):  # replies (RING's too), RC_ACK, DIGEST
        return NODE1
    if op == 0x30:
        return PEER_VIP
    return CLIENT


class Inner:
    def __init__(self, spec):
        self.spec = spec
        self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        self.pkt = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.pkt.bind((IFACE, 0))
        self.mymac = self.pkt.getsockname()[4]
        self.vipmac = bytes.fromhex(VIP_MAC.replace(":", ""))
        self.cl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.cl.bind((CLIENT, 0))
        self.cl.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.seq = 0

    def to_node(self, src, d):
        udp = struct.pack("!HHHH", 40001, PORT, 8 + len(d), 0) + d
        self.raw.sendto(ip_header(src, NODE1, len(udp)) + udp, (NODE1, 0))

    def to_switch(self, src, d):
        udp = struct.pack("!HHHH", PORT if src != CLIENT else 40002, PORT, 8 + len(d), 0) + d
        frame = self.vipmac + self.mymac + b"\x08\x00" + ip_header(src, VIP, len(udp)) + udp
        self.pkt.send(frame)

    def rpc(self, addr, op, key, kh, value=b"", tries=5):
        """A valid request; the reply's (status, value), or None when nothing came."""
        for _ in range(tries):
            self.seq += 1
            rid = (0x47 << 56) | self.seq
            self.cl.sendto(datagram(op, key, value, keyhash=kh, req_id=rid), (addr, PORT))
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:
                self.cl.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    r = self.cl.recv(4096)
                except socket.timeout:
                    break
                if len(r) >= 48 and struct.unpack_from("!Q", r, 8)[0] == rid:
                    klen, vlen = struct.unpack_from("!HI", r, 42)
                    return r[6], r[48 + klen:48 + klen + vlen]
        return None

    def serving(self, round_no):
        """Both answer valid requests: PUT+GET at the node, GET through the switch."""
        key, kh = self.spec["check_keys"][round_no % len(self.spec["check_keys"])]
        key = key.encode()
        value = hashlib.sha256(b"%d" % round_no).hexdigest().encode()
        put = self.rpc(NODE1, 0x02, key, kh, value)
        got = self.rpc(NODE1, 0x01, key, kh)
        if not put or put[0] != 0 or not got or got != (0, value):
            return f"node: put {put}, get {got} (want {value!r})"
        via = self.rpc(VIP, 0x01, key, kh)
        if via is None:
            return "switch: no answer to a GET"
        self.statuses[via[0]] = self.statuses.get(via[0], 0) + 1
        return None

    def alive(self):
        for name, pid in self.spec["pids"].items():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ", 1)[1][0] == "Z":
                        return f"{name} exited"
            except OSError:
                return f"{name} exited"
        return None

    def run(self):
        rng = random.Random(self.spec["seed"])
        random.seed(self.spec["seed"])
        keys = [(k.encode(), kh) for k, kh in self.spec["keys"]]
        pool = corpus(keys)
        self.statuses = {}
        names = sorted({n for n, _ in pool})
        # The corpus as it is: every item valid (the caller checks the decode counters).
        for name, d in pool:
            self.to_node(node_source(d[3]), d)
            self.to_switch(switch_source(d[3]), d)
            time.sleep(0.001)
        time.sleep(0.3)
        print(json.dumps({"corpus": len(pool), "ops": names}), flush=True)
        sys.stdin.readline()  # the caller read the counters
        err = self.serving(0)
        if err:
            return {"error": "after the corpus: " + err}
        sent = {"node": 0, "switch": 0}
        t0 = time.monotonic()
        end = t0 + self.spec["seconds"]
        rounds = 0
        while sent["node"] + sent["switch"] < self.spec["count"] and time.monotonic() < end:
            n = min(self.spec["batch"], self.spec["count"] - sent["node"] - sent["switch"])
            for i in range(n):
                d = mutate(rng, rng.choice(pool)[1], pool)
                op = d[3] if len(d) > 3 else 0
                if rng.random() < 0.5:
                    self.to_node(node_source(op, rng), d)
                    sent["node"] += 1
                else:
                    self.to_switch(switch_source(op, rng), d)
                    sent["switch"] += 1
                if i % 50 == 49:
                    time.sleep(0.002)  # the TAP's queue holds 1000 frames: stay below
            rounds += 1
            err = self.alive() or self.serving(rounds)
            if err:
                return {"error": f"after {sent}: {err}", "sent": sent}
        return {"sent": sent, "rounds": rounds, "seconds": round(time.monotonic() - t0, 1),
                "switch_get_statuses": self.statuses}


# ---- Outside: the namespace, the daemons, the verdict. ------------------------------------------

def sh(*args, check=True, timeout=30, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=check,
                          **kw)


class Rig:
    def __init__(self, build, run_dir):
        self.build, self.run = build, run_dir
        self.procs = {}
        self.config = os.path.join(run_dir, "fuzz.json")
        self.sock = os.path.join(run_dir, "switch-1.sock")
        for d in ("logs", "pids", "data"):
            os.makedirs(os.path.join(run_dir, d))
        cfg = {
            "service": {"vip": VIP, "port": PORT, "mac": VIP_MAC},
            "switches": [
                {"id": 1, "name": "fz1", "role": "one-arm", "control_socket": self.sock,
                 "lcores": [1], "peers": [2],
                 "ports": [{"name": "fabric", "vdev": f"net_tap0,iface={IFACE}"}]},
                {"id": 2, "name": "fz2", "role": "one-arm", "vip": PEER_VIP,
                 "mac": "02:53:4b:4c:46:02", "peers": [1],
                 "control_socket": os.path.join(run_dir, "switch-2.sock"),
                 "ports": [{"name": "fabric", "vdev": "net_tap1,iface=fzsw2"}]}],
            "nodes": [{"id": 1, "name": "n1", "ip": NODE1},
                      {"id": 2, "name": "n2", "ip": NODE2}],
            "agents": [{"name": "c1", "ip": CLIENT}],
            "node": {"durability": "async"},
        }
        with open(self.config, "w") as f:
            json.dump(cfg, f, indent=1)

    def start(self, name, argv):
        env = dict(os.environ,
                   ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0",
                   UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
        logf = open(os.path.join(self.run, "logs", f"{name}.log"), "a")
        p = subprocess.Popen(["ip", "netns", "exec", NS, *argv], stdout=logf,
                             stderr=subprocess.STDOUT, env=env)
        self.procs[name] = p
        with open(os.path.join(self.run, "pids", f"{name}.pid"), "w") as f:
            f.write(str(p.pid))
        return p

    def cdtctl(self, *args):
        r = sh(os.path.join(self.build, "switchd", "cdtctl"), "--socket", self.sock, "--json",
               *args, check=False, timeout=10)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def up(self):
        sh("ip", "netns", "add", NS)
        sh("ip", "-n", NS, "link", "set", "lo", "up")
        self.start("switch", [os.path.join(self.build, "switchd", "skewless-switchd"), "-l",
                              "0,1", "--no-pci", "--no-huge", "-m", "256", "--file-prefix", NS,
                              "--log-level=lib.member:crit", "--", "--config", self.config,
                              "--switch", "1"])
        deadline = time.monotonic() + 60
        while "PROMISC" not in sh("ip", "-n", NS, "link", "show", IFACE, check=False).stdout:
            if time.monotonic() > deadline or self.procs["switch"].poll() is not None:
                raise RuntimeError("the switch's TAP never came up (logs/switch.log)")
            time.sleep(0.1)
        for a in (CLIENT, NODE1):
            sh("ip", "-n", NS, "addr", "add", f"{a}/24", "dev", IFACE)
        sh("ip", "-n", NS, "link", "set", IFACE, "up")
        self.start("node", [os.path.join(self.build, "nodes", "skewless-node"), "--config",
                            self.config, "--node", "n1", "--data-dir",
                            os.path.join(self.run, "data", "n1")])
        while time.monotonic() < deadline:
            nodes = (self.cdtctl("nodes") or {}).get("nodes", [])
            n1 = [n for n in nodes if n["name"] == "n1"]
            if n1 and n1[0]["alive"] and n1[0].get("mac"):
                return
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}) at start")
            time.sleep(0.2)
        raise RuntimeError("the switch never saw the node up")

    def node_counters(self):
        path = os.path.join(self.run, "data", "n1", "counters")
        old = os.stat(path).st_mtime_ns if os.path.exists(path) else 0
        os.kill(self.node_pid(), signal.SIGUSR1)
        for _ in range(300):
            if os.path.exists(path) and os.stat(path).st_mtime_ns != old:
                break
            time.sleep(0.01)
        time.sleep(0.05)
        with open(path) as f:
            return {k: int(v) for k, v in (l.split() for l in f if len(l.split()) == 2)}

    def node_pid(self):
        """The node process itself (ip netns exec execs it: same pid)."""
        return self.procs["node"].pid

    def switch_counters(self):
        s = self.cdtctl("stats")
        return dict(s["counters"], **s["drops"])

    def stop(self):
        """SIGTERM both; their exit codes (None: had to be killed)."""
        codes = {}
        for name in ("node", "switch"):
            p = self.procs.get(name)
            if not p:
                continue
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                codes[name] = p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                codes[name] = None
        return codes

    def sanitizer_reports(self):
        bad = []
        for name in ("node", "switch"):
            with open(os.path.join(self.run, "logs", f"{name}.log"), errors="replace") as f:
                text = f.read()
            for mark in SANITIZER_MARKS:
                if mark in text:
                    i = text.index(mark)
                    bad.append(f"{name}: {text[max(0, i - 200):i + 1500]}")
        return bad

    def down(self):
        self.stop()
        sh("ip", "netns", "del", NS, check=False)
        shutil.rmtree(f"/var/run/dpdk/{NS}", ignore_errors=True)


DECODE_ERRORS_SWITCH = ("wire_short", "wire_bad_magic", "wire_bad_version", "wire_bad_op",
                        "wire_bad_flags", "wire_bad_status", "wire_bad_key_len",
                        "wire_truncated", "wire_trailing_bytes")
DECODE_ERRORS_NODE = ("drop_short", "drop_bad_magic", "drop_bad_version", "drop_bad_op",
                      "bad_flags", "bad_status", "bad_key_len", "bad_truncated", "bad_trailing",
                      "bad_keyhash", "bad_payload")


# Counters that move only when a datagram got past decoding into an op's handler:
# the fuzz must reach each of them.
DEEP_SWITCH = ("requests_forwarded", "replies_forwarded", "control_replies", "rc_acks",
               "hints_answered", "digests", "syncs_received")
DEEP_NODE = ("put", "get", "del", "probe", "replicate", "rc_req", "unreplicate", "bad_payload")


def outer(args):
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        print("fuzz_daemons: skipped: needs root and /dev/net/tun")
        return SKIP
    build = os.path.abspath(args.build)
    for b in ("switchd/skewless-switchd", "nodes/skewless-node", "switchd/cdtctl",
              "agent/skewless"):
        if not os.access(os.path.join(build, b), os.X_OK):
            print(f"fuzz_daemons: skipped: no {b} in {build} (scripts/setup.sh builds build-asan)")
            return SKIP
    r = subprocess.run([os.path.join(SRC, "scripts", "sweep.sh"), NSP], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        print(f"fuzz_daemons: cannot clear leftovers: {r.stdout} {r.stderr}")
        return 1
    run_dir = tempfile.mkdtemp(prefix=f"{NSP}fz-")
    rig = Rig(build, run_dir)
    failed = True
    inner = None
    try:
        rig.up()
        log(f"ASan switch and node up in {NS} ({build})")
        names = ["fz:a", "fz:" + "b" * 60, "fz:" + "c" * 300, "x"]
        checks = [f"fzcheck:{i}" for i in range(200)]
        where = json.loads(sh(os.path.join(build, "agent", "skewless"), "--config", rig.config,
                              "--json", "where", *names, *checks, timeout=60).stdout)
        kh = {w["key"]: (int(w["keyhash"], 16), w["home"]) for w in where}
        spec = {"seed": args.seed, "count": args.count, "seconds": args.seconds,
                "batch": args.batch,
                "keys": [(k, kh[k][0]) for k in names],
                "check_keys": [(k, kh[k][0]) for k in checks if kh[k][1] == "n1"][:20],
                "pids": {"node": rig.node_pid(), "switch": rig.procs["switch"].pid}}
        spec_path = os.path.join(run_dir, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        sw0, nd0 = rig.switch_counters(), rig.node_counters()
        inner = subprocess.Popen(["ip", "netns", "exec", NS, sys.executable,
                                  os.path.abspath(__file__), "--inner", spec_path],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = json.loads(inner.stdout.readline())
        sw1, nd1 = rig.switch_counters(), rig.node_counters()
        errs = {c: sw1.get(c, 0) - sw0.get(c, 0) for c in DECODE_ERRORS_SWITCH}
        errs.update({f"node.{c}": nd1.get(c, 0) - nd0.get(c, 0) for c in DECODE_ERRORS_NODE})
        errs = {c: v for c, v in errs.items() if v}
        log(f"corpus: {first['corpus']} valid datagrams of {len(first['ops'])} kinds "
            f"({', '.join(first['ops'])}), sent to both as they are")
        inner.stdin.write("go\n")
        inner.stdin.flush()
        if errs:
            raise RuntimeError(f"the corpus is not all valid: decode errors {errs}")
        deadline = time.monotonic() + args.seconds + 120
        out, _ = inner.communicate(timeout=max(1, deadline - time.monotonic()))
        result = json.loads(out.strip().splitlines()[-1])
        log(f"fuzz: {result}")
        sw2, nd2 = rig.switch_counters(), rig.node_counters()
        drops = sorted(((sw2.get(c, 0) - sw1.get(c, 0), c) for c in sw2
                        if isinstance(sw2.get(c), int) and sw2.get(c, 0) > sw1.get(c, 0)),
                       reverse=True)[:12]
        log("switch counters moved most: " + ", ".join(f"{c} {v}" for v, c in drops))
        nmoved = sorted(((nd2[c] - nd1.get(c, 0), c) for c in nd2 if nd2[c] > nd1.get(c, 0)),
                        reverse=True)[:12]
        log("node counters moved most: " + ", ".join(f"{c} {v}" for v, c in nmoved))
        peers = rig.cdtctl("peers") or {}
        deep = {f"switch.{c}": sw2.get(c, 0) - sw1.get(c, 0) for c in DEEP_SWITCH}
        deep["switch.sync_rejected"] = peers.get("stats", {}).get("sync_rejected", 0)
        deep.update({f"node.{c}": nd2.get(c, 0) - nd1.get(c, 0) for c in DEEP_NODE})
        # CAS: mutations mostly break its 12-byte prefix, so few reach the store (logged only).
        deep_cas = sum(nd2.get(c, 0) - nd1.get(c, 0) for c in ("cas", "cas_conflict"))
        log("parsers reached: " + ", ".join(f"{c} {v}" for c, v in deep.items())
            + f", node.cas {deep_cas}")
        codes = rig.stop()
        reports = rig.sanitizer_reports()
        log(f"exit codes after SIGTERM: {codes}")
        if "error" in result:
            raise RuntimeError(result["error"])
        shallow = [c for c, v in deep.items() if v == 0 and c != "switch.sync_rejected"]
        if shallow:
            raise RuntimeError(f"mutated datagrams never reached {shallow}")
        if reports:
            raise RuntimeError("sanitizer reports:\n" + "\n".join(reports))
        if codes != {"node": 0, "switch": 0}:
            raise RuntimeError(f"exit codes {codes} (want 0: ASan/LSan exit non-zero on a report)")
        sent = result["sent"]
        log(f"passed: {sent['node'] + sent['switch']} mutated datagrams ({sent['node']} to the "
            f"node, {sent['switch']} to the switch) in {result['seconds']} s, "
            f"{result['rounds']} serving checks, no sanitizer report, clean exits")
        failed = False
    except (RuntimeError, subprocess.CalledProcessError, subprocess.TimeoutExpired,
            json.JSONDecodeError) as e:
        log(f"FAIL: {e}")
    finally:
        if inner and inner.poll() is None:
            inner.kill()
            inner.wait()
        if failed:
            for name in ("switch", "node"):
                path = os.path.join(run_dir, "logs", f"{name}.log")
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        lines = f.readlines()[-20:]
                    print(f"--- {name}.log (last {len(lines)} lines)")
                    sys.stdout.writelines(lines)
        rig.down()
        if failed and os.environ.get("SKL_E2E_KEEP"):
            log(f"kept {run_dir} (SKL_E2E_KEEP)")
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build-asan"))
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--seconds", type=float, default=45)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        with open(args.inner) as f:
            spec = json.load(f)
        print(json.dumps(Inner(spec).run()), flush=True)
        return 0
    if args.count < 1 or args.seconds <= 0 or args.batch < 1:
        ap.error("--count, --seconds and --batch must be positive")
    log(f"seed {args.seed}")
    return outer(args)


if __name__ == "__main__":
    sys.exit(main())
