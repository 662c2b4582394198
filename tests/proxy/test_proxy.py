#!/usr/bin/python3
"""skewless-proxy against real nodes, driven by Redis's own clients.

Three skewless-node processes on 127.0.0.1 (direct routing, no switch) and a
skewless-proxy in front of them, in a run folder under /tmp/$SKL_TEST_PREFIX.
python3-redis (Debian's, hence /usr/bin/python3) drives every command, its
errors and a pipeline; redis-cli runs a script; redis-benchmark runs
without an error reply. Everything started here is killed on exit, also
on failure.

usage: test_proxy.py BUILD_DIR [unittest args]
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

try:
    import redis
except ImportError:
    print("skip: python3-redis is not installed (scripts/setup.sh)")
    sys.exit(77)

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
PREFIX = os.environ.get("SKL_TEST_PREFIX", "skl-test-")
NODE_BIN = os.path.join(BUILD, "nodes", "skewless-node")
PROXY_BIN = os.path.join(BUILD, "proxy", "skewless-proxy")
MAX_VALUE = 262144


def free_port(kind):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Nodes and a proxy in a run folder; stop() kills them all."""

    def __init__(self, nnodes=3):
        self.dir = tempfile.mkdtemp(prefix=PREFIX + "proxy-")
        self.procs = {}
        self.node_ports = [free_port(socket.SOCK_DGRAM) for _ in range(nnodes)]
        cfg = {
            "service": {"vip": "127.0.0.1", "port": free_port(socket.SOCK_DGRAM)},
            "switches": [{"id": 1, "name": "s1", "role": "one-arm",
                          "ports": [{"name": "p", "vdev": "net_tap0,iface=t0"}]}],
            "nodes": [{"id": i + 1, "name": "n%d" % (i + 1), "ip": "127.0.0.1", "port": p,
                       "data_dir": os.path.join(self.dir, "n%d" % (i + 1))}
                      for i, p in enumerate(self.node_ports)],
            "node": {"durability": "async", "queue_depth": 16384},
            "agent": {"mode": "direct", "timeout_ms": 1000},
        }
        self.config = os.path.join(self.dir, "cluster.json")
        with open(self.config, "w") as f:
            json.dump(cfg, f)
        os.makedirs(os.path.join(self.dir, "pids"))

    def spawn(self, name, argv):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=subprocess.PIPE if name == "proxy" else log,
                             stderr=log, text=True)
        self.procs[name] = p
        with open(os.path.join(self.dir, "pids", name + ".pid"), "w") as f:
            f.write(str(p.pid))
        return p

    def start_node(self, i):
        self.spawn("n%d" % i, [NODE_BIN, "--config", self.config, "--node", str(i),
                               "--log-level", "warn"])

    def stop_node(self, i):
        p = self.procs.pop("n%d" % i)
        p.kill()
        p.wait()

    def start(self, threads=2):
        for i in range(1, len(self.node_ports) + 1):
            self.start_node(i)
        p = self.spawn("proxy", [PROXY_BIN, "--config", self.config, "--listen", "127.0.0.1:0",
                                 "--threads", str(threads), "--metrics", "127.0.0.1:0",
                                 "--log-level", "warn"])
        line = p.stdout.readline()
        m = re.search(r"listening on [0-9.]+:(\d+), \d+ worker\(s\), /metrics on port (\d+)", line)
        if not m:
            raise RuntimeError("skewless-proxy did not start: %r" % line)
        self.port, self.metrics_port = int(m.group(1)), int(m.group(2))
        self.wait_ready()

    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10, **kw)

    def wait_ready(self):
        """Until writes to keys spread over every node succeed, on every worker."""
        clients = [self.client() for _ in range(8)]
        deadline = time.time() + 30
        while True:
            try:
                for r in clients:
                    for k in range(30):
                        r.set("ready:%d" % k, "1")
                return
            except redis.ResponseError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self):
        """Stop everything; the proxy by SIGTERM, which it must survive cleanly.
        Returns what went wrong: its exit code, sanitizer reports in the logs."""
        problems = []
        proxy = self.procs.pop("proxy", None)
        if proxy:
            proxy.send_signal(signal.SIGTERM)
            try:
                rc = proxy.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proxy.kill()
                rc = proxy.wait()
            if rc != 0:
                problems.append("skewless-proxy exited %s after SIGTERM" % rc)
        for p in self.procs.values():
            p.kill()
            p.wait()
        self.procs.clear()
        for name in os.listdir(self.dir):
            if name.endswith(".log"):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    text = f.read()
                if "Sanitizer" in text or "runtime error:" in text:
                    problems.append("%s:\n%s" % (name, text[-4000:]))
        shutil.rmtree(self.dir, ignore_errors=True)
        return problems


