#!/usr/bin/env bash
# bench/node.sh [--keys N] [--seconds S]: one skewless-node's GET and PUT
# ops/s on loopback (128-byte values, N preloaded keys, default 1M), and in
# the same run RocksDB's raw single-thread get/put with the node's options,
# and, as a reference for a single-threaded in-memory server on this machine,
# redis-server (no persistence) under redis-benchmark (GET/SET of the same
# value size and key count, 32 requests outstanding). The transport's
# ceiling: the same client against a server that stores nothing and answers
# every request as a GET is answered (node_bench echo).
# Last line: node_get_ops=X node_put_ops=Y rocksdb_get_ops=Z rocksdb_put_ops=W
# redis_get_ops=R redis_set_ops=S echo_ops=E get_vs_raw=X/Z put_vs_raw=Y/W
# echo_vs_raw=E/Z get_vs_echo=X/E
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
rpid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
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
$nb echo "$port" $((secs + 2)) &
pid=$!
sleep 0.5
echo_out=$(timeout $((secs + 10)) $nb udp "$port" "$keys" "$secs" get "$window")
echo "node.sh: echo: $echo_out"
wait "$pid" || true
pid=
raw=$(timeout $((secs * 4 + 120)) $nb raw "$tmp/raw" "$keys" "$secs")
echo "node.sh: $raw"

# redis-server on a free loopback port, nothing persisted, killed afterwards.
redis_get=- redis_set=-
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	for try in 1 2 3 4 5; do
		rport=$((26000 + RANDOM % 1000))
		ss -Hltn "sport = :$rport" | grep -q . && continue
		redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no \
			--dir "$tmp" --logfile "$tmp/redis.log" &
		rpid=$!
		for _ in $(seq 50); do
			redis-cli -p "$rport" ping >/dev/null 2>&1 && break
			sleep 0.1
		done
		redis-cli -p "$rport" ping >/dev/null 2>&1 && break
		kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null || true
		rpid=
	done
	if [ -n "$rpid" ]; then
		# A fixed count (about secs seconds' worth on a quiet machine), bounded in time.
		rb() {
			timeout $((secs * 6 + 30)) redis-benchmark -p "$rport" -t "$1" \
				-n $((secs * 20000)) -r "$keys" -d 128 -c 32 --csv 2>/dev/null |
				awk -F'"' -v t="$2" '$2 == t {printf "%.0f", $4}' || true
		}
		redis_set=$(rb set SET)
		redis_get=$(rb get GET)
		echo "node.sh: redis_get_ops=$redis_get redis_set_ops=$redis_set"
		kill "$rpid"
		wait "$rpid" || true
		rpid=
	fi
else
	echo "node.sh: redis-server or redis-benchmark missing: no redis reference" >&2
fi
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
ng=$(val "$get" get_ops) np=$(val "$put" put_ops) ne=$(val "$echo_out" get_ops)
rg=$(val "$raw" rocksdb_get_ops) rp=$(val "$raw" rocksdb_put_ops)
echo "node_get_ops=$ng node_put_ops=$np rocksdb_get_ops=$rg rocksdb_put_ops=$rp" \
	"redis_get_ops=${redis_get:--} redis_set_ops=${redis_set:--} echo_ops=$ne" \
	"get_vs_raw=$(ratio "$ng" "$rg") put_vs_raw=$(ratio "$np" "$rp")" \
	"echo_vs_raw=$(ratio "$ne" "$rg") get_vs_echo=$(ratio "$ng" "$ne")"
