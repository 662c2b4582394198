/*
 * ops.c - names of the ops in the op table (ops.h), for logs.
 */
#include "ops.h"

const char *wire_op_name(uint8_t op)
{
	switch (op & (uint8_t)~WIRE_REPLY) {
#define X(name, value, str, ...)                                                                   \
	case value:                                                                                \
		return (op & WIRE_REPLY) ? str "_REPLY" : str;
		WIRE_OPS(X)
#undef X
	default:
		return "?";
	}
}
