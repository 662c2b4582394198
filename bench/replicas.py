#!/usr/bin/env python3
"""bench/replicas.py BUILD - the driver of bench/replicas.sh (see there).

Each run brings up its own copy of conf/testbed.json (namespaces
SKL_TEST_PREFIX) through tests/e2e/e2e.py's Testbed, with the nodes' emulated
service time the demo's sizing gives, and tears it down after.
"""
import json
import math
import os
import signal
import subprocess
import sys
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("SKL_TEST_PREFIX", "skl-bench-")
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))
import e2e  # noqa: E402  (the testbed driver the e2e scenarios use)

KEYS = int(os.environ.get("SKL_REPLICAS_KEYS", "10000"))
CONC = int(os.environ.get("SKL_REPLICAS_CONCURRENCY", "192"))
DURATION = float(os.environ.get("DURATION", "15"))
WARMUP = 3
WORKERS = 4
SHARE = 0.4  # the cluster's emulated capacity: this share of the testbed's own ceiling
REPAIR_MS = 2000  # the kill run's service.repair_after_ms: its repair runs in the window


def testbed(build, tag, replicas, service_us, repair_ms=None):
    tb = e2e.Testbed(build, "testbed.json", tag)
    with open(tb.config) as f:
        cfg = json.load(f)
    cfg["service"]["replicas"] = replicas
    if repair_ms is not None:
        cfg["service"]["repair_after_ms"] = repair_ms
    agent = cfg.setdefault("agent", {})
    # A ring-only run queues up to tens of ms at its hottest node: queueing is not loss.
    queue_ms = CONC / WORKERS * service_us / 1000
    agent["timeout_ms"] = max(agent.get("timeout_ms", 50), 500, math.ceil(2 * queue_ms))
    agent["deadline_ms"] = 4 * agent["timeout_ms"]
    cfg.setdefault("node", {})["workers"] = WORKERS
    with open(tb.config, "w") as f:
        json.dump(cfg, f, indent=1)
    tb.cfg = cfg
    tb.env["SKL_SERVICE_TIME_US"] = str(service_us)
    return tb


def up(tb):
    tb.up()
    if tb.cfg["service"]["replicas"] > 1:
        for n in tb.cfg["nodes"]:
            if e2e.wait_view(tb, n["name"], "up", 30) is None:
                raise e2e.Fail(f"{n['name']} not marked up")


def bench(tb, name, args, during=None):
    return e2e.run_bench(tb, name, ["--keys", str(KEYS), "--concurrency", str(CONC),
                                    "--seed", "7", *args], during)


def preload(tb):
    subprocess.run(tb.agent_cmd("bench", "--keys", str(KEYS), "--preload", "--duration", "0.1",
                                "--read-ratio", "1"), check=True, capture_output=True,
                   timeout=300)


def run(build, tag, replicas, service_us, fn, repair_ms=None):
    tb = testbed(build, tag, replicas, service_us, repair_ms)
    failed = True
    try:
        up(tb)
        preload(tb)
        out = fn(tb)
        failed = False
        return out
    finally:
        tb.down(failed)


def sizing(build):
    """The testbed's own ceiling (no service time, R = 1) and the service time
    that makes the cluster's capacity SHARE of it."""
    def ceiling(tb):
        s, _ = bench(tb, "ceiling", ["--dist", "zipf:0.99", "--read-ratio", "0.95",
                                     "--warmup", "1", "--duration", "5"])
        return s["throughput_ops"]
    c = run(build, "repceil", 1, 0, ceiling)
    n = 8
    return c, math.ceil(n * WORKERS * 1e6 / (SHARE * c))


def steady(tb):
    s, _ = bench(tb, "steady", ["--dist", "zipf:0.99", "--read-ratio", "0.95",
                                "--warmup", str(WARMUP), "--duration", str(DURATION)])
    return s


