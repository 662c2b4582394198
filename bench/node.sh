#!/usr/bin/env bash
# bench/node.sh [--keys N] [--seconds S]: one skewless-node's GET and PUT
# ops/s on loopback (128-byte values, N preloaded keys, default 1M), and in
# the same run RocksDB's raw single-thread get/put with the node's options.
# Last line: node_get_ops=X node_put_ops=Y rocksdb_get_ops=Z rocksdb_put_ops=W
set -euo pipefail
cd "$(dirname "$0")/.."
keys=1000000
secs=10
window=32
while [ $# -gt 0 ]; do
	case "$1" in
	--keys) keys=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--window) window=$2; shift 2 ;;
	*) echo "usage: bench/node.sh [--keys N] [--seconds S] [--window W]" >&2; exit 64 ;;
	esac
done
scripts/setup.sh --release >/dev/null # packages and the optimised build
bin=build/nodes/skewless-node
nb=build/bench/node_bench

tmp=$(mktemp -d /tmp/skl-bench-node-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
port=$((27000 + RANDOM % 1000))
cat >"$tmp/cluster.json" <<JSON
{"service":{"vip":"127.0.0.1","port":$((port - 1))},
 "nodes":[{"id":1,"name":"n1","ip":"127.0.0.1","port":$port,"data_dir":"$tmp/n1"}],
 "node":{"durability":"async","workers":2,"queue_depth":1024,"block_cache_mb":64}}
JSON

echo "node.sh: preloading $keys keys"
mkdir -p "$tmp/n1"
$nb load "$tmp/n1/rocksdb" "$keys" >/dev/null
$bin --config "$tmp/cluster.json" --node n1 --log-level warn &
pid=$!
sleep 1
get=$(timeout $((secs + 10)) $nb udp "$port" "$keys" "$secs" get "$window")
echo "node.sh: $get"
put=$(timeout $((secs + 10)) $nb udp "$port" "$keys" "$secs" put "$window")
echo "node.sh: $put"
kill "$pid"
wait "$pid" || true
pid=
raw=$(timeout $((secs * 4 + 120)) $nb raw "$tmp/raw" "$keys" "$secs")
echo "node.sh: $raw"
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
echo "node_get_ops=$(val "$get" get_ops) node_put_ops=$(val "$put" put_ops)" \
	"rocksdb_get_ops=$(val "$raw" rocksdb_get_ops) rocksdb_put_ops=$(val "$raw" rocksdb_put_ops)"
