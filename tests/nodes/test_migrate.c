/*
 * test_migrate.c - the migration state machine of nodes/migrate.c over real
 * RocksDB stores: three nodes in one process, their FETCH and MIGRATE
 * delivered by direct calls (or lost, for a node that is down). Adding a
 * node: lazy read-through keeps versions, writes at the new home go above
 * them, the previous home refuses, the warm-up moves everything and deletes
 * what was acknowledged; the new home crashes in the middle of the warm-up
 * and restarts, the old home restarts too; then the node is removed again.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check_quiet.h"
#include "keyhash.h"
#include "migrate.h"
#include "rchange.h"
#include "store.h"

#define NODES 3
#define NKEYS 3000

struct host {
	char dir[256];
	struct store *st;
	struct dedup dedup; /* the at-most-once table: in memory, gone with a crash */
	struct mig mig;
	bool up;
};

static struct host hosts[NODES + 1];
static struct ring r2, r3, r2b; /* n1 n2 (v1); + n3 (v2); n3 removed again (v3) */

struct expect {
	uint64_t version;
	bool deleted;
	char value[32];
};
static struct expect want[NKEYS];

static int t_fetch(void *arg, uint16_t from, uint64_t epoch, uint64_t hash, const void *key,
		   size_t klen, struct mig_record *rec, void *buf, size_t cap)
{
	(void)arg;
	if (from > NODES || !hosts[from].up)
		return -ETIMEDOUT;
	return mig_serve_fetch(&hosts[from].mig, epoch, hash, key, klen, rec, buf, cap,
			       store_now_ms());
}

static int t_push(void *arg, uint16_t to, uint64_t epoch, uint64_t hash, const void *key,
		  size_t klen, const struct mig_record *rec)
{
	(void)arg;
	if (to > NODES || !hosts[to].up)
		return -ETIMEDOUT;
	return mig_serve_push(&hosts[to].mig, epoch, hash, key, klen, rec, store_now_ms());
}

static const struct mig_transport transport = {.fetch = t_fetch, .push = t_push};

static void make_ring(struct ring *r, const int *ids, int n, uint64_t version)
{
	struct ring_node nodes[NODES];

	for (int i = 0; i < n; i++) {
		nodes[i].id = (uint16_t)ids[i];
		nodes[i].weight = 1;
		snprintf(nodes[i].name, sizeof(nodes[i].name), "n%d", ids[i]);
	}
	ck_assert_int_eq(ring_build(r, nodes, (size_t)n, version), 0);
}

/* Start (or restart) node id over its data directory. */
static void boot(int id, const struct ring *cfg_ring, bool join)
{
	struct store_options o = {.block_cache_mb = 8};
	char err[512] = "";
	struct host *h = &hosts[id];

	h->st = store_open(h->dir, &o, err, sizeof(err));
	ck_assert_msg(h->st != NULL, "%s", err);
	dedup_init(&h->dedup);
	ck_assert_int_eq(mig_init(&h->mig, h->st, &h->dedup, (uint16_t)id, &transport, NULL), 0);
	ck_assert_int_eq(mig_restore(&h->mig, cfg_ring, join), 0);
	h->up = true;
}

/* A crash: the process is gone, what RocksDB holds stays. */
static void crash(int id)
{
	struct host *h = &hosts[id];

	h->up = false;
	mig_fini(&h->mig);
	dedup_fini(&h->dedup);
	store_close(h->st);
	h->st = NULL;
}

static void key_of(uint32_t i, char *buf, size_t cap, size_t *len)
{
	*len = (size_t)snprintf(buf, cap, "user:%u", i);
}

static void setup(void)
{
	int ids2[] = {1, 2}, ids3[] = {1, 2, 3};

	for (int id = 1; id <= NODES; id++) {
		snprintf(hosts[id].dir, sizeof(hosts[id].dir), "/tmp/skl-test-mig%d-XXXXXX", id);
		ck_assert_ptr_nonnull(mkdtemp(hosts[id].dir));
	}
	make_ring(&r2, ids2, 2, 1);
	make_ring(&r3, ids3, 3, 2);
	make_ring(&r2b, ids2, 2, 3);
}

static void teardown(void)
{
	char cmd[600];

	for (int id = 1; id <= NODES; id++) {
		if (hosts[id].up)
			crash(id);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", hosts[id].dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", hosts[id].dir);
	}
	ring_free(&r2);
	ring_free(&r3);
	ring_free(&r2b);
}

