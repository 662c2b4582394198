/*
 * test_send.c - node_send_msg_fd() (nodes/send.c) over a loopback socket
 * pair: a value larger than a datagram leaves as chunks, each received as a
 * datagram of its own with the right bytes, whether the kernel cuts them
 * (UDP GSO) or they go one by one, and sealed with a MAC each under a key.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "chunk.h"
#include "send.h"

static struct cfg cfg;
static struct node n;
static int rx_fd, tx_fd;
static struct sockaddr_in rx_addr;
static uint8_t value[262144];
static uint8_t got[262144];

static void setup(void)
{
	socklen_t len = sizeof(rx_addr);
	int bufsz = 8 << 20;

	memset(&cfg, 0, sizeof(cfg));
	memset(&n, 0, sizeof(n));
	cfg.service.mtu = 1500;
	n.cfg = &cfg;
	rx_fd = socket(AF_INET, SOCK_DGRAM, 0);
	tx_fd = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(rx_fd, 0);
	ck_assert_int_ge(tx_fd, 0);
	/* Room for a whole 256 KB reply: the test reads only after it was sent. */
	setsockopt(rx_fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz));
	rx_addr =
	    (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ck_assert_int_eq(bind(rx_fd, (struct sockaddr *)&rx_addr, sizeof(rx_addr)), 0);
	ck_assert_int_eq(getsockname(rx_fd, (struct sockaddr *)&rx_addr, &len), 0);
	for (size_t i = 0; i < sizeof(value); i++)
		value[i] = (uint8_t)((i * 2654435761u) >> 11);
}

static void teardown(void)
{
	close(rx_fd);
	close(tx_fd);
}

/*
 * Receive the chunks of one op from rx_fd, each datagram alone (a buffer
 * larger than any chunk, so a datagram holding two would show), checking
 * its MAC when sealed; the value into got[]. Returns the chunks received.
 */
static unsigned receive_op(const struct wire_msg *sent, bool sealed)
{
	struct wire_chunk_set set = {0};
	unsigned chunks = 0;
	uint8_t buf[4096];

	while (!set.count || !wire_chunk_set_done(&set)) {
		struct pollfd p = {.fd = rx_fd, .events = POLLIN};
		struct wire_msg m;
		struct wire_chunk c;
		size_t body = 0;
		ssize_t len;

		ck_assert_msg(poll(&p, 1, 2000) == 1, "chunk %u never came", chunks);
		len = recv(rx_fd, buf, sizeof(buf), 0);
		ck_assert_int_gt(len, 0);
		ck_assert_int_le(len + WIRE_IP_UDP_LEN, cfg.service.mtu);
		if (sealed) {
			ck_assert_int_eq(wire_auth_check(&n.key, buf, (size_t)len, &body),
					 WIRE_AUTH_OK);
			len = (ssize_t)body;
		}
		ck_assert_int_eq(wire_decode(buf, (size_t)len, &m), WIRE_OK);
		ck_assert(m.flags & WIRE_F_CHUNK);
		ck_assert_uint_eq(m.op, sent->op);
		ck_assert_uint_eq(m.req_id, sent->req_id);
		ck_assert_uint_eq(m.version, sent->version);
		ck_assert_int_eq(wire_chunk_decode(&m, &c), WIRE_CHUNK_OK);
		if (!set.buf)
			ck_assert_int_eq(wire_chunk_set_init(&set, &c, 0, 0), 0);
		ck_assert_int_eq(wire_chunk_set_add(&set, &c, 0), WIRE_CHUNK_OK);
		chunks++;
	}
	ck_assert_uint_eq(set.total, sent->val_len);
	memcpy(got, set.buf, set.total);
	wire_chunk_set_free(&set);
	return chunks;
}

static struct wire_msg reply_of(uint32_t len)
{
	static const char key[] = "big:value";

	return (struct wire_msg){.op = WIRE_OP_GET | WIRE_REPLY,
				 .req_id = 0x1234500000007ull,
				 .keyhash = 42,
				 .version = 9,
				 .key = (const uint8_t *)key,
				 .key_len = sizeof(key) - 1,
				 .value = value,
				 .val_len = len};
}

static uint64_t ctr(enum node_counter c)
{
	return atomic_load(&n.ctr[c]);
}

/* Every size from two chunks to 256 KB: all arrive whole, one datagram a chunk. */
START_TEST(chunks_arrive_one_datagram_each)
{
	static const uint32_t sizes[] = {1500, 2900, 65536, 100001, 262144};
	uint64_t sent = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct wire_msg m = reply_of(sizes[i]);
		uint16_t count;

		ck_assert(wire_chunk_needed(&m, cfg.service.mtu, &count) && count > 1);
		ck_assert_int_eq(node_send_msg_fd(&n, tx_fd, &rx_addr, &m), 0);
		ck_assert_uint_eq(receive_op(&m, false), count);
		ck_assert_int_eq(memcmp(got, value, sizes[i]), 0);
		sent += count;
	}
	ck_assert_uint_eq(ctr(NODE_CTR_chunks_sent), sent);
	ck_assert_uint_eq(ctr(NODE_CTR_send_errors), 0);
	/* Cut by the kernel, 64 chunks or 64 KB a send, unless it refused GSO (then never again).
	 */
	ck_assert_msg(ctr(NODE_CTR_chunk_gso_sends) > 0 || atomic_load(&n.gso_off),
		      "neither a GSO send nor a refusal");
	if (!atomic_load(&n.gso_off))
		ck_assert_uint_lt(ctr(NODE_CTR_chunk_gso_sends), sent / 8);
}
END_TEST

/* Without GSO (a kernel that refused it) the chunks go one datagram each, the same bytes. */
START_TEST(without_gso_the_same)
{
	struct wire_msg m = reply_of(262144);
	uint16_t count;

	atomic_store(&n.gso_off, true);
	ck_assert(wire_chunk_needed(&m, cfg.service.mtu, &count));
	ck_assert_int_eq(node_send_msg_fd(&n, tx_fd, &rx_addr, &m), 0);
	ck_assert_uint_eq(receive_op(&m, false), count);
	ck_assert_int_eq(memcmp(got, value, m.val_len), 0);
	ck_assert_uint_eq(ctr(NODE_CTR_chunk_gso_sends), 0);
	ck_assert_uint_eq(ctr(NODE_CTR_chunks_sent), count);
}
END_TEST

/* Under a cluster key a control op's chunks each carry their own MAC, and still fit the MTU. */
START_TEST(sealed_chunks)
{
	struct wire_msg m = reply_of(200000);
	uint16_t count;

	m.op = WIRE_OP_RC_REQ;
	n.keyed = true;
	n.key.len = WIRE_KEY_MIN_LEN;
	memset(n.key.bytes, 0x5a, WIRE_KEY_MIN_LEN);
	ck_assert(wire_op_authenticated(m.op));
	ck_assert(wire_chunk_needed(&m, cfg.service.mtu - WIRE_MAC_LEN, &count));
	ck_assert_int_eq(node_send_msg_fd(&n, tx_fd, &rx_addr, &m), 0);
	ck_assert_uint_eq(receive_op(&m, true), count);
	ck_assert_int_eq(memcmp(got, value, m.val_len), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("node_send");
	TCase *tc = tcase_create("chunks");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, chunks_arrive_one_datagram_each);
	tcase_add_test(tc, without_gso_the_same);
	tcase_add_test(tc, sealed_chunks);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
