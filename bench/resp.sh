#!/usr/bin/env bash
# bench/resp.sh [CONFIG] - what the RESP front door costs, and whether the
# skew relief reaches a plain Redis client.
#
# On the testbed (CONFIG, default conf/testbed.json: switch, 8 nodes), from
# the agent host's namespace:
#   1. nodes with no service time; skewless-proxy (--threads 2) in front:
#        proxy    redis-benchmark -P 16 -c 50 -t get,set, uniform keys
#                 (-r KEYS), through skewless-proxy -> switch -> nodes
#        native   skewless bench on the same cluster, uniform reads over
#                 KEYS keys, 800 in flight (= 50 x 16), no proxy
#   2. the reference a user would weigh: the same redis-benchmark through
#      nutcracker (Debian's twemproxy, ketama) in front of 8 redis-server,
#      on 127.0.0.1 in the root namespace
#   3. nodes at SKL_SERVICE_TIME_US per request (the demo's capacity
#      emulation): the demo's zipf-0.99 workload (preloaded KEYS keys, read
#      0.95, closed loop x CONCURRENCY) through the proxy with `skewless bench
#      --resp`, directory off then on; and natively, for the same gain
# Last line:
#   proxy_get= proxy_set= native_get= nutcracker_get= proxy_vs_native= resp_gain_099=
# (ops/s; proxy_vs_native = proxy_get / native_get; resp_gain_099 = directory
# on over off through the proxy). The line before it gives native_gain_099,
# the same gain without the proxy, measured in the same run.
#
# Environment: KEYS (10000), REQUESTS (redis-benchmark -n, 400000), DURATION
# (10 s per bench run), CONCURRENCY (192), SKL_SERVICE_TIME_US (4000: 8 nodes x 2
# workers then serve 4,000 requests/s, below what a small machine drives, so
# that the nodes bound the zipf runs and the skew shows),
# SKL_RUN_DIR (a fresh /tmp folder), SKL_NS_PREFIX (skl-resp-).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
template=${1:-$repo/conf/testbed.json}
keys=${KEYS:-10000}
requests=${REQUESTS:-400000}
duration=${DURATION:-10}
concurrency=${CONCURRENCY:-192}
service_us=${SKL_SERVICE_TIME_US:-4000}
build=${SKL_BUILD:-$repo/build}
export SKL_BUILD=$build
export SKL_NS_PREFIX=${SKL_NS_PREFIX:-skl-resp-}
export SKL_RUN_DIR=${SKL_RUN_DIR:-$(mktemp -d "/tmp/${SKL_NS_PREFIX}bench.XXXXXX")}
run=$SKL_RUN_DIR
mkdir -p "$run"
proxy_port=6390
nc_port=22121
redis_base=16380

[ "$(id -u)" = 0 ] || { echo "resp: must run as root (network namespaces)" >&2; exit 1; }
for t in redis-benchmark redis-server nutcracker; do
	command -v "$t" >/dev/null || { echo "resp: $t missing: run scripts/setup.sh" >&2; exit 1; }
done
# A private copy (control sockets in the run folder: tests/e2e/private_config.py)
# with a 3 s agent timeout and deep node queues: redis-benchmark keeps 800
# requests in flight, and on a small machine they queue for tens of ms at
# the nodes; queueing is not loss, and a timeout would be an error reply.
# R = 1, as the Redis and twemproxy it is compared with keep one copy.
config=$run/testbed.json
python3 "$repo/tests/e2e/private_config.py" "$template" "$config" \
	'{"agent": {"timeout_ms": 3000}, "node": {"queue_depth": 16384}, "service": {"replicas": 1}}'
agent=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["agents"][0]["name"])' "$config")
ns=$SKL_NS_PREFIX$agent
cdtctl() { "$build/switchd/cdtctl" --config "$config" --switch 1 "$@"; }
in_ns() { ip netns exec "$ns" "$@"; }

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	"$repo/scripts/testbed.sh" down "$config" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The proxy in the agent's namespace; waits for its ready line.
start_proxy() {
	# Not through in_ns: a function run in the background is a subshell,
	# and $! would be its pid, not the proxy's (ip netns exec execs it).
	ip netns exec "$ns" "$build/proxy/skewless-proxy" --config "$config" \
		--listen "127.0.0.1:$proxy_port" --threads 2 >"$run/proxy.out" 2>"$run/proxy.log" &
	proxy_pid=$!
	pids+=("$proxy_pid")
	for _ in $(seq 50); do grep -q listening "$run/proxy.out" && return; sleep 0.1; done
	echo "resp: skewless-proxy did not start:" >&2; cat "$run/proxy.log" >&2; exit 1
}
stop_proxy() { kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true; }

