#!/usr/bin/env python3
"""A real Prometheus scraping the testbed (conf/prometheus, docs/operations.md "Metrics").

usage: prometheus.py BUILD_DIR

Brings up a private copy of conf/testbed-onearm.json (namespaces from
SKL_TEST_PREFIX, default skl-test-) with its management network, starts the
`prometheus` server in the root namespace on 127.0.0.1 (a private config: the
testbed's targets, 1 s scrapes, conf/prometheus/alerts.yml), runs a skewed
bench from agent a1 with --metrics (and --preload: every hot key has a value
to copy), pauses the switch once for 0.5 s so that
agents reroute around it, lets Prometheus scrape for 10 s, and asks its HTTP
API for: `up` of every target, the rate of a counter, the three operating
metrics (CDT update delay histogram, digest loss rate per node, redirect
attempts and successes) and the alert rules' health. Everything is torn down
on every exit path; the whole run takes some 20 s (bounded: 90 s).

Exit 0 pass, 1 fail, 77 skipped (not root, no namespaces, TAP devices or prometheus).
"""
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import (NSP, SKIP, SRC, Fail, Testbed, check, log,  # noqa: E402
                 skip_unless_possible, sweep)

SCRAPE_S = 10     # what the test lets Prometheus scrape before asking
BENCH_S = 16      # the load outlasts the scrape window and the queries
PAUSE_AT_S = 3.0  # the switch is stopped then, for PAUSE_S
PAUSE_S = 0.5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    """In the child: SIGKILL when the driver dies, even by SIGKILL."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def write_config(tb, path):
    """The repo's scrape config with this testbed's targets and 1 s scrapes."""
    targets = os.path.join(tb.run_dir, "prometheus")
    alerts = os.path.join(SRC, "conf", "prometheus", "alerts.yml")
    jobs = [("skewless-switch", "targets-switches.json"), ("skewless-node", "targets-nodes.json"),
            ("skewless-agent", "targets-agents.json")]
    with open(path, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                f"rule_files:\n  - {json.dumps(alerts)}\nscrape_configs:\n")
        for job, file in jobs:
            f.write(f"  - job_name: {job}\n    file_sd_configs:\n"
                    f"      - files: [{json.dumps(os.path.join(targets, file))}]\n"
                    "        refresh_interval: 1s\n")
    expected = {}
    for job, file in jobs:
        with open(os.path.join(targets, file)) as f:
            for group in json.load(f):
                for t in group["targets"]:
                    expected[(job, t)] = group["labels"]
    return expected


class Prometheus:
    def __init__(self, tb):
        self.dir = os.path.join(tb.dir, "prometheus")
        os.makedirs(self.dir)
        self.config = os.path.join(self.dir, "prometheus.yml")
        self.expected = write_config(tb, self.config)
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={self.config}",
             f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
             f"--web.listen-address={self.url[len('http://'):]}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)

    def get(self, path, timeout=5):
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return json.load(r) if path.startswith("/api") else r.read()

    def wait_ready(self, secs=20):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Fail(f"prometheus exited ({self.proc.returncode}); log: {self.tail()}")
            try:
                self.get("/-/ready", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise Fail(f"prometheus not ready after {secs} s; log: {self.tail()}")

    def query(self, expr):
        r = self.get("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        if r["status"] != "success":
            raise Fail(f"query {expr}: {r}")
        return [(s["metric"], float(s["value"][1])) for s in r["data"]["result"]]

    def tail(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-2000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def scenario(tb, prom_box):
    tb.up()
    prom = prom_box.append(Prometheus(tb)) or prom_box[0]
    prom.wait_ready()
    check(len(prom.expected) >= 3, f"{len(prom.expected)} targets from the testbed's management"
          " network: " + ", ".join(sorted(t for _, t in prom.expected)))
    out = open(os.path.join(tb.dir, "bench.out"), "w")
    bench = subprocess.Popen(tb.agent_cmd(
        "bench", "--keys", "2000", "--dist", "zipf:1.2", "--read-ratio", "0.95",
        "--concurrency", "16", "--duration", str(BENCH_S), "--seed", "19", "--preload",
        "--metrics", "0.0.0.0:9449", "--json", os.path.join(tb.dir, "bench.json")),
        stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    try:
        t0 = time.monotonic()
        # Agents reroute around a stopped switch (direct to the nodes, one-arm).
        time.sleep(PAUSE_AT_S)
        pid = tb.pid(tb.switch)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(PAUSE_S)
        os.kill(pid, signal.SIGCONT)
        time.sleep(max(0, t0 + SCRAPE_S - time.monotonic()))
        log(f"prometheus scraped for {time.monotonic() - t0:.1f} s")
        check_up(prom)
        check_metrics(prom)
    finally:
        if bench.poll() is None:
            bench.kill()
        bench.wait()
        out.close()


def check_up(prom):
    up = {(m["job"], m["instance"]): v for m, v in prom.query("up")}
    missing = [t for t in prom.expected if t not in up]
    down = [t for t, v in up.items() if v != 1]
    check(not missing and not down and len(up) == len(prom.expected),
          f"up == 1 for every one of the {len(prom.expected)} targets (switch, nodes, agent)"
          f" (missing {missing}, down {down})")


def one(prom, expr):
    r = prom.query(expr)
    if len(r) != 1:
        raise Fail(f"{expr}: expected one series, got {r}")
    return r[0][1]


def check_metrics(prom):
    rate = one(prom, "sum(rate(skewless_switch_requests_total[5s]))")
    check(rate > 100, f"rate(skewless_switch_requests_total[5s]) = {rate:.0f}/s")
    node_rate = prom.query("rate(skewless_node_get_total[5s])")
    check(len(node_rate) == sum(1 for j, _ in prom.expected if j == "skewless-node")
          and sum(v for _, v in node_rate) > 100,
          f"rate(skewless_node_get_total[5s]) from every node: {sum(v for _, v in node_rate):.0f}/s")
    # CDT update delay: hot keys were installed and their replicas served.
    n = one(prom, "sum(skewless_switch_directory_update_delay_seconds_count)")
    p99 = one(prom, "histogram_quantile(0.99, sum by (le)"
                    " (skewless_switch_directory_update_delay_seconds_bucket))")
    # Every key has a value (--preload): the delay is REPLICATE, RC_REQ and
    # RC_ACK plus a control round, tens of ms; 1 s is SkewlessDirectoryLag's line.
    check(n >= 1 and 0 < p99 < 1,
          f"CDT update delay: {n:.0f} keys measured, p99 {p99 * 1000:.1f} ms (under 1 s)")
    # Digest loss rate per node, a gauge in [0, 1].
    loss = prom.query("skewless_switch_node_digest_loss_rate")
    nodes = sorted(m["node"] for m, _ in loss)
    check(len(loss) == sum(1 for j, _ in prom.expected if j == "skewless-node")
          and all(0 <= v <= 1 for _, v in loss),
          f"digest loss rate per node: " + ", ".join(f"{m['node']} {v:.3f}" for m, v in
                                                      sorted(loss, key=lambda x: x[0]['node'])))
    check(nodes == sorted(set(nodes)), "one loss rate per node")
    # Redirect success: the pause made agents reroute, and the reroutes succeeded.
    fb = one(prom, "sum(skewless_agent_redirects_fallback_total)")
    fb_ok = one(prom, "sum(skewless_agent_redirects_fallback_ok_total)")
    moved = one(prom, "sum(skewless_agent_redirects_moved_total)")
    moved_ok = one(prom, "sum(skewless_agent_redirects_moved_ok_total)")
    check(fb >= 1 and 1 <= fb_ok <= fb and 0 <= moved_ok <= moved,
          f"redirects: fallback {fb_ok:.0f}/{fb:.0f} succeeded, MOVED {moved_ok:.0f}/{moved:.0f}")
    # The alert rules loaded and evaluate without errors.
    groups = prom.get("/api/v1/rules")["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    check(len(rules) == 5 and all(r["health"] == "ok" for r in rules),
          "the 5 alert rules of conf/prometheus/alerts.yml evaluate: "
          + ", ".join(f"{r['name']} {r['state']}" for r in rules))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    skip_unless_possible()
    if not shutil.which("prometheus"):
        print("e2e: skipped: no prometheus (apt-get install prometheus; scripts/setup.sh)")
        sys.exit(SKIP)

    def on_signal(signum, _frame):
        raise SystemExit(f"e2e prometheus: signal {signum}: tearing down")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sweep()
    tb = Testbed(build, "testbed-onearm.json", "prometheus")
    prom = []
    failed = True
    t0 = time.monotonic()
    try:
        scenario(tb, prom)
        failed = False
    except Fail as e:
        log(f"FAIL: {e}")
    except (subprocess.TimeoutExpired, OSError) as e:
        log(f"FAIL: {e}")
    finally:
        if prom:
            if failed:
                print(prom[0].tail())
            prom[0].stop()
        tb.down(failed)
    log(f"e2e prometheus: {'FAILED' if failed else 'passed'} in {time.monotonic() - t0:.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
