/*
 * test_store.c - unit tests of nodes/store.c against a RocksDB in a temp dir:
 * record encoding, version rules (per key, across reopen, across tombstone
 * GC and TTL expiry), tombstones against late replica copies, TTL index.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keyhash.h"
#include "payload.h"
#include "store.h"

static char dir[256];

static void rm_rf(const char *d)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", d);
}

static struct store *open_store(void)
{
	struct store_options o = {.block_cache_mb = 8, .sync = 0};
	char err[512] = "";
	struct store *st = store_open(dir, &o, err, sizeof(err));

	ck_assert_msg(st != NULL, "%s", err);
	return st;
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/skl-test-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	rm_rf(dir);
}

static uint64_t put(struct store *st, const char *k, const char *v, uint64_t ttl, uint64_t now)
{
	uint64_t ver = 0;

	ck_assert_int_eq(
	    store_put(st, keyhash(k, strlen(k)), k, strlen(k), v, strlen(v), ttl, now, 0, &ver), 0);
	return ver;
}

START_TEST(record_roundtrip)
{
	struct store_record r = {.kind = STORE_VALUE,
				 .version = 0x0102030405060708ull,
				 .time_ms = 42},
			    d;
	uint8_t buf[STORE_REC_HDR + 3];

	store_record_header(&r, buf);
	memcpy(buf + STORE_REC_HDR, "abc", 3);
	ck_assert_int_eq(store_record_decode(buf, sizeof(buf), &d), 0);
	ck_assert_uint_eq(d.version, r.version);
	ck_assert_uint_eq(d.time_ms, 42);
	ck_assert_uint_eq(d.value_len, 3);
	ck_assert_int_eq(memcmp(d.value, "abc", 3), 0);
	/* Short, wrong format, unknown kind, tombstone with bytes: all rejected. */
	ck_assert_int_ne(store_record_decode(buf, STORE_REC_HDR - 1, &d), 0);
	buf[0] = 9;
	ck_assert_int_ne(store_record_decode(buf, sizeof(buf), &d), 0);
	buf[0] = STORE_REC_FORMAT;
	buf[1] = 7;
	ck_assert_int_ne(store_record_decode(buf, sizeof(buf), &d), 0);
	buf[1] = STORE_TOMBSTONE;
	ck_assert_int_ne(store_record_decode(buf, sizeof(buf), &d), 0);
	ck_assert_int_eq(store_record_decode(buf, STORE_REC_HDR, &d), 0);
	/* Liveness: expiry in the past or a tombstone is not live. */
	r.time_ms = 100;
	ck_assert(store_record_live(&r, 99));
	ck_assert(!store_record_live(&r, 100));
}
END_TEST

START_TEST(versions_per_key_and_reopen)
{
	struct store *st = open_store();
	struct store_record rec;
	uint8_t val[64];
	uint64_t now = store_now_ms(), v1, v2, v3, dv;

	v1 = put(st, "a", "one", 0, now);
	v2 = put(st, "a", "two", 0, now);
	ck_assert_uint_gt(v2, v1);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "a", 1, &rec, val, sizeof(val)), 1);
	ck_assert_uint_eq(rec.version, v2);
	ck_assert_int_eq(memcmp(rec.value, "two", 3), 0);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "zz", 2, &rec, val, sizeof(val)), 0);
	/* A value larger than the caller's buffer is an error, not an overflow. */
	ck_assert_int_eq(store_get(st, STORE_OWNED, "a", 1, &rec, val, 2), -EMSGSIZE);
	ck_assert_int_eq(store_del(st, keyhash("a", 1), "a", 1, now, &dv), 1);
	ck_assert_uint_gt(dv, v2);
	/* Deleting a tombstone writes nothing and reports its version. */
	ck_assert_int_eq(store_del(st, keyhash("a", 1), "a", 1, now, &v3), 0);
	ck_assert_uint_eq(v3, dv);
	store_close(st);

	st = open_store();
	ck_assert_int_eq(store_get(st, STORE_OWNED, "a", 1, &rec, val, sizeof(val)), 1);
	ck_assert_uint_eq(rec.kind, STORE_TOMBSTONE);
	ck_assert_uint_eq(put(st, "a", "three", 0, now), dv + 1);
	store_close(st);
}
END_TEST

