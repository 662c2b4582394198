#!/usr/bin/env python3
"""demo_report.py [--png FILE] [--capacity OPS] LABEL=BENCH_JSON...

Side-by-side summary of labelled `skewless bench --json` runs (scripts/demo.sh,
bench/skew.sh): throughput (successes only), error rate, the gain of each
directory run over the ring run of the same skew (labels dir-X and ring-X),
latency percentiles, per-node load (max/mean and the count per node), printed
as a table; with --png, a gnuplot picture of per-node load (bars, one colour
per run) and the throughput timeline (one line per run); --capacity draws one
node's capacity (ops/s) on the bars and the nodes' aggregate capacity on the
timeline.

A run whose error rate is above 0.1% of its attempts is flagged in the table
("<- over 0.1%"), and the exit code is then 3 (after the table and picture).
"""
import json
import os
import subprocess
import sys
import tempfile


def load(args):
    runs = []
    for a in args:
        label, sep, path = a.partition("=")
        if not sep or not label or not path:
            sys.exit(f"demo_report: expected LABEL=FILE, got {a!r}")
        with open(path) as f:
            runs.append((label, json.load(f)))
    return runs


MAX_ERROR_RATE = 0.001


def gain(label, runs):
    """Throughput of dir-X over ring-X (X: the skew), or None."""
    if not label.startswith("dir-"):
        return None
    by_label = dict(runs)
    ring = by_label.get("ring-" + label[len("dir-"):])
    if not ring or not ring["throughput_ops"]:
        return None
    return by_label[label]["throughput_ops"] / ring["throughput_ops"]


def table(runs):
    nodes = sorted({n for _, r in runs for n in r["per_node"]}, key=lambda n: (len(n), n))
    w = max(15, *(len(l) + 3 for l, _ in runs))
    rows = [("", [l for l, _ in runs])]

    def row(name, fn):
        rows.append((name, [fn(r) for _, r in runs]))

    row("throughput", lambda r: f"{r['throughput_ops']:,.0f} ops/s")
    rows.append(("gain over ring", [f"{g:.2f}x" if (g := gain(l, runs)) else "" for l, _ in runs]))
    row("ops ok", lambda r: f"{r['ops']:,}")
    row("errors", lambda r: f"{r['errors']:,}")
    row("error rate", lambda r: f"{100 * r['error_rate']:.3f}%"
        + (" <- over 0.1%" if r["error_rate"] > MAX_ERROR_RATE else ""))
    row("p50", lambda r: f"{r['latency_us']['p50'] / 1000:.2f} ms")
    row("p99", lambda r: f"{r['latency_us']['p99'] / 1000:.2f} ms")
    row("load max/mean", lambda r: f"{r['load']['max_over_mean']:.2f}")
    row("node ops max", lambda r: f"{r['load']['max']:,.0f}")
    row("node ops mean", lambda r: f"{r['load']['mean']:,.0f}")
    rows.append(("ops served by", ["" for _ in runs]))
    for n in nodes:
        row("  " + n, lambda r, n=n: f"{r['per_node'].get(n, 0):,}")
    out = []
    for name, cells in rows:
        out.append(f"{name:<16}" + "".join(f"{c:>{w}}" for c in cells))
    return "\n".join(out), nodes


def plot(runs, nodes, png, capacity):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "nodes.dat"), "w") as f:
            for n in nodes:
                f.write(n + " " + " ".join(str(r["per_node"].get(n, 0) / r["duration_s"])
                                           for _, r in runs) + "\n")
        with open(os.path.join(d, "timeline.dat"), "w") as f:
            for i, (label, r) in enumerate(runs):
                f.write(f"# {label}\n")
                for t in r["timeline"]:
                    if t["t"] + 1 > r["duration_s"] + 0.05:  # the last, partial second
                        continue
                    f.write(f"{t['t']} {t['ops']} {t['load_max_over_mean']}\n")
                f.write("\n\n")
        def title(label, r):
            g = gain(label, runs)
            return (f"{label}: {r['throughput_ops']:,.0f} ops/s, max/mean "
                    f"{r['load']['max_over_mean']:.2f}" + (f", gain {g:.2f}x" if g else ""))
        bars = ", ".join(
            f"'{d}/nodes.dat' using {i + 2}:xtic(1) title '{title(label, r)}'"
            for i, (label, r) in enumerate(runs))
        if capacity:
            bars += ", NaN with lines dashtype 2 lc 'black' title 'node capacity'"
        lines = ", ".join(
            f"'{d}/timeline.dat' index {i} using 1:2 with linespoints title '{label}'"
            for i, (label, _) in enumerate(runs))
        if capacity:
            lines += ", NaN with lines dashtype 2 lc 'black' title 'sum of node capacities'"
        arrow = ("set arrow 1 from graph 0, first {0} to graph 1, first {0} nohead dashtype 2\n"
                 "set yrange [0:{1}]")
        node_cap = arrow.format(capacity, capacity * 1.15) if capacity else "set yrange [0:*]"
        all_cap = (arrow.format(capacity * len(nodes), capacity * len(nodes) * 1.15)
                   if capacity else "set yrange [0:*]")
        r0 = runs[0][1]
        heading = "%s, %d keys, %d in flight" % (
            r0.get("workload", "?"), r0.get("keys", 0), r0.get("concurrency", 0))
        script = f"""
set terminal pngcairo size 1600,650 font ',10'
set output '{png}'
set multiplot layout 1,2 title '{heading}'
set title 'per-node load (ops/s served)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
{node_cap}
set grid ytics
set key below
plot {bars}
unset arrow 1
set style data linespoints
set title 'throughput (ops/s per second of the run)'
set xlabel 'second'
set key inside bottom right
{all_cap}
plot {lines}
unset multiplot
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    args = sys.argv[1:]
    png, capacity = None, 0
    while len(args) >= 2 and args[0] in ("--png", "--capacity"):
        if args[0] == "--png":
            png = args[1]
        else:
            capacity = float(args[1])
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    runs = load(args)
    text, nodes = table(runs)
    print(text)
    if png:
        plot(runs, nodes, png, capacity)
        print(f"picture: {png}")
    over = [label for label, r in runs if r["error_rate"] > MAX_ERROR_RATE]
    if over:
        print(f"demo_report: error rate over {100 * MAX_ERROR_RATE:.1f}% in: {', '.join(over)}")
        sys.exit(3)


if __name__ == "__main__":
    main()