/* A client write at the key's home as a node does it: hand-over lock, read-through, write. */
static int write_at_home(uint32_t i, bool del)
{
	char key[32];
	size_t klen;
	uint64_t hash, v = 0;
	int home, rc;

	key_of(i, key, sizeof(key), &klen);
	hash = keyhash(key, klen);
	home = mig_home(&hosts[1].mig, hash);
	ck_assert_int_eq(mig_home(&hosts[2].mig, hash), home); /* nodes agree */
	mig_lock(&hosts[home].mig, hash);
	ck_assert_uint_eq(mig_home(&hosts[home].mig, hash), home);
	rc = mig_ensure(&hosts[home].mig, hash, key, klen, store_now_ms());
	if (rc == 0) {
		if (del) {
			rc = store_del(hosts[home].st, hash, key, klen, store_now_ms(), &v);
			ck_assert_int_eq(rc, 1);
			rc = 0;
			want[i].deleted = true;
		} else {
			snprintf(want[i].value, sizeof(want[i].value), "v%u-%lu", i,
				 (unsigned long)want[i].version);
			rc = store_put(hosts[home].st, hash, key, klen, want[i].value,
				       strlen(want[i].value), 0, store_now_ms(), 0, &v);
			ck_assert_int_eq(rc, 0);
			want[i].deleted = false;
		}
		ck_assert_uint_gt(v, want[i].version); /* never below what existed */
		want[i].version = v;
	}
	mig_unlock(&hosts[home].mig, hash);
	return rc;
}

/* A read at the key's home: 1 value, 0 not found (tombstone or nothing). */
static int read_at_home(uint32_t i, uint64_t *version, char *val, size_t cap)
{
	char key[32];
	size_t klen;
	uint64_t hash;
	struct store_record rec;
	int home, rc;

	key_of(i, key, sizeof(key), &klen);
	hash = keyhash(key, klen);
	home = mig_home(hosts[3].up ? &hosts[3].mig : &hosts[1].mig, hash);
	mig_lock(&hosts[home].mig, hash);
	rc = mig_ensure(&hosts[home].mig, hash, key, klen, store_now_ms());
	mig_unlock(&hosts[home].mig, hash);
	ck_assert_int_eq(rc, 0);
	memset(val, 0, cap);
	rc = store_get(hosts[home].st, STORE_OWNED, key, klen, &rec, val, cap - 1);
	ck_assert_int_ge(rc, 0);
	*version = rc ? rec.version : 0;
	return rc && rec.kind == STORE_VALUE;
}

static void check_all(void)
{
	for (uint32_t i = 0; i < NKEYS; i++) {
		uint64_t v;
		char val[64];
		int found = read_at_home(i, &v, val, sizeof(val));

		ck_assert_msg(v == want[i].version, "key %u: version %lu, want %lu", i,
			      (unsigned long)v, (unsigned long)want[i].version);
		ck_assert_int_eq(found, !want[i].deleted);
		if (found)
			ck_assert_str_eq(val, want[i].value);
	}
}

/* Owned records of keys whose home is not id: 0 once a warm-up has finished. */
static uint32_t foreign_records(int id)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < NKEYS; i++) {
		char key[32];
		size_t klen;
		struct store_record rec;

		key_of(i, key, sizeof(key), &klen);
		if (mig_home(&hosts[id].mig, keyhash(key, klen)) != id &&
		    store_get(hosts[id].st, STORE_OWNED, key, klen, &rec, NULL, 0) > 0)
			n++;
	}
	return n;
}

/*
 * Node id's warm-up progress, checked arc by arc: the first *done of its arcs
 * (as a previous home, in the order of the arcs) hold none of its records
 * any more. Returns the phase.
 */
static enum mig_warm_phase arcs_checked(int id, uint32_t *out, uint32_t *done)
{
	struct mig_view *v = atomic_load(&hosts[id].mig.view);
	enum mig_warm_phase phase = mig_warm_progress(&hosts[id].mig, out, done);
	uint32_t seen = 0, last_done = 0;
	bool any = false;

