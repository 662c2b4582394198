/*
 * ops.c - the op table (ops.h) as data, one row at each op's value, and the
 * ops' log names.
 */
#include "ops.h"

const struct wire_op_row wire_op_table[64] = {
#define X(name, value, str, by, attrs, sw, lane) [value] = {str, by, attrs, sw, lane},
    WIRE_OPS(X)
#undef X
};

const char *wire_op_name(uint8_t op)
{
	/* A switch, not the row: the reply's name is a literal made at compile time. */
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
