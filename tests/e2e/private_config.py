#!/usr/bin/env python3
"""A private copy of a testbed config for one e2e test.

The copy has its own path and puts every switch's control socket in the
copy's folder, so that bringing the copy up and down (scripts/testbed.sh
finds processes by config path and talks to switches through the sockets)
never touches an operator's or the demo's testbed of the same config. The
tests also give testbed.sh their own SKL_NS_PREFIX and SKL_RUN_DIR.

    private_config.py TEMPLATE.json COPY.json [OVERRIDES_JSON]

OVERRIDES_JSON, an object, is merged into the copy section by section
(e.g. '{"sync": {"interval_ms": 100}}').
"""
import json
import os
import sys


def private_config(template, copy, overrides=None):
    """Write the copy of template to copy; return the config as a dict."""
    with open(template) as f:
        cfg = json.load(f)
    folder = os.path.dirname(os.path.abspath(copy))
    for s in cfg.get("switches", []):
        s["control_socket"] = os.path.join(folder, f"switch-{s['id']}.sock")
    if overrides:
        overrides(cfg)
    with open(copy, "w") as f:
        json.dump(cfg, f, indent=1)
    return cfg


def merge(cfg, overrides):
    """Merge overrides into cfg: objects key by key, anything else replaced."""
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            merge(cfg[key], value)
        else:
            cfg[key] = value


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: private_config.py TEMPLATE.json COPY.json [OVERRIDES_JSON]")
    extra = json.loads(sys.argv[3]) if len(sys.argv) == 4 else {}
    private_config(sys.argv[1], sys.argv[2], lambda c: merge(c, extra))