/* Reads ahead give what store_get() gives at the time of the read, each key its own. */
START_TEST(reads_ahead)
{
	struct store *st = open_store();
	const void *keys[4] = {"b", "zz", "a", "b"};
	size_t klens[4] = {1, 2, 1, 1};
	struct store_read ahead[4];
	struct store_record rec;
	uint8_t val[64];
	uint64_t now = store_now_ms(), va, vb;

	va = put(st, "a", "one", 0, now);
	vb = put(st, "b", "bee", 0, now);
	store_get_many(st, STORE_OWNED, 4, keys, klens, ahead);
	/* Written after the read: the read still gives what it read. */
	put(st, "b", "later", 0, now);
	ck_assert_int_eq(store_read_take(&ahead[0], &rec, val, sizeof(val)), 1);
	ck_assert_uint_eq(rec.version, vb);
	ck_assert_int_eq(memcmp(rec.value, "bee", 3), 0);
	ck_assert_int_eq(store_read_take(&ahead[1], &rec, val, sizeof(val)), 0);
	/* Too large for the buffer: as store_get(). */
	ck_assert_int_eq(store_read_take(&ahead[2], &rec, val, 2), -EMSGSIZE);
	/* Taken: nothing is left to let go; one not taken is let go. */
	store_read_done(&ahead[2]);
	store_read_done(&ahead[3]);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "a", 1, &rec, val, sizeof(val)), 1);
	ck_assert_uint_eq(rec.version, va);
	store_close(st);
}
END_TEST

START_TEST(gc_keeps_versions_increasing)
{
	struct store *st = open_store();
	struct store_record rec;
	uint64_t now = store_now_ms(), dv, v;
	uint32_t removed = 0, visited;

	for (int i = 0; i < 5; i++)
		put(st, "k", "x", 0, now);
	ck_assert_int_eq(store_del(st, keyhash("k", 1), "k", 1, now, &dv), 1);
	ck_assert_uint_eq(dv, 6);
	/* Not old enough yet. */
	ck_assert_int_eq(store_gc_round(st, now - 1, 100, &removed), 0);
	ck_assert_uint_eq(removed, 0);
	ck_assert_int_eq(store_gc_round(st, now, 100, &removed), 0);
	ck_assert_uint_eq(removed, 1);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "k", 1, &rec, NULL, 0), 0);
	ck_assert_uint_eq(store_floor(st), dv);
	store_close(st);

	/* The floor survives a restart: the re-created key still goes above the tombstone. */
	st = open_store();
	v = put(st, "k", "again", 0, now);
	ck_assert_uint_gt(v, dv);

	/* TTL expiry removes the value and raises the floor the same way. */
	uint64_t tv = put(st, "t", "ttl", 50, now);

	ck_assert_int_eq(store_expire_round(st, now + 10, 20, &visited, &removed), 0);
	ck_assert_uint_eq(removed, 0);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "t", 1, &rec, NULL, 0), 1);
	ck_assert(!store_record_live(&rec, now + 60));
	ck_assert_int_eq(store_expire_round(st, now + 60, 20, &visited, &removed), 0);
	ck_assert_uint_eq(removed, 1);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "t", 1, &rec, NULL, 0), 0);
	ck_assert_uint_gt(put(st, "t", "new", 0, now), tv);
	store_close(st);
}
END_TEST

static int cas(struct store *st, const char *k, struct store_cas c, const char *v, uint64_t now,
	       uint64_t *ver, uint64_t *ttl_left)
{
	return store_cas(st, keyhash(k, strlen(k)), k, strlen(k), &c, v, v ? strlen(v) : 0, now,
			 ver, ttl_left);
}

