#!/usr/bin/env python3
"""sim_report.py RUN_DIR NODES... - bench/sim.sh's table, picture and last line.

Reads the skewless-sim JSON files bench/sim.sh wrote (nN-uniform, nN-ring-S,
nN-dir-S, nN-hotin, n1024-mostly, n1024-mostly-hotin, n1024-readonly-16),
prints the scaling table, the reaction to hot-in changes, the largest cluster
read-mostly, and what max/mean <= 1.10 there takes, draws RUN_DIR/sim.png
(throughput against nodes, gnuplot), and prints the last line (95% reads):
  nodes=N ring_maxmean=A dir_maxmean=B dir_vs_ring=C dir_vs_uniform=D rebalance_ms=E
"""
import json
import math
import os
import subprocess
import sys

# What one directory entry costs the switch (switchd/cdt.h, x86-64): the entry
# (48 B), its state (a 56 B object of the small pool, 192 B with the mempool's
# header and trailer), the key bytes the control thread keeps (WIRE_MAX_KEY
# 1024 + 2), two rte_hash slots (about 64 B), 40 B of counters per worker, and
# reconcile.c's side tables (32 B of copy marks, 8 B of share).
ENTRY_BYTES = 48 + 192 + 1026 + 64 + 32 + 8
COUNTER_BYTES_PER_WORKER = 40
# Sets past 16 (directory.max_replicas > 16): a second pool of states with
# room for max_replicas, max_keys + 512 per worker + 1024 of them, each
# CDT_STATE_SIZE(max) plus the mempool's 64 B header and trailer (448 B at
# 128, rte_mempool_calc_obj_size()).
LARGE_STATE_BYTES = {128: 448, 64: 320}


