#!/usr/bin/env python3
"""switchd's control plane against the order docs/design.md gives it.

Reads the table "The control plane's files from the bottom up" in design.md's
Layers section (order, files) and checks every `#include "x.h"` of those
files: a file may include the header of a file listed at a lower order (and
its own), never one at its order or above, so the control round stays a
one-way pipeline (intake -> decide -> reconcile -> egress) with nothing
calling back up. Prints each violation; exits 1 when there is one.
"""
import os
import re
import sys

ROOT = os.environ.get("SKL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")


def order_table(design):
    """({name: order}, {names of .c files}) from the table `| order | files | uses |`."""
    table = re.search(r"^\| order \| files \| uses \|\n\|[-|]+\|\n((?:\|.*\|\n)+)", design, re.M)
    if not table:
        sys.exit("test_control_order: docs/design.md has no control-plane order table")
    order, sources = {}, set()
    for row in table.group(1).splitlines():
        cells = [c.strip() for c in row.strip("|").split("|")]
        for name, ext in re.findall(r"`(\w+)\.([ch])`", cells[1]):
            order[name] = int(cells[0])
            if ext == "c":
                sources.add(name)
    return order, sources


def main():
    with open(os.path.join(ROOT, "docs", "design.md")) as f:
        order, sources = order_table(f.read())
    bad = []
    for module in sorted(sources):
        level = order[module]
        path = os.path.join(ROOT, "switchd", module + ".c")
        if not os.path.exists(path):
            bad.append(f"switchd/{module}.c: in the table, not in the tree")
            continue
        with open(path) as f:
            for header in re.findall(r'^#include "(\w+)\.h"', f.read(), re.M):
                if header != module and header in order and order[header] >= level:
                    bad.append(f"switchd/{module}.c: includes {header}.h "
                               f"(order {order[header]}, not below {level})")
    for line in bad:
        print(line)
    print(f"test_control_order: {len(sources)} control-plane files checked, {len(bad)} reach up")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
