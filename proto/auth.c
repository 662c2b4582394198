/*
 * auth.c - HMAC-SHA256 trailers of control datagrams (auth.h), with OpenSSL.
 */
#include "auth.h"

#include <errno.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "wire.h"

static const char *const auth_names[] = {
#define X(name, str) [name] = str,
    WIRE_AUTH_RESULTS(X)
#undef X
};

const char *wire_auth_name(enum wire_auth r)
{
	return (unsigned)r < sizeof(auth_names) / sizeof(auth_names[0]) ? auth_names[r] : "?";
}

int wire_mac(const struct wire_key *key, const void *buf, size_t len, uint8_t mac[WIRE_MAC_LEN])
{
	unsigned out_len = 0;

	/* HMAC() with a caller's buffer is thread-safe: every thread that sends may call it. */
	if (!HMAC(EVP_sha256(), key->bytes, key->len, buf, len, mac, &out_len) ||
	    out_len != WIRE_MAC_LEN)
		return -EIO;
	return 0;
}

int wire_seal(const struct wire_key *key, uint8_t *buf, size_t len)
{
	if (wire_mac(key, buf, len, buf + len) != 0)
		return -EIO;
	return (int)(len + WIRE_MAC_LEN);
}

enum wire_auth wire_auth_check(const struct wire_key *key, const void *buf, size_t len,
			       size_t *body_len)
{
	const uint8_t *p = buf;
	uint8_t mac[WIRE_MAC_LEN];
	uint64_t body;

	if (len < WIRE_HDR_LEN)
		return WIRE_AUTH_LENGTH;
	/* 64-bit sum, as wire_decode(): no val_len can wrap it. */
	body = WIRE_HDR_LEN + (uint64_t)wire_get16(p + WIRE_OFF_KEY_LEN) +
	       (uint64_t)wire_get32(p + WIRE_OFF_VAL_LEN);
	if ((uint64_t)len == body)
		return WIRE_AUTH_MISSING;
	if ((uint64_t)len != body + WIRE_MAC_LEN)
		return WIRE_AUTH_LENGTH;
	if (wire_mac(key, p, (size_t)body, mac) != 0 ||
	    CRYPTO_memcmp(mac, p + body, WIRE_MAC_LEN) != 0)
		return WIRE_AUTH_BAD;
	*body_len = (size_t)body;
	return WIRE_AUTH_OK;
}
