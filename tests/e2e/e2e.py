#!/usr/bin/env python3
"""End-to-end tests on the namespace testbed (scripts/testbed.sh).

usage: e2e.py BUILD_DIR ops|values|values-onearm|malformed|node-kill|node-loss|groups-membership|switch-kill|hint-kill|
       switch-loss|switch-pause|resp-pause|overload|spoof|membership|membership-restart

Each scenario brings up its own copy of a testbed config (conf/testbed.json,
inline; conf/testbed-onearm.json, one-arm) in a temporary directory, with
namespaces named skl-test-* (SKL_TEST_PREFIX) so that it never collides with a
testbed an operator has up, runs real processes (skewless-switchd,
skewless-node, the skewless CLI) and tears everything down on every exit path
(failure, exception, SIGTERM from meson's timeout). Every wait is bounded.

  ops          every cdtctl command in text mode; then put, get, del, get
               through the switch for 64 keys (inline)
  values       values of 1 B to 256 KB (chunked past one datagram) through the
               switch and direct, put from stdin and read back byte-exact by the
               CLI; 256 KB + 1 is TOO_LARGE; the switch counts each op once;
               bench of 256 KB values beside 128 B ones (inline)
  values-onearm  the same through a one-arm switch
  malformed    a burst of malformed datagrams and frames into a switch port:
               the switch stays up, its drop counters count every one (inline,
               net_tap ports: the testbed's net_af_packet never sees a fragment)
  node-kill    kill -9 a node: marked down within 3 digest intervals, reads of
               its keys answered UNAVAILABLE quickly, back with its data after
               a restart (inline)
  node-loss    replica groups (R = 2): kill -9 n3 under load, wipe its data and
               start it again: not one request fails, nothing acknowledged is
               lost, linearizable; then two members of one group down at once:
               UNAVAILABLE within the deadline, nothing lost once one is back
  groups-membership  replica groups (R = 2), one-arm: n9 added and then n5
               drained (weight 0) by ring apply under load: n9 out until every
               node has the config, then caught up; n5 left out while it runs,
               its groups' next nodes take its records; not one request fails;
               then n5 and a member of one of n9's groups killed: every key
               reads back, nothing lost, linearizable
  switch-kill  kill -9 switchd under load (one-arm), restarted 2 s later: attempts
               that time out at the switch are resent to the ring home, not one
               request fails, the history is linearizable, and agents are
               in-path again within 3 s of the restart
  hint-kill    hint mode with the hot set moving every 3 s, then the switch
               killed -9 and restarted (one-arm): stale HINTs are followed, no
               read ends MOVED, not one request fails, linearizable
  switch-loss  10% of the frames into the switch dropped for 8 s (nftables on
               the fabric's bridge; one-arm): the switch is given up as lossy
               and taken back after, not one request fails, throughput while
               lossy at least half its level before, linearizable
  switch-pause SIGSTOP switchd for 100 ms, 5 times, under 48 in flight
               (inline): requests are resent through the switch until their
               deadline and not one fails, no node blamed, nothing failed fast,
               throughput back within 1 s, linearizable
  resp-pause   skewless-proxy and `skewless bench --resp` through it, switchd
               SIGSTOPped for 100 ms 3 times: not one command fails, the
               history is linearizable by its values (lincheck --values)
  overload     256 in flight against 1000 us nodes: no UNAVAILABLE, no node
               marked down; requests that run out of time end TIMEOUT
  spoof        with a cluster key, spoofed REPLICATE, UNREPLICATE, RC_ACK,
               DIGEST and SYNC (raw sockets, forged sources) change no value,
               replica set, health or lease, each counted by its reason
               (two peer switches, one-arm)
  membership   add a 9th node under load (cdtctl ring apply), then remove n3
               (weight 0, drained at 40 keys/s: its arcs seen done one by one,
               the rate kept): no acknowledged write lost, the history (and a
               final read pass) linearizable, errors rare and only while a
               change runs (one-arm)
  membership-restart  add a 9th node and kill -9 the switch in the middle of
               the ramp: restarted, `cdtctl ring resume` completes the change;
               nothing acknowledged lost, the history linearizable (one-arm,
               under a cluster key)

Exit 0 pass, 1 fail, 77 skipped (not root, no namespaces or TAP devices).
"""
import bisect
import hashlib
import hmac
import json
import os
import random
import re
import shutil
import signal
import subprocess
import struct
import sys
import tempfile
import time

from private_config import private_config

SRC = os.environ.get("SKL_SOURCE_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
# Every test's prefix (SKL_TEST_PREFIX, default skl-test-): scripts/sweep.sh
# removes what a killed run left. Another prefix lets two runs share a machine.
NSP = os.environ.get("SKL_TEST_PREFIX", "skl-test-")
SKIP = 77


class Fail(Exception):
    pass


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def check(cond, msg):
    if not cond:
        raise Fail(msg)
    log("ok: " + msg)


def skip_unless_possible():
    """Exit 77 with the reason when namespaces or TAP devices cannot be made."""
    if os.geteuid() != 0:
        print("e2e: skipped: needs root (network namespaces, TAP devices)")
        sys.exit(SKIP)
    if not os.path.exists("/dev/net/tun"):
        print("e2e: skipped: /dev/net/tun is missing (no TAP devices)")
        sys.exit(SKIP)
    probe = f"{NSP}probe{os.getpid()}"
    try:
        r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True,
                           timeout=10)
        if r.returncode != 0:
            print(f"e2e: skipped: cannot create network namespaces: {r.stderr.strip()}")
            sys.exit(SKIP)
        r = subprocess.run(["ip", "-n", probe, "tuntap", "add", "dev", "tapprobe", "mode",
                            "tap"], capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            print(f"e2e: skipped: cannot create TAP devices: {r.stderr.strip()}")
            sys.exit(SKIP)
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)


def sweep():
    """Remove what an earlier run under NSP left (a driver killed with SIGKILL
    never tears down): namespaces, their processes, DPDK runtime dirs."""
    r = subprocess.run([os.path.join(SRC, "scripts", "sweep.sh"), NSP], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"e2e: cannot clear leftovers: {r.stdout.strip()} {r.stderr.strip()}")