def load(run, label):
    path = os.path.join(run, label + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def ratio(a, b):
    return a / b if b else float("nan")


def err_rate(run):
    """OVERLOADED answers (a node's queue full) as a share of attempts."""
    total = run["ops"] + run["errors"]
    return run["errors"] / total if total else 0.0


def zipf_pmf(n, s):
    weights = [k ** -s for k in range(1, n + 1)]
    total = sum(weights)
    return [w / total for w in weights]


def what_it_takes(nodes, keys, s, top_k, target=1.10, factor=2.0):
    """Replicas for max/mean <= target at `nodes`, from the zipf pmf.

    Necessary: a key with share p carries p*n average nodes' worth, so it
    needs at least ceil(p n / target) replicas even if they served nothing
    else. The switch's rule asks 1 + ceil(f p n) (capped by n) for each of its
    top K keys."""
    pmf = zipf_pmf(keys, s)
    need = [math.ceil(p * nodes / target) for p in pmf if p * nodes > target]
    policy = [min(1 + math.ceil(factor * p * nodes), nodes) for p in pmf[:top_k]]
    return {
        "keys_min": len(need),
        "top_share": pmf[0],
        "top_replicas_min": need[0] if need else 1,
        "replicas_min": sum(need),
        "top_replicas_policy": policy[0],
        "replicas_policy": sum(policy),
        "policy_keys": len(policy),
        "policy_share": sum(pmf[:top_k]),
        "policy_max": max(policy),
    }


def plot(rows, png, mostly=None):
    data = "\n".join(" ".join(str(v) for v in row) for row in rows)
    extra = ""
    if mostly:
        n, ops, ratio_ = mostly
        extra = (f", \\\n     '-' using 1:2 with points pt 7 ps 1.5 lc rgb 'black' "
                 f"title 'directory, zipf 0.99, {100 * ratio_:g}% reads'\n{n} {ops}\ne")
    script = f"""
set terminal pngcairo size 1000,600 font ',10'
set output '{png}'
set title 'skewless-sim: throughput against nodes (closed loop, 6 in flight per node, 95% reads, 1M keys)'
set xlabel 'storage nodes'
set ylabel 'successful ops/s (simulated)'
set logscale x 2
set logscale y 10
set format y '%.0s%c'
set key left top
set grid
$d << EOD
{data}
EOD
plot $d using 1:2 with linespoints lw 2 title 'uniform keys', \\
     $d using 1:3 with linespoints lw 2 title 'ring, zipf 0.99', \\
     $d using 1:4 with linespoints lw 2 title 'directory, zipf 0.99', \\
     $d using 1:5 with linespoints lw 2 dt 2 title 'ring, zipf 1.2', \\
     $d using 1:6 with linespoints lw 2 dt 2 title 'directory, zipf 1.2'""" + extra + "\n"
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"sim_report: no picture ({e})", file=sys.stderr)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    run, nodes_list = sys.argv[1], [int(n) for n in sys.argv[2:]]
    print()
    print("| nodes | uniform ops/s | ring 0.99 | dir 0.99 | dir/ring | dir/uniform "
          "| max/mean uniform / ring / dir | ring 1.2 | dir 1.2 | dir/ring | max/mean ring / dir "
          "| entries | replicas (mean/max) | home alone | errors ring / dir |")
    print("|" + "---|" * 15)
    rows, last = [], None
    for n in nodes_list:
        u = load(run, f"n{n}-uniform")
        r99, d99 = load(run, f"n{n}-ring-0.99"), load(run, f"n{n}-dir-0.99")
        r12, d12 = load(run, f"n{n}-ring-1.2"), load(run, f"n{n}-dir-1.2")
        if not all((u, r99, d99, r12, d12)):
            print(f"| {n} | (missing runs) |")
            continue
        ds = d99["directory_state"]
        print(f"| {n} | {u['throughput_ops']:,.0f} | {r99['throughput_ops']:,.0f} "
              f"| {d99['throughput_ops']:,.0f} "
              f"| {ratio(d99['throughput_ops'], r99['throughput_ops']):.2f} "
              f"| {ratio(d99['throughput_ops'], u['throughput_ops']):.2f} "
              f"| {u['max_over_mean']:.2f} / {r99['max_over_mean']:.2f} / {d99['max_over_mean']:.2f} "
              f"| {r12['throughput_ops']:,.0f} | {d12['throughput_ops']:,.0f} "
              f"| {ratio(d12['throughput_ops'], r12['throughput_ops']):.2f} "
              f"| {r12['max_over_mean']:.2f} / {d12['max_over_mean']:.2f} "
              f"| {ds['entries']} | {ds['replicas_mean']:.1f} / {ds['replicas_max']} "
              f"| {100 * ds['home_only_share']:.0f}% "
              f"| {100 * err_rate(r99):.1f}% / {100 * err_rate(d99):.1f}% |")
        rows.append((n, u["throughput_ops"], r99["throughput_ops"], d99["throughput_ops"],
                     r12["throughput_ops"], d12["throughput_ops"]))
        last = (n, u, r99, d99)
    if rows:
        m = load(run, f"n{rows[-1][0]}-mostly")
        plot(rows, os.path.join(run, "sim.png"),
             (rows[-1][0], m["throughput_ops"], m["read_ratio"]) if m else None)

    print()
    rebalance = {}
    for n in nodes_list:
        h = load(run, f"n{n}-hotin")
        if not h or h.get("rebalance_ms") is None:
            continue
        rebalance[n] = h["rebalance_ms"]
        print(f"hot-in every 2 s at {n} nodes (zipf 0.99, directory on): back within 1.2 x the "
              f"settled max/mean ({h['settled_maxmean']:.2f}, 50 ms windows) in "
              f"{h['rebalance_ms']:.0f} ms on average, {h['rebalance_max_ms']:.0f} ms at worst, "
              f"over {h['changes']} changes; throughput {h['throughput_ops']:,.0f} ops/s, "
              f"max/mean over the run {h['max_over_mean']:.2f}")

    if last:
        n, u, r99, d99 = last
        ro = load(run, f"n{n}-readonly-16")
        if ro:
            print(f"read-only at {n} nodes, up to 16 replicas per key: max/mean "
                  f"{ro['max_over_mean']:.2f}, {ro['throughput_ops']:,.0f} ops/s "
                  f"({ratio(ro['throughput_ops'], u['throughput_ops']):.2f} x uniform)")
        keys = d99["keys"]
        top_k = d99["directory_state"]["top_k"]
        max_rep = d99["directory_state"]["max_replicas"]
        w = what_it_takes(n, keys, 0.99, top_k)
        workers = 2
        max_keys = 1024
        large = 0
        if max_rep > 16:
            per = LARGE_STATE_BYTES.get(max_rep, 64 + ((22 + 2 * max_rep + 63) // 64) * 64 + 104)
            large = (max_keys + 512 * workers + 1024) * per
        mem = max_keys * (ENTRY_BYTES + COUNTER_BYTES_PER_WORKER * workers) + large
        print(f"what max/mean <= 1.10 takes at {n} nodes, zipf 0.99 over {keys:,} keys: the "
              f"hottest key carries {100 * w['top_share']:.1f}% of the load, "
              f"{w['top_share'] * n:.1f} nodes' worth, so it needs at least "
              f"{w['top_replicas_min']} replicas even if they served nothing else; "
              f"{w['keys_min']} keys carry more than 1.1 nodes' worth "
              f"({w['replicas_min']} replicas in all at that bound). The switch's rule "
              f"(1 + ceil(2 s n)) for its top {w['policy_keys']} keys "
              f"({100 * w['policy_share']:.0f}% of the load) asks {w['top_replicas_policy']} "
              f"for the hottest and {w['replicas_policy']:,} in all; these runs allow "
              f"{max_rep} per key (directory.max_replicas). Switch memory for a directory of "
              f"{max_keys} entries with {workers} workers: about {mem / 1024:.0f} KiB, of which "
              f"{large / 1024:.0f} KiB is the pool of sets past 16.")
        for label, what in ((f"n{n}-mostly", "read-mostly"), (f"n{n}-mostly-hotin", "read-mostly hot-in")):
            m = load(run, label)
            if not m:
                continue
            if label.endswith("hotin"):
                print(f"{what} ({100 * m['read_ratio']:g}% reads) at {n} nodes: back within 1.2 x "
                      f"the settled max/mean ({m['settled_maxmean']:.2f}) in "
                      f"{m['rebalance_ms']:.0f} ms on average, {m['rebalance_max_ms']:.0f} ms at "
                      f"worst, over {m['changes']} changes")
            else:
                ms = m["directory_state"]
                print(f"{what} ({100 * m['read_ratio']:g}% reads) at {n} nodes: "
                      f"{m['throughput_ops']:,.0f} ops/s, "
                      f"{ratio(m['throughput_ops'], u['throughput_ops']):.2f} x uniform, max/mean "
                      f"{m['max_over_mean']:.3f}, {ms['entries']} entries, replicas mean "
                      f"{ms['replicas_mean']:.1f} max {ms['replicas_max']}")
        mostly, mostly_h = load(run, f"n{n}-mostly"), load(run, f"n{n}-mostly-hotin")
        if mostly and mostly_h:
            print(f"read-mostly: nodes={n} read_ratio={mostly['read_ratio']:g} "
                  f"dir_maxmean={mostly['max_over_mean']:.3f} "
                  f"dir_vs_uniform={ratio(mostly['throughput_ops'], u['throughput_ops']):.2f} "
                  f"rebalance_ms={mostly_h['rebalance_ms']:.0f}")
        speed = load(run, "speed")
        if speed:
            print(f"speed: {speed['seconds']:.0f} s simulated at 1M ops/s, {speed['nodes']} nodes, "
                  f"{speed['keys']:,} keys: {speed['events']:,} events in {speed['wall_s']:.1f} s "
                  f"of wall time, {speed.get('cpu_s', float('nan')):.1f} s of CPU")
        reb = rebalance.get(n)
        reb_s = f"{reb:.0f}" if reb is not None else "none"
        print(f"nodes={n} ring_maxmean={r99['max_over_mean']:.3f} "
              f"dir_maxmean={d99['max_over_mean']:.3f} "
              f"dir_vs_ring={ratio(d99['throughput_ops'], r99['throughput_ops']):.2f} "
              f"dir_vs_uniform={ratio(d99['throughput_ops'], u['throughput_ops']):.2f} "
              f"rebalance_ms={reb_s}")


if __name__ == "__main__":
    main()