# redis-benchmark's requests per second for `test` (GET or SET), from its --csv.
rb() { # label port [ns]
	local out=$run/$1.csv
	${3:+ip netns exec "$3"} redis-benchmark -p "$2" -P 16 -c 50 -t get,set -n "$requests" \
		-r "$keys" --csv >"$out" 2>"$run/$1.err"
	if grep -qi "error" "$out" "$run/$1.err"; then
		echo "resp: redis-benchmark saw errors ($1):" >&2; cat "$run/$1.err" >&2; exit 1; fi
}
rps() { awk -F'"' -v t="$2" '$2 == t { printf "%.0f", $4 }' "$run/$1.csv"; }
native() { # label bench-args...
	local label=$1
	shift
	in_ns "$build/agent/skewless" --config "$config" bench --json "$run/$label.json" "$@" >/dev/null
}
ops() { python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["throughput_ops"])' "$run/$1.json"; }
errs() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error_rate"])' "$run/$1.json"; }

# ---- 1. the front door's cost ------------------------------------------------
export SKL_SERVICE_TIME_US=0
"$repo/scripts/testbed.sh" down "$config" >/dev/null 2>&1 || true
"$repo/scripts/testbed.sh" up "$config" >/dev/null
# Native first: its preload also lets the switch's view of the fresh nodes
# settle (their first digests), before redis-benchmark, which stops at its
# first error reply.
native native --keys "$keys" --dist uniform --read-ratio 1 --concurrency 800 \
	--duration "$duration" --key-prefix "key:" --preload
start_proxy
rb proxy "$proxy_port" "$ns"
stop_proxy
"$repo/scripts/testbed.sh" down "$config" >/dev/null

# ---- 2. nutcracker in front of 8 redis-server --------------------------------
ncconf=$run/nutcracker.yml
printf 'skl:\n  listen: 127.0.0.1:%d\n  hash: fnv1a_64\n  distribution: ketama\n  redis: true\n  servers:\n' \
	"$nc_port" >"$ncconf"
for i in $(seq 0 7); do
	redis-server --port $((redis_base + i)) --bind 127.0.0.1 --save "" --appendonly no \
		--daemonize no >"$run/redis-$i.log" 2>&1 &
	pids+=($!)
	echo "   - 127.0.0.1:$((redis_base + i)):1 r$i" >>"$ncconf"
done
nutcracker -c "$ncconf" -o "$run/nutcracker.log" &
pids+=($!)
for i in $(seq 0 7); do
	for _ in $(seq 50); do redis-cli -p $((redis_base + i)) ping >/dev/null 2>&1 && break; sleep 0.1; done
done
sleep 0.5
rb nutcracker "$nc_port"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
pids=()

# ---- 3. the skew relief through the proxy ------------------------------------
export SKL_SERVICE_TIME_US=$service_us
"$repo/scripts/testbed.sh" up "$config" >/dev/null
start_proxy
zipf=(--keys "$keys" --dist zipf:0.99 --read-ratio 0.95 --concurrency "$concurrency"
	--duration "$duration" --warmup 2)
native preload --keys "$keys" --dist uniform --read-ratio 0 --concurrency 64 --duration 1 --preload
for dir in off on; do
	cdtctl directory "$dir" >/dev/null
	native "resp-$dir" "${zipf[@]}" --resp "127.0.0.1:$proxy_port" --resp-conns 64
	native "native-$dir" "${zipf[@]}"
done
stop_proxy

printf '%-28s %12s\n' "run" "ops/s"
printf '%-28s %12s\n' "proxy GET (redis-benchmark)" "$(rps proxy GET)" \
	"proxy SET (redis-benchmark)" "$(rps proxy SET)" "native GET (skewless bench)" "$(ops native)" \
	"nutcracker GET" "$(rps nutcracker GET)" "nutcracker SET" "$(rps nutcracker SET)"
for l in resp-off resp-on native-off native-on; do
	printf '%-28s %12s  errors %s\n' "zipf 0.99 $l" "$(ops "$l")" "$(errs "$l")"
done
echo "native_gain_099=$(python3 -c "print('%.2f' % ($(ops native-on) / $(ops native-off)))")"
python3 - "$(rps proxy GET)" "$(rps proxy SET)" "$(ops native)" "$(rps nutcracker GET)" \
	"$(ops resp-on)" "$(ops resp-off)" <<'PY'
import sys
pg, ps, ng, nc, on, off = (float(x) for x in sys.argv[1:])
print(f"proxy_get={pg:.0f} proxy_set={ps:.0f} native_get={ng:.0f} nutcracker_get={nc:.0f} "
      f"proxy_vs_native={pg / ng:.2f} resp_gain_099={on / off:.2f}")
PY