/* CAS: each condition and action, and the live value the reply reports. */
START_TEST(cas_conditions_and_actions)
{
	struct store *st = open_store();
	struct store_record rec;
	struct store_cas rd;
	uint64_t v1, v, left;
	char buf[32];

	/* Absent: VERSION 0 (SET NX) writes; VERSION 0 again conflicts. */
	ck_assert_int_eq(
	    cas(st, "k", (struct store_cas){.cond = WIRE_CAS_VERSION}, "1", 1000, &v1, &left),
	    STORE_CAS_OK);
	ck_assert_uint_gt(v1, 0);
	ck_assert_int_eq(
	    cas(st, "k", (struct store_cas){.cond = WIRE_CAS_VERSION}, "2", 1000, &v, &left),
	    STORE_CAS_CONFLICT);
	ck_assert_uint_eq(v, v1);
	/* A stale expected version conflicts and changes nothing. */
	ck_assert_int_eq(cas(st, "k",
			     (struct store_cas){.cond = WIRE_CAS_VERSION, .expect = v1 + 7}, "3",
			     1000, &v, &left),
			 STORE_CAS_CONFLICT);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "k", 1, &rec, buf, sizeof(buf)), 1);
	ck_assert_mem_eq(rec.value, "1", 1);
	/* The right one writes, with a ttl. */
	ck_assert_int_eq(
	    cas(st, "k", (struct store_cas){.cond = WIRE_CAS_VERSION, .expect = v1, .ttl_ms = 500},
		"4", 1000, &v, &left),
	    STORE_CAS_OK);
	ck_assert_uint_gt(v, v1);
	ck_assert_uint_eq(left, 500);
	/* SET keeping the ttl; READ reports the time left. */
	ck_assert_int_eq(
	    cas(st, "k", (struct store_cas){.ttl = WIRE_CAS_TTL_KEEP}, "55", 1100, &v, &left),
	    STORE_CAS_OK);
	ck_assert_uint_eq(left, 400);
	ck_assert_int_eq(
	    cas(st, "k", (struct store_cas){.action = WIRE_CAS_READ}, NULL, 1200, &v1, &left),
	    STORE_CAS_OK);
	ck_assert_uint_eq(v1, v);
	ck_assert_uint_eq(left, 300);
	/* READ with room copies the value; without enough, -EMSGSIZE. */
	rd = (struct store_cas){.action = WIRE_CAS_READ, .out = buf, .out_cap = sizeof(buf)};
	ck_assert_int_eq(store_cas(st, keyhash("k", 1), "k", 1, &rd, NULL, 0, 1200, &v1, &left),
			 STORE_CAS_OK);
	ck_assert_uint_eq(rd.out_len, 2);
	ck_assert_mem_eq(buf, "55", 2);
	rd.out_cap = 1;
	ck_assert_int_eq(store_cas(st, keyhash("k", 1), "k", 1, &rd, NULL, 0, 1200, &v1, &left),
			 -EMSGSIZE);
	/* EXPIRE keeps the bytes under a new version: here it drops the ttl. */
	ck_assert_int_eq(cas(st, "k",
			     (struct store_cas){.cond = WIRE_CAS_LIVE, .action = WIRE_CAS_EXPIRE},
			     NULL, 1200, &v1, &left),
			 STORE_CAS_OK);
	ck_assert_uint_gt(v1, v);
	ck_assert_uint_eq(left, 0);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "k", 1, &rec, buf, sizeof(buf)), 1);
	ck_assert_uint_eq(rec.value_len, 2);
	ck_assert_mem_eq(rec.value, "55", 2);
	ck_assert_uint_eq(rec.time_ms, 0);
	/* DEL, then LIVE and READ find nothing. */
	ck_assert_int_eq(cas(st, "k",
			     (struct store_cas){.cond = WIRE_CAS_LIVE, .action = WIRE_CAS_DEL},
			     NULL, 1300, &v, &left),
			 STORE_CAS_OK);
	ck_assert_uint_gt(v, v1);
	ck_assert_int_eq(
	    cas(st, "k", (struct store_cas){.cond = WIRE_CAS_LIVE}, "x", 1300, &v, &left),
	    STORE_CAS_ABSENT);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(
	    cas(st, "k", (struct store_cas){.action = WIRE_CAS_READ}, NULL, 1300, &v, &left),
	    STORE_CAS_ABSENT);
	store_close(st);
}
END_TEST

