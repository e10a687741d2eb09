// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the aggregate's merge and encoding: merging equals adding all, the place
 * memo equals the index, and the encoding round-trips (path floors too), reads versions 1
 * and 2, and refuses truncated, corrupt and resealed blobs; the place table stays bounded. */
#include "attr_fixtures.h"

/* ---- merge and encoding ---- */

static struct attr_agg *mixed_population(__u64 seed, int from, int to)
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { seed };

	for (int i = 0; i < to; i++) {
		struct req_event ev;
		struct srv_req x = { 0 };

		if (urand(&g) < 0.05)
			x.qdisc = uni(&g, 1 * MS, 20 * MS);
		if (urand(&g) < 0.02) {
			x.retrans = 200 * MS;
			x.retrans_n = 1;
			x.ecn = urand(&g) < 0.5;
		}
		if (i % 3)
			server_event(&g, &ev, i, 1000 * MS, &x);
		else
			client_event(&g, &ev, i, 1000 * MS, urand(&g) < 0.1 ? 30 * MS : 0);
		if (i >= from)
			attr_agg__add(a, &ev);
	}
	return a;
}

static void test_merge_equals_add_all(void **state)
{
	struct attr_agg *all = mixed_population(11, 0, 6000);
	struct attr_agg *x = mixed_population(11, 0, 2500);
	struct attr_agg *y = mixed_population(11, 2500, 6000);
	struct attr_agg *m = attr_agg__new();
	struct attr_report r1, r2;

	(void)state;
	/* y holds requests 2500.. generated from the same stream */
	attr_agg__merge(m, x);
	attr_agg__merge(m, y);
	assert_true(attr_agg__equal(m, all));
	assert_int_equal(attr_agg__requests(m), 6000);
	attr_analyze(m, NULL, 10, NULL, &r1);
	attr_analyze(all, NULL, 10, NULL, &r2);
	assert_memory_equal(&r1, &r2, sizeof(r1));
	/* and it differs when it should */
	attr_agg__merge(m, y);
	assert_false(attr_agg__equal(m, all));
	attr_agg__free(all);
	attr_agg__free(x);
	attr_agg__free(y);
	attr_agg__free(m);
}

/* The place memo is a cache: requests added one after the other (memo hits) land where
 * each request alone would (no hits: a fresh aggregate per request), also when a socket
 * and thread keep their entry but another place field changes under them. */
static void test_memo_equals_index(void **state)
{
	struct attr_agg *all = attr_agg__new(), *ref = attr_agg__new();
	struct gen g = { 41 };

	(void)state;
	for (int i = 0; i < 3000; i++) {
		struct req_event ev;
		struct srv_req x = { 0 };
		struct attr_agg *one = attr_agg__new();

		if (urand(&g) < 0.2)
			x.qdisc = uni(&g, 100 * US, 20 * MS);
		x.oncpu = uni(&g, 0, 200 * MS); /* latencies over many bands */
		if ((i / 400) % 2)
			client_event(&g, &ev, 0, 1000 * MS, urand(&g) < 0.2 ? 30 * MS : 0);
		else
			server_event(&g, &ev, 0, 1000 * MS, &x);
		ev.sk_cookie = 1000; /* one socket and thread: one memo entry for all */
		ev.tid = 7;
		ev.cpu = 1;
		memcpy(ev.comm, "worker-thread-a", 16);
		/* runs of 40 alike (memo hits), every other run with one field changed */
		switch ((i / 40) % 2 ? (i / 80) % 6 + 1 : 0) {
		case 1: /* the same socket connected again elsewhere */
			ev.raddr[3] = 9;
			break;
		case 2:
			ev.rport ^= 1;
			break;
		case 3: /* renamed thread */
			memcpy(ev.comm, "worker-thread-b", 16);
			break;
		case 4: /* a byte past the cut is no difference */
			memcpy(ev.comm, "worker-thread-aX", 16);
			break;
		case 5:
			ev.ifindex++;
			break;
		case 6:
			ev.tgid++;
			break;
		}
		attr_agg__add(all, &ev);
		attr_agg__add(one, &ev);
		attr_agg__merge(ref, one);
		attr_agg__free(one);
	}
	assert_true(attr_agg__equal(all, ref));
	attr_agg__free(all);
	attr_agg__free(ref);
}

