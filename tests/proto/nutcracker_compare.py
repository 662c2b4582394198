#!/usr/bin/env python3
"""Compare our ketama ring with the real twemproxy (nutcracker).

Starts memcached instances and nutcracker (distribution: ketama, hash:
fnv1a_32) on 127.0.0.1, stores keys through nutcracker, and finds which
memcached holds each key. Writes vectors "v <fnv1a32 hex> <server name>" per
pool to the output file, which the ring unit test replays against our ring:
for the same server names, weights and 32-bit hash, the same server.

usage: nutcracker_compare.py OUTPUT [--keys N]
Exits 77 (skipped) when nutcracker or memcached is not installed.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

POOLS = {
    "eq8": [(f"n{i}", 1) for i in range(1, 9)],
    "weighted": [("alpha", 1), ("beta", 2), ("gamma", 3), ("delta", 1), ("kv-05", 4)],
}
BASE_PORT = 31211
PROXY_PORT = 32121


def fnv1a_32(data: bytes) -> int:
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def wait_port(port, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), 5)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def cmd(self, data: bytes):
        self.sock.sendall(data)


def run_pool(name, servers, nkeys, out, tmp):
    conf = os.path.join(tmp, f"{name}.yml")
    with open(conf, "w") as f:
        f.write(f"{name}:\n  listen: 127.0.0.1:{PROXY_PORT}\n  hash: fnv1a_32\n"
                "  distribution: ketama\n  auto_eject_hosts: false\n  servers:\n")
        for i, (sname, weight) in enumerate(servers):
            f.write(f"   - 127.0.0.1:{BASE_PORT + i}:{weight} {sname}\n")
    mcs = [subprocess.Popen(["memcached", "-U", "0", "-l", "127.0.0.1", "-p",
                             str(BASE_PORT + i), "-m", "64", "-u", "root"])
           for i in range(len(servers))]
    proxy = None
    try:
        for i in range(len(servers)):
            wait_port(BASE_PORT + i)
        proxy = subprocess.Popen(["nutcracker", "-c", conf, "-o", os.path.join(tmp, "nc.log"),
                                  "-s", "32222"])
        wait_port(PROXY_PORT)
        c = Conn(PROXY_PORT)
        keys = [f"k{i}:{i * 2654435761 % 1000003}" for i in range(nkeys)]
        for k in keys:
            c.cmd(f"set {k} 0 0 1\r\nx\r\n".encode())
        for _ in keys:
            if c.line() != b"STORED":
                raise RuntimeError("nutcracker did not store a key")
        holder = {}
        for i, (sname, _) in enumerate(servers):
            m = Conn(BASE_PORT + i)
            for k in keys:
                m.cmd(f"get {k}\r\n".encode())
                line = m.line()
                if line.startswith(b"VALUE"):
                    m.line()
                    m.line()
                    if k in holder:
                        raise RuntimeError(f"{k} on two servers")
                    holder[k] = sname
        out.write(f"pool {name} " + ",".join(f"{s}:{w}" for s, w in servers) + "\n")
        for k in keys:
            out.write(f"v {fnv1a_32(k.encode()):08x} {holder[k]}\n")
        return len(keys)
    finally:
        for p in mcs + ([proxy] if proxy else []):
            p.terminate()
            p.wait()


def main():
    if not shutil.which("nutcracker") or not shutil.which("memcached"):
        print("nutcracker_compare: SKIP: nutcracker or memcached not installed")
        return 77
    nkeys = int(sys.argv[sys.argv.index("--keys") + 1]) if "--keys" in sys.argv else 2000
    total = 0
    with tempfile.TemporaryDirectory() as tmp, open(sys.argv[1], "w") as out:
        out.write("# Recorded from nutcracker (ketama, fnv1a_32) by "
                  "tests/proto/nutcracker_compare.py\n")
        for name, servers in POOLS.items():
            total += run_pool(name, servers, nkeys, out, tmp)
    print(f"nutcracker_compare: recorded {total} placements to {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
