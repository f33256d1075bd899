// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The net layer towards a peer process that was killed: closing its
 * endpoint (bounded by TIO_NET_CLOSE_TIMEOUT_MS where UCX never notices,
 * failed by keepalive where it does), puts and gets with and without a
 * stream, each ending with a clear error naming peer and operation and
 * nothing leaked; a bad close timeout.
 */
#include "kselftest_harness.h"
#include "net_test.h"

/*
 * Closing an endpoint whose peer was killed. Shared memory: UCX 1.13 never
 * notices the dead peer, so the close's flush is bounded
 * (TIO_NET_CLOSE_TIMEOUT_MS, 1 s here) and the endpoint then closed by
 * force; without the bound the close hangs while a put is in flight. TCP:
 * keepalive (1 s here) fails the endpoint, and the close fails with it.
 */
FIXTURE(net_dead) {
	FIXTURE_DATA(net) n;
};

FIXTURE_VARIANT(net_dead) {
	const char *tls;
};

FIXTURE_VARIANT_ADD(net_dead, shm) { .tls = "sm,self" };
FIXTURE_VARIANT_ADD(net_dead, tcp) { .tls = "tcp,self" };

FIXTURE_SETUP(net_dead)
{
	if (net_variant_skipped(_metadata, variant->tls))
		return;
	net_open(_metadata, &self->n, variant->tls, false, "1000");
}

FIXTURE_TEARDOWN(net_dead)
{
	if (!self->n.w)
		return;	/* skipped */
	net_close(_metadata, &self->n);
}

TEST(net_bad_close_timeout)
{
	tio_net_worker_t *w = NULL;

	ASSERT_OK(tio_init());
	setenv("TIO_NET_CLOSE_TIMEOUT_MS", "0", 1);
	EXPECT_EQ(-1, tio_net_worker_create(&w));
	unsetenv("TIO_NET_CLOSE_TIMEOUT_MS");
	EXPECT_EQ(NULL, w);
	ASSERT_DEV_MSG(EINVAL, "TIO_NET_CLOSE_TIMEOUT_MS=0");
}

static void kill_peer(pid_t *child)
{
	kill(*child, SIGKILL);
	waitpid(*child, NULL, 0);
	*child = 0;
}

/*
 * A close (or put) that failed names the peer and the operation, and a
 * timed-out flush says so: 0 if it is so.
 */
static int close_error_ok(void)
{
	tio_object_t *e = tio_error_move_from_raised();
	const char *msg;
	int ok;

	if (!e)
		return -1;
	msg = tio_error_message(e);
	ok = strstr(msg, "peer child") &&
	     (strstr(msg, "closing the endpoint") || strstr(msg, "net put")) &&
	     (!strstr(msg, "closed by force") || strstr(msg, "flush timed out"));
	fprintf(stderr, "# %s (errno %d)\n", msg, tio_errno());
	tio_object_decref(e);
	return ok ? 0 : -1;
}

TEST_F(net_dead, close_after_peer_killed_once_connected)
{
	if (!self->n.w)
		return;	/* skipped */
	kill_peer(&self->n.child);
	/* Nothing is outstanding: the close may succeed, but it returns. */
	if (tio_net_ep_close(self->n.ep))
		EXPECT_EQ(0, close_error_ok());
	self->n.ep = NULL;
}