static void test_encode_roundtrip(void **state)
{
	struct attr_agg *a = mixed_population(21, 0, 5000), *b = NULL, *e = attr_agg__new();
	void *buf;
	size_t len;

	(void)state;
	assert_int_equal(attr_agg__encode(a, &buf, &len), 0);
	assert_int_equal(attr_agg__decode(&b, buf, len), 0);
	assert_true(attr_agg__equal(a, b));
	attr_agg__free(b);
	free(buf);
	/* the empty aggregate too */
	assert_int_equal(attr_agg__encode(e, &buf, &len), 0);
	assert_int_equal(attr_agg__decode(&b, buf, len), 0);
	assert_true(attr_agg__equal(e, b));
	attr_agg__free(b);
	free(buf);
	attr_agg__free(a);
	attr_agg__free(e);
}

static void test_decode_corrupt(void **state)
{
	struct attr_agg *a = mixed_population(31, 0, 1500), *b;
	struct gen g = { 77 };
	unsigned char *buf, *copy;
	size_t len;

	(void)state;
	assert_int_equal(attr_agg__encode(a, (void **)&buf, &len), 0);
	/* every truncation, decoded from an exact-size heap copy so a read past the end
	 * would show under ASan/valgrind */
	for (size_t n = 0; n < len; n++) {
		copy = malloc(n ? n : 1);
		memcpy(copy, buf, n);
		b = (struct attr_agg *)1;
		assert_int_equal(attr_agg__decode(&b, copy, n), -EINVAL);
		assert_null(b);
		free(copy);
	}
	/* trailing garbage */
	copy = malloc(len + 1);
	memcpy(copy, buf, len);
	copy[len] = 0;
	assert_int_equal(attr_agg__decode(&b, copy, len + 1), -EINVAL);
	free(copy);
	/* random byte flips, one to four at a time */
	copy = malloc(len);
	for (int i = 0; i < 20000; i++) {
		int k = 1 + (int)(rnd(&g) % 4);

		memcpy(copy, buf, len);
		for (int j = 0; j < k; j++)
			copy[rnd(&g) % len] ^= (unsigned char)(1 + rnd(&g) % 255);
		if (!memcmp(copy, buf, len))
			continue;
		assert_int_equal(attr_agg__decode(&b, copy, len), -EINVAL);
	}
	/* pure garbage, with and without the magic */
	for (int i = 0; i < 2000; i++) {
		size_t n = rnd(&g) % len;

		for (size_t j = 0; j < n; j++)
			copy[j] = (unsigned char)rnd(&g);
		if (n >= 4 && i % 2)
			memcpy(copy, "TTAT", 4);
		assert_int_equal(attr_agg__decode(&b, copy, n), -EINVAL);
	}
	assert_int_equal(attr_agg__decode(&b, NULL, 0), -EINVAL);
	free(copy);
	free(buf);
	attr_agg__free(a);
}

/* A consistent but lying payload (valid checksum) must still be refused. */
static __u64 fnv(const unsigned char *p, size_t n)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void reseal(unsigned char *p, size_t len)
{
	__u64 h = fnv(p, len - 8);

	for (int i = 0; i < 8; i++)
		p[len - 8 + i] = (unsigned char)(h >> (8 * i));
}

/* Recordings made before version 3 still read: the same aggregate less the path floors,
 * which only version 3 carries; version 2 (varints, absent addresses and names left out)
 * is less than half of version 1. */