	ck_assert_uint_le(*done, *out);
	/* The arc index of the last of id's arcs that is done. */
	for (uint32_t a = 0; a < v->change.narcs && seen < *done; a++)
		if (v->change.arcs[a].from == id) {
			seen++;
			last_done = a;
			any = true;
		}
	for (uint32_t i = 0; any && i < NKEYS; i++) {
		char key[32];
		size_t klen;
		struct store_record rec;
		const struct rch_arc *arc;

		key_of(i, key, sizeof(key), &klen);
		arc = rch_arc_of(&v->change, keyhash_point(keyhash(key, klen)));
		if (arc && arc->from == id && (uint32_t)(arc - v->change.arcs) <= last_done)
			ck_assert_msg(
			    store_get(hosts[id].st, STORE_OWNED, key, klen, &rec, NULL, 0) == 0,
			    "key %u is still at n%d, its arc %ld marked done", i, id,
			    (long)(arc - v->change.arcs));
	}
	return phase;
}

static void warm_until_done(int id, uint32_t budget)
{
	bool done = false;

	for (int step = 0; step < 10000 && !done; step++)
		ck_assert_int_ge(mig_warmup_step(&hosts[id].mig, budget, store_now_ms(), &done), 0);
	ck_assert(done);
	ck_assert_uint_eq(foreign_records(id), 0);
	uint32_t out, arcs_done;
	ck_assert_int_eq(arcs_checked(id, &out, &arcs_done), MIG_WARM_DONE);
	ck_assert_uint_eq(arcs_done, out);
}

static uint32_t all_active(void)
{
	struct rchange c;
	uint32_t n;

	ck_assert_int_eq(rch_build(&c, &r2, &r3), 0);
	n = c.narcs;
	rch_free(&c);
	return n;
}

static int count_one(void *arg, const void *key, size_t klen, const struct store_record *rec)
{
	(void)arg, (void)key, (void)klen, (void)rec;
	return 0;
}

