#!/usr/bin/env bash
# Build the libFuzzer target for the wire decoder, the payload decoders
# (REPLICATE, RC_REQ, RC_ACK, HINT, DIGEST, SYNC) and the MAC trailer's check
# with clang and run it for a bounded time (default 30 s, at most 60). Skips
# when clang is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
[ "$seconds" -le 60 ] || seconds=60
if ! command -v clang >/dev/null; then
	echo "fuzz: SKIP: clang not installed"
	exit 0
fi
mkdir -p build/fuzz/corpus
clang -g -O1 -fsanitize=fuzzer,address,undefined -Iproto \
	tests/fuzz/fuzz_wire.c proto/wire.c proto/ops.c proto/payload.c proto/digest_codec.c \
	proto/sync.c proto/ringmsg.c proto/auth.c -lcrypto -o build/fuzz/fuzz_wire
build/fuzz/fuzz_wire -max_total_time="$seconds" -max_len=2048 -print_final_stats=1 \
	build/fuzz/corpus 2>build/fuzz/log.txt || { tail -40 build/fuzz/log.txt; exit 1; }
grep -E 'stat::number_of_executed_units' build/fuzz/log.txt || true
echo "fuzz: wire and payload decoders ran ${seconds}s without a crash"
