#!/usr/bin/env python3
"""Linearizability checker for versioned single-key registers.

Reads the history that `skewless bench --history FILE` writes: one JSON object
per operation,
  {"client":N,"op":"get|put|del","key":"...","value":"...","version":N,
   "status":"OK|NOT_FOUND|...","invoke_ns":N,"complete_ns":N,"node":"n3"}

Every key's home node assigns versions in the order it applies writes, so the
version order is the linearization order of the writes, and a read is
explained by the version it returned. The history is linearizable per key iff:

 1. every read returns the value of the write with that version (a read of a
    version no write produced, or with another value, is a fabricated read);
 2. no read returns a version whose write began after the read completed;
 3. no read is stale: no write with a higher version completed before the
    read began;
 4. real-time order holds between operations: if A completed before B began,
    B's version is >= A's (reads and writes; a write's version is > any
    version observed before it began).

Writes that failed or timed out may or may not have taken effect: a read may
return them (checked against 1 and 2), but they constrain nothing else.
NOT_FOUND reads carry version 0 (never written) or a tombstone's version.

A history without versions (a RESP client's: `skewless bench --resp`) is
checked with --values instead, by the values alone: every write's value is
unique, so each read names the write it saw, and the history is
linearizable per key iff each write and the reads of it can be ordered as
blocks (Gibbons and Korach, "Testing shared memories", 1997): no read
returns a write that began after the read ended, no two forward zones
overlap, and no backward zone lies inside a forward zone. A write's cluster
is the write and its reads; its zone runs between the earliest completion
and the latest invocation among them, forward when the earliest completion
comes first. A NOT_FOUND read belongs to the key's initial state (no
write, before every write); a failed write that some read saw took effect
at some point after its invocation.

usage: lincheck.py [--values] HISTORY [HISTORY...]   exit 0 if linearizable, 1 if not.
"""
import bisect
import json
import sys
from collections import defaultdict

OK_STATUSES = {"OK", "NOT_FOUND"}


def load(paths):
    ops = []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    op = json.loads(line)
                    for field in ("op", "key", "status", "invoke_ns", "complete_ns"):
                        if field not in op:
                            raise ValueError(f"missing {field}")
                except ValueError as e:
                    raise SystemExit(f"{path}:{n}: bad history line: {e}")
                ops.append(op)
    return ops


def served_by(op):
    """ at NODE, when the history names the node that answered."""
    return f" at {op['node']}" if op.get("node") else ""


def check_key(key, ops):
    """Returns a list of violation strings for one key's operations."""
    errors = []
    writes = {}  # version -> write op (acknowledged or not)
    for op in ops:
        if op["op"] in ("put", "del") and op.get("version"):
            v = op["version"]
            if v in writes and writes[v] is not op:
                errors.append(f"{key}: two writes were given version {v}")
            writes[v] = op
    unknown = [op for op in ops if op["op"] in ("put", "del") and op["status"] not in OK_STATUSES]

    def write_value(w):
        return None if w["op"] == "del" else w.get("value")

    for r in ops:
        if r["op"] != "get" or r["status"] not in OK_STATUSES:
            continue
        v = r.get("version", 0) or 0
        got = r.get("value") if r["status"] == "OK" else None
        if v == 0:
            if r["status"] == "OK":
                errors.append(f"{key}: read at {r['invoke_ns']} returned a value with version 0")
            continue
        w = writes.get(v)
        if w is None:
            # A write that timed out has no version in the history: match by value.
            cands = [u for u in unknown if write_value(u) == got and u["invoke_ns"] <= r["complete_ns"]]
            if not cands:
                errors.append(f"{key}: read at {r['invoke_ns']} returned version {v}, "
                              f"which no write produced")
            continue
        if write_value(w) != got:
            errors.append(f"{key}: read at {r['invoke_ns']} returned {got!r} for version {v}, "
                          f"but that write wrote {write_value(w)!r}")
        if w["invoke_ns"] > r["complete_ns"]:
            errors.append(f"{key}: read at {r['invoke_ns']} returned version {v} "
                          f"from a write that began later ({w['invoke_ns']})")

    # Real-time order: an operation that began after another completed must see
    # at least that version. Sort completed ops by completion time; sweep by
    # invocation time, tracking the highest version completed so far.
    done = [op for op in ops if op["status"] in OK_STATUSES]
    by_complete = sorted(done, key=lambda o: o["complete_ns"])
    by_invoke = sorted(done, key=lambda o: o["invoke_ns"])
    best = 0
    best_op = None
    i = 0
    for op in by_invoke:
        while i < len(by_complete) and by_complete[i]["complete_ns"] < op["invoke_ns"]:
            c = by_complete[i]
            if (c.get("version") or 0) > best:
                best = c["version"] or 0
                best_op = c
            i += 1
        v = op.get("version") or 0
        is_write = op["op"] in ("put", "del")
        if (is_write and v <= best) or (not is_write and v < best):
            errors.append(f"{key}: {op['op']} at {op['invoke_ns']} saw version {v}"
                          f"{served_by(op)}, but version {best} ({best_op['op']}"
                          f"{served_by(best_op)}) had completed at {best_op['complete_ns']}"
                          " (stale)")
    return errors