static void test_decode_older_versions(void **state)
{
	struct attr_agg *a = mixed_population(23, 0, 5000), *b = NULL;
	struct attr_report ra, rb;
	void *v[6], *again;
	size_t len[6], alen;

	(void)state;
	/* requests that overlapped others on their connection: counted from version 3 on */
	{
		struct gen g = { 5 };
		struct req_event ev;

		for (int i = 0; i < 7; i++) {
			client_event(&g, &ev, i, 1000 * MS, 0);
			ev.flags |= REQ_F_OVERLAP;
			attr_agg__add(a, &ev);
		}
		/* timed outside the deep tier's windows: counted apart from version 5 on */
		for (int i = 0; i < 5; i++) {
			client_event(&g, &ev, i, 900 * MS, 0);
			ev.flags |= REQ_F_PARTIAL;
			attr_agg__add(a, &ev);
		}
	}
	for (int ver = 1; ver <= 5; ver++) {
		assert_int_equal(attr_agg__encode_version(a, ver, &v[ver], &len[ver]), 0);
		assert_int_equal(((unsigned char *)v[ver])[4], ver);
		assert_int_equal(attr_agg__decode(&b, v[ver], len[ver]), 0);
		/* what the version carries survives: the blob re-encodes to itself */
		assert_int_equal(attr_agg__encode_version(b, ver, &again, &alen), 0);
		assert_int_equal(alen, len[ver]);
		assert_memory_equal(again, v[ver], alen);
		free(again);
		attr_analyze(b, NULL, 10, NULL, &rb);
		/* the floor and the overlap count are known from version 3 on, streams
		 * from 4 */
		assert_int_equal(rb.floor.known, ver >= 3);
		assert_int_equal(rb.overlap_reqs, ver >= 3 ? 7 : 0);
		if (ver == 5) {
			assert_true(attr_agg__equal(a, b));
			attr_analyze(a, NULL, 10, NULL, &ra);
			assert_true(ra.floor.known);
			assert_true(rb.floor.rtt_ns == ra.floor.rtt_ns);
			assert_int_equal(rb.floor.reqs, ra.floor.reqs);
		} else {
			/* paths, overlaps or partial requests are missing */
			assert_false(attr_agg__equal(a, b));
		}
		attr_agg__free(b);
	}
	assert_true(len[2] < len[1] / 2);
	/* a version-1 blob relabelled 2 (checksum fixed up) is refused, not misread; and a
	 * version-2 blob relabelled 3 lacks its paths */
	((unsigned char *)v[1])[4] = 2;
	reseal(v[1], len[1]);
	assert_int_equal(attr_agg__decode(&b, v[1], len[1]), -EINVAL);
	((unsigned char *)v[2])[4] = 3;
	reseal(v[2], len[2]);
	assert_int_equal(attr_agg__decode(&b, v[2], len[2]), -EINVAL);
	assert_int_equal(attr_agg__encode_version(a, 6, &again, &alen), -EINVAL);
	for (int ver = 1; ver <= 5; ver++)
		free(v[ver]);
	attr_agg__free(a);
}

static void test_decode_resealed(void **state)
{
	struct attr_agg *a = mixed_population(41, 0, 800), *b;
	struct gen g = { 5 };
	unsigned char *buf, *copy;
	size_t len;
	int accepted = 0;

	(void)state;
	assert_int_equal(attr_agg__encode(a, (void **)&buf, &len), 0);
	copy = malloc(len);
	/* a flipped byte with a fixed-up checksum either decodes to a well-formed
	 * aggregate (a changed number) or is refused; it never crashes */
	for (int i = 0; i < 20000; i++) {
		memcpy(copy, buf, len);
		copy[20 + rnd(&g) % (len - 28)] ^= (unsigned char)(1 + rnd(&g) % 255);
		reseal(copy, len);
		if (!attr_agg__decode(&b, copy, len)) {
			struct attr_report r;

			attr_analyze(b, NULL, 1, NULL, &r);
			attr_agg__free(b);
			accepted++;
		}
	}
	assert_true(accepted < 20000);
	free(copy);
	free(buf);
	attr_agg__free(a);
}

static void test_place_table_bounded(void **state)
{
	struct attr_agg *a = attr_agg__new(), *b;
	struct gen g = { 8 };
	struct attr_report r;
	void *buf;
	size_t len;

	(void)state;
	/* 40000 distinct slow flows: more places than the table keeps */
	for (int i = 0; i < 40000; i++) {
		struct req_event ev;
		struct srv_req x = { .qdisc = uni(&g, 1 * MS, 30 * MS) };

		server_event(&g, &ev, i, 1000 * MS, &x);
		ev.rport = (__u16)i;
		ev.raddr[3] = (__u8)(i >> 16);
		ev.tid = (__u32)i;
		attr_agg__add(a, &ev);
	}
	attr_analyze(a, NULL, 10, NULL, &r);
	assert_true(r.places_unstored > 0);
	assert_true(r.places_unstored_ns > 0);
	assert_int_equal(r.requests, 40000);
	assert_int_equal(attr_agg__encode(a, &buf, &len), 0);
	assert_int_equal(attr_agg__decode(&b, buf, len), 0);
	assert_true(attr_agg__equal(a, b));
	free(buf);
	attr_agg__free(a);
	attr_agg__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_equals_add_all),
		cmocka_unit_test(test_memo_equals_index),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_decode_older_versions),
		cmocka_unit_test(test_decode_corrupt),
		cmocka_unit_test(test_decode_resealed),
		cmocka_unit_test(test_place_table_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
