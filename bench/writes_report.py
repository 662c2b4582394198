#!/usr/bin/env python3
"""writes_report.py [--png FILE] RESULTS_DIR WRITES ZIPFS

The table, picture and last line of bench/writes.sh from the runs
scripts/demo.sh left in RESULTS_DIR (LABEL.json, `skewless bench --json`):
uniform, ring-Z and dir-Z at each write ratio, labelled LABEL@wNN except at
5% writes (the demo's own labels). WRITES and ZIPFS are space-separated
lists. Exits 3 when a run's errors are above 0.1% of its attempts.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

MAX_ERROR_RATE = 0.001


def label(name, w):
    return name if w == 5 else f"{name}@w{w}"


def main():
    args = sys.argv[1:]
    png = None
    if args[:1] == ["--png"]:
        png, args = args[1], args[2:]
    if len(args) != 3:
        sys.exit(__doc__)
    results, writes, zipfs = args[0], [int(w) for w in args[1].split()], args[2].split()

    def run(name, w):
        path = os.path.join(results, label(name, w) + ".json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    def ops(name, w):
        r = run(name, w)
        return r["throughput_ops"] if r else math.nan

    over = []
    for w in writes:
        for name in ["uniform"] + [f"{m}-{z}" for z in zipfs for m in ("ring", "dir")]:
            r = run(name, w)
            if r is None:
                continue
            attempts = r["ops"] + r["errors"]
            if attempts and r["errors"] / attempts > MAX_ERROR_RATE:
                over.append(f"{label(name, w)}: {r['errors']} errors of {attempts}")

    gain = {(z, w): ops(f"dir-{z}", w) / ops(f"ring-{z}", w) for z in zipfs for w in writes}
    vs_uniform = {(z, w): ops(f"dir-{z}", w) / ops("uniform", w) for z in zipfs for w in writes}

    print("directory over ring (same zipf and write ratio); in brackets, directory over uniform")
    print("zipf   " + "".join(f"{str(w) + '% writes':>18}" for w in writes))
    for z in zipfs:
        print(f"{z:<7}" + "".join(f"{gain[z, w]:>9.2f} ({vs_uniform[z, w]:>5.2f})" for w in writes))
    print("uniform" + "".join(f"{ops('uniform', w):>14.0f} ops/s" for w in writes))
    for o in over:
        print(f"over 0.1% errors: {o}")

    if png:
        with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as f:
            for w in writes:
                f.write(f"{w} " + " ".join(f"{gain[z, w]:.4f}" for z in zipfs) + "\n")
            data = f.name
        lines = ", ".join(f"'{data}' using 1:{i + 2} with linespoints title 'zipf {z}'"
                          for i, z in enumerate(zipfs))
        script = (f"set terminal png size 800,500\nset output '{png}'\n"
                  "set xlabel 'writes (%)'\nset ylabel 'directory throughput / ring'\n"
                  "set grid\nset key top right\n"
                  f"plot {lines}, 1 with lines dashtype 2 title 'ring'\n")
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        os.unlink(data)

    fields = " ".join(f"w{w}={gain['0.99', w]:.2f}" for w in writes if "0.99" in zipfs)
    finite = [g for g in gain.values() if not math.isnan(g)]
    vs5 = [vs_uniform[z, 5] for z in zipfs if 5 in writes and not math.isnan(vs_uniform[z, 5])]
    print(f"{fields} min_gain={min(finite, default=math.nan):.2f} "
          f"min_vs_uniform_5={min(vs5, default=math.nan):.2f}")
    return 3 if over else 0


if __name__ == "__main__":
    sys.exit(main())