START_TEST(add_then_remove_a_node)
{
	uint32_t narcs = all_active(), moved = 0;
	char key[32];
	size_t klen;

	boot(1, &r2, false);
	boot(2, &r2, false);
	boot(3, &r3, true); /* joining: the home of nothing until told */
	for (uint32_t i = 0; i < NKEYS; i++) {
		ck_assert_int_eq(write_at_home(i, false), 0);
		if (i % 3 == 0)
			ck_assert_int_eq(write_at_home(i, false), 0);
		if (i % 29 == 0)
			ck_assert_int_eq(write_at_home(i, true), 0);
	}
	key_of(7, key, sizeof(key), &klen);
	ck_assert_uint_eq(mig_home(&hosts[3].mig, keyhash(key, klen)), 0);

	/* RING(v2, 0 arcs) to everyone: nothing moves yet. */
	for (int id = 1; id <= 3; id++)
		ck_assert_int_eq(mig_begin(&hosts[id].mig, &r2, &r3, 0), 0);
	for (uint32_t i = 0; i < NKEYS; i++) {
		key_of(i, key, sizeof(key), &klen);
		ck_assert_uint_eq(mig_home(&hosts[3].mig, keyhash(key, klen)),
				  ring_home(&r2, keyhash(key, klen)));
	}
	check_all();

	/* Every arc active at the new home only: the first FETCH brings the old home along. */
	ck_assert_int_eq(mig_advance(&hosts[3].mig, rch_epoch(2, narcs)), 1);
	for (uint32_t i = 0; i < NKEYS; i++) {
		uint64_t hash;

		key_of(i, key, sizeof(key), &klen);
		hash = keyhash(key, klen);
		if (ring_home(&r3, hash) != 3)
			continue;
		moved++;
		if (moved == 1) {
			int old = ring_home(&r2, hash);
			struct mig_record rec;
			uint8_t buf[256];

			ck_assert_uint_eq(mig_home(&hosts[old].mig, hash), old);
			ck_assert_int_ge(mig_serve_fetch(&hosts[old].mig, mig_epoch(&hosts[3].mig),
							 hash, key, klen, &rec, buf, sizeof(buf),
							 store_now_ms()),
					 0);
			/* From now on the old home refuses the key: MOVED to n3. */
			ck_assert_uint_eq(mig_home(&hosts[old].mig, hash), 3);
		}
	}
	ck_assert_uint_gt(moved, NKEYS / 6);
	/* The FETCH made one old home adopt the epoch already; the switch's RING does the rest. */
	ck_assert_int_ge(mig_advance(&hosts[1].mig, rch_epoch(2, narcs)), 0);
	ck_assert_int_ge(mig_advance(&hosts[2].mig, rch_epoch(2, narcs)), 0);
	ck_assert_int_eq(mig_advance(&hosts[2].mig, rch_epoch(2, narcs)), 0); /* not newer */
	for (int id = 1; id <= 3; id++)
		ck_assert_uint_eq(mig_epoch(&hosts[id].mig), rch_epoch(2, narcs));

	/* Lazy: reads at the new home read through with their versions. */
	check_all();
	ck_assert_uint_gt(atomic_load(&hosts[3].mig.ctr[MIG_CTR_read_through]), moved / 2);
	/* Writes at the new home go above every version the old home gave. */
	for (uint32_t i = 0; i < NKEYS; i += 5)
		ck_assert_int_eq(write_at_home(i, false), 0);

	/* Warm-up: n1 indexes its moved keys by arc and pushes part of them, arc by
	 * arc; then the new home crashes. */
	bool done = false;
	uint32_t out, arcs_done, before;
	ck_assert_int_eq(arcs_checked(1, &out, &arcs_done), MIG_WARM_INDEX);
	ck_assert_uint_gt(out, 1);
	ck_assert_uint_eq(arcs_done, 0);
	ck_assert_int_gt(mig_warmup_step(&hosts[1].mig, 150, store_now_ms(), &done), 0);
	ck_assert_int_eq(arcs_checked(1, &out, &arcs_done), MIG_WARM_PUSH);
	ck_assert_uint_gt(arcs_done, 0); /* some arcs done, not all */
	ck_assert_uint_lt(arcs_done, out);
	before = arcs_done;
	crash(3);
	ck_assert_int_eq(mig_warmup_step(&hosts[1].mig, 300, store_now_ms(), &done), -EAGAIN);
	ck_assert(!done);
	ck_assert_uint_gt(atomic_load(&hosts[1].mig.ctr[MIG_CTR_push_failed]), 0);
	/* Nothing unacknowledged was deleted at n1, and reads of its keys fail, not lie. */
	ck_assert_uint_gt(foreign_records(1), 0);
	/* n2 restarts as well, in the middle of nothing. */
	crash(2);
	boot(2, &r3, false);
	ck_assert_uint_eq(mig_epoch(&hosts[2].mig), rch_epoch(2, narcs));

	/* The new home restarts: the change resumes from its meta family. */
	boot(3, &r3, false);
	ck_assert_uint_eq(mig_epoch(&hosts[3].mig), rch_epoch(2, narcs));
	check_all();
	/* n1 restarts in the middle of its warm-up and resumes from its cursor, in its arc. */
	ck_assert_int_eq(arcs_checked(1, &out, &arcs_done), MIG_WARM_PUSH);
	ck_assert_uint_eq(arcs_done, before); /* nothing was pushed while n3 was down */
	ck_assert_int_gt(mig_warmup_step(&hosts[1].mig, 20, store_now_ms(), &done), 0);
	ck_assert_int_eq(arcs_checked(1, &out, &arcs_done), MIG_WARM_PUSH);
	before = arcs_done;
	crash(1);
	boot(1, &r3, false);
	ck_assert_int_eq(arcs_checked(1, &out, &arcs_done), MIG_WARM_PUSH);
	ck_assert_uint_gt(arcs_done, 0); /* the progress survived the restart */
	ck_assert_uint_le(arcs_done, before);
	warm_until_done(1, 256);
	warm_until_done(2, 256);
	check_all();
	ck_assert_uint_eq(foreign_records(3), 0);

	/* Complete: no more read-through, and a new change is accepted. */
	for (int id = 1; id <= 3; id++) {
		ck_assert_int_eq(mig_advance(&hosts[id].mig, rch_epoch(2, RCH_COMPLETE)), 1);
		key_of(1, key, sizeof(key), &klen);
		ck_assert_uint_eq(mig_prev_home(&hosts[id].mig, keyhash(key, klen)), 0);
	}

	/* Remove n3 (version 3): its arcs drain back, its keys readable throughout. */
	for (int id = 1; id <= 3; id++)
		ck_assert_int_eq(mig_begin(&hosts[id].mig, &r3, &r2b, 0), 0);
	for (int id = 1; id <= 3; id++)
		ck_assert_int_eq(mig_advance(&hosts[id].mig, rch_epoch(3, narcs)), 1);
	for (uint32_t i = 1; i < NKEYS; i += 7)
		ck_assert_int_eq(write_at_home(i, false), 0);
	check_all();
	warm_until_done(3, 100);
	ck_assert_uint_gt(atomic_load(&hosts[3].mig.ctr[MIG_CTR_handed_over]), 0);
	warm_until_done(1, 1000);
	warm_until_done(2, 1000);
	check_all();
	/* n3 holds nothing any more: it may leave. */
	bool end = false;
	ck_assert_int_eq(store_scan_owned(hosts[3].st, NULL, 0, 10, count_one, NULL, &end), 0);
	ck_assert(end);
}
END_TEST

