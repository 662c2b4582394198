#!/usr/bin/env python3
"""The include graph against the layer order docs/design.md documents.

Reads the table in design.md's "Layers" section (layer, folder, may include
from) and checks every project `#include "..."` in those folders, and every
project `*_dep` a folder's meson.build uses, against it: a file may use its own
folder and the folders its row names, never one above or beside it. Prints
each violation as `file: includes header (folder)`; exits 1 when there is one.
tests/<module> is held to its module's row (plus tests/common/), tests/fuzz
to proto/ alone.
"""
import os
import re
import sys

ROOT = os.environ.get("SKL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")
SOURCES = (".c", ".h")


def layer_table(design):
    """{folder: set of folders it may use} from the Layers section's table,
    and {folder: {used folder: the only headers of it the folder may include}}
    from headers named in parentheses after a used folder: `base (`clock.h` only)`."""
    section = re.search(r"^## \d+\. Layers\n(.*?)(?=^## |\Z)", design, re.M | re.S)
    if not section:
        sys.exit("test_layers: docs/design.md has no Layers section")
    allowed, only = {}, {}
    for row in re.finditer(r"^\|\s*\d+\s*\|\s*`([\w/<>]+)/`\s*\|([^|]*)\|", section.group(1), re.M):
        folder, may = row.group(1), row.group(2)
        if "<" in folder:  # tests/<module>: checked as its module's tests, below
            continue
        uses = set()
        if "nothing" not in may:
            bare = re.sub(r"\([^)]*\)", "", may)
            uses = {w for w in re.findall(r"[a-z]+(?:/[a-z]+)*", bare) if w != "and"}
        allowed[folder] = uses
        for used, inside in re.findall(r"([a-z]+(?:/[a-z]+)*)\s*\(([^)]*)\)", may):
            headers = set(re.findall(r"`([\w.]+\.h)`", inside))
            if headers and used in uses:
                only.setdefault(folder, {})[used] = headers
    if not allowed:
        sys.exit("test_layers: the Layers section has no table rows")
    return allowed, only


def project_files(folder, rows=()):
    """The files of folder, but for those of a subfolder with a row of its own
    (switchd/policy/ inside switchd/)."""
    top = os.path.join(ROOT, folder)
    for dirpath, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs
                   if os.path.relpath(os.path.join(dirpath, d), ROOT) not in rows]
        for name in names:
            yield os.path.join(dirpath, name)


def main():
    with open(os.path.join(ROOT, "docs", "design.md")) as f:
        allowed, only = layer_table(f.read())
    # Which folder each header lives in, and which folder declares each dependency.
    home_of_header, home_of_dep = {}, {}
    for folder in allowed:
        for path in project_files(folder, allowed):
            if path.endswith(".h"):
                home_of_header.setdefault(os.path.basename(path), set()).add(folder)
            elif os.path.basename(path) == "meson.build":
                for dep in re.findall(r"^(\w+_dep)\s*=\s*declare_dependency", open(path).read(), re.M):
                    home_of_dep[dep] = folder
    # tests/<module> may use its module and what that module may; tests/fuzz only proto/.
    rules = dict(allowed)
    for module in sorted(os.listdir(os.path.join(ROOT, "tests"))):
        if module in allowed:
            rules[f"tests/{module}"] = allowed[module] | {module, "tests/common"}
    rules["tests/fuzz"] = {"proto"}
    for path in project_files("tests/common"):
        home_of_header.setdefault(os.path.basename(path), set()).add("tests/common")
    bad = []
    for folder, uses in sorted(rules.items()):
        ok = uses | {folder}
        for path in project_files(folder, rules):
            rel = os.path.relpath(path, ROOT)
            text = open(path, errors="replace").read()
            if path.endswith(SOURCES):
                for header in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
                    homes = home_of_header.get(os.path.basename(header), set())
                    if homes and not homes & ok:
                        bad.append(f"{rel}: includes {header} ({'/'.join(sorted(homes))}/)")
                    elif homes and folder not in homes:
                        # A folder named with a header list may be used through those alone.
                        limits = [only[folder][h] for h in homes & ok if h in only.get(folder, {})]
                        if limits and all(os.path.basename(header) not in hs for hs in limits):
                            bad.append(f"{rel}: includes {header}, not among the headers "
                                       f"docs/design.md lets it use")
            elif os.path.basename(path) == "meson.build":
                for dep in sorted(set(re.findall(r"\b(\w+_dep)\b", text))):
                    home = home_of_dep.get(dep)
                    if home and home not in ok:
                        bad.append(f"{rel}: uses {dep} ({home}/)")
    for line in bad:
        print(line)
    print(f"test_layers: {len(rules)} folders checked against docs/design.md, "
          f"{len(bad)} reach above or beside their layer")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