TEST_F(net_dead, close_after_peer_killed_mid_put)
{
	if (!self->n.w)
		return;	/* skipped */
	struct tio_desc got;
	tio_net_rkey_t *rk;
	tio_net_mem_t *m;
	tio_stream_t *s;
	tio_buffer_t *b;
	uint64_t sq;
	int status = 0, put;

	if (!self->n.w)
		return;	/* skipped */
	ASSERT_OK(tio_net_recv_desc(self->n.ep, TAG_DESC, 10000000000LL, &got, &rk));
	ASSERT_OK(tio_buffer_alloc(NBYTES, NULL, &b));
	ASSERT_OK(tio_net_mem_register(self->n.w, b, &m));
	ASSERT_OK(tio_stream_create(&s));
	fill(tio_buffer_data(b), NBYTES, 2);
	ASSERT_OK(tio_net_put(self->n.ep, m, 0, rk, 0, NBYTES / 2, NULL, NULL));
	EXPECT_EQ(0, ask_peer(self->n.sock));
	kill_peer(&self->n.child);
	/*
	 * A put towards the dead peer, left in flight. Over TCP keepalive
	 * may have failed the endpoint already: the put fails, naming it.
	 */
	put = tio_net_put(self->n.ep, m, 0, rk, 0, NBYTES, s, &sq);
	tio_net_rkey_destroy(rk);
	if (put) {
		ASSERT_EQ(NULL, strstr(variant->tls, "sm"));
		EXPECT_EQ(0, close_error_ok());
		ASSERT_OK(tio_fence_emit(s, &sq));
		ASSERT_OK(tio_fence_signal(s, sq, -ECONNRESET));
	}
	/*
	 * Shared memory: the flush never completes, the close times out,
	 * forces, and the put's point signals -ECANCELED. TCP: keepalive
	 * fails the endpoint (1 s here), the put and the close fail with it.
	 */
	EXPECT_EQ(-1, tio_net_ep_close(self->n.ep));
	self->n.ep = NULL;
	if (strstr(variant->tls, "sm"))
		EXPECT_EQ(ETIMEDOUT, tio_errno());
	EXPECT_EQ(0, close_error_ok());
	ASSERT_OK(tio_fence_wait(s, sq, 0, &status));
	if (strstr(variant->tls, "sm")) {
		/* The put's own bound ends it first, or else the close. */
		EXPECT_TRUE(status == -ETIMEDOUT || status == -ECANCELED);
	} else {
		EXPECT_GT(0, status);
	}
	tio_stream_decref(s);
	tio_net_mem_deregister(m);
	tio_buffer_decref(b);
}

/*
 * A put or get without a stream towards a dead peer returns: where UCX
 * does not watch the peer (shared memory) after TIO_NET_CLOSE_TIMEOUT_MS
 * (1 s here) with ETIMEDOUT, failing the endpoint; over TCP when
 * keepalive fails the endpoint. Either way the error names the peer and
 * the operation, a later one fails at once, and the close frees it all.
 */
static void rma_towards_dead_peer(struct __test_metadata *_metadata,
				  FIXTURE_DATA(net) *n, const char *tls, bool put)
{
	const char *what = put ? "net put" : "net get";
	struct tio_desc got;
	tio_net_rkey_t *rk;
	tio_net_mem_t *m;
	tio_buffer_t *b;
	tio_object_t *e;

	ASSERT_OK(tio_net_recv_desc(n->ep, TAG_DESC, 10000000000LL, &got, &rk));
	ASSERT_OK(tio_buffer_alloc(NBYTES, NULL, &b));
	ASSERT_OK(tio_net_mem_register(n->w, b, &m));
	kill_peer(&n->child);
	EXPECT_EQ(-1, (put ? tio_net_put : tio_net_get)(n->ep, m, 0, rk, 0, NBYTES,
							  NULL, NULL));
	if (strstr(tls, "sm"))
		EXPECT_EQ(ETIMEDOUT, tio_errno());
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	fprintf(stderr, "# %s (errno %d)\n", tio_error_message(e), tio_errno());
	EXPECT_NE(NULL, strstr(tio_error_message(e), "peer child"));
	EXPECT_NE(NULL, strstr(tio_error_message(e), what));
	tio_object_decref(e);
	if (strstr(tls, "sm")) {
		/* The endpoint failed: the next transfer does not wait again. */
		EXPECT_EQ(-1, tio_net_get(n->ep, m, 0, rk, 0, 4096, NULL, NULL));
		EXPECT_NE(NULL, strstr(tio_error_message(tio_error_peek_raised()),
				       "the endpoint failed"));
		tio_error_clear();
	}
	tio_net_rkey_destroy(rk);
	/* A failed endpoint's close reports the failure, and frees it. */
	if (tio_net_ep_close(n->ep) == 0)
		EXPECT_EQ(NULL, strstr(tls, "sm"));
	n->ep = NULL;
	tio_error_clear();
	tio_net_mem_deregister(m);
	tio_buffer_decref(b);
}