START_TEST(one_change_at_a_time)
{
	uint32_t narcs = all_active();

	boot(1, &r2, false);
	boot(2, &r2, false);
	ck_assert_int_eq(mig_begin(&hosts[1].mig, &r2, &r3, 0), 0);
	/* Another change while this one runs: refused; an older one: refused. */
	ck_assert_int_eq(mig_begin(&hosts[1].mig, &r3, &r2b, 0), -EBUSY);
	ck_assert_int_eq(mig_begin(&hosts[2].mig, &r2b, &r3, 0), -ESTALE);
	/* A FETCH of another version is refused (ask again once told). */
	struct mig_record rec;
	uint8_t buf[64];
	ck_assert_int_eq(
	    mig_serve_fetch(&hosts[2].mig, rch_epoch(2, 5), 1, "k", 1, &rec, buf, sizeof(buf), 0),
	    -EAGAIN);
	/* Epochs only grow. */
	ck_assert_int_eq(mig_advance(&hosts[1].mig, rch_epoch(2, narcs)), 1);
	ck_assert_int_eq(mig_advance(&hosts[1].mig, rch_epoch(2, 1)), 0);
	ck_assert_uint_eq(mig_epoch(&hosts[1].mig), rch_epoch(2, narcs));
	ck_assert_int_eq(mig_advance(&hosts[1].mig, rch_epoch(1, narcs)), -ESTALE);
	/* The warm-up of a node with nothing to push finishes at once. */
	bool done = false;
	ck_assert_int_eq(mig_warmup_step(&hosts[1].mig, 10, 0, &done), 0);
	ck_assert(done);
	/* A data directory from a newer ring than the config is an error. */
	crash(1);
	struct store_options o = {.block_cache_mb = 8};
	char err[256];
	hosts[1].st = store_open(hosts[1].dir, &o, err, sizeof(err));
	ck_assert_ptr_nonnull(hosts[1].st);
	dedup_init(&hosts[1].dedup);
	mig_init(&hosts[1].mig, hosts[1].st, &hosts[1].dedup, 1, &transport, NULL);
	ck_assert_int_eq(mig_restore(&hosts[1].mig, &r2, false), -ESTALE);
	hosts[1].up = true;
}
END_TEST

/*
 * A PUT with req_id at key i's home as server.c's serve_write() does it:
 * hand-over lock, read-through, then at most once per req_id. Returns the
 * version the client is answered with; *retried: the at-most-once table
 * answered (the write was not applied again).
 */
static uint64_t put_once(int home, uint32_t i, uint64_t req_id, const char *value, bool *retried)
{
	char key[32];
	size_t klen;
	uint64_t hash, v = 0;
	const struct dedup_slot *done;

	key_of(i, key, sizeof(key), &klen);
	hash = keyhash(key, klen);
	mig_lock(&hosts[home].mig, hash);
	ck_assert_uint_eq(mig_home(&hosts[home].mig, hash), home);
	ck_assert_int_eq(mig_ensure(&hosts[home].mig, hash, key, klen, store_now_ms()), 0);
	done = dedup_begin(&hosts[home].dedup, req_id, hash);
	*retried = done != NULL;
	if (done) {
		v = done->version;
		dedup_end(&hosts[home].dedup, req_id, hash, false, 0, 0);
	} else {
		ck_assert_int_eq(store_put(hosts[home].st, hash, key, klen, value, strlen(value), 0,
					   store_now_ms(), 0, &v),
				 0);
		dedup_end(&hosts[home].dedup, req_id, hash, true, 0, v);
	}
	mig_unlock(&hosts[home].mig, hash);
	return v;
}