def kill_run(tb):
    """n3 killed -9 a third into the window, not restarted, and repaired
    REPAIR_MS later: left out of the groups, whose next nodes join them;
    then every key read back."""
    victim = "n3"
    marks = {}

    def kill(t0):
        time.sleep(max(0, t0 + WARMUP + DURATION / 3 - time.monotonic()))
        os.kill(tb.pid(victim), signal.SIGKILL)
        marks["kill"] = time.monotonic()
        if e2e.wait_view(tb, victim, "out", REPAIR_MS / 1000 + 5) is None:
            return
        marks["out"] = time.monotonic()
        while time.monotonic() - marks["out"] < 60:
            if "joining" not in e2e.view_states(tb).values():
                marks["repaired"] = time.monotonic()
                return
            time.sleep(0.05)

    s, history = bench(tb, "kill", ["--dist", "zipf:0.99", "--read-ratio", "0.95",
                                    "--warmup", str(WARMUP), "--duration", str(DURATION)], kill)
    done = e2e.completions(history)
    t_kill = marks["kill"]
    start = t_kill - DURATION / 3 + 0.5
    before = e2e.rate_between(done, start, t_kill)
    # From a second after the kill (the view's change) to the end of the window.
    end = t_kill + 2 * DURATION / 3 - 0.5
    after = e2e.rate_between(done, t_kill + 1, end)
    f, final = bench(tb, "kill-final", ["--dist", "uniform", "--read-ratio", "1",
                                         "--duration", "5"])
    lost, _ = e2e.lost_acked([(history, False), (final, True)])
    records = sum(n.get("catchup_records", 0) for n in tb.cdtctl("nodes")["nodes"])
    if "repaired" in marks:
        print(f"replicas: repair: {victim} left out {marks['out'] - t_kill:.1f} s after the kill,"
              f" its groups' next nodes joined {marks['repaired'] - marks['out']:.1f} s later"
              f" ({records} records taken); the window ends"
              f" {t_kill + 2 * DURATION / 3 - marks['repaired']:.1f} s after", flush=True)
    else:
        print(f"replicas: repair: not done within the window ({marks})", flush=True)
    return s, before, after, len(lost), f, "repaired" in marks


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    e2e.sweep()
    service_us = os.environ.get("SKL_SERVICE_TIME_US")
    if service_us:
        service_us = int(service_us)
        print(f"replicas: service time {service_us} us per request (SKL_SERVICE_TIME_US)")
    else:
        ceiling, service_us = sizing(build)
        print(f"replicas: ceiling {ceiling:.0f} ops/s; 8 nodes x {WORKERS} workers at"
              f" {service_us} us per request = {8 * WORKERS * 1e6 / service_us:.0f} ops/s,"
              f" {round(100 * SHARE)}% of it")
    ops = {}
    for r in (1, 2, 3):
        s = run(build, f"rep{r}", r, service_us, steady)
        ops[r] = s["throughput_ops"]
        print(f"replicas: R={r}: {ops[r]:.0f} ops/s, errors {s['errors']}"
              f" ({s['status']}), max/mean {s['load']['max_over_mean']:.2f}", flush=True)
    s, before, after, lost, f, repaired = run(build, "repkill", 2, service_us, kill_run,
                                              REPAIR_MS)
    dip = after / before if before else 0.0
    print(f"replicas: R=2, n3 killed: {before:.0f} ops/s before, {after:.0f} after"
          f" ({dip:.2f}; 7/8 - 5% = {7 / 8 - 0.05:.2f}), errors {s['errors']} ({s['status']}),"
          f" final read pass {f['status']}")
    print(f"r1_ops={ops[1]:.0f} r2_ops={ops[2]:.0f} r3_ops={ops[3]:.0f}"
          f" r2_vs_r1={ops[2] / ops[1]:.2f} kill_errors={s['errors']} kill_dip={dip:.2f}"
          f" lost_acked={lost}")
    bad = s["errors"] > s["ops"] // 1000 or lost or not repaired
    sys.exit(3 if bad else 0)


if __name__ == "__main__":
    main()