TEST_F(net_dead, put_without_stream_after_peer_killed)
{
	if (!self->n.w)
		return;	/* skipped */
	rma_towards_dead_peer(_metadata, &self->n, variant->tls, true);
}

TEST_F(net_dead, get_without_stream_after_peer_killed)
{
	if (!self->n.w)
		return;	/* skipped */
	rma_towards_dead_peer(_metadata, &self->n, variant->tls, false);
}

/*
 * A put or get *with* a stream towards a dead peer: its point signals
 * with an error before any close, within the same bound
 * (TIO_NET_CLOSE_TIMEOUT_MS, 1 s here; over TCP keepalive, 1 s here). The
 * wait below is capped at 60 s so that a point that never signals fails
 * the test instead of hanging it. Shared memory: the point says
 * -ETIMEDOUT, the endpoint failed (a later transfer fails at once, saying
 * why, naming peer and transport), and the close reports it.
 */
static void rma_stream_towards_dead_peer(struct __test_metadata *_metadata,
					 FIXTURE_DATA(net) *n, const char *tls, bool put)
{
	bool shm = strstr(tls, "sm");
	struct tio_desc got;
	tio_net_rkey_t *rk;
	tio_net_mem_t *m;
	tio_stream_t *s;
	tio_buffer_t *b;
	const char *msg;
	uint64_t sq = 0;
	int status = 0;

	ASSERT_OK(tio_net_recv_desc(n->ep, TAG_DESC, 10000000000LL, &got, &rk));
	ASSERT_OK(tio_buffer_alloc(NBYTES, NULL, &b));
	ASSERT_OK(tio_net_mem_register(n->w, b, &m));
	ASSERT_OK(tio_stream_create(&s));
	kill_peer(&n->child);
	if ((put ? tio_net_put : tio_net_get)(n->ep, m, 0, rk, 0, NBYTES, s, &sq)) {
		/* Over TCP keepalive may have failed the endpoint already. */
		ASSERT_FALSE(shm);
		msg = tio_error_message(tio_error_peek_raised());
		fprintf(stderr, "# %s\n", msg);
		EXPECT_NE(NULL, strstr(msg, put ? "net put" : "net get"));
		EXPECT_NE(NULL, strstr(msg, "peer child"));
		tio_error_clear();
	} else {
		ASSERT_OK(tio_fence_wait(s, sq, 60000000000LL, &status));
		EXPECT_GT(0, status);
		if (shm)
			EXPECT_EQ(-ETIMEDOUT, status);
	}
	if (shm) {
		EXPECT_EQ(-1, tio_net_put(n->ep, m, 0, rk, 0, 4096, NULL, NULL));
		EXPECT_EQ(ETIMEDOUT, tio_errno());
		msg = tio_error_message(tio_error_peek_raised());
		fprintf(stderr, "# %s\n", msg);
		EXPECT_NE(NULL, strstr(msg, "the endpoint failed: a "));
		EXPECT_NE(NULL, strstr(msg, "got no answer after 1000 ms"));
		EXPECT_NE(NULL, strstr(msg, "peer child"));
		EXPECT_NE(NULL, strstr(msg, "transport "));
		tio_error_clear();
	}
	tio_net_rkey_destroy(rk);
	if (tio_net_ep_close(n->ep) == 0) {
		EXPECT_FALSE(shm);
	} else if (shm) {
		EXPECT_EQ(ETIMEDOUT, tio_errno());
		EXPECT_NE(NULL, strstr(tio_error_message(tio_error_peek_raised()),
				       "it failed before"));
	}
	n->ep = NULL;
	tio_error_clear();
	tio_stream_decref(s);
	tio_net_mem_deregister(m);
	tio_buffer_decref(b);
}

TEST_F(net_dead, put_with_stream_after_peer_killed)
{
	if (!self->n.w)
		return;	/* skipped */
	rma_stream_towards_dead_peer(_metadata, &self->n, variant->tls, true);
}

TEST_F(net_dead, get_with_stream_after_peer_killed)
{
	if (!self->n.w)
		return;	/* skipped */
	rma_stream_towards_dead_peer(_metadata, &self->n, variant->tls, false);
}

NET_HARNESS_MAIN