class Testbed:
    """A private copy of a testbed config, brought up with scripts/testbed.sh."""

    def __init__(self, build, template, tag, tap=False):
        self.build = build
        self.dir = tempfile.mkdtemp(prefix=f"{NSP}{tag}-")
        self.config = os.path.join(self.dir, f"e2e-{tag}.json")

        # Loaded nodes report every fast_interval_ms (20) and the switch marks
        # one down after 3 silent intervals: 60 ms, less than a node's digest
        # thread can be held off the CPU on this 2-core machine saturated by the
        # tests themselves. 50 ms (150 ms to down) keeps false downs out.
        # tap: the switch's ports as net_tap (each vdev's driver and interface
        # name kept) instead of the testbed's net_af_packet.
        def adjust(c):
            c.setdefault("digest", {})["fast_interval_ms"] = 50
            for sw in c["switches"] if tap else []:
                for p in sw["ports"]:
                    drv, iface = re.match(r"net_af_packet(\d+),iface=([^,]+)", p["vdev"]).groups()
                    p["vdev"] = f"net_tap{drv},iface={iface}"
        cfg = private_config(os.path.join(SRC, "conf", template), self.config, adjust)
        self.cfg = cfg
        self.run_dir = os.path.join(self.dir, "run")
        self.socket = cfg["switches"][0]["control_socket"]
        self.switch = cfg["switches"][0].get("name", "s%d" % cfg["switches"][0]["id"])
        self.env = dict(os.environ, SKL_RUN_DIR=self.run_dir, SKL_NS_PREFIX=NSP,
                        SKL_BUILD=build)
        self.is_up = False

    def testbed(self, *args, timeout=90):
        r = subprocess.run([os.path.join(SRC, "scripts", "testbed.sh"), args[0], self.config,
                            *args[1:]], env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0:
            raise Fail(f"testbed.sh {' '.join(args)} failed ({r.returncode}): {out}")
        return out

    def up(self):
        t0 = time.monotonic()
        self.is_up = True
        self.testbed("up")
        log(f"testbed {os.path.basename(self.config)} up in {time.monotonic() - t0:.1f} s")

    def down(self, failed):
        if failed:
            self.dump_logs()
        try:
            if self.is_up:
                self.testbed("down", timeout=60)
        finally:
            if failed and os.environ.get("SKL_E2E_KEEP"):
                log(f"kept {self.dir} (SKL_E2E_KEEP)")
            else:
                shutil.rmtree(self.dir, ignore_errors=True)

    def dump_logs(self):
        logs = os.path.join(self.run_dir, "logs")
        if not os.path.isdir(logs):
            return
        for name in sorted(os.listdir(logs)):
            with open(os.path.join(logs, name), errors="replace") as f:
                lines = f.readlines()[-15:]
            print(f"--- {name} (last {len(lines)} lines)")
            sys.stdout.writelines(lines)

    def pid(self, name):
        with open(os.path.join(self.run_dir, "pids", f"{name}.pid")) as f:
            return int(f.read())

    def alive(self, name):
        try:
            os.kill(self.pid(name), 0)
            with open(f"/proc/{self.pid(name)}/stat") as f:
                return f.read().split(") ", 1)[1][0] != "Z"
        except (OSError, ValueError):
            return False

    def start_watching(self, name, timeout=60):
        """testbed.sh start NAME, polling the switch's node states meanwhile: the
        distinct state strings seen, in order ('?' unknown, 'U' up, 'D' down)."""
        cmd = [os.path.join(SRC, "scripts", "testbed.sh"), "start", self.config, name]
        p = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        seen = []
        deadline = time.monotonic() + timeout
        try:
            while p.poll() is None and time.monotonic() < deadline:
                try:
                    nodes = self.cdtctl("nodes")["nodes"]
                    st = "".join({"unknown": "?", "up": "U", "down": "D"}.get(n["state"], "x")
                                 for n in nodes)
                    if not seen or seen[-1] != st:
                        seen.append(st)
                except (Fail, ValueError, subprocess.TimeoutExpired):
                    pass  # not listening yet
                time.sleep(0.01)
        finally:
            if p.poll() is None:
                p.kill()
            out = p.communicate()[0]
        if p.returncode != 0:
            raise Fail(f"testbed.sh start {name} failed ({p.returncode}): {out.strip()}")
        return seen

    def cdtctl(self, *args):
        r = subprocess.run([os.path.join(self.build, "switchd", "cdtctl"), "--socket",
                            self.socket, "--json", *args], capture_output=True, text=True,
                           timeout=10)
        if r.returncode != 0:
            raise Fail(f"cdtctl {' '.join(args)}: {r.stderr.strip()}")
        return json.loads(r.stdout)

    def counters(self):
        s = self.cdtctl("stats")
        return dict(s["counters"], **s["drops"])

    def node_counters(self, name):
        """A node's counters file (SIGUSR1 writes it; waited for, 2 s at most)."""
        path = os.path.join(self.run_dir, "data", name, "counters")
        before = os.stat(path).st_mtime_ns if os.path.exists(path) else 0
        os.kill(self.pid(name), signal.SIGUSR1)
        for _ in range(200):
            if os.path.exists(path) and os.stat(path).st_mtime_ns != before:
                break
            time.sleep(0.01)
        time.sleep(0.05)
        with open(path) as f:
            return {k: int(v) for k, v in (line.split() for line in f if len(line.split()) == 2)}

    def agent_cmd(self, *args):
        return ["ip", "netns", "exec", f"{NSP}a1", os.path.join(self.build, "agent", "skewless"),
                "--config", self.config, *args]

    def cli(self, *args, timeout=10):
        """One CLI request with --json: (exit code, parsed reply or None, seconds)."""
        t0 = time.monotonic()
        r = subprocess.run(self.agent_cmd("--json", *args), capture_output=True, text=True,
                           timeout=timeout)
        dt = time.monotonic() - t0
        try:
            reply = json.loads(r.stdout)
        except ValueError:
            reply = None
        return r.returncode, reply, dt

    def homes(self, keys):
        r = subprocess.run([os.path.join(self.build, "agent", "skewless"), "--config",
                            self.config, "where", *keys], capture_output=True, text=True,
                           timeout=30, check=True)
        out = {}
        for line in r.stdout.splitlines():
            parts = line.split()
            out[parts[0]] = dict(p.split("=", 1) for p in parts[1:])["home"]
        return out


# ---- scenarios ------------------------------------------------------------------------


def scenario_ops(tb):
    """put/get/del/get through the switch for 64 keys: one CLI process per
    operation (256 in all; 5-15 s on 2 cores, mostly process start-up), 4 at
    a time, started inside the agent's namespace."""
    tb.up()
    n = 64
    # A cold node's first write (RocksDB's first memtable and WAL) may take
    # longer than one send: write to every node once before the timed run.
    homes = set()
    for i in range(200):
        if len(homes) == len(tb.cfg["nodes"]):
            break
        rc, r, _ = tb.cli("put", f"e2e:warm:{i}", "w")
        if rc == 0 and r:
            homes.add(r.get("node"))
    check(len(homes) == len(tb.cfg["nodes"]), f"every node took a first write ({len(homes)})")
    cdtctl_text(tb)
    before = tb.counters()
    driver = os.path.join(tb.dir, "ops.py")
    with open(driver, "w") as f:
        f.write(OPS_PY)
    t0 = time.monotonic()
    r = subprocess.run(["ip", "netns", "exec", f"{NSP}a1", sys.executable, driver,
                        os.path.join(tb.build, "agent", "skewless"), tb.config, str(n),
                        "%x" % int(time.time() * 1000)], capture_output=True, text=True,
                       timeout=300)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        raise Fail(f"ops driver failed: {r.stderr.strip()}")
    problems = json.loads(r.stdout)
    for p in problems[:10]:
        log("problem: " + p)
    check(not problems, f"{4 * n} CLI operations (put, get, del, get) on {n} keys in {dt:.1f} s,"
          f" each answered on its first send ({len(problems)} problems)")
    after = tb.counters()
    fwd = after["requests_forwarded"] - before["requests_forwarded"]
    rep = after["replies_forwarded"] - before["replies_forwarded"]
    check(fwd == 4 * n and rep == 4 * n,
          f"every one went through the switch: {fwd} requests and {rep} replies forwarded")


def cdtctl_text(tb):
    """Every cdtctl command without --json: it prints the fields of its
    answer as name=value, tables one row per line; refused commands say why on
    stderr and exit 1."""
    def run(*args):
        return subprocess.run([os.path.join(tb.build, "switchd", "cdtctl"), "--socket",
                               tb.socket, *args], capture_output=True, text=True, timeout=10)

    node = tb.cfg["nodes"][0]
    port = next(p["name"] for p in tb.cfg["switches"][0]["ports"] if p.get("host") == "a1")
    want = [
        (["stats"], ["switch=s1 id=1 role=inline", "\ndirectory:\n  enabled=1 ",
                     "requests_forwarded=", "\nports:\n  name=to-a1 ", "\nworkers:\n  lcore=1 "]),
        (["nodes"], [f"nodes:\n  id={node['id']} name={node['name']} ip={node['ip']} ",
                     "alive=1", f"port=to-{node['name']}"]),
        (["peers"], ["peers_configured=0"]),
        (["cdt", "pin", "e2e:text", "--replicas", "2"], ["entry:\n  key=e2e:text ", "pinned=1"]),
        (["cdt", "show"], ["entries:\n", "  key=e2e:text "]),
        (["cdt", "show", "e2e:text"], ["entries:\n  key=e2e:text ", "replicas="]),
        (["cdt", "unpin", "e2e:text"], ["size="]),
        (["directory", "off"], ["directory:\n  enabled=0 "]),
        (["directory", "on"], ["directory:\n  enabled=1 "]),
        (["directory", "show"], ["update_delay_seconds.count="]),
        (["debug", "on"], ["debug=1"]),
        (["debug", "off"], ["debug=0"]),
        (["debug", "show"], ["debug=0", "log:"]),
        (["neigh", "add", "10.77.0.250", "02:00:00:00:00:fa", port],
         [f"neighbour:\n  ip=10.77.0.250 mac=02:00:00:00:00:fa port={port} static=1"]),
        (["neigh", "show"], ["neighbours:\n", f"ip={node['ip']} ", f"node={node['name']}"]),
        (["ring", "show"], ["state=stable version=1 "]),
    ]
    for args, fields in want:
        r = run(*args)
        missing = [f for f in fields if f not in r.stdout]
        check(r.returncode == 0 and not missing,
              f"cdtctl {' '.join(args)}: {len(r.stdout.splitlines())} lines, fields "
              f"{'present' if not missing else 'missing: ' + repr(missing)}"
              + (f" (exit {r.returncode}: {r.stderr.strip()})" if r.returncode else ""))
    grouped = tb.cfg["service"].get("replicas", 1) > 1
    for args, why in [(["ring", "apply", tb.config], "ring.version: expected more than 1"),
                      (["ring", "resume", tb.config],
                       "with replica groups a restarted switch has nothing to resume" if grouped
                       else "ring.version: expected less than 1")]:
        r = run(*args)
        check(r.returncode == 1 and not r.stdout and r.stderr.startswith("cdtctl: ")
              and why in r.stderr, f"cdtctl {' '.join(args[:2])} refused: {r.stderr.strip()}")


OPS_PY = r'''
import concurrent.futures, json, subprocess, sys
cli, config, n, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def call(*args):
    r = subprocess.run([cli, "--config", config, "--json", *args], capture_output=True,
                       text=True, timeout=10)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, None
def one(i):
    key, value = f"e2e:{i}", f"value-{i}-{tag}"
    out = []
    rc, r = call("put", key, value)
    if rc != 0 or not r or r["status"] != "OK" or r["sends"] != 1:
        out.append(f"put {key}: exit {rc} {r}")
    rc, r = call("get", key)
    if rc != 0 or not r or r.get("value") != value or r["sends"] != 1:
        out.append(f"get {key}: exit {rc} {r}")
    rc, r = call("del", key)
    if rc != 0 or not r or r["status"] != "OK" or r["sends"] != 1:
        out.append(f"del {key}: exit {rc} {r}")
    rc, r = call("get", key)
    if rc != 1 or not r or r["status"] != "NOT_FOUND" or r["sends"] != 1:
        out.append(f"get after del {key}: exit {rc} {r}")
    return out
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    print(json.dumps([p for ps in pool.map(one, range(n)) for p in ps]))
'''


VALUE_SIZES = [1, 1352, 1353, 65536, 262144]


def cli_bytes(tb, *args, stdin=None, timeout=10):
    """One CLI call with bytes in and out: (exit code, stdout bytes, stderr text)."""
    r = subprocess.run(tb.agent_cmd(*args), input=stdin, capture_output=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


def rt_signals_blocked(pid):
    """{thread name/tid: whether it blocks every real-time signal} of process pid
    (glibc's SIGRTMIN..SIGRTMAX, 34..64: bits 33..63 of /proc's SigBlk)."""
    rt = sum(1 << (sig - 1) for sig in range(34, 65))
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        threads[f"{st['Name']}/{tid}"] = int(st["SigBlk"], 16) & rt == rt
    return threads


def scenario_values(tb):
    """Values up to service.max_value (262,144 B) at MTU 1500: those past one
    datagram travel in chunks (docs/protocol.md, "Chunked operations"). Each
    size is put from stdin (`put KEY -`) and read back (`get KEY`) byte for
    byte, through the switch and in direct mode; one byte more is TOO_LARGE
    with a message. The switch forwards every chunk, and counts each op once
    in flight at its node: the counts are back to 0 at the end. Then a bench
    of 256 KB values and one of 128 B values, for the MB/s and a 256 KB GET's
    p50."""
    tb.up()
    check(tb.cfg["service"].get("mtu") == 1500 and "max_value" not in tb.cfg["service"],
          "the testbed runs MTU 1500 with the default max_value (262,144)")
    # net_tap announces each frame with a real-time signal: only the switch's
    # workers take it (a 256 KB value is 187 frames each way; the other
    # threads would each be woken on the cores the nodes and agent share).
    # The testbed's ports are net_af_packet; the masks are set for any port.
    threads = rt_signals_blocked(tb.pid(tb.switch))
    check(all(blocked != name.startswith("rte-worker") for name, blocked in threads.items()),
          f"the TAP Rx signal reaches only the switch's workers (blocks every real-time"
          f" signal: {threads})")
    # Nothing signals a net_af_packet frame: an idle worker sleeps in poll()
    # on the ports' AF_PACKET sockets, one per port here (one queue pair).
    with open(os.path.join(tb.run_dir, "logs", f"{tb.switch}.log")) as f:
        rings = re.findall(r"a frame ends it on (\d+) receive rings", f.read())
    nports = len(tb.cfg["switches"][0]["ports"])
    check(rings and int(rings[-1]) == nports,
          f"an idle switch worker wakes on a frame of each of its {nports} ports ({rings})")
    before = tb.counters()
    rnd = random.Random(20)
    problems = []
    for mode in ("inpath", "direct"):
        for size in VALUE_SIZES:
            key = f"big:{mode}:{size}"
            value = bytes(rnd.getrandbits(8) for _ in range(size))
            rc, out, err = cli_bytes(tb, "--mode", mode, "put", key, "-", stdin=value)
            if rc != 0 or not out.startswith(b"OK version="):
                problems.append(f"{mode} put {key} ({size} B from stdin): exit {rc} {out!r}"
                                f" {err.strip()}")
                continue
            rc, out, err = cli_bytes(tb, "--mode", mode, "get", key)
            if rc != 0 or out != value:
                problems.append(f"{mode} get {key}: exit {rc}, {len(out)} bytes back of {size}"
                                f" ({'same' if out == value else 'different'}) {err.strip()}")
    check(not problems, f"put from stdin and get byte-exact of {VALUE_SIZES} bytes, through"
          f" the switch and direct ({problems[:3]})")
    after = tb.counters()
    fwd = after["requests_forwarded"] - before["requests_forwarded"]
    rep = after["replies_forwarded"] - before["replies_forwarded"]
    # 1353+ B at MTU 1500 (key of ~12 B: 1,410 B a chunk): 1+1+1+1 + 2+2+47+186 per
    # size list through the switch, put then get.
    check(fwd > 2 * len(VALUE_SIZES) and rep > 2 * len(VALUE_SIZES),
          f"the chunks went through the switch: {fwd} requests and {rep} replies forwarded")
    # Counted per op, not per chunk, every node is back at 0; or at 1 where an
    # attempt was resent and the node, still gathering the first, answered
    # once (the switch writes that count off after 1 s). Counted per chunk,
    # an op of 47 or 186 chunks would leave tens.
    inflight = {n["name"]: n["inflight"] for n in tb.cdtctl("nodes")["nodes"]}
    check(all(0 <= v <= 1 for v in inflight.values()),
          f"each chunked op counted once in flight: every node back at 0 or 1 ({inflight})")
    big = bytes(262145)
    rc, out, err = cli_bytes(tb, "put", "big:over", "-", stdin=big)
    check(rc == 3 and "TOO_LARGE" in err and "262144" in err,
          f"262,145 bytes: exit 3 (TOO_LARGE) with a message: {err.strip()!r}")
    rc, out, err = cli_bytes(tb, "get", "big:over")
    check(rc == 1, "nothing of it was stored (NOT_FOUND)")

    # A hot large value: pinned with 3 replicas, the home pushes its copies as
    # chunked RC_REQs; reads spread over the replicas come back in chunks.
    hot, value = "big:hot", bytes(rnd.getrandbits(8) for _ in range(200000))
    rc, out, err = cli_bytes(tb, "put", hot, "-", stdin=value)
    check(rc == 0, f"put {hot} (200,000 B): {out!r} {err.strip()}")
    tb.cdtctl("cdt", "pin", hot, "--replicas", "3")
    replicas = []
    for _ in range(100):  # 5 s at most
        entries = tb.cdtctl("cdt", "show", hot).get("entries", [])
        replicas = entries[0]["replicas"] if entries else []
        if len(replicas) >= 3:
            break
        time.sleep(0.05)
    check(len(replicas) >= 3, f"{hot} copied to 3 nodes by chunked RC_REQs: {replicas}")
    served, bad = set(), []
    for _ in range(30):
        rc, r, _ = tb.cli("get", hot)
        got = bytes.fromhex(r.get("value_hex", "")) if r else b""
        if rc != 0 or got != value:
            bad.append(f"exit {rc}, {len(got)} bytes")
        elif r:
            served.add(r["node"])
    check(not bad and len(served) >= 2,
          f"30 reads of {hot} byte-exact, served by {sorted(served)} ({bad[:3]})")
    # A write of the hot key (pushed to its holders in chunks, write-through):
    # every read after it returns the new value, whichever node serves it.
    value = bytes(rnd.getrandbits(8) for _ in range(150000))
    rc, out, err = cli_bytes(tb, "put", hot, "-", stdin=value)
    check(rc == 0, f"put {hot} again (150,000 B): {out!r} {err.strip()}")
    served, bad = set(), []
    for _ in range(20):
        rc, r, _ = tb.cli("get", hot)
        got = bytes.fromhex(r.get("value_hex", "")) if r else b""
        if rc != 0 or got != value:
            bad.append(f"exit {rc}, {len(got)} bytes{' (the old value)' if len(got) == 200000 else ''}")
        elif r:
            served.add(r["node"])
    check(not bad, f"20 reads after the write: the new value, byte-exact, from {sorted(served)}"
          f" ({bad[:3]})")

    # Throughput and latency, one operation in flight (a 256 KB value is 187
    # frames each way, each through the switch's core and the kernel's
    # stack twice).
    figures = {}
    for name, size, ratio in (("get256k", 262144, "1"), ("get128", 128, "1"),
                              ("put256k", 262144, "0")):
        s, _ = run_bench(tb, name, [
            "--key-prefix", f"{name}:", "--keys", "32", "--dist", "uniform",
            "--read-ratio", ratio, "--value-size", str(size), "--concurrency", "1",
            "--duration", "3", "--seed", "4"] + (["--preload"] if ratio == "1" else []))
        figures[name] = s
        lat = s["read_latency_us" if ratio == "1" else "write_latency_us"]
        log(f"{name}: {s['throughput_ops']:.0f} ops/s, {s['throughput_mb_s']:.2f} MB/s,"
            f" p50 {lat['p50'] / 1000:.2f} ms, p99 {lat['p99'] / 1000:.2f} ms,"
            f" errors {s['errors']}, preload errors {s['preload_errors']}")
    big = figures["get256k"]
    check(all(f["preload_errors"] == 0 and f["errors"] <= f["attempts"] // 50
              for f in figures.values()),
          "256 KB GETs and PUTs and 128 B GETs under load, errors under 2%: "
          + ", ".join(f"{n} {f['errors']} of {f['attempts']}" for n, f in figures.items()))
    # The target is a p50 under 5 ms (docs/benchmarks.md has the measured
    # figures: 1.4-3.6 ms in this test); the check keeps twice the highest p50
    # seen under the full suite's load on a shared 2-core machine (5.4 ms).
    p50 = big["read_latency_us"]["p50"] / 1000
    check(p50 < 12.0, f"a 256 KB GET's p50 is {p50:.2f} ms (target 5 ms; checked under 12)")


def scenario_malformed(tb):
    """A burst of malformed datagrams (from a host namespace to the VIP) and raw frames
    (into the switch port): the switch stays up and counts every one as a drop. On
    net_tap ports: the kernel's AF_PACKET fanout under net_af_packet holds an IPv4
    fragment for reassembly, so the switch would never see one to count."""
    tb.up()
    vip = tb.cfg["service"]["vip"]
    port = tb.cfg["service"].get("port", 7447)
    smac = tb.cfg["service"]["mac"]
    iface = [p["vdev"].split("iface=")[1].split(",")[0]
             for p in tb.cfg["switches"][0]["ports"] if p.get("host") == "a1"][0]
    per_kind = 500
    sender = os.path.join(tb.dir, "burst.py")
    with open(sender, "w") as f:
        f.write(BURST_PY)
    before = tb.counters()
    t0 = time.monotonic()
    r = subprocess.run(["ip", "netns", "exec", f"{NSP}a1", sys.executable, sender, vip,
                        str(port), smac, iface, str(per_kind)], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise Fail(f"burst sender failed: {r.stderr.strip()}")
    sent = json.loads(r.stdout)
    total = sum(sent.values())
    log(f"sent {total} malformed packets in {time.monotonic() - t0:.1f} s: {sent}")
    time.sleep(0.5)  # let the switch drain its queues
    check(tb.alive(tb.switch), "switchd is still running")
    after = tb.counters()
    short = []
    for counter, n in sorted(sent.items()):
        got = after[counter] - before[counter]
        log(f"  {counter:<22} sent {n:>6}  counted {got:>6}")
        if got < n:
            short.append(counter)
    check(not short, f"every malformed packet counted as a drop by reason (short: {short})")
    rc, reply, _ = tb.cli("put", "after-burst", "fine")
    rc2, reply2, _ = tb.cli("get", "after-burst")
    check(rc == 0 and rc2 == 0 and reply2.get("value") == "fine",
          "the switch still serves put/get after the burst")


BURST_PY = r'''
import json, socket, struct, sys, time
vip, port, smac, iface, per_kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
key = b"mal"
good = struct.pack("!HBBHBBQQQHHIHHI", 0x5047, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, len(key), 0) + key
def patch(off, fmt, val, data=good):
    b = bytearray(data); struct.pack_into(fmt, b, off, val); return bytes(b)
kinds = [("wire_short", good[:20]), ("wire_bad_magic", patch(0, "!H", 0xdead)),
         ("wire_bad_version", patch(2, "!B", 9)), ("wire_bad_op", patch(3, "!B", 0x55)),
         ("wire_bad_key_len", patch(42, "!H", 0)), ("wire_truncated", patch(42, "!H", 900)),
         ("wire_truncated", patch(44, "!I", 0xffffffff)), ("wire_trailing_bytes", good + b"junk")]
sent = {}
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect((vip, port))
src_ip = u.getsockname()[0]
def pace(i):
    if i % 100 == 99:
        time.sleep(0.01)  # the TAP's queue holds 1000 frames: stay well below
for name, d in kinds:
    for i in range(per_kind):
        u.send(d); pace(i)
    sent[name] = sent.get(name, 0) + per_kind

# Raw frames to the switch's MAC: bad IPv4 headers the kernel would never send.
r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
r.bind((iface, 0))
mymac = r.getsockname()[4]
dst = bytes.fromhex(smac.replace(":", ""))
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
def ipv4(payload, proto=17, frag=0, bad_csum=False, ver_ihl=0x45, tot=None):
    h = struct.pack("!BBHHHBBH4s4s", ver_ihl, 0, tot or 20 + len(payload), 1, frag, 64, proto, 0,
                    socket.inet_aton(src_ip), socket.inet_aton(vip))
    c = csum(h) ^ (0x5a5a if bad_csum else 0)
    return h[:10] + struct.pack("!H", c) + h[12:] + payload
udp = struct.pack("!HHHH", 40000, port, 8 + len(good), 0) + good
frames = [("ip_checksum", ipv4(udp, bad_csum=True)), ("ip_fragment", ipv4(udp, frag=0x2000)),
          ("ip_header", ipv4(udp, ver_ihl=0x65)), ("ip_header", ipv4(udp, tot=1400)),
          ("not_udp", ipv4(udp, proto=6)),
          ("udp_length", ipv4(struct.pack("!HHHH", 40000, port, 900, 0) + good)),
          ("not_ipv4_or_arp", None)]
for name, pkt in frames:
    eth = dst + mymac + (struct.pack("!H", 0x0800) if pkt is not None else struct.pack("!H", 0x88b5))
    frame = eth + (pkt if pkt is not None else b"\0" * 46)
    for i in range(per_kind):
        r.send(frame); pace(i)
    sent[name] = sent.get(name, 0) + per_kind
print(json.dumps(sent))
'''


def scenario_node_kill(tb):
    """R = 1 (every key on its home alone, as service.replicas 1 keeps it):
    kill -9 a node: down within 3 digest intervals, fast UNAVAILABLE, back
    with its data. node-loss is the same loss with replica groups."""
    with_replicas(tb, 1, 0)
    tb.up()
    victim = "n3"
    keys = [f"nk:{i}" for i in range(400)]
    homes = tb.homes(keys)
    mine = [k for k in keys if homes[k] == victim][:40]
    others = [k for k in keys if homes[k] != victim][:10]
    check(len(mine) >= 20, f"{len(mine)} test keys homed at {victim}")
    for k in mine + others:
        rc, r, _ = tb.cli("put", k, f"before-{k}")
        if rc != 0:
            raise Fail(f"put {k}: exit {rc} {r}")
    dig = tb.cfg.get("digest", {})
    slowest = max(dig.get("interval_ms", 100), dig.get("slow_interval_ms", 200))
    # The exact rule (3 silent intervals) is test_health's, on a simulated
    # clock; here, with the driver and the switch sharing 2 busy cores, the
    # limit is twice that.
    rule_s = dig.get("down_after_intervals", 3) * slowest / 1000
    limit_s = 2 * rule_s
    os.kill(tb.pid(victim), signal.SIGKILL)
    t_kill = time.monotonic()
    down_after = None
    while time.monotonic() - t_kill < 5:
        nodes = {n["name"]: n for n in tb.cdtctl("nodes")["nodes"]}
        if nodes[victim]["state"] == "down" and not nodes[victim]["alive"]:
            down_after = time.monotonic() - t_kill
            break
        time.sleep(0.01)
    check(down_after is not None and down_after <= limit_s,
          f"{victim} marked down {down_after and round(down_after * 1000)} ms after kill -9"
          f" (rule: 3 intervals of at most {slowest} ms = {round(rule_s * 1000)} ms;"
          f" limit {round(limit_s * 1000)} ms)")
    before = tb.counters()
    times = []
    for k in mine[:20]:
        rc, r, _ = tb.cli("get", k)
        if rc != 5 or not r or r["status"] != "UNAVAILABLE" or r["sends"] != 1:
            raise Fail(f"get {k} with its home down: exit {rc} {r}, expected UNAVAILABLE (5)"
                       " on the first send")
        times.append(r["latency_us"] / 1000)
    after = tb.counters()
    by_switch = after["unavailable_sent"] - before["unavailable_sent"]
    timeout_ms = tb.cfg.get("agent", {}).get("timeout_ms", 50)
    # Answered by the switch on the first send: no agent timeout ran out (a
    # timeout would have cost a second send). The latency is for the record.
    check(by_switch >= len(times),
          f"reads of {victim}'s keys answered UNAVAILABLE by the switch on the first send:"
          f" {by_switch} by the switch, at most {max(times):.1f} ms each (agent timeout"
          f" {timeout_ms} ms)")
    for k in others:
        rc, r, _ = tb.cli("get", k)
        if rc != 0 or r.get("value") != f"before-{k}":
            raise Fail(f"get {k} (home up) while {victim} is down: exit {rc} {r}")
    log(f"ok: keys of the other nodes still served while {victim} is down")
    t0 = time.monotonic()
    tb.testbed("start", victim)
    log(f"{victim} restarted; the switch saw it up after {time.monotonic() - t0:.2f} s")
    bad = []
    for k in mine:
        rc, r, _ = tb.cli("get", k)
        if rc != 0 or r.get("value") != f"before-{k}":
            bad.append(f"{k}: exit {rc} {r}")
    check(not bad, f"{victim} is back with its data: {len(mine)} keys read back ({bad[:3]})")



def with_replicas(tb, r, repair_after_ms):
    """Set service.replicas and repair_after_ms in the testbed's private config
    before it is up. The testbed configs give the agents a deadline that
    outlasts a member's death being noticed (docs/operations.md, "Replica
    groups"); with R = 1 nothing takes a dead home's keys over, and the agents
    keep their default deadline."""
    with open(tb.config) as f:
        cfg = json.load(f)
    cfg["service"]["replicas"] = r
    cfg["service"]["repair_after_ms"] = repair_after_ms
    if r == 1:
        cfg["agent"].pop("deadline_ms", None)
        cfg["agent"].pop("retries", None)
    with open(tb.config, "w") as f:
        json.dump(cfg, f, indent=1)
    tb.cfg = cfg


def view_states(tb):
    """Each node's view state as the switch shows it (cdtctl nodes)."""
    return {n["name"]: n.get("view", "?") for n in tb.cdtctl("nodes")["nodes"]}


def wait_view(tb, name, state, timeout):
    """Wait until the switch shows node name in view state; seconds taken or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if view_states(tb).get(name) == state:
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


def scenario_node_loss(tb):
    """Replica groups (R = 2): n3 killed -9 under load at 6 s, its data directory
    wiped and n3 started again at 14 s. Not one request fails, no acknowledged
    write is lost, the history is linearizable, and n3 serves again only after
    it caught up. Then two members of one group killed at once: their keys
    answer UNAVAILABLE within the deadline, and nothing is lost once one of
    them returns with its disk. n3 stays down: past service.repair_after_ms
    (3 s, so that it also runs while n3 is down in the first part) it is left
    out of the groups and their next nodes take its records; then the other
    member of that group dies too, and every key still reads back."""
    with_replicas(tb, 2, 3000)
    tb.up()
    for name in (n["name"] for n in tb.cfg["nodes"]):
        check(wait_view(tb, name, "up", 20) is not None, f"{name} caught up and marked up")
    victim = "n3"
    data = os.path.join(tb.run_dir, "data", victim)  # scripts/testbed.sh's --data-dir
    check(os.path.isdir(data), f"{victim}'s data directory is {data}")
    keys, conc, duration = 2000, 16, 20
    marks = {}

    def lose_n3(t0):
        time.sleep(max(0, t0 + 6 - time.monotonic()))
        os.kill(tb.pid(victim), signal.SIGKILL)
        marks["kill"] = time.monotonic() - t0
        down = wait_view(tb, victim, "down", 5)
        log(f"kill -9 {victim} at {marks['kill']:.1f} s; marked down"
            f" {down and round(down * 1000)} ms later")
        marks["out"] = wait_view(tb, victim, "out", 6)
        log(f"{victim} left out of the groups {marks['out'] and round(marks['out'], 2)} s later")
        time.sleep(max(0, t0 + 14 - time.monotonic()))
        shutil.rmtree(data)
        tb.testbed("start", victim)
        marks["start"] = time.monotonic() - t0
        up = wait_view(tb, victim, "up", 15)
        marks["up"] = up
        log(f"{victim} started empty at {marks['start']:.1f} s; caught up and marked up"
            f" {up and round(up, 2)} s later")

    s, history = run_bench(tb, "node-loss", [
        "--keys", str(keys), "--dist", "zipf:0.99", "--read-ratio", "0.7",
        "--concurrency", str(conc), "--duration", str(duration), "--seed", "11"], lose_n3)
    check(marks.get("out") is not None, f"{victim}, down past repair_after_ms, was left out")
    check(marks.get("up") is not None, f"{victim} caught up and was marked up again")
    c = tb.node_counters(victim)
    check(c.get("catchup_records", 0) > 0,
          f"{victim} refilled {c.get('catchup_records', 0)} records from its groups")
    f, final = read_every_key(tb, "node-loss-final", keys, conc, 3, 12)
    lost, unread = lost_acked([(history, False), (final, True)])
    log(f"main run: {s['ops']} ops, {s['status']}; final read pass: {f['status']}")
    check(s["errors"] == 0, f"not one request failed while {victim} was lost ({s['status']})")
    check(f["errors"] == 0, f"every key read after the run ({f['status']})")
    check(not lost, f"no acknowledged write lost ({len(lost)} keys read older: {lost[:5]};"
          f" {unread} written keys not read by the final pass)")
    # The hot keys' PUTs waited at the switch for the one of their key out and
    # went as batches (docs/design.md section 5, "Hot writes"), through the
    # loss: the history below holds their answers too.
    b = tb.counters()
    log(f"write batches: {b['writes_held']} PUTs held, {b['batch_riders_answered']} answered"
        f" as riders, {b['batch_given_up']} given up, {b['batch_duplicate']} retries dropped")
    check(b["writes_held"] > 0 and b["batch_riders_answered"] > 0,
          "PUTs of hot keys waited at the switch and were answered as riders of a batch")
    lincheck(history, final, timeout=300)
    # View leases renew every 25 ms: a node that keeps hearing the switch never lets one end.
    refused = {n["name"]: tb.node_counters(n["name"]).get("lease_refused", 0)
               for n in tb.cfg["nodes"]}
    check(sum(refused.values()) <= s["ops"] // 1000,
          f"requests refused for an ended view lease: {refused} (at most 0.1% of {s['ops']})")

    # Two members of one group at once: n3 and the next member of one of its keys.
    probe = [f"pair:{i}" for i in range(400)]
    homes = tb.homes(probe)
    mine = [k for k in probe if homes[k] == victim]
    for k in mine[:12]:
        rc, rep, _ = tb.cli("put", k, f"kept-{k}")
        check(rc == 0, f"put {k}: exit {rc} {rep}")
    partner = group_of(tb, mine[0])[1]
    os.kill(tb.pid(victim), signal.SIGKILL)
    os.kill(tb.pid(partner), signal.SIGKILL)
    check(wait_view(tb, victim, "down", 5) is not None and
          wait_view(tb, partner, "down", 5) is not None, f"{victim} and {partner} marked down")
    rc, rep, dt = tb.cli("get", mine[0])
    check(rc == 5 and rep and rep["status"] == "UNAVAILABLE" and dt < deadline_ms(tb) / 1000 + 1,
          f"a key whose group is down answers UNAVAILABLE within the deadline: exit {rc}"
          f" {rep} in {dt:.2f} s")
    tb.testbed("start", partner)
    check(wait_view(tb, partner, "up", 15) is not None, f"{partner} back with its disk, caught up")
    rc, rep, _ = tb.cli("get", mine[0])
    check(rc == 0 and rep.get("value") == f"kept-{mine[0]}",
          f"nothing lost once one member is back: {rep}")

    # Repair: n3 left out, its groups' next nodes join; then its partner dies.
    t = wait_view(tb, victim, "out", 15)
    check(t is not None, f"{victim}, down past repair_after_ms, left out of the groups")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30 and "joining" in view_states(tb).values():
        time.sleep(0.1)
    states = view_states(tb)
    check("joining" not in states.values(),
          f"the repair's joins done in {time.monotonic() - t0:.1f} s: {states}")
    os.kill(tb.pid(partner), signal.SIGKILL)
    check(wait_view(tb, partner, "down", 5) is not None, f"{partner} killed and marked down")
    for k in (k for k in mine[:12] if group_of(tb, k)[1] == partner):
        rc, rep, _ = tb.cli("get", k)
        check(rc == 0 and rep.get("value") == f"kept-{k}",
              f"{k}, whose group was {{{victim}, {partner}}}, read from its repaired copy: {rep}")
    r, after = read_every_key(tb, "node-loss-repaired", keys, conc, 3, 13)
    lost, _ = lost_acked([(history, False), (after, True)])
    check(r["errors"] == 0 and not lost,
          f"with {victim} repaired and {partner} dead, every key reads back ({r['status']};"
          f" {len(lost)} acknowledged writes read older: {lost[:5]})")


def scenario_groups_membership(tb):
    """Replica groups (R = 2), one-arm: under load, n9 added by `cdtctl ring
    apply` (it is out of every group until every node has the new config,
    then it catches up its groups and is marked up), then n5 drained by a
    config that gives it weight 0 (left out while it still runs; the next
    nodes of its groups take its records). Not one request fails; a config
    that changes a weight is refused and changes nothing. Then n5 and a
    member of one of n9's groups are killed: every key still reads back,
    nothing acknowledged is lost, the history is linearizable."""
    with_replicas(tb, 2, 0)  # repair off: only the drain leaves a node out
    tb.up()
    for name in (n["name"] for n in tb.cfg["nodes"]):
        check(wait_view(tb, name, "up", 20) is not None, f"{name} caught up and marked up")
    keys, conc, duration = 2000, 16, 12
    marks = {}

    def change(edit):
        """Write the config with edit(cfg) and a higher ring.version; every process reads it."""
        with open(tb.config) as f:
            cfg = json.load(f)
        cfg["ring"]["version"] = cfg["ring"].get("version", 1) + 1
        edit(cfg)
        return cfg

    def install(cfg):
        tmp = tb.config + ".tmp"
        with open(tmp, "w") as f:
            json.dump(cfg, f, indent=1)
        os.replace(tmp, tb.config)
        tb.cfg = cfg

    def weight(cfg, name, w):
        next(n for n in cfg["nodes"] if n["name"] == name)["weight"] = w

    def wait_joins(limit):
        t1 = time.monotonic()
        while time.monotonic() - t1 < limit and "joining" in view_states(tb).values():
            time.sleep(0.1)
        return time.monotonic() - t1

    def add_then_drain(t0):
        time.sleep(max(0, t0 + 2 - time.monotonic()))
        install(change(add_n9))
        tb.testbed("start", "n9")
        tb.cdtctl("ring", "apply", tb.config)
        marks["add"] = time.monotonic() - t0
        marks["n9_up"] = wait_view(tb, "n9", "up", 10)
        log(f"ring apply adding n9 at {marks['add']:.1f} s; n9 caught up and marked up"
            f" {marks['n9_up'] and round(marks['n9_up'], 2)} s later")
        # Not an addition or a drain: refused, one clear line.
        bad = os.path.join(tb.dir, "reweighted.json")
        with open(bad, "w") as f:
            json.dump(change(lambda c: weight(c, "n4", 2)), f)
        r = subprocess.run([os.path.join(tb.build, "switchd", "cdtctl"), "--socket", tb.socket,
                            "ring", "apply", bad], capture_output=True, text=True, timeout=30)
        marks["refused"] = r.returncode != 0 and "changing a weight is not" in r.stderr
        log(f"a weight changed to 2: {r.stderr.strip()}")
        # The R = 1 migration has no place here: a restarted switch's views take an add up.
        r = subprocess.run([os.path.join(tb.build, "switchd", "cdtctl"), "--socket", tb.socket,
                            "ring", "resume", bad], capture_output=True, text=True, timeout=30)
        marks["no_resume"] = r.returncode != 0 and "nothing to resume" in r.stderr
        install(change(lambda c: weight(c, "n5", 0)))
        tb.cdtctl("ring", "apply", tb.config)
        marks["drain"] = time.monotonic() - t0
        marks["n5_out"] = wait_view(tb, "n5", "out", 5)
        marks["joined"] = wait_joins(20)
        log(f"ring apply draining n5 at {marks['drain']:.1f} s: out"
            f" {marks['n5_out'] and round(marks['n5_out'], 2)} s later; joins done"
            f" {marks['joined']:.1f} s after that: {view_states(tb)}")

    s, history = run_bench(tb, "groups-membership", [
        "--keys", str(keys), "--dist", "zipf:0.99", "--read-ratio", "0.7",
        "--concurrency", str(conc), "--duration", str(duration), "--seed", "21"], add_then_drain)
    check(marks.get("n9_up") is not None, "n9, added, caught up its groups and was marked up")
    check(marks.get("refused"), "a ring change that changes a weight is refused (R = 2)")
    check(marks.get("no_resume"), "`ring resume` is refused (R = 2)")
    check(marks.get("n5_out") is not None, "n5, drained, was left out while it ran")
    states = view_states(tb)
    check("joining" not in states.values() and states.get("n5") == "out",
          f"n5's groups' next nodes joined them in {marks.get('joined', 0):.1f} s: {states}")
    check(s["errors"] == 0, f"not one request failed while n9 was added and n5 drained"
          f" ({s['status']})")
    # n9's groups and n5's former ones are on two live nodes: n5 and a
    # member of one of n9's groups die, and every key still reads back.
    partner = next(m for k in (f"key:{i}" for i in range(1000))
                   for g in [group_of(tb, k)] if "n9" in g for m in g if m != "n9")
    os.kill(tb.pid("n5"), signal.SIGKILL)
    os.kill(tb.pid(partner), signal.SIGKILL)
    check(wait_view(tb, partner, "down", 5) is not None, f"n5 and {partner} killed")
    f, final = read_every_key(tb, "groups-membership-final", keys, conc, 2, 22)
    lost, unread = lost_acked([(history, False), (final, True)])
    check(f["errors"] == 0 and not lost,
          f"with n5 drained and {partner} dead, every key reads back ({f['status']};"
          f" {len(lost)} acknowledged writes read older: {lost[:5]}; {unread} not read)")
    lincheck(history, final, timeout=300)


def group_of(tb, key):
    """The key's replica group, as `skewless where` prints it (home first)."""
    r = subprocess.run([os.path.join(tb.build, "agent", "skewless"), "--config", tb.config,
                        "where", key], capture_output=True, text=True, timeout=30, check=True)
    return dict(p.split("=", 1) for p in r.stdout.split()[1:])["group"].split(",")


def run_bench(tb, name, args, during=None):
    """A bench run from the agent's namespace with --json (and --history):
    during(t0) runs meanwhile (t0: time.monotonic() at the launch). Prints the
    bench's own output; returns the summary and the path of the history."""
    summary = os.path.join(tb.dir, f"{name}.json")
    history = os.path.join(tb.dir, f"{name}.history")
    with open(os.path.join(tb.dir, f"{name}.out"), "w") as out:
        bench = subprocess.Popen(tb.agent_cmd("bench", *args, "--json", summary, "--history",
                                              history), stdout=out, stderr=subprocess.STDOUT)
        try:
            t0 = time.monotonic()
            if during:
                during(t0)
            rc = bench.wait(timeout=120)
        finally:
            if bench.poll() is None:
                bench.kill()
                bench.wait()
    with open(os.path.join(tb.dir, f"{name}.out")) as f:
        sys.stdout.write(f.read())
    check(rc == 0, f"bench {name} finished")
    with open(summary) as f:
        return json.load(f), history


def completions(history):
    """Sorted CLOCK_MONOTONIC completion times (s) of the successful operations."""
    done = []
    with open(history) as f:
        for line in f:
            op = json.loads(line)
            if op["status"] in ("OK", "NOT_FOUND"):
                done.append(op["complete_ns"] / 1e9)
    return sorted(done)


def rate_between(done, t_from, t_to):
    """Successful operations per second completed in [t_from, t_to)."""
    return (bisect.bisect_left(done, t_to) - bisect.bisect_left(done, t_from)) / (t_to - t_from)


def lincheck(*histories, timeout=120):
    """Check bench histories, read as one, with tests/lincheck (prints its verdict)."""
    r = subprocess.run([sys.executable, os.path.join(SRC, "tests", "lincheck", "lincheck.py"),
                        *histories], capture_output=True, text=True, timeout=timeout)
    print(r.stdout.strip())
    check(r.returncode == 0, "the recorded history is linearizable (no stale read)")


def read_every_key(tb, name, keys, conc, seconds, seed):
    """A read-only pass over keys, uniform, after a run: run_bench's summary and history."""
    return run_bench(tb, name, [
        "--keys", str(keys), "--read-ratio", "1", "--dist", "uniform",
        "--concurrency", str(conc), "--duration", str(seconds), "--seed", str(seed)])


def deadline_ms(tb):
    """The agents' per-request deadline (agent.deadline_ms, docs/config.md)."""
    return tb.cfg.get("agent", {}).get("deadline_ms", 500)


def sample_forwarded(tb):
    """(CLOCK_MONOTONIC ns, the switch's requests_forwarded) at about the same time."""
    t = time.monotonic_ns()
    n = tb.counters()["requests_forwarded"]
    return (t + time.monotonic_ns()) // 2, n


def kill_and_restart(tb, t0, kill_at, restart_at, marks):
    """kill -9 the switch kill_at s after t0 and start it again at restart_at;
    marks gets the monotonic times 'kill' and 'back' (restarted and healthy)."""
    time.sleep(max(0, t0 + kill_at - time.monotonic()))
    before_kill = tb.counters()
    os.kill(tb.pid(tb.switch), signal.SIGKILL)
    marks["kill"] = time.monotonic()
    log(f"kill -9 {tb.switch} at {marks['kill'] - t0:.1f} s"
        f" ({before_kill['requests']} requests through it)")
    time.sleep(max(0, t0 + restart_at - time.monotonic()))
    states = tb.start_watching(tb.switch)
    marks["back"] = time.monotonic()
    log(f"{tb.switch} restarted and healthy at {marks['back'] - t0:.1f} s;"
        f" node states seen: {states}")
    # A fresh switch must not declare nodes down before their first digest
    # could arrive (it would answer UNAVAILABLE to returning agents).
    check(not any("D" in st for st in states), "no node was marked down by the restarted switch")


def scenario_switch_kill(tb):
    """kill -9 switchd under load (one-arm) and restart it 2 s later: not one
    request fails (each attempt that times out at the switch is resent to the
    ring home), the history is linearizable, and agents are in-path again
    within 3 s of the restart."""
    tb.up()
    # 22 s: a restart on a loaded host took up to 19 s to be healthy (9.7 to
    # 18.7 s seen at load average 12); one of 12 s still leaves a window.
    conc, duration, kill_at, restart_at, back_within = 8, 22, 3.0, 5.0, 3.0
    marks, win = {}, []

    def during(t0):
        kill_and_restart(tb, t0, kill_at, restart_at, marks)
        # From back_within s after the restart to the end of the run, every
        # request goes through the switch: count what it forwards over that
        # window and compare with the history. A restarted switch learns a
        # one-arm client's MAC by ARP, so the first replies to a returning
        # agent can be dropped (no_neighbour); the agent resends those home.
        time.sleep(max(0, marks["back"] + back_within - time.monotonic()))
        if time.monotonic() > t0 + duration - 1.5:
            raise Fail(f"the restart took {marks['back'] - marks['kill']:.1f} s: no time left"
                       " in the run to see the agent in-path again")
        win.append(sample_forwarded(tb))
        time.sleep(max(0.5, t0 + duration - 0.5 - time.monotonic()))
        win.append(sample_forwarded(tb))

    # No --preload: its writes are not in the history, and the checker
    # rightly rejects a read of a version no recorded write produced.
    s, history = run_bench(tb, "switchkill", [
        "--keys", "1000", "--read-ratio", "0.5", "--dist", "zipf:0.99",
        "--concurrency", str(conc), "--duration", str(duration), "--seed", "11"], during)
    after = tb.counters()
    ag = s["agent"]
    log(f"agent counters: {ag}")
    for t in s["timeline"]:
        log(f"  t={t['t']:>2} ops {t['ops']:>6} errors {t['errors']:>3} per node {t['per_node']}")
    check(s["errors"] == 0, f"{s['ops']} operations, not one failed ({s['status']})")
    check(s["latency_us"]["max"] / 1000 <= deadline_ms(tb) * 1.5,
          f"no operation took longer than its deadline: max"
          f" {s['latency_us']['max'] / 1000:.1f} ms (deadline {deadline_ms(tb)} ms, +50% slack)")
    # The writes that timed out at the dead switch and went home instead:
    # reported, not judged. That no request failed is judged above; this
    # count is 0 when no write was out at the switch as it died, which CI saw
    # once (with no request failed; why none was out was not found).
    log(f"agent resent {ag['switch_retries_home']} timed-out writes home")
    check(ag["switch_down"] >= 1 and ag["switch_back"] >= 1,
          f"agent gave up the switch ({ag['switch_down']}x) and came back ({ag['switch_back']}x)")
    full = [t for t in s["timeline"] if t["t"] + 1 <= s["duration_s"]]
    check(all(t["ops"] > 0 for t in full),
          "operations completed in every second, also while the switch was down (direct routing)")
    # History times are CLOCK_MONOTONIC of this host, as is time.monotonic_ns().
    issued = 0
    with open(history) as f:
        for line in f:
            op = json.loads(line)
            if win[0][0] <= op["invoke_ns"] and op["complete_ns"] <= win[1][0]:
                issued += 1
    forwarded = win[1][1] - win[0][1]
    log(f"restarted switch: {after['requests_forwarded']} requests forwarded in all,"
        f" {after['no_neighbour']} dropped before it knew a neighbour's MAC")
    # The counter samples are a few ms off the window's edges (cdtctl's round
    # trip), and on a loaded host the switch's lcore can be starved long
    # enough for an agent to give it up as silent and come back a re-check
    # later (96% seen at load average 13): 10% slack. Direct routing would
    # forward none.
    check(issued > 0 and forwarded >= 0.9 * issued,
          f"in-path again within {back_within:.0f} s of the restart: over the"
          f" {(win[1][0] - win[0][0]) / 1e9:.1f} s after, the switch forwarded {forwarded}"
          f" requests for the {issued} operations the agent ran")
    lincheck(history)


def scenario_hint_kill(tb):
    """Hint mode (one-arm), the hot set moving every 3 s (--dynamic hot-in:3),
    then kill -9 the switch and restart it 2 s later: a read whose HINT named
    a copy that no longer holds the version is placed again, never ends
    MOVED; a dead switch is left as in in-path mode; not one request fails,
    and the history is linearizable."""
    tb.up()
    conc, duration, kill_at, restart_at = 16, 18, 7.0, 9.0
    marks = {}
    s, history = run_bench(tb, "hintkill", [
        "--mode", "hint", "--keys", "2000", "--dist", "zipf:1.2", "--read-ratio", "0.8",
        "--dynamic", "hot-in:3", "--hot-keys", "64", "--value-size", "32",
        "--concurrency", str(conc), "--duration", str(duration), "--seed", "13"],
        lambda t0: kill_and_restart(tb, t0, kill_at, restart_at, marks))
    ag = s["agent"]
    log(f"agent counters: {ag}")
    for t in s["timeline"]:
        log(f"  t={t['t']:>2} ops {t['ops']:>6} errors {t['errors']:>3} per node {t['per_node']}")
    check(ag["hints"] > 0 and ag["moved"] > 0 and ag["replaced"] > 0,
          f"HINTs went stale as the hot set moved: {ag['moved']} MOVED answers, each read"
          f" placed again ({ag['replaced']}) out of {ag['hints']} HINTs")
    check(s["status"].get("MOVED", 0) == 0, "no read ended MOVED")
    check(s["errors"] == 0,
          f"{s['ops']} operations, not one failed, before, during or after the kill"
          f" ({s['status']})")
    check(s["latency_us"]["max"] / 1000 <= deadline_ms(tb) * 1.5,
          f"no operation took longer than its deadline: max"
          f" {s['latency_us']['max'] / 1000:.1f} ms (deadline {deadline_ms(tb)} ms, +50% slack)")
    # A re-check finds the restarted switch within recheck_ms (1 s), if the
    # restart (slow on a loaded host) left that much of the run.
    recheck_s = tb.cfg.get("agent", {}).get("recheck_ms", 1000) / 1000
    back_in_run = marks["back"] + recheck_s + 0.5 < marks["kill"] - kill_at + duration
    check(ag["switch_down"] >= 1 and (ag["switch_back"] >= 1 or not back_in_run),
          f"the dead switch was given up ({ag['switch_down']}x) and taken back"
          f" ({ag['switch_back']}x{'' if back_in_run else ': its restart took the rest of the run'})")
    lincheck(history)


def scenario_switch_loss(tb):
    """Drop 10% of the frames going into the (one-arm) switch for 8 s, with
    nftables on the fabric's bridge: the agent judges the switch lossy and
    goes around it, not one request fails, throughput while lossy is at
    least half its level before, the agent is back on the switch once the
    loss ends, and the history is linearizable."""
    tb.up()
    conc, duration, loss_at, loss_for = 32, 18, 4.0, 8.0
    port = re.search(r"iface=([^,]+)", tb.cfg["switches"][0]["ports"][0]["vdev"]).group(1)
    fabric = f"{NSP}fabric"
    rules = ("table bridge skl_loss {\n chain into_switch {\n"
             "  type filter hook forward priority 0; policy accept;\n"
             f"  oifname \"{port}\" numgen random mod 100 < 10 counter drop\n }}\n}}\n")
    marks = {}

    def nft(*args, stdin=None):
        r = subprocess.run(["ip", "netns", "exec", fabric, "nft", *args], input=stdin,
                           capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            raise Fail(f"nft {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def lossy(t0):
        time.sleep(max(0, t0 + loss_at - time.monotonic()))
        nft("-f", "-", stdin=rules)
        marks["on"] = time.monotonic()
        time.sleep(max(0, t0 + loss_at + loss_for - time.monotonic()))
        marks["dropped"] = int(re.search(r"packets (\d+)", nft("list", "table", "bridge",
                                                                 "skl_loss")).group(1))
        nft("delete", "table", "bridge", "skl_loss")
        marks["off"] = time.monotonic()

    if shutil.which("nft") is None:
        raise Fail("nft (nftables) is not installed: scripts/setup.sh installs it")
    s, history = run_bench(tb, "switchloss", [
        "--keys", "10000", "--read-ratio", "0.9", "--dist", "zipf:0.99",
        "--concurrency", str(conc), "--duration", str(duration), "--seed", "17"], lossy)
    ag = s["agent"]
    log(f"agent counters: {ag}")
    for t in s["timeline"]:
        log(f"  t={t['t']:>2} ops {t['ops']:>6} errors {t['errors']:>3} per node {t['per_node']}")
    check(marks["dropped"] > 0, f"nftables dropped {marks['dropped']} frames into the switch")
    # Where a refusal would come from: a write around the switch whose
    # copies' holders did not confirm their drop, or one that waited out an
    # earlier write's turn.
    nodes = [tb.node_counters(n["name"]) for n in tb.cfg["nodes"]]
    log("nodes: " + ", ".join(
        f"{k} {sum(c.get(k, 0) for c in nodes)}" for k in (
            "write_retried", "retry_notified", "bypass_writes", "bypass_refused",
            "through_turn_timeout", "expired")))
    # Where the switch's own UNAVAILABLE would come from: a node it held down
    # (its digests lost, nothing else heard from it).
    sw = tb.counters()
    log("switch: " + ", ".join(f"{k} {v}" for k, v in sorted(sw.items())
                               if any(w in k for w in ("down", "unavailable", "lost"))))
    check(s["errors"] == 0, f"{s['ops']} operations, not one failed ({s['status']})")
    # (A switch whose lcore a loaded host starves for 150 ms may also be
    # given up as silent, and come back at its next answer: switch_down.)
    check(ag["switch_lossy"] >= 1,
          f"the switch was given up as lossy ({ag['switch_lossy']}x; {ag['switch_losses']}"
          f" reads lost; as silent {ag['switch_down']}x)")
    done = completions(history)
    before = rate_between(done, marks["on"] - 3.0, marks["on"])
    during = rate_between(done, marks["on"] + 0.5, marks["off"])
    log(f"throughput: {before:.0f} ops/s before the loss, {during:.0f} ops/s while lossy")
    check(during >= 0.5 * before,
          f"throughput while lossy at least half its level before ({during / before:.2f}x)")
    check(ag["switch_back"] >= 1,
          f"back on the switch after the loss ended ({ag['switch_back']}x,"
          f" {ag['rechecks']} re-check HINTs)")
    lincheck(history)


def switch_pauses(tb, pauses, pause_s, first_s, every_s, resumed=None):
    """A run_bench `during`: SIGSTOP switchd for pause_s, `pauses` times, the
    first first_s after the launch and then every every_s; the times it
    resumed are appended to resumed."""
    def during(t0):
        pid = tb.pid(tb.switch)
        for k in range(pauses):
            time.sleep(max(0, t0 + first_s + k * every_s - time.monotonic()))
            os.kill(pid, signal.SIGSTOP)
            time.sleep(pause_s)
            os.kill(pid, signal.SIGCONT)
            if resumed is not None:
                resumed.append(time.monotonic())
    return during


def scenario_switch_pause(tb):
    """SIGSTOP the switch for 100 ms, 5 times, under a closed loop of 48
    (inline): the stall is the switch's, so no node is blamed and nothing
    fails fast after."""
    tb.up()
    conc, pauses, pause_s, first_s, every_s = 48, 5, 0.1, 2.0, 2.0
    check(deadline_ms(tb) >= 2 * pause_s * 1000,
          f"the agents' deadline ({deadline_ms(tb)} ms) is at least twice the pause")
    duration = int(first_s + pauses * every_s + 1)
    resumed = []
    s, history = run_bench(tb, "pause", [
        "--keys", "10000", "--dist", "zipf:0.99", "--read-ratio", "0.95",
        "--concurrency", str(conc), "--duration", str(duration), "--seed", "5"],
        switch_pauses(tb, pauses, pause_s, first_s, every_s, resumed))
    ag = s["agent"]
    log(f"{s['ops']} ops, status {s['status']}, agent: switch_down {ag['switch_down']},"
        f" switch_back {ag['switch_back']}, node_down {ag['node_down']},"
        f" fail_fast {ag['fail_fast']}, timeouts {ag['timeouts']}")
    # Inline: every path crosses the switch, so requests caught in a pause
    # are resent through it until their deadline, and answered after it.
    check(s["errors"] == 0, f"not one request failed ({s['status']})")
    check(ag["node_down"] == 0 and ag["fail_fast"] == 0,
          "no node was blamed for the switch's stall: nothing marked down, nothing failed fast")
    # Back within 1 s: the agent returns to the switch at the first late reply
    # after the resume (well under 100 ms); had it waited for a re-check, that
    # is agent.recheck_ms (1 s) after it gave the switch up.
    check(ag["switch_back"] == ag["switch_down"] and ag["rechecks"] == 0,
          f"after every pause the agent was back on the switch before any re-check was due"
          f" ({ag['switch_down']} given up, {ag['switch_back']} back, {ag['rechecks']}"
          f" re-checks)")
    done = completions(history)
    # History times are CLOCK_MONOTONIC, as time.monotonic() is. The level:
    # 0.8 s windows 1.0 s after each resume against the median of the 0.8 s
    # windows just before each pause (a closed loop on 2 busy cores wanders
    # by 10-35% from one second to the next: worst seen 65%), at a third,
    # twice under that: what it must catch is a hole, a stall or a fail-fast
    # storm that outlived its pause. The return itself is the check above.
    quiet = sorted(rate_between(done, t - pause_s - 0.9, t - pause_s - 0.1) for t in resumed)
    level = quiet[len(quiet) // 2]
    after = [rate_between(done, t + 1.0, t + 1.8) for t in resumed]
    log(f"median undisturbed rate {level:.0f} ops/s; 1.0-1.8 s after each resume: "
        + " ".join(f"{r:.0f}" for r in after))
    check(all(r >= level / 3 for r in after),
          f"no hole in the throughput 1 s after any resume (at least a third of its level)"
          f" (worst {min(after) / level:.0%})")
    # Each resume meets a burst of PUTs of the hot keys: they wait at the
    # switch for the one of their key that is out (docs/design.md section 5,
    # "Hot writes"), and the history above holds their answers too.
    c = tb.counters()
    log(f"write batches: {c['writes_held']} PUTs held, {c['batch_riders_answered']} answered"
        f" as riders, {c['batch_given_up']} given up, {c['batch_duplicate']} retries dropped")
    lincheck(history)


def scenario_resp_pause(tb):
    """skewless-proxy in the agent's namespace and `skewless bench --resp`
    through it, recording its history, while switchd is SIGSTOPped for
    100 ms three times (inline): the proxy's agent hides every pause, not
    one command fails, and the history is linearizable by its values
    (a RESP client sees no versions: tests/lincheck --values)."""
    tb.up()
    port, pauses, pause_s, first_s, every_s = 6390, 3, 0.1, 2.0, 2.0
    out = os.path.join(tb.dir, "proxy.out")
    with open(out, "w") as o, open(os.path.join(tb.dir, "proxy.log"), "w") as err:
        proxy = subprocess.Popen(
            ["ip", "netns", "exec", f"{NSP}a1", os.path.join(tb.build, "proxy", "skewless-proxy"),
             "--config", tb.config, "--listen", f"127.0.0.1:{port}", "--threads", "2"],
            stdout=o, stderr=err)
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 10 and "listening" not in open(out).read():
            time.sleep(0.1)
        check("listening" in open(out).read(), "skewless-proxy is listening")
        s, history = run_bench(tb, "resp-pause", [
            "--resp", f"127.0.0.1:{port}", "--resp-conns", "16", "--keys", "2000",
            "--dist", "zipf:0.99", "--read-ratio", "0.8", "--concurrency", "16",
            "--duration", str(int(first_s + pauses * every_s + 1)), "--seed", "9"],
            switch_pauses(tb, pauses, pause_s, first_s, every_s))
        log(f"{s['ops']} commands through the proxy, status {s['status']}")
        check(s["ops"] > 1000 and s["errors"] == 0,
              f"not one command failed through {pauses} switch pauses ({s['status']})")
        r = subprocess.run([sys.executable, os.path.join(SRC, "tests", "lincheck", "lincheck.py"),
                            "--values", history], capture_output=True, text=True, timeout=120)
        print(r.stdout.strip())
        check(r.returncode == 0, "the proxy's history is linearizable by its values")
    finally:
        proxy.terminate()
        try:
            proxy.wait(10)
        except subprocess.TimeoutExpired:
            proxy.kill()


def scenario_overload(tb):
    """256 in flight against nodes of 1000 us service time (2 workers each),
    zipf 1.2 with the directory off: the hottest node holds some 80 requests,
    40 ms of queue, so requests at it run out of the 50 ms agent timeout. They
    end TIMEOUT; nothing ends UNAVAILABLE and no node is marked down. R = 1:
    with replica groups the hot keys' reads spread over two members, and no
    node holds such a queue."""
    with_replicas(tb, 1, 0)
    tb.env["SKL_SERVICE_TIME_US"] = "1000"
    tb.up()
    tb.cdtctl("directory", "off")
    s, _ = run_bench(tb, "overload", [
        "--keys", "100000", "--dist", "zipf:1.2", "--read-ratio", "0.95",
        "--concurrency", "256", "--duration", "6", "--seed", "3"])
    ag = s["agent"]
    log(f"{s['ops']} ops, status {s['status']}, agent: node_down {ag['node_down']},"
        f" fail_fast {ag['fail_fast']}, switch_down {ag['switch_down']},"
        f" timeouts {ag['timeouts']}")
    check(s["status"].get("UNAVAILABLE", 0) == 0 and ag["node_down"] == 0
          and ag["fail_fast"] == 0 and ag["switch_down"] == 0,
          "overload is not an outage: no UNAVAILABLE, no node marked down, the switch kept")
    check(s["status"].get("TIMEOUT", 0) > 0 and set(s["status"]) <= {"OK", "NOT_FOUND",
                                                                      "TIMEOUT"},
          f"requests that ran out of time ended TIMEOUT ({s['status'].get('TIMEOUT', 0)})")
    nodes = tb.cdtctl("nodes")["nodes"]
    check(all(n["state"] == "up" for n in nodes), "the switch holds every node up")


def add_n9(cfg):
    """A ring change's edit: a 9th node, n9, after the last one (the next address)."""
    ip = cfg["nodes"][-1]["ip"].rsplit(".", 1)
    cfg["nodes"].append(dict(cfg["nodes"][-1], id=9, name="n9", ip=f"{ip[0]}.{int(ip[1]) + 1}",
                             data_dir=cfg["nodes"][-1]["data_dir"][:-2] + "n9"))


def ring_change(tb, edit, t0, events, interrupt=None):
    """Rewrite the private config with edit(cfg) and a ring.version one higher (every
    process reads that one file: agents and nodes reload it), start the nodes it adds
    (testbed.sh start: --join), apply it, and wait until the switch says the change is
    complete. Appends (name, start, end) to events, times relative to t0."""
    with open(tb.config) as f:
        cfg = json.load(f)
    before = {n["name"] for n in cfg["nodes"]}
    cfg.setdefault("ring", {})["version"] = cfg.get("ring", {}).get("version", 1) + 1
    edit(cfg)
    tmp = tb.config + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cfg, f, indent=1)
    os.replace(tmp, tb.config)
    for n in cfg["nodes"]:
        if n["name"] not in before:
            tb.testbed("start", n["name"])
            log(f"{n['name']} started (--join) at {time.monotonic() - t0:.1f} s")
    start = time.monotonic() - t0
    r = tb.cdtctl("ring", "apply", tb.config)
    log(f"ring apply version {r['version']}: {r['arcs']} arcs move"
        f" ({100 * r['moved_share']:.1f}% of the keyspace) at {start:.1f} s")
    if interrupt:
        interrupt()
    return wait_stable(tb, t0, start, events)


def wait_stable(tb, t0, start, events):
    """Wait (60 s at most) until the switch says the change is complete. Returns
    the arcs done `ring show` counted while the change ran (each new value, in
    order), the change's arcs, and the seconds from the first `warmup` seen to
    complete."""
    deadline = time.monotonic() + 60
    progress = []  # arcs done, as ring show counts them arc by arc, while the warm-up runs
    warmup_seen = None
    while time.monotonic() < deadline:
        show = tb.cdtctl("ring", "show")
        if show["state"] == "stable":
            break
        if show["state"] == "warmup" and warmup_seen is None:
            warmup_seen = time.monotonic()
        if show.get("arcs_done") is not None and show["state"] in ("ramp", "warmup") and (
                not progress or progress[-1] != show["arcs_done"]):
            progress.append(show["arcs_done"])
        time.sleep(0.2)
    warm_s = time.monotonic() - warmup_seen if warmup_seen else 0.0
    end = time.monotonic() - t0
    check(show["state"] == "stable", f"ring version {show['version']} complete in"
          f" {end - start:.1f} s ({show['ring_sent']} RING sent, {show['rehomed']} hot keys"
          f" re-homed)")
    check(progress == sorted(progress) and show["arcs_done"] == show["arcs"]
          and all(n["arcs_done"] == n["arcs_out"] for n in show["nodes"]),
          f"the arcs done never went back ({progress[:12]} of {show['arcs']} seen while the"
          f" change ran), all {show['arcs']} at the end")
    events.append((f"v{show['version']}", start, end, show["rehomed"]))
    return progress, show["arcs"], warm_s


def lost_acked(histories):
    """Keys whose last acknowledged write is newer than every read after the run
    (the final read-only pass): acknowledged writes that were lost."""
    last_write, final_read = {}, {}
    for path, final in histories:
        with open(path) as f:
            for line in f:
                op = json.loads(line)
                if op["status"] not in ("OK", "NOT_FOUND"):
                    continue
                if not final and op["op"] in ("put", "del"):
                    last_write[op["key"]] = max(last_write.get(op["key"], 0), op["version"])
                if final and op["op"] == "get":
                    final_read[op["key"]] = max(final_read.get(op["key"], 0), op["version"])
    return sorted(k for k, v in last_write.items() if k in final_read and final_read[k] < v), \
        sum(1 for k in last_write if k not in final_read)


def membership_report(tb, s, final, history, events, keys):
    """The figures bench/membership.sh prints; checks for the e2e."""
    moved = 0
    old_cfg = dict(tb.cfg)
    with open(tb.config) as f:
        new_cfg = json.load(f)
    names = [f"key:{i}" for i in range(keys)]
    # Homes under the first and the last config: keys that moved at least once.
    first_path = os.path.join(tb.dir, "first.json")
    with open(first_path, "w") as f:
        json.dump(old_cfg, f)
    r1 = subprocess.run([os.path.join(tb.build, "agent", "skewless"), "--config", first_path,
                         "where", *names], capture_output=True, text=True, timeout=60)
    r2 = subprocess.run([os.path.join(tb.build, "agent", "skewless"), "--config", tb.config,
                         "where", *names], capture_output=True, text=True, timeout=60)
    h1 = [line.split()[3] for line in r1.stdout.splitlines()]
    h2 = [line.split()[3] for line in r2.stdout.splitlines()]
    moved = sum(1 for a, b in zip(h1, h2) if a != b)
    migrated = 0
    for n in new_cfg["nodes"]:
        try:
            c = tb.node_counters(n["name"])
            migrated += c.get("mig_pushed", 0) + c.get("mig_read_through", 0)
        except OSError:
            pass  # a node that is not running
    lost, unread = lost_acked([(history, False), (final, True)])
    r = subprocess.run([sys.executable, os.path.join(SRC, "tests", "lincheck", "lincheck.py"),
                        history, final], capture_output=True, text=True, timeout=300)
    print(r.stdout.strip())
    seconds = sum(e[2] - e[1] for e in events)
    errors = s["errors"]
    print(f"ops={s['ops']} errors={errors} moved_keys={moved} migrated={migrated}"
          f" seconds_to_migrate={seconds:.1f} lost_acked={len(lost)}"
          f" linearizable={'yes' if r.returncode == 0 else 'no'}", flush=True)
    return lost, unread, r.returncode == 0


def scenario_membership(tb):
    """R = 1 (groups-membership is the same with replica groups): add a 9th
    node under load, then remove another (one-arm): 0 acknowledged writes
    lost, the history linearizable, errors only inside the changes."""
    with_replicas(tb, 1, 0)
    tb.up()
    keys, conc, duration = 2000, 8, int(os.environ.get("SKL_MEMBERSHIP_SECONDS", "30"))
    events = []
    # n3 drains its ~250 keys at 40 a second: some 6 s of warm-up, long enough to
    # watch `ring show` count its arcs done one by one and to time the rate.
    DRAIN_RATE = 40
    drain = []  # the removal's arcs done seen, its arcs, its warm-up seconds, n3's pushes
    # A bad config is one clear line and changes nothing: the same ring version.
    bad_path = os.path.join(tb.dir, "bad.json")
    shutil.copy(tb.config, bad_path)
    r = subprocess.run([os.path.join(tb.build, "switchd", "cdtctl"), "--socket", tb.socket,
                        "ring", "apply", bad_path], capture_output=True, text=True, timeout=30)
    check(r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
          and "ring.version" in r.stderr and tb.cdtctl("ring", "show")["state"] == "stable",
          f"a config without a higher ring.version is refused: {r.stderr.strip()}")
    # Hot keys: 64 pinned directory entries, some of whose homes move.
    pinned = [f"key:{i}" for i in range(64)]
    r = subprocess.run([os.path.join(tb.build, "switchd", "cdtctl"), "--socket", tb.socket,
                        "cdt", "pin", *pinned, "--replicas", "3"], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 0, f"{len(pinned)} keys pinned in the directory {r.stderr.strip()}")

    def add_then_remove(t0):
        time.sleep(3)

        ring_change(tb, add_n9, t0, events)
        time.sleep(2)

        def remove(cfg):
            for n in cfg["nodes"]:
                if n["name"] == "n3":
                    n["weight"] = 0
            cfg["ring"].update(warmup_keys_per_s=DRAIN_RATE, ramp_ms=5000)
        pushed = tb.node_counters("n3").get("mig_pushed", 0)
        drain.extend(ring_change(tb, remove, t0, events))
        drain.append(tb.node_counters("n3").get("mig_pushed", 0) - pushed)

    s, history = run_bench(tb, "membership", [
        "--keys", str(keys), "--read-ratio", "0.5", "--dist", "uniform",
        "--concurrency", str(conc), "--duration", str(duration), "--seed", "7"],
        add_then_remove)
    check(len(events) == 2, "both ring changes ran during the load")
    progress, arcs, warm_s, pushed = drain
    between = sorted({p for p in progress if 0 < p < arcs})
    check(len(between) >= 3, f"the drain marks n3's arcs done one by one: {len(between)} counts"
          f" between 0 and {arcs} seen ({between[:8]}...)")
    # Pushing began at most one poll (0.2 s) before `warmup` was seen; a pace lets
    # one push and 20 ms of rate more than rate x time through (nodes/migrate.h).
    least = (pushed - 2) / DRAIN_RATE - 0.4
    check(warm_s >= least, f"the drain kept ring.warmup_keys_per_s {DRAIN_RATE}: n3 pushed"
          f" {pushed} records in {warm_s:.1f} s of warm-up (at least {least:.1f} s)")
    for t in s["timeline"]:
        log(f"  t={t['t']:>2} ops {t['ops']:>6} errors {t['errors']:>3} per node {t['per_node']}")
    # Every key read after the changes: the writes acknowledged must all be there.
    f, final = read_every_key(tb, "membership-final", keys, conc, 5, 8)
    keep = os.environ.get("SKL_MEMBERSHIP_HISTORY")
    if keep:
        shutil.copy(history, keep)
    lost, unread, linear = membership_report(tb, s, final, history, events, keys)
    entries = {e["key"]: e for e in tb.cdtctl("cdt", "show")["entries"]}
    homes = tb.homes(pinned)
    wrong = [k for k in pinned if k not in entries or entries[k]["home"] != homes[k]
             or not entries[k]["pinned"]]
    check(sum(e[3] for e in events) > 0 and not wrong,
          f"hot keys follow: {sum(e[3] for e in events)} directory entries re-homed, every"
          f" pinned key still in the directory at its new home (wrong: {wrong[:5]})")
    log(f"main run: {s['status']}; final read pass: {f['status']}")
    # On this shared 2-core machine a stalled process costs a few timeouts (the agent
    # then fails fast for a moment): those, and nothing else, are tolerated.
    final_bad = {k: v for k, v in f["status"].items() if k not in ("OK", "NOT_FOUND")}
    check(set(final_bad) <= {"TIMEOUT", "UNAVAILABLE"} and f["errors"] <= f["ops"] // 100,
          f"after the changes reads succeed (no MOVED, errors only timeouts: {final_bad})")
    check(not lost, f"no acknowledged write lost ({len(lost)} keys read older: {lost[:5]};"
          f" {unread} written keys not read by the final pass)")
    check(linear, "the recorded history is linearizable (tests/lincheck)")
    # Errors only inside the documented windows: while a change ran (+1 s).
    bad = []
    t_base = None
    with open(history) as hf:
        for line in hf:
            op = json.loads(line)
            t_base = op["invoke_ns"] if t_base is None else min(t_base, op["invoke_ns"])
    with open(history) as hf:
        for line in hf:
            op = json.loads(line)
            if op["status"] in ("OK", "NOT_FOUND"):
                continue
            t = (op["complete_ns"] - t_base) / 1e9
            bad.append((t, op["status"]))
    outside = [b for b in bad if not any(e[1] - 1 <= b[0] <= e[2] + 1 for e in events)]
    log(f"errors: {len(bad)} ({sorted({b[1] for b in bad})}), outside the changes: {outside[:5]}")
    # 0.01% to 0.9% in runs on the shared 2-core machine, nearly all inside the
    # changes (a read-through's 3 x 20 ms to a previous home held off the CPU).
    check(len(bad) <= s["ops"] // 50, f"errors are rare: {len(bad)} of {s['ops']} (limit 2%)")
    # MOVED (both homes not yet at one epoch) is the change's own window; outside
    # it only the machine's stalls show (timeouts, the agent's fail-fast after them).
    check(all(b[1] in ("TIMEOUT", "UNAVAILABLE") for b in outside),
          f"outside the changes no error but timeouts: {outside[:5]}")


def scenario_membership_restart(tb):
    """R = 1: add a 9th node under load and kill -9 the switch in the middle of
    the ramp: restarted (with the new config), it resumes the change from the
    config it started from (`cdtctl ring resume`); nothing acknowledged is
    lost. Under a cluster key (auth.key_file): RING, FETCH and MIGRATE all
    travel sealed. With replica groups `ring resume` is refused."""
    with_replicas(tb, 1, 0)
    with open(tb.config) as f:
        cfg = json.load(f)
    fd = os.open(os.path.join(tb.dir, "cluster.key"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (os.urandom(32).hex() + "\n").encode())
    os.close(fd)
    cfg["auth"] = {"key_file": "cluster.key"}
    with open(tb.config, "w") as f:
        json.dump(cfg, f, indent=1)
    tb.cfg = cfg
    tb.up()
    keys, conc, duration = 2000, 8, 24
    events = []
    first = os.path.join(tb.dir, "first.json")
    with open(tb.config) as f:
        cfg = json.load(f)
    with open(first, "w") as f:
        json.dump(cfg, f, indent=1)

    def kill_and_resume():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and tb.cdtctl("ring", "show")["active"] < 20:
            time.sleep(0.1)
        show = tb.cdtctl("ring", "show")
        os.kill(tb.pid(tb.switch), signal.SIGKILL)
        log(f"kill -9 {tb.switch} with {show['active']} of {show['arcs']} arcs active")
        tb.start_watching(tb.switch)
        check(tb.cdtctl("ring", "show")["state"] == "stable",
              "the restarted switch runs its config's ring and drives nothing")
        r = tb.cdtctl("ring", "resume", first)
        log(f"ring resume from the first config: {r['state']}, {r['arcs']} arcs")

    def during(t0):
        time.sleep(3)
        ring_change(tb, add_n9, t0, events, kill_and_resume)

    s, history = run_bench(tb, "restart", [
        "--keys", str(keys), "--read-ratio", "0.5", "--dist", "uniform",
        "--concurrency", str(conc), "--duration", str(duration), "--seed", "9"], during)
    check(len(events) == 1, "the change completed during the load")
    f, final = read_every_key(tb, "restart-final", keys, conc, 5, 10)
    lost, unread, linear = membership_report(tb, s, final, history, events, keys)
    bad = {k: v for k, v in s["status"].items() if k not in ("OK", "NOT_FOUND")}
    log(f"main run: {s['status']}; final read pass: {f['status']}")
    check(set(bad) <= {"TIMEOUT", "UNAVAILABLE", "MOVED"},
          f"errors only of the kill and the change: {bad or 'none'}")
    check(not lost, f"no acknowledged write lost ({lost[:5]}; {unread} keys not read back)")
    check(linear, "the recorded history is linearizable (tests/lincheck)")


def scenario_spoof(tb):
    """With a cluster key (auth.key_file), spoofed control datagrams from the
    agent's namespace change nothing: REPLICATE, UNREPLICATE, RC_ACK, DIGEST
    and SYNC with a forged source address (the switch's VIP, a node's, the
    peer switch's), each sent without a MAC and with a MAC under another key,
    and once more from the agent's own address. Values, the replica set (at
    the switch and at the nodes), node health and the peer lease stay as they
    were, and every spoof is counted exactly, by the counter of its reason."""
    with open(tb.config) as f:
        cfg = json.load(f)
    keyfile = os.path.join(tb.dir, "cluster.key")
    fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (os.urandom(32).hex() + "\n").encode())
    os.close(fd)
    cfg["auth"] = {"key_file": "cluster.key"}
    with open(tb.config, "w") as f:
        json.dump(cfg, f, indent=1)
    tb.cfg = cfg
    tb.up()  # replication, digests and SYNC now all run sealed

    port = cfg["service"].get("port", 7447)
    sw1, sw2 = cfg["switches"][0], cfg["switches"][1]
    nodes = {n["name"]: n for n in cfg["nodes"]}
    agent = cfg["agents"][0]
    ns = f"{NSP}{agent['name']}"
    key = "spoof:k"
    where = json.loads(subprocess.run(
        [os.path.join(tb.build, "agent", "skewless"), "--config", tb.config, "--json", "where",
         key], capture_output=True, text=True, timeout=30, check=True).stdout)[0]
    keyhash, home = int(where["keyhash"], 16), where["home"]

    def cli(*args):
        r = subprocess.run(["ip", "netns", "exec", ns, os.path.join(tb.build, "agent", "skewless"),
                            "--config", tb.config, "--json", *args], capture_output=True,
                           text=True, timeout=10)
        try:
            return json.loads(r.stdout)
        except ValueError:
            raise Fail(f"skewless {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")

    put = cli("put", key, "real")
    check(put.get("status") == "OK", f"put {key} = real at its home {home}")
    # Three copies (home and two replicas), made by sealed REPLICATE, RC_REQ and RC_ACK.
    tb.cdtctl("cdt", "pin", key, "--replicas", "3")
    entry = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        entry = next((e for e in tb.cdtctl("cdt", "show")["entries"] if e["key"] == key), None)
        if entry and len(entry["replicas"]) == 3 and entry["completed"] > 0:
            break
        time.sleep(0.1)
    check(entry and len(entry["replicas"]) == 3 and entry["completed"] > 0,
          f"with the key, {key} is replicated: set {entry and entry['replicas']}, completed "
          f"{entry and entry['completed']}")
    holder = next(r for r in entry["replicas"] if r != home)
    # Outside the copy set and the key's replica group (whose members hold it too).
    outsider = next(n for n in sorted(nodes)
                    if n not in entry["replicas"] and n not in group_of(tb, key))
    digest_node = next(n for n in sorted(nodes) if n not in (home, holder, outsider))

    # A write of the key goes through to both holders, sealed both ways (the
    # home's RC_REQ on its own socket, the holders' RC_ACKs back to it).
    through0 = tb.node_counters(home)
    check(cli("put", key, "real-2").get("status") == "OK",
          f"put {key} = real-2 through the switch")
    through1 = tb.node_counters(home)
    confirmed = (through1.get("write_through_confirmed", 0) -
                 through0.get("write_through_confirmed", 0))
    check(confirmed == 2 and through1.get("auth_bad_reply", 0) == 0,
          f"with the key, the write went through to both holders ({confirmed} confirmed)")

    def wire(op, key_bytes, value, version=0, node=0, flags=2):
        return struct.pack("!HBBHBBQQQHHIHHI", 0x5047, 1, op, flags, 0, 0,
                           0x5300000000000000 | random.getrandbits(32),
                           keyhash if key_bytes else 0, version, node, 0, 0, 0,
                           len(key_bytes), len(value)) + key_bytes + value

    kb = key.encode()
    entry = next(e for e in tb.cdtctl("cdt", "show")["entries"] if e["key"] == key)
    completed = entry["completed"]
    dig = struct.pack("!BBHIIQIIIBBBBBBBB", 1, 0, 100, 0xfffffff0, 0x5eed, int(time.time() * 1e6),
                      1000, 10 ** 6, 10 ** 6, 100, 100, 100, 100, 100, 100, 0, 0)
    sync = struct.pack("!BBHIIIQQQHHQQQ", 2, 0, sw2["id"], 0x0badf00d, 1, 0,
                       int(time.monotonic() * 1e6), 0, 0, 0, 0, 1 << 20, 1 << 20, 0)
    # (what, forged source, destination, datagram)
    spoofs = [
        ("REPLICATE", sw1["vip"], nodes[home]["ip"],
         wire(0x12, kb, struct.pack("!HH", sw1["id"], nodes[outsider]["id"]), completed,
              nodes[home]["id"])),
        ("UNREPLICATE", sw1["vip"], nodes[holder]["ip"],
         wire(0x13, kb, b"", 0, nodes[holder]["id"])),
        ("RC_ACK", nodes[outsider]["ip"], sw1["vip"],
         wire(0x11, kb, b"", completed, nodes[outsider]["id"], 0)),
        ("DIGEST", nodes[digest_node]["ip"], sw1["vip"],
         wire(0x20, b"", dig, 0, nodes[digest_node]["id"], 0)),
        ("SYNC", sw2["vip"], sw1["vip"], wire(0x30, b"", sync)),
    ]
    count = 5
    plan = []
    for what, src, dst, d in spoofs:
        plan.append([src, dst, d.hex(), count])  # no MAC
        plan.append([src, dst, (d + hmac.new(os.urandom(32), d, hashlib.sha256).digest()).hex(),
                     count])  # another key's MAC
        plan.append([agent["ip"], dst, d.hex(), count])  # the agent's own address

    def replica_read(name, version):
        """A GET with REPLICA_READ straight at node name, stamped with the version the
        switch saw complete (as the switch sends it): its status and value."""
        r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", REPLICA_READ_PY,
                            nodes[name]["ip"], str(nodes[name].get("port", port)), key,
                            str(keyhash), str(version)], capture_output=True, text=True,
                           timeout=10)
        if r.returncode != 0:
            raise Fail(f"replica read at {name}: {r.stderr.strip()}")
        return json.loads(r.stdout)

    def state():
        e = next(e for e in tb.cdtctl("cdt", "show")["entries"] if e["key"] == key)
        peers = tb.cdtctl("peers")
        return {"set": sorted(e["replicas"]), "completed": e["completed"],
                "value": cli("get", key).get("value"),
                "holder": replica_read(holder, e["completed"]),
                "outsider": replica_read(outsider, e["completed"]),
                "nodes": {n["name"]: (n["state"], n["alive"])
                          for n in tb.cdtctl("nodes")["nodes"]},
                "leased": peers["leased"], "lease_losses": peers["stats"]["lease_losses"],
                "peer_resets": peers["stats"]["resets"]}

    before = state()
    check(before["holder"] == {"status": 0, "value": "real-2"} and
          before["outsider"]["status"] == 2,
          f"before: {holder} serves its copy, {outsider} has none (MOVED)")
    sw_before = tb.counters()
    n_before = {n: tb.node_counters(n) for n in (home, holder)}

    sender = os.path.join(tb.dir, "spoof.py")
    with open(sender, "w") as f:
        f.write(SPOOF_PY)
    with open(os.path.join(tb.dir, "plan.json"), "w") as f:
        json.dump({"port": port, "plan": plan}, f)
    r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, sender,
                        os.path.join(tb.dir, "plan.json")], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise Fail(f"spoof sender failed: {r.stderr.strip()}")
    log(f"sent {len(plan) * count} spoofed datagrams from {ns} (raw sockets, forged sources)")
    # Long enough for a taken DIGEST (seq 0xfffffff0: later real ones look old) to
    # have marked its node down, and for a taken SYNC (a new incarnation) to cost the lease.
    time.sleep(1.5)

    after = state()
    for field in ("set", "completed", "value", "holder", "outsider", "nodes", "leased",
                  "lease_losses", "peer_resets"):
        check(after[field] == before[field], f"{field} unchanged: {after[field]}")
    health = {n["name"]: n["health"] for n in tb.cdtctl("nodes")["nodes"]}
    check(health[digest_node] >= 50, f"{digest_node}'s health stays high ({health[digest_node]}): "
          "the spoofed digest said 0")

    sw_after = tb.counters()
    n_after = {n: tb.node_counters(n) for n in (home, holder)}
    want = [("switch", sw_after, sw_before, "auth_missing", 3 * count),
            ("switch", sw_after, sw_before, "auth_bad", 3 * count),
            ("switch", sw_after, sw_before, "reply_not_from_node", count),
            ("switch", sw_after, sw_before, "digest_not_from_node", count),
            ("switch", sw_after, sw_before, "sync_not_from_peer", count),
            (home, n_after[home], n_before[home], "auth_missing", count),
            (home, n_after[home], n_before[home], "auth_bad", count),
            (home, n_after[home], n_before[home], "src_not_switch", count),
            (holder, n_after[holder], n_before[holder], "auth_missing", count),
            (holder, n_after[holder], n_before[holder], "auth_bad", count),
            (holder, n_after[holder], n_before[holder], "src_not_node", count)]
    wrong = []
    for who, a, b, counter, n in want:
        got = a.get(counter, 0) - b.get(counter, 0)
        log(f"  {who:<7} {counter:<22} {got:>3} (want {n})")
        if got != n:
            wrong.append(f"{who}.{counter} {got} != {n}")
    check(not wrong, f"every spoof counted by its reason ({wrong})")


REPLICA_READ_PY = r'''
import json, random, socket, struct, sys
ip, port, key, keyhash = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), int(sys.argv[4])
version = int(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
rid = 0x5200000000000000 | random.getrandbits(32)
d = struct.pack("!HBBHBBQQQHHIHHI", 0x5047, 1, 0x01, 0x1, 0, 0, rid, keyhash, version, 0, 0, 0,
                0, len(key), 0) + key
for attempt in range(3):
    s.sendto(d, (ip, port))
    try:
        while True:
            r = s.recv(2048)
            if len(r) >= 48 and struct.unpack_from("!Q", r, 8)[0] == rid:
                klen, vlen = struct.unpack_from("!HI", r, 42)
                print(json.dumps({"status": r[6], "value": r[48 + klen:48 + klen + vlen].decode()}))
                sys.exit(0)
    except socket.timeout:
        continue
sys.exit("no reply")
'''

SPOOF_PY = r'''
import json, socket, struct, sys, time
spec = json.load(open(sys.argv[1]))
port = spec["port"]
raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)  # IP_HDRINCL
for src, dst, hexd, count in spec["plan"]:
    d = bytes.fromhex(hexd)
    udp = struct.pack("!HHHH", port, port, 8 + len(d), 0) + d  # checksum 0: none
    # The kernel fills in the IPv4 checksum; the source address is ours to choose.
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    for _ in range(count):
        raw.sendto(ip + udp, (dst, 0))
        time.sleep(0.002)
'''


SCENARIOS = {
    "membership-restart": ("testbed-onearm.json", scenario_membership_restart),
    "membership": ("testbed-onearm.json", scenario_membership),
    "ops": ("testbed.json", scenario_ops),
    "values": ("testbed.json", scenario_values),
    "values-onearm": ("testbed-onearm.json", scenario_values),
    "malformed": ("testbed.json", scenario_malformed, "tap"),
    "node-kill": ("testbed.json", scenario_node_kill),
    "node-loss": ("testbed.json", scenario_node_loss),
    "groups-membership": ("testbed-onearm.json", scenario_groups_membership),
    "switch-kill": ("testbed-onearm.json", scenario_switch_kill),
    "hint-kill": ("testbed-onearm.json", scenario_hint_kill),
    "switch-loss": ("testbed-onearm.json", scenario_switch_loss),
    "switch-pause": ("testbed.json", scenario_switch_pause),
    "resp-pause": ("testbed.json", scenario_resp_pause),
    "overload": ("testbed.json", scenario_overload),
    "spoof": ("testbed-2sw.json", scenario_spoof),
}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    name = sys.argv[2]
    skip_unless_possible()

    def on_signal(signum, _frame):
        raise SystemExit(f"e2e {name}: signal {signum}: tearing down")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    template, fn, *ports = SCENARIOS[name]
    sweep()
    tb = Testbed(build, template, name.replace("-", ""), tap=ports == ["tap"])
    failed = True
    t0 = time.monotonic()
    try:
        fn(tb)
        failed = False
    except Fail as e:
        log(f"FAIL: {e}")
    except subprocess.TimeoutExpired as e:
        log(f"FAIL: timed out: {e}")
    finally:
        tb.down(failed)
    log(f"e2e {name}: {'FAILED' if failed else 'passed'} in {time.monotonic() - t0:.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
