#!/usr/bin/env bash
# skewless where: one line per key in the documented format, and the same as JSON.
set -euo pipefail
cli=$1
conf="$SKL_SOURCE_ROOT/conf/testbed.json"
out=$("$cli" --config "$conf" where user:1 user:2 hot)
[ "$(wc -l <<<"$out")" = 3 ] || { echo "expected 3 lines, got: $out"; exit 1; }
# Here-strings, not `echo | grep -q`: grep -q quits at the first match, and
# under pipefail the echo's SIGPIPE would fail the check now and then.
# The testbed runs R = 2: the group is the home and the next node clockwise.
grep -Eq '^user:1 keyhash=0x[0-9a-f]{16} point=0x[0-9a-f]{8} home=(n[1-8]) group=\1,n[1-8]$' <<<"$out" ||
	{ echo "bad line format: $out"; exit 1; }
json=$("$cli" --config "$conf" --json where user:1)
grep -q '"home": "n' <<<"$json" || { echo "bad json: $json"; exit 1; }
# The same key answers the same way twice; a bad config is a clear error.
[ "$("$cli" --config "$conf" where user:1)" = "$(head -1 <<<"$out")" ]
if "$cli" --config /nonexistent.json where k 2>/dev/null; then echo "expected failure"; exit 1; fi
echo "1 passed, 0 failed"