/* An expired value counts as absent: VERSION 0 (SET NX) writes over it. */
START_TEST(cas_expired_is_absent)
{
	struct store *st = open_store();
	uint64_t v1 = put(st, "e", "old", 100, 1000), v, left;

	ck_assert_int_eq(cas(st, "e", (struct store_cas){.cond = WIRE_CAS_VERSION, .expect = v1},
			     "new", 1200, &v, &left),
			 STORE_CAS_ABSENT);
	ck_assert_int_eq(
	    cas(st, "e", (struct store_cas){.cond = WIRE_CAS_VERSION}, "new", 1200, &v, &left),
	    STORE_CAS_OK);
	ck_assert_uint_gt(v, v1);
	store_close(st);
}
END_TEST

START_TEST(overwrite_clears_old_expiry)
{
	struct store *st = open_store();
	struct store_record rec;
	uint64_t now = store_now_ms();
	uint32_t removed, visited;

	put(st, "e", "short", 10, now);
	put(st, "e", "forever", 0, now);
	/* The old expiry entry must not delete the new value. */
	ck_assert_int_eq(store_expire_round(st, now + 1000, 20, &visited, &removed), 0);
	ck_assert_uint_eq(removed, 0);
	ck_assert_int_eq(store_get(st, STORE_OWNED, "e", 1, &rec, NULL, 0), 1);
	ck_assert(store_record_live(&rec, now + 1000));
	store_close(st);
}
END_TEST

/* No copies are recorded (so none sent) once a write of the key's stripe began. */
START_TEST(copies_refused_once_a_write_began)
{
	struct store *st = open_store();
	struct store_copies two = {.owner = 1}, three = {.owner = 1}, got;
	uint64_t h = keyhash("k", 1), gate, other;

	two.targets[0] = 1u << 2;
	three.targets[0] = 1u << 3;
	ck_assert(store_write_gate(st, h, &gate));
	ck_assert_int_eq(store_copies_add(st, "k", 1, &two, gate), 0);
	ck_assert_int_eq(store_copies_get(st, "k", 1, &got), 1);
	ck_assert_uint_eq(got.targets[0], 1u << 2);
	/* A write begins after the gate was taken: the add is refused. */
	store_write_begin(st, h);
	ck_assert_int_eq(store_copies_add(st, "k", 1, &three, gate), -EBUSY);
	ck_assert_int_eq(store_copies_get(st, "k", 1, &got), 1);
	ck_assert_uint_eq(got.targets[0], 1u << 2);
	/* While it runs the gate stays shut. */
	ck_assert(!store_write_gate(st, h, &other));
	store_write_end(st, h);
	/* Open again after it ended, and only for a gate taken since. */
	ck_assert(store_write_gate(st, h, &other));
	ck_assert_int_eq(store_copies_add(st, "k", 1, &two, gate), -EBUSY);
	ck_assert_int_eq(store_copies_add(st, "k", 1, &two, other), 0);
	/* Writes count per stripe: another stripe's gate is unaffected. */
	ck_assert(store_write_gate(st, h + 1, &gate));
	store_write_begin(st, h);
	ck_assert(store_write_gate(st, h + 1, &other));
	ck_assert_uint_eq(other, gate);
	store_write_end(st, h);
	ck_assert_int_eq(store_copies_clear(st, "k", 1), 0);
	ck_assert_int_eq(store_copies_get(st, "k", 1, &got), 0);
	store_close(st);
}
END_TEST