INF = float("inf")


def check_key_values(key, ops):
    """Violations for one key's operations, by values alone (--values)."""
    errors = []
    writes = {}  # value -> write op
    for op in ops:
        if op["op"] == "del":
            errors.append(f"{key}: --values checks GET and PUT histories only")
            return errors
        if op["op"] == "put":
            if op.get("value") in writes:
                errors.append(f"{key}: two writes wrote {op.get('value')!r}")
            writes[op.get("value")] = op
    # cluster: the write's value (None: the initial state) -> [first completion, last invocation]
    clusters = {None: [-INF, -INF]}
    for w in writes.values():
        if w["status"] in OK_STATUSES:
            clusters[w.get("value")] = [w["complete_ns"], w["invoke_ns"]]
    for r in ops:
        if r["op"] != "get" or r["status"] not in OK_STATUSES:
            continue
        got = r.get("value") if r["status"] == "OK" else None
        if got is not None:
            w = writes.get(got)
            if w is None:
                errors.append(f"{key}: read at {r['invoke_ns']} returned {got!r}, which no"
                              " write wrote")
                continue
            if w["invoke_ns"] > r["complete_ns"]:
                errors.append(f"{key}: read at {r['invoke_ns']} returned a write that began"
                              f" later, at {w['invoke_ns']}")
                continue
            # A failed write that was read: in effect from some point after its invocation.
            clusters.setdefault(got, [INF, w["invoke_ns"]])
        z = clusters[got]
        z[0] = min(z[0], r["complete_ns"])
        z[1] = max(z[1], r["invoke_ns"])
    forward = sorted((lo, hi, v) for v, (lo, hi) in clusters.items() if lo < hi)
    backward = [(hi, lo, v) for v, (lo, hi) in clusters.items() if lo >= hi]
    for (a0, a1, av), (b0, b1, bv) in zip(forward, forward[1:]):
        if b0 < a1:
            errors.append(f"{key}: the writes of {av!r} and {bv!r} and their reads overlap"
                          " in both orders (stale)")
    # Forward zones that do not overlap end in the order they start: only the
    # last one to start before a backward zone can hold it.
    starts = [f[0] for f in forward]
    for s0, s1, v in backward:
        i = bisect.bisect_left(starts, s0) - 1
        if i >= 0 and s1 < forward[i][1]:
            errors.append(f"{key}: {v!r} was written and read while {forward[i][2]!r} had to"
                          " be the value throughout (stale)")
    return errors


def check(ops, by_values=False):
    per_key = defaultdict(list)
    for op in ops:
        per_key[op["key"]].append(op)
    errors = []
    for key, kops in per_key.items():
        errors.extend(check_key_values(key, kops) if by_values else check_key(key, kops))
    return errors


def main(argv):
    by_values = len(argv) > 1 and argv[1] == "--values"
    paths = argv[2:] if by_values else argv[1:]
    if not paths:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    ops = load(paths)
    errors = check(ops, by_values)
    reads = sum(1 for o in ops if o["op"] == "get")
    for e in errors[:20]:
        print("VIOLATION:", e)
    print(f"lincheck: {len(ops)} operations ({reads} reads) on "
          f"{len({o['key'] for o in ops})} keys: "
          f"{'linearizable' if not errors else f'{len(errors)} violations'}")
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