/* The first key from `from` whose home moves to n3 (from 0: any), its previous home in *old. */
static uint32_t moving_key(uint32_t from, int *old)
{
	for (uint32_t i = from; i < NKEYS; i++) {
		char key[32];
		size_t klen;
		uint64_t hash;

		key_of(i, key, sizeof(key), &klen);
		hash = keyhash(key, klen);
		if (ring_home(&r3, hash) == 3) {
			*old = (int)ring_home(&r2, hash);
			return i;
		}
	}
	ck_abort_msg("no key moves to n3");
	return 0;
}

/*
 * A write applied at the old home whose reply was lost, retried (same
 * req_id) after the cut-over at the new home, after another client's newer
 * write there: the retry is answered with its first outcome, not applied
 * again over the newer write. Once by read-through (FETCH), once by the
 * warm-up (MIGRATE).
 */
START_TEST(retry_across_the_cut_over)
{
	uint32_t narcs = all_active(), a, b;
	uint64_t v1, v2, again, newer, req_a = 5ull << 32 | 1, req_b = 5ull << 32 | 2;
	int old_a, old_b;
	bool retried;
	char key[32];
	size_t klen;
	struct store_record rec;
	char val[64];

	boot(1, &r2, false);
	boot(2, &r2, false);
	boot(3, &r3, true);
	a = moving_key(0, &old_a);
	b = moving_key(a + 1, &old_b);
	v1 = put_once(old_a, a, req_a, "first", &retried);
	ck_assert(!retried);
	v2 = put_once(old_b, b, req_b, "first", &retried);
	ck_assert(!retried);

	/* The cut-over: every arc active everywhere. */
	for (int id = 1; id <= 3; id++) {
		ck_assert_int_eq(mig_begin(&hosts[id].mig, &r2, &r3, 0), 0);
		ck_assert_int_ge(mig_advance(&hosts[id].mig, rch_epoch(2, narcs)), 0);
	}
	/* Key a: another client writes it at the new home (read-through first), then the retry. */
	newer = put_once(3, a, 9ull << 32 | 1, "newer", &retried);
	ck_assert(!retried);
	ck_assert_uint_gt(newer, v1);
	again = put_once(3, a, req_a, "first", &retried);
	ck_assert_msg(retried, "the retry was applied a second time at the new home");
	ck_assert_uint_eq(again, v1);
	key_of(a, key, sizeof(key), &klen);
	memset(val, 0, sizeof(val));
	ck_assert_int_eq(store_get(hosts[3].st, STORE_OWNED, key, klen, &rec, val, sizeof(val) - 1),
			 1);
	ck_assert_uint_eq(rec.version, newer);
	ck_assert_str_eq(val, "newer");

	/* Key b: moved by the warm-up, then retried at the new home. */
	warm_until_done(old_b, 1000);
	again = put_once(3, b, req_b, "first", &retried);
	ck_assert_msg(retried, "the retry of a pushed key was applied a second time");
	ck_assert_uint_eq(again, v2);
}
END_TEST

/* Delete key i at its home and collect the tombstone there, as tombstone GC does. */
static void delete_and_collect(uint32_t i)
{
	char key[32];
	size_t klen;
	uint32_t removed = 0;
	int home;

	ck_assert_int_eq(write_at_home(i, true), 0);
	key_of(i, key, sizeof(key), &klen);
	home = mig_home(&hosts[1].mig, keyhash(key, klen));
	ck_assert_int_eq(store_gc_round(hosts[home].st, store_now_ms() + 1000, 1000000, &removed),
			 0);
	ck_assert_uint_gt(removed, 0);
	ck_assert_uint_ge(store_floor(hosts[home].st), want[i].version);
}

/*
 * Keys whose tombstones their previous homes collected before the change:
 * a previous home holds nothing of them, only its version floor remembers
 * their versions. Written again at the new home, each must still get a
 * version above every one its previous home gave: a read through (the FETCH
 * answer carries the floor), and, at the other previous home, a key first
 * written after the change is complete, with no FETCH (every node takes the
 * highest floor the switch heard of before it takes the complete epoch).
 */