/* Copies recorded before a restart are found after it (the lookup's filter is filled at open). */
START_TEST(copies_survive_reopen)
{
	struct store *st = open_store();
	struct store_copies c = {.owner = 2}, got;
	char key[16];
	uint64_t gate;

	c.targets[0] = 1u << 5;
	for (int i = 0; i < 100; i++) {
		int kl = snprintf(key, sizeof(key), "k%d", i);

		ck_assert(store_write_gate(st, keyhash(key, (size_t)kl), &gate));
		ck_assert_int_eq(store_copies_add(st, key, (size_t)kl, &c, gate), 0);
	}
	store_close(st);
	st = open_store();
	for (int i = 0; i < 100; i++) {
		int kl = snprintf(key, sizeof(key), "k%d", i);

		ck_assert_int_eq(store_copies_get(st, key, (size_t)kl, &got), 1);
		ck_assert_uint_eq(got.owner, 2);
		ck_assert_uint_eq(got.targets[0], 1u << 5);
	}
	ck_assert_int_eq(store_copies_get(st, "never", 5, &got), 0);
	store_close(st);
}
END_TEST

/* The replica family holds key with this kind and version. */
static void assert_replica(struct store *st, const char *key, uint8_t kind, uint64_t version)
{
	struct store_record rec;

	ck_assert_int_eq(store_get(st, STORE_REPLICA, key, strlen(key), &rec, NULL, 0), 1);
	ck_assert_uint_eq(rec.kind, kind);
	ck_assert_uint_eq(rec.version, version);
}

START_TEST(replica_rules)
{
	struct store *st = open_store();
	struct store_record rec;
	uint8_t val[64];
	uint64_t h = keyhash("r", 1), now = store_now_ms(), held;

	ck_assert_int_eq(store_replica_put(st, h, "r", 1, 5, STORE_VALUE, 0, "v5", 2, now, &held),
			 1);
	/* Stale copy: ignored, reports the held version. */
	ck_assert_int_eq(store_replica_put(st, h, "r", 1, 3, STORE_VALUE, 0, "v3", 2, now, &held),
			 0);
	ck_assert_uint_eq(held, 5);
	ck_assert_int_eq(store_get(st, STORE_REPLICA, "r", 1, &rec, val, sizeof(val)), 1);
	ck_assert_uint_eq(rec.version, 5);
	ck_assert_int_eq(memcmp(rec.value, "v5", 2), 0);
	/* Replica copies never show up as owned data. */
	ck_assert_int_eq(store_get(st, STORE_OWNED, "r", 1, &rec, NULL, 0), 0);
	/* A tombstone beats a later-arriving older value. */
	ck_assert_int_eq(
	    store_replica_put(st, h, "r", 1, 7, STORE_TOMBSTONE, 0, NULL, 0, now, &held), 1);
	ck_assert_int_eq(store_replica_put(st, h, "r", 1, 6, STORE_VALUE, 0, "v6", 2, now, &held),
			 0);
	assert_replica(st, "r", STORE_TOMBSTONE, 7);
	ck_assert_int_eq(store_replica_drop(st, h, "r", 1, 0, now), 1);
	ck_assert_int_eq(store_replica_drop(st, h, "r", 1, 0, now), 0);
	ck_assert_int_eq(store_get(st, STORE_REPLICA, "r", 1, &rec, NULL, 0), 0);
	store_close(st);
}
END_TEST