cluster = None


def setUpModule():
    global cluster
    cluster = Cluster()
    try:
        cluster.start()
    except Exception:
        cluster.stop()
        raise


def tearDownModule():
    problems = cluster.stop()
    if problems:
        raise RuntimeError("\n".join(problems))


def raw(cmds, proto_lines=None):
    """Send raw bytes, return what came back within a short wait."""
    with socket.create_connection(("127.0.0.1", cluster.port), timeout=5) as s:
        s.sendall(cmds)
        time.sleep(0.3)
        s.settimeout(0.5)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
        return out


class Strings(unittest.TestCase):
    def setUp(self):
        self.r = cluster.client()

    def test_get_set(self):
        r = self.r
        self.assertTrue(r.set("s:a", "1"))
        self.assertEqual(r.get("s:a"), b"1")
        self.assertIsNone(r.get("s:missing"))

    def test_binary_safe(self):
        key, val = b"bin:\x00\r\n\xff", bytes(range(256)) * 10
        self.assertTrue(self.r.set(key, val))
        self.assertEqual(self.r.get(key), val)
        self.assertEqual(self.r.exists(key), 1)

    def test_set_options(self):
        r = self.r
        r.delete("o:k")
        self.assertTrue(r.set("o:k", "v", nx=True))
        self.assertIsNone(r.set("o:k", "w", nx=True))
        self.assertEqual(r.get("o:k"), b"v")
        self.assertTrue(r.set("o:k", "w", xx=True))
        self.assertIsNone(r.set("o:none", "w", xx=True))
        self.assertIsNone(r.get("o:none"))
        self.assertTrue(r.set("o:k", "x", ex=100))
        self.assertTrue(95 <= r.ttl("o:k") <= 100)
        self.assertTrue(r.set("o:k", "y", keepttl=True))
        self.assertTrue(95 <= r.ttl("o:k") <= 100)
        self.assertTrue(r.set("o:k", "z"))
        self.assertEqual(r.ttl("o:k"), -1)
        self.assertTrue(r.set("o:k", "p", px=50000))
        self.assertTrue(49000 <= r.pttl("o:k") <= 50000)
        self.assertTrue(r.set("o:k", "q", exat=int(time.time()) + 200))
        self.assertTrue(195 <= r.ttl("o:k") <= 200)
        self.assertTrue(r.set("o:k", "q", pxat=int(time.time() * 1000) + 300000))
        self.assertTrue(295 <= r.ttl("o:k") <= 300)
        self.assertEqual(r.set("o:k", "new", get=True), b"q")
        self.assertEqual(r.get("o:k"), b"new")
        self.assertIsNone(r.set("o:g", "first", get=True))
        self.assertEqual(r.get("o:g"), b"first")
        # NX with GET: the old value, nothing written.
        self.assertEqual(raw(b"SET o:g second NX GET\r\n"), b"$5\r\nfirst\r\n")
        self.assertEqual(r.get("o:g"), b"first")
        # A ttl longer than 49 days (past the PUT's 32-bit field).
        self.assertTrue(r.set("o:long", "v", ex=60 * 86400))
        self.assertTrue(60 * 86400 - 5 <= r.ttl("o:long") <= 60 * 86400)

    def test_set_errors(self):
        r = self.r
        for args, msg in [
            (("SET", "e:k", "v", "NX", "XX"), "syntax error"),
            (("SET", "e:k", "v", "EX"), "syntax error"),
            (("SET", "e:k", "v", "EX", "10", "PX", "5"), "syntax error"),
            (("SET", "e:k", "v", "EX", "10", "KEEPTTL"), "syntax error"),
            (("SET", "e:k", "v", "BOGUS"), "syntax error"),
            (("SET", "e:k", "v", "EX", "abc"), "value is not an integer or out of range"),
            (("SET", "e:k", "v", "EX", "0"), "invalid expire time in 'set' command"),
            (("SET", "e:k", "v", "PX", "-5"), "invalid expire time in 'set' command"),
            (("SETEX", "e:k", "0", "v"), "invalid expire time in 'setex' command"),
            (("SET", "e:k"), "wrong number of arguments for 'set' command"),
        ]:
            with self.assertRaises(redis.ResponseError) as cm:
                r.execute_command(*args)
            self.assertEqual(str(cm.exception), msg, args)
        self.assertIsNone(r.get("e:k"))

    def test_setnx_setex_psetex(self):
        r = self.r
        r.delete("x:nx")
        self.assertTrue(r.setnx("x:nx", "1"))
        self.assertFalse(r.setnx("x:nx", "2"))
        self.assertEqual(r.get("x:nx"), b"1")
        self.assertTrue(r.setex("x:ex", 100, "v"))
        self.assertTrue(95 <= r.ttl("x:ex") <= 100)
        self.assertTrue(r.psetex("x:px", 100000, "v"))
        self.assertTrue(95000 <= r.pttl("x:px") <= 100000)
        self.assertEqual(r.get("x:px"), b"v")

    def test_expiry_takes_effect(self):
        r = self.r
        r.set("x:short", "v", px=200)
        self.assertEqual(r.get("x:short"), b"v")
        time.sleep(0.4)
        self.assertIsNone(r.get("x:short"))
        self.assertEqual(r.ttl("x:short"), -2)

    def test_getdel_getex(self):
        r = self.r
        r.set("g:k", "v")
        self.assertEqual(r.getdel("g:k"), b"v")
        self.assertIsNone(r.getdel("g:k"))
        self.assertIsNone(r.get("g:k"))
        r.set("g:e", "v")
        self.assertEqual(r.getex("g:e"), b"v")
        self.assertEqual(r.ttl("g:e"), -1)
        self.assertEqual(r.getex("g:e", ex=100), b"v")
        self.assertTrue(95 <= r.ttl("g:e") <= 100)
        self.assertEqual(r.getex("g:e", px=200000), b"v")
        self.assertTrue(195 <= r.ttl("g:e") <= 200)
        self.assertEqual(r.getex("g:e", exat=int(time.time()) + 50), b"v")
        self.assertTrue(45 <= r.ttl("g:e") <= 50)
        self.assertEqual(r.getex("g:e", persist=True), b"v")
        self.assertEqual(r.ttl("g:e"), -1)
        self.assertIsNone(r.getex("g:none", ex=10))
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("GETEX", "g:e", "EX", "10", "PERSIST")
        self.assertEqual(str(cm.exception), "syntax error")

    def test_mget_mset(self):
        r = self.r
        self.assertTrue(r.mset({"m:a": "1", "m:b": "2", "m:c": "3"}))
        self.assertEqual(r.mget("m:a", "m:none", "m:c", "m:b"), [b"1", None, b"3", b"2"])
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("MSET", "m:a", "1", "m:b")
        self.assertEqual(str(cm.exception), "wrong number of arguments for 'mset' command")

    def test_counters(self):
        r = self.r
        r.delete("c:n")
        self.assertEqual(r.incr("c:n"), 1)
        self.assertEqual(r.incrby("c:n", 10), 11)
        self.assertEqual(r.decr("c:n"), 10)
        self.assertEqual(r.decrby("c:n", 15), -5)
        self.assertEqual(r.get("c:n"), b"-5")
        r.set("c:t", "5", ex=100)
        self.assertEqual(r.incr("c:t"), 6)
        self.assertTrue(95 <= r.ttl("c:t") <= 100)  # INCR keeps the ttl
        r.set("c:s", "abc")
        for cmd in (("INCR", "c:s"), ("INCRBY", "c:n", "x"), ("INCRBY", "c:n", "1.5")):
            with self.assertRaises(redis.ResponseError) as cm:
                r.execute_command(*cmd)
            self.assertEqual(str(cm.exception), "value is not an integer or out of range")
        r.set("c:max", str(2**63 - 1))
        with self.assertRaises(redis.ResponseError) as cm:
            r.incr("c:max")
        self.assertEqual(str(cm.exception), "increment or decrement would overflow")
        self.assertEqual(r.get("c:max"), str(2**63 - 1).encode())

    def test_incr_is_atomic(self):
        """Concurrent INCRs from many connections lose no increment."""
        self.r.delete("c:race")
        nthreads, each = 8, 50
        errors = []

        def worker():
            c = cluster.client()
            try:
                for _ in range(each):
                    c.incr("c:race")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        ts = [threading.Thread(target=worker) for _ in range(nthreads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(int(self.r.get("c:race")), nthreads * each)

    def test_append(self):
        r = self.r
        r.delete("a:k")
        self.assertEqual(r.append("a:k", "ab"), 2)
        self.assertEqual(r.append("a:k", b"\x00cd"), 5)
        self.assertEqual(r.get("a:k"), b"ab\x00cd")

    def test_value_limit(self):
        r = self.r
        r.set("big:k", "small")
        msg = ("string exceeds maximum allowed size (%d bytes, service.max_value): "
               "nothing stored" % MAX_VALUE)
        for call in (lambda: r.set("big:k", b"x" * (MAX_VALUE + 1)),
                     lambda: r.mset({"big:k": b"x" * (MAX_VALUE + 1)}),
                     lambda: r.setnx("big:k", b"x" * (MAX_VALUE + 1))):
            with self.assertRaises(redis.ResponseError) as cm:
                call()
            self.assertEqual(str(cm.exception), msg)
        self.assertEqual(r.get("big:k"), b"small")
        r.set("big:a", b"y" * (MAX_VALUE - 2))
        with self.assertRaises(redis.ResponseError):
            r.append("big:a", "xyz")
        self.assertEqual(len(r.get("big:a")), MAX_VALUE - 2)
        # The largest value travels in chunks, both ways.
        v = os.urandom(MAX_VALUE)
        self.assertTrue(r.set("big:max", v))
        self.assertEqual(r.get("big:max"), v)


class Keys(unittest.TestCase):
    def setUp(self):
        self.r = cluster.client()

    def test_del_unlink_exists_touch(self):
        r = self.r
        r.mset({"k:1": "a", "k:2": "b", "k:3": "c"})
        self.assertEqual(r.exists("k:1", "k:2", "k:none", "k:1"), 3)
        self.assertEqual(r.touch("k:1", "k:none"), 1)
        self.assertEqual(r.delete("k:1", "k:none"), 1)
        self.assertEqual(r.unlink("k:2", "k:3"), 2)
        self.assertEqual(r.exists("k:1", "k:2", "k:3"), 0)

    def test_expire_family(self):
        r = self.r
        r.set("e:k", "v")
        self.assertEqual(r.ttl("e:k"), -1)
        self.assertEqual(r.ttl("e:none"), -2)
        self.assertEqual(r.pttl("e:none"), -2)
        self.assertTrue(r.expire("e:k", 100))
        self.assertTrue(95 <= r.ttl("e:k") <= 100)
        self.assertTrue(r.pexpire("e:k", 200000))
        self.assertTrue(195 <= r.ttl("e:k") <= 200)
        self.assertTrue(r.expireat("e:k", int(time.time()) + 300))
        self.assertTrue(295 <= r.ttl("e:k") <= 300)
        self.assertTrue(r.pexpireat("e:k", int(time.time() * 1000) + 400000))
        self.assertTrue(395 <= r.ttl("e:k") <= 400)
        self.assertEqual(r.get("e:k"), b"v")
        self.assertFalse(r.expire("e:none", 10))
        self.assertTrue(r.persist("e:k"))
        self.assertFalse(r.persist("e:k"))
        self.assertEqual(r.ttl("e:k"), -1)
        # NX XX GT LT.
        self.assertFalse(r.execute_command("EXPIRE", "e:k", "100", "XX"))
        self.assertTrue(r.execute_command("EXPIRE", "e:k", "100", "NX"))
        self.assertFalse(r.execute_command("EXPIRE", "e:k", "200", "NX"))
        self.assertFalse(r.execute_command("EXPIRE", "e:k", "50", "GT"))
        self.assertTrue(r.execute_command("EXPIRE", "e:k", "500", "GT"))
        self.assertTrue(r.execute_command("EXPIRE", "e:k", "50", "LT"))
        self.assertTrue(45 <= r.ttl("e:k") <= 50)
        self.assertTrue(r.execute_command("EXPIRE", "e:k", "60", "XX"))
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("EXPIRE", "e:k", "10", "NX", "XX")
        self.assertEqual(str(cm.exception),
                         "NX and XX, GT or LT options at the same time are not compatible")
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("EXPIRE", "e:k", "10", "GT", "LT")
        self.assertEqual(str(cm.exception), "GT and LT options at the same time are not compatible")
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("EXPIRE", "e:k", "10", "FOO")
        self.assertEqual(str(cm.exception), "Unsupported option FOO")
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("EXPIRE", "e:k", "ten")
        self.assertEqual(str(cm.exception), "value is not an integer or out of range")
        # A time in the past deletes the key.
        self.assertTrue(r.expire("e:k", -1))
        self.assertIsNone(r.get("e:k"))
        r.set("e:p", "v")
        self.assertTrue(r.expireat("e:p", 1000))
        self.assertEqual(r.exists("e:p"), 0)

    def test_key_length(self):
        with self.assertRaises(redis.ResponseError) as cm:
            self.r.get("")
        self.assertEqual(str(cm.exception), "skewless: a key is 1..1024 bytes, got 0")
        with self.assertRaises(redis.ResponseError):
            self.r.set("k" * 1025, "v")
        self.assertTrue(self.r.set("k" * 1024, "v"))


class Connection(unittest.TestCase):
    def setUp(self):
        self.r = cluster.client()

    def test_ping_echo_select(self):
        r = self.r
        self.assertTrue(r.ping())
        self.assertEqual(raw(b"PING hi\r\n"), b"$2\r\nhi\r\n")
        self.assertEqual(r.echo("hello"), b"hello")
        self.assertTrue(r.execute_command("SELECT", "0"))
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("SELECT", "1")
        self.assertEqual(str(cm.exception), "DB index is out of range")
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("PING", "a", "b")
        self.assertEqual(str(cm.exception), "wrong number of arguments for 'ping' command")

    def test_client_names(self):
        r = self.r
        self.assertIsNone(r.client_getname())
        self.assertTrue(r.client_setname("app-1"))
        self.assertEqual(r.client_getname(), "app-1")
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("CLIENT", "SETNAME", "a b")
        self.assertEqual(str(cm.exception),
                         "Client names cannot contain spaces, newlines or special characters.")
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("CLIENT", "NOPE")
        self.assertEqual(str(cm.exception), "unknown subcommand 'NOPE'. Try CLIENT HELP.")
        self.assertIsInstance(r.client_id(), int)

    def test_unknown_and_arity(self):
        with self.assertRaises(redis.ResponseError) as cm:
            self.r.execute_command("FOOBAR", "a", "b")
        self.assertEqual(str(cm.exception),
                         "unknown command 'FOOBAR', with args beginning with: 'a' 'b' ")
        with self.assertRaises(redis.ResponseError) as cm:
            self.r.execute_command("FOOBAR")
        self.assertEqual(str(cm.exception), "unknown command 'FOOBAR', with args beginning with: ")
        with self.assertRaises(redis.ResponseError) as cm:
            self.r.execute_command("GET", "a", "b")
        self.assertEqual(str(cm.exception), "wrong number of arguments for 'get' command")
        # WRONGTYPE never arises: every value is a string.
        with self.assertRaises(redis.ResponseError) as cm:
            self.r.execute_command("LPUSH", "l", "x")
        self.assertTrue(str(cm.exception).startswith("unknown command 'LPUSH'"))

    def test_hello_resp3(self):
        out = raw(b"HELLO 3\r\nGET resp3:none\r\nSET resp3:k v\r\nCLIENT GETNAME\r\n")
        self.assertTrue(out.startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"), out)
        self.assertIn(b"$5\r\nproto\r\n:3\r\n", out)
        self.assertTrue(out.endswith(b"_\r\n+OK\r\n_\r\n"), out)
        out = raw(b"HELLO 2\r\nGET resp3:none\r\n")
        self.assertTrue(out.startswith(b"*14\r\n") and out.endswith(b"$-1\r\n"), out)
        self.assertEqual(raw(b"HELLO 4\r\n"), b"-NOPROTO unsupported protocol version\r\n")
        self.assertEqual(raw(b"HELLO x\r\n"),
                         b"-ERR Protocol version is not an integer or out of range\r\n")

    def test_quit_closes(self):
        self.assertEqual(raw(b"PING\r\nQUIT\r\nPING\r\n"), b"+PONG\r\n+OK\r\n")

    def test_protocol_error_closes(self):
        self.assertEqual(raw(b"*1\r\n$x\r\n"), b"-ERR Protocol error: invalid bulk length\r\n")
        self.assertEqual(raw(b"*1\r\n:5\r\n"),
                         b"-ERR Protocol error: expected '$', got ':'\r\n")

    def test_command(self):
        r = self.r
        r.set_response_callback("COMMAND", lambda resp, **kw: resp)
        n = r.command_count()
        self.assertGreaterEqual(n, 34)
        cmds = r.execute_command("COMMAND")
        self.assertEqual(len(cmds), n)
        get = [c for c in cmds if c[0] == b"get"][0]
        self.assertEqual(get[1], 2)
        self.assertIn(b"readonly", get[2])
        self.assertEqual(get[3:6], [1, 1, 1])
        docs = r.execute_command("COMMAND", "DOCS", "get", "nope", "mset")
        self.assertEqual(len(docs), 4)  # two commands, as name, doc pairs
        self.assertIn(b"not atomically", docs[3][1])
        with self.assertRaises(redis.ResponseError):
            r.execute_command("COMMAND", "NOPE")

    def test_info(self):
        info = self.r.info()
        self.assertEqual(info["redis_mode"], "standalone")
        self.assertGreaterEqual(info["connected_clients"], 1)
        self.assertGreater(info["total_commands_processed"], 0)
        self.assertIn("skewless_agent_submitted", info)
        self.assertIn("keyspace_hits", self.r.info("stats"))
        self.assertNotIn("redis_version", self.r.info("stats"))
        self.r.get("info:k")
        self.assertGreater(self.r.info("commandstats")["cmdstat_get"]["calls"], 0)

    def test_pipeline(self):
        p = self.r.pipeline(transaction=False)
        for i in range(500):
            p.set("p:%d" % i, i)
        for i in range(500):
            p.get("p:%d" % i)
        p.incr("p:0")
        p.execute_command("NOPE")
        p.get("p:1")
        res = p.execute(raise_on_error=False)
        self.assertEqual(res[:500], [True] * 500)
        self.assertEqual(res[500:1000], [str(i).encode() for i in range(500)])
        self.assertEqual(res[1000], 1)
        self.assertIsInstance(res[1001], redis.ResponseError)
        self.assertEqual(res[1002], b"1")

    def test_pipeline_same_key_in_order(self):
        """Commands on one key in one pipeline take effect in order, as in Redis."""
        p = self.r.pipeline(transaction=False)
        for i in range(50):
            p.set("po:k", i)
            p.incr("po:k")
            p.get("po:k")
            p.mset({"po:k": "x", "po:other": i})
            p.append("po:k", "y")
            p.mget("po:k", "po:other")
            p.delete("po:k")
            p.exists("po:k")
        res = p.execute()
        for i in range(50):
            self.assertEqual(res[8 * i:8 * i + 8],
                             [True, i + 1, str(i + 1).encode(), True, 2,
                              [b"xy", str(i).encode()], 1, 0])

    def test_raw_pipeline_in_pieces(self):
        """A pipeline split at every byte boundary is answered in order."""
        req = b"".join(b"*3\r\n$3\r\nSET\r\n$4\r\nrp:%d\r\n$1\r\n%d\r\n" % (i, i) for i in range(5))
        req += b"*2\r\n$3\r\nGET\r\n$4\r\nrp:3\r\nPING\r\n"
        with socket.create_connection(("127.0.0.1", cluster.port), timeout=5) as s:
            for b in req:
                s.sendall(bytes([b]))
            want = b"+OK\r\n" * 5 + b"$1\r\n3\r\n+PONG\r\n"
            got = b""
            while len(got) < len(want):
                got += s.recv(4096)
            self.assertEqual(got, want)

    def test_metrics(self):
        self.r.get("metrics:k")
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % cluster.metrics_port) as f:
            text = f.read().decode()
        self.assertRegex(text, r'skewless_proxy_commands_total\{command="get"\} [1-9]')
        self.assertIn("skewless_agent_redirects_fallback_total", text)
        self.assertIn('skewless_proxy_failures_total{status="TIMEOUT"}', text)


@unittest.skipUnless(shutil.which("redis-cli") and shutil.which("redis-benchmark"),
                     "redis-tools is not installed (scripts/setup.sh)")
class Tools(unittest.TestCase):
    def test_redis_cli_script(self):
        script = ("SET cli:k hello\nGET cli:k\nAPPEND cli:k !\nINCR cli:n\nEXPIRE cli:k 100\n"
                  "TTL cli:k\nMGET cli:k cli:none\nDEL cli:k cli:n\nEXISTS cli:k\nNOPE x\n")
        out = subprocess.run(["redis-cli", "-p", str(cluster.port)], input=script, text=True,
                             capture_output=True, timeout=30, check=True).stdout
        self.assertEqual(out.rstrip("\n").split("\n"), [
            "OK", "hello", "6", "1", "1", "100", "hello!", "", "2", "0",
            "ERR unknown command 'NOPE', with args beginning with: 'x' "])
        # RESP3: redis-cli says HELLO 3 first.
        for cmd, want in ((["SET", "cli:3", "three"], "OK\n"), (["GET", "cli:3"], "three\n"),
                          (["GET", "cli:none"], "\n")):
            out = subprocess.run(["redis-cli", "-3", "-p", str(cluster.port)] + cmd, text=True,
                                 capture_output=True, timeout=30, check=True).stdout
            self.assertEqual(out, want)

    def test_redis_benchmark(self):
        before = cluster.client().info("stats")["total_error_replies"]
        out = subprocess.run(["redis-benchmark", "-p", str(cluster.port), "-n", "3000",
                              "-c", "20", "-P", "16", "-t", "ping,set,get,incr,mset", "-q"],
                             text=True, capture_output=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertNotIn("ERR", out.stdout + out.stderr)
        self.assertNotIn("WARNING", out.stdout + out.stderr)
        self.assertEqual(cluster.client().info("stats")["total_error_replies"], before)


class Faults(unittest.TestCase):
    """A node stops; the cluster is whole again before the next test."""

    def test_node_down_is_an_error_not_a_hang(self):
        r = cluster.client()
        # A key homed at node 3: its home stops, the agent cannot hide it.
        key = None
        for i in range(1000):
            k = "fault:%d" % i
            r.set(k, "v")
            key = k
        cluster.stop_node(3)
        try:
            t0 = time.time()
            failed = 0
            for i in range(1000):
                try:
                    r.get("fault:%d" % i)
                except redis.ResponseError as e:
                    self.assertRegex(str(e), r"^skewless (TIMEOUT|UNAVAILABLE): ")
                    failed += 1
            self.assertGreater(failed, 0)
            self.assertLess(time.time() - t0, 60)
            self.assertIsNotNone(key)
            text = urllib.request.urlopen(
                "http://127.0.0.1:%d/metrics" % cluster.metrics_port).read().decode()
            self.assertRegex(
                text, r'skewless_proxy_failures_total\{status="(TIMEOUT|UNAVAILABLE)"\} [1-9]')
        finally:
            cluster.start_node(3)
            cluster.wait_ready()


if __name__ == "__main__":
    unittest.main(verbosity=2)