START_TEST(versions_above_what_was_collected)
{
	uint32_t narcs = all_active(), a, b;
	uint64_t floor = 0;
	int old_a, old_b;

	boot(1, &r2, false);
	boot(2, &r2, false);
	boot(3, &r3, true);
	a = moving_key(0, &old_a);
	b = moving_key(a + 1, &old_b);
	while (old_b == old_a) /* b from the other previous home */
		b = moving_key(b + 1, &old_b);
	for (int round = 0; round < 20; round++)
		ck_assert_int_eq(write_at_home(a, false), 0);
	for (int round = 0; round < 40; round++) /* b's versions above a's previous home's */
		ck_assert_int_eq(write_at_home(b, false), 0);
	delete_and_collect(a);
	delete_and_collect(b);
	for (int id = 1; id <= 3; id++) {
		ck_assert_int_eq(mig_begin(&hosts[id].mig, &r2, &r3, 0), 0);
		ck_assert_int_ge(mig_advance(&hosts[id].mig, rch_epoch(2, narcs)), 0);
	}
	/* Read through: nothing at the previous home, but its floor. */
	ck_assert_int_eq(write_at_home(a, false), 0); /* asserts the version is above */
	ck_assert_uint_gt(atomic_load(&hosts[3].mig.ctr[MIG_CTR_read_through_miss]), 0);
	ck_assert_uint_lt(mig_floor(&hosts[3].mig), want[b].version);

	/* Complete (b never read through): every node takes the highest floor first. */
	warm_until_done(1, 1000);
	warm_until_done(2, 1000);
	warm_until_done(3, 1000);
	for (int id = 1; id <= 3; id++) {
		uint64_t f = mig_floor(&hosts[id].mig);

		floor = f > floor ? f : floor;
	}
	for (int id = 1; id <= 3; id++) {
		ck_assert_int_eq(mig_take_floor(&hosts[id].mig, floor), 0);
		ck_assert_int_eq(mig_advance(&hosts[id].mig, rch_epoch(2, RCH_COMPLETE)), 1);
	}
	ck_assert_int_eq(write_at_home(b, false), 0);
	/* The floor taken survives a restart. */
	crash(3);
	boot(3, &r3, false);
	ck_assert_uint_ge(mig_floor(&hosts[3].mig), floor);
}
END_TEST

/* Pushes a pace allows from 0 to `ms`, taken every `every` ms. */
static uint64_t paced(uint32_t rate, uint64_t ms, uint64_t every)
{
	struct mig_pace pace = {0};
	uint64_t total = 0;

	for (uint64_t t = 1000; t <= 1000 + ms; t += every)
		total += mig_pace_take(&pace, rate, t);
	return total;
}

/*
 * The warm-up's pace keeps ring.warmup_keys_per_s at any rate the config
 * allows (1..1000000), with steps every 10 ms or at odd times up to 20 ms
 * apart, and a stall is not made up in a burst.
 */
START_TEST(warm_up_pace)
{
	static const uint32_t rates[] = {1, 7, 50, 99, 150, 5000, 1000000};
	struct mig_pace pace = {0};

	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		uint64_t want = (uint64_t)rates[i] * 10, bucket = (rates[i] + 49) / 50;

		for (uint64_t every = 10; every <= 17; every += 7) {
			uint64_t got = paced(rates[i], 10000, every);

			ck_assert_msg(got <= want + bucket && got + bucket + 1 >= want,
				      "rate %u, a step every %lu ms: %lu pushes in 10 s, want %lu",
				      rates[i], (unsigned long)every, (unsigned long)got,
				      (unsigned long)want);
		}
	}
	/* 5 s without a step: no more than 20 ms of pushes after it. */
	ck_assert_uint_eq(mig_pace_take(&pace, 5000, 1000), 1);
	ck_assert_uint_eq(mig_pace_take(&pace, 5000, 6000), 100);
	ck_assert_uint_eq(mig_pace_take(&pace, 5000, 6000), 0);
	/* A clock that went back starts again, with one push. */
	ck_assert_uint_eq(mig_pace_take(&pace, 5000, 10), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("migrate");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, add_then_remove_a_node);
	tcase_add_test(tc, one_change_at_a_time);
	tcase_add_test(tc, retry_across_the_cut_over);
	tcase_add_test(tc, versions_above_what_was_collected);
	tcase_add_test(tc, warm_up_pace);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