/* A home's drop leaves a floor: a copy at or below it arriving late is refused. */
START_TEST(replica_floor_refuses_late_copies)
{
	struct store *st = open_store();
	struct store_record rec;
	uint64_t h = keyhash("f", 1), now = store_now_ms(), held = 99;
	uint32_t removed;

	ck_assert_int_eq(store_replica_put(st, h, "f", 1, 4, STORE_VALUE, 0, "v4", 2, now, &held),
			 1);
	ck_assert_int_eq(store_replica_drop(st, h, "f", 1, 5, now), 1);
	assert_replica(st, "f", STORE_DROPPED, 5);
	/* The copy the REPLICATE before the write pushed, arriving after the drop. */
	ck_assert_int_eq(store_replica_put(st, h, "f", 1, 5, STORE_VALUE, 0, "v5", 2, now, &held),
			 0);
	ck_assert_uint_eq(held, 0); /* nothing held: the switch must not add this node */
	ck_assert_int_eq(store_replica_put(st, h, "f", 1, 3, STORE_VALUE, 0, "v3", 2, now, &held),
			 0);
	/* Dropping again keeps the higher floor and reports nothing dropped. */
	ck_assert_int_eq(store_replica_drop(st, h, "f", 1, 2, now), 0);
	assert_replica(st, "f", STORE_DROPPED, 5);
	/* The write's own version is copied as usual. */
	ck_assert_int_eq(store_replica_put(st, h, "f", 1, 6, STORE_VALUE, 0, "v6", 2, now, &held),
			 1);
	assert_replica(st, "f", STORE_VALUE, 6);
	/* A late retry of the drop does not touch a copy pushed after it. */
	ck_assert_int_eq(store_replica_drop(st, h, "f", 1, 5, now), 0);
	assert_replica(st, "f", STORE_VALUE, 6);
	/* A floor with nothing held; a switch's drop (floor 0) leaves it in place;
	 * it is collected like a tombstone. */
	ck_assert_int_eq(store_replica_drop(st, keyhash("g", 1), "g", 1, 8, now), 0);
	ck_assert_int_eq(store_replica_drop(st, keyhash("g", 1), "g", 1, 0, now), 0);
	assert_replica(st, "g", STORE_DROPPED, 8);
	ck_assert_int_eq(store_gc_round(st, now, 100, &removed), 0);
	ck_assert_uint_eq(removed, 1);
	ck_assert_int_eq(store_get(st, STORE_REPLICA, "g", 1, &rec, NULL, 0), 0);
	store_close(st);
}
END_TEST

/* Write pressure: the rule, and RocksDB's numbers for an idle store. */
START_TEST(write_pressure)
{
	struct store *st = open_store();
	struct store_pressure p = {.l0_stop = 36, .pending_hard = 1000};

	ck_assert_uint_eq(store_pressure_pct(&p), 0);
	p.l0_files = 9;
	ck_assert_uint_eq(store_pressure_pct(&p), 25);
	p.pending_bytes = 400; /* the larger ratio counts */
	ck_assert_uint_eq(store_pressure_pct(&p), 40);
	p.delayed = true; /* delayed: at least 50 */
	ck_assert_uint_eq(store_pressure_pct(&p), 50);
	p.l0_files = 40; /* past the stop trigger: capped */
	ck_assert_uint_eq(store_pressure_pct(&p), 100);
	p = (struct store_pressure){.stopped = true};
	ck_assert_uint_eq(store_pressure_pct(&p), 100);

	ck_assert_int_eq(store_pressure_read(st, &p), 0);
	ck_assert(!p.stopped && !p.delayed);
	ck_assert_uint_gt(p.l0_stop, 0);
	ck_assert_uint_gt(p.pending_hard, 0);
	ck_assert_uint_eq(store_pressure_pct(&p), 0);
	store_close(st);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("node_store");
	TCase *tc = tcase_create("store");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, record_roundtrip);
	tcase_add_test(tc, copies_refused_once_a_write_began);
	tcase_add_test(tc, copies_survive_reopen);
	tcase_add_test(tc, versions_per_key_and_reopen);
	tcase_add_test(tc, reads_ahead);
	tcase_add_test(tc, gc_keeps_versions_increasing);
	tcase_add_test(tc, overwrite_clears_old_expiry);
	tcase_add_test(tc, cas_conditions_and_actions);
	tcase_add_test(tc, cas_expired_is_absent);
	tcase_add_test(tc, replica_rules);
	tcase_add_test(tc, replica_floor_refuses_late_copies);
	tcase_add_test(tc, write_pressure);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
