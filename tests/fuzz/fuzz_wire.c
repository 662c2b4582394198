/*
 * fuzz_wire.c - libFuzzer target for the v1 decoder. Whatever the bytes,
 * wire_decode() must not read past them, and anything it accepts must
 * re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_msg msg;
	static uint8_t out[WIRE_HDR_LEN + WIRE_MAX_KEY + 70000];

	wire_decode_header(data, size, &msg);
	if (wire_decode(data, size, &msg) != WIRE_OK)
		return 0;
	int len = wire_encode(&msg, out, sizeof(out));
	/* reserved byte is not carried in the struct; compare the rest */
	if (len != (int)size || memcmp(out, data, WIRE_OFF_RESERVED) ||
	    memcmp(out + 8, data + 8, size - 8))
		abort();
	return 0;
}
