#!/usr/bin/env python3
"""switchd's control plane against the order docs/design.md gives it.

Reads the table "The control plane's files from the bottom up" in design.md's
Layers section (order, files) and checks every `#include "x.h"` of those
files: a file may include the header of a file listed at a lower order (and
its own), never one at its order or above, so the control round stays a
one-way pipeline (intake -> decide -> reconcile -> egress) with nothing
calling back up. Each of those modules keeps its state to itself: its
`struct <module>` in struct sw is defined in `<module>.c` and in no header,
and the peer protocol's state (peer.h's `struct peer_state`, `struct
peer_slot`) is named only by peer_sync.c, so the others reach it through
peer_sync.h's functions.
Prints each violation; exits 1 when there is one.
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
    headers = [n for n in os.listdir(os.path.join(ROOT, "switchd")) if n.endswith(".h")]
    with open(os.path.join(ROOT, "switchd", "switchd.h")) as f:
        held = set(re.findall(r"^\s*struct (\w+) \*\w+;", f.read(), re.M))
    for module in sorted(sources & held):
        for name in headers:
            with open(os.path.join(ROOT, "switchd", name)) as f:
                if re.search(rf"^struct {module} {{", f.read(), re.M):
                    bad.append(f"switchd/{name}: defines struct {module}, which only "
                               f"switchd/{module}.c may see")
    for module in sorted(sources - {"peer_sync"}):
        path = os.path.join(ROOT, "switchd", module + ".c")
        if os.path.exists(path):
            with open(path) as f:
                for name in sorted(set(re.findall(r"\bstruct (peer_state|peer_slot)\b", f.read()))):
                    bad.append(f"switchd/{module}.c: names struct {name} (peer_sync.h's "
                               f"functions reach the peer state)")
    for line in bad:
        print(line)
    print(f"test_control_order: {len(sources)} control-plane files checked, {len(bad)} reach up or in")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
