// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The net layer's FFI globals (tio.net.*), called through tio_func_call():
 * the parent side of the exchange with a peer process over shared memory
 * and TCP (descriptors, get and put with and without a stream, UCX's
 * memory outliving its registration), bad arguments with clear errors,
 * and a descriptor round trip through an endpoint to the worker itself.
 */
#include <tensorio/container.h>
#include <tensorio/function.h>
#include <tensorio/string.h>

#include "kselftest_harness.h"
#include "net_test.h"

/*
 * The same operations as FFI globals (tio.net.*), called through
 * tio_func_call(): the parent side of the exchange with peer_main().
 */

/* Look up and call global @name: 0 or -1 (error raised). */
static int gcall(const char *name, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_object_t *f;
	int r;

	*ret = tio_any_none();
	if (tio_func_get_global(name, &f))
		return -1;
	if (!f)
		return tio_error_raise("KeyError", "no global %s", name);
	r = tio_func_call(f, args, nargs, ret);
	tio_object_decref(f);
	return r;
}

FIXTURE(net_ffi) {
	int fds;
	int64_t objs;
	pid_t child;
	int sock;
	tio_any_t w, ep;
};

FIXTURE_VARIANT(net_ffi) {
	const char *tls;
};

FIXTURE_VARIANT_ADD(net_ffi, shm) { .tls = "sm,self" };
FIXTURE_VARIANT_ADD(net_ffi, tcp) { .tls = "tcp,self" };

FIXTURE_SETUP(net_ffi)
{
	tio_any_t addr, a[3];
	const void *ap;
	size_t pn, an;
	void *pa;

	self->w = self->ep = tio_any_none();
	if (net_variant_skipped(_metadata, variant->tls))
		return;
	ASSERT_OK(tio_init());
	dev_warm_up();
	ASSERT_OK(tio_net_register_globals());
	ASSERT_OK(tio_net_register_globals());	/* once; later calls report it */
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
	self->child = spawn_peer(variant->tls, false, &self->sock);
	ASSERT_LE(0, self->child);
	ASSERT_OK(gcall("tio.net.worker", NULL, 0, &self->w));
	a[0] = self->w;
	ASSERT_OK(gcall("tio.net.address", a, 1, &addr));
	ASSERT_OK(tio_any_to_bytes(&addr, &ap, &an));
	ASSERT_EQ(0, send_blob(self->sock, ap, an));
	tio_any_decref(&addr);
	pa = recv_blob(self->sock, &pn);
	ASSERT_NE(NULL, pa);
	a[1] = tio_any_none();
	ASSERT_OK(tio_bytes_new(pa, pn, &a[1]));
	free(pa);
	a[2] = tio_any_raw_str("child");
	ASSERT_OK(gcall("tio.net.connect", a, 3, &self->ep));
	tio_any_decref(&a[1]);
}

FIXTURE_TEARDOWN(net_ffi)
{
	if (!self->child)
		return;	/* skipped */
	/* As in net's teardown: the endpoint goes while the peer progresses. */
	tio_any_decref(&self->ep);
	stop_peer(self->child, self->sock);
	tio_any_decref(&self->w);
	tio_error_clear();
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
	EXPECT_EQ(self->fds, dev_count_fds());
}

/* Receive the peer's descriptor, read it all, write half, through tio.net.*. */
TEST_F(net_ffi, desc_get_put_stream)
{
	if (!self->child)
		return;	/* skipped */
	tio_any_t a[7], rk, r, m, t, sa;
	DLDataType dt;
	tio_object_t *shape;
	tio_stream_t *s;
	tio_buffer_t *b;
	const char *tls;
	int status = 1;

	if (!self->child)
		return;	/* skipped */
	a[0] = self->ep;
	ASSERT_OK(gcall("tio.net.transports", a, 1, &t));
	ASSERT_OK(tio_any_to_str(&t, &tls, NULL));
	TH_LOG("transports: %s", tls);
	tio_any_decref(&t);
	a[1] = tio_any_int(TAG_DESC);
	a[2] = tio_any_int(10000000000LL);
	ASSERT_OK(gcall("tio.net.recv_desc", a, 3, &rk));
	ASSERT_OK(gcall("tio.net.rkey_size", &rk, 1, &r));
	EXPECT_EQ(NBYTES, r.v_int64);
	ASSERT_OK(gcall("tio.net.rkey_dtype", &rk, 1, &r));
	ASSERT_OK(tio_any_to_dtype(&r, &dt));
	EXPECT_EQ(kDLFloat, dt.code);
	EXPECT_EQ(32, dt.bits);
	ASSERT_OK(gcall("tio.net.rkey_shape", &rk, 1, &r));
	ASSERT_OK(tio_any_to_object(&r, TIO_TYPE_SHAPE, &shape));
	ASSERT_EQ(2, tio_shape_ndim(shape));
	EXPECT_EQ(512, tio_shape_data(shape)[0]);
	EXPECT_EQ(512, tio_shape_data(shape)[1]);
	tio_any_decref(&r);

	ASSERT_OK(tio_buffer_alloc(NBYTES, NULL, &b));
	a[0] = self->w;
	a[1] = tio_any_object((tio_object_t *)b);
	ASSERT_OK(gcall("tio.net.register", a, 2, &m));
	tio_buffer_decref(b);	/* the registration holds it */
	ASSERT_OK(tio_stream_create(&s));
	sa = tio_any_object((tio_object_t *)s);
	/* Whole get, waited for (None stream: returns 0). */
	a[0] = self->ep; a[1] = m; a[2] = tio_any_int(0); a[3] = rk;
	a[4] = tio_any_int(0); a[5] = tio_any_int(NBYTES); a[6] = tio_any_none();
	ASSERT_OK(gcall("tio.net.get", a, 7, &r));
	EXPECT_EQ(0, r.v_int64);
	EXPECT_EQ(0, check(tio_buffer_data(b), 0, NBYTES, 1));
	/* Half put, completion on a stream point. */
	fill(tio_buffer_data(b), NBYTES, 2);
	a[5] = tio_any_int(NBYTES / 2); a[6] = sa;
	ASSERT_OK(gcall("tio.net.put", a, 7, &r));
	EXPECT_LT(0, r.v_int64);
	ASSERT_OK(tio_fence_wait(s, (uint64_t)r.v_int64, 30000000000LL, &status));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0, ask_peer(self->sock));
	tio_stream_decref(s);
	tio_any_decref(&m);
	tio_any_decref(&rk);
}

/*
 * tio.net.alloc: get and put through UCX's memory; its tio.net.buffer
 * outlives the Memory and the Worker, still readable and writable; bad
 * arguments get clear errors. The teardown checks that all was freed.
 */
TEST_F(net_ffi, alloc_buffer_outlives_memory)
{
	if (!self->child)
		return;	/* skipped */
	tio_any_t a[7], rk, r, m, bany;
	tio_object_t *bo;
	unsigned char *p;
	int32_t buf_type;

	ASSERT_OK(tio_type_key_to_index("tio.Buffer", &buf_type));
	a[0] = self->ep;
	a[1] = tio_any_int(TAG_DESC);
	a[2] = tio_any_int(10000000000LL);
	ASSERT_OK(gcall("tio.net.recv_desc", a, 3, &rk));
	a[0] = self->w; a[1] = tio_any_int(NBYTES);
	ASSERT_OK(gcall("tio.net.alloc", a, 2, &m));
	ASSERT_OK(gcall("tio.net.buffer", &m, 1, &bany));
	ASSERT_OK(tio_any_to_object(&bany, buf_type, &bo));
	EXPECT_EQ(NBYTES, tio_buffer_size((tio_buffer_t *)bo));
	p = tio_buffer_data((tio_buffer_t *)bo);
	ASSERT_NE(NULL, p);
	a[0] = self->ep; a[1] = m; a[2] = tio_any_int(0); a[3] = rk;
	a[4] = tio_any_int(0); a[5] = tio_any_int(NBYTES); a[6] = tio_any_none();
	ASSERT_OK(gcall("tio.net.get", a, 7, &r));
	EXPECT_EQ(0, check(p, 0, NBYTES, 1));
	fill(p, NBYTES, 2);
	a[5] = tio_any_int(NBYTES / 2);
	ASSERT_OK(gcall("tio.net.put", a, 7, &r));
	EXPECT_EQ(0, ask_peer(self->sock));
	/* Bad arguments. */
	a[0] = self->w; a[1] = tio_any_int(0);
	EXPECT_EQ(-1, gcall("tio.net.alloc", a, 2, &r));
	ASSERT_DEV_MSG(EINVAL, "tio.net.alloc: size 0 must be positive");
	a[0] = self->ep; a[1] = tio_any_int(4096);
	EXPECT_EQ(-1, gcall("tio.net.alloc", a, 2, &r));
	ASSERT_DEV_MSG(EINVAL, "tio.net.alloc: argument 0 must be a tio.net.Worker");
	EXPECT_EQ(-1, gcall("tio.net.alloc", a, 1, &r));
	ASSERT_DEV_MSG(EINVAL, "tio.net.alloc takes 2 arguments");
	EXPECT_EQ(-1, gcall("tio.net.buffer", &self->w, 1, &r));
	ASSERT_DEV_MSG(EINVAL, "tio.net.buffer: argument 0 must be a tio.net.Memory");
	/* The Memory goes; the buffer stays usable. */
	tio_any_decref(&m);
	tio_any_decref(&rk);
	EXPECT_EQ(0, check(p, 0, NBYTES / 2, 2));
	fill(p, NBYTES, 3);
	EXPECT_EQ(0, check(tio_buffer_data((tio_buffer_t *)bo), 0, NBYTES, 3));
	tio_any_decref(&bany);
}

/* Bad calls: a clear error naming the function, nothing leaked. */
TEST_F(net_ffi, bad_arguments)
{
	if (!self->child)
		return;	/* skipped */
	tio_any_t a[7], rk, m, r, junk;
	tio_buffer_t *b;

	if (!self->child)
		return;	/* skipped */
	a[0] = self->ep;
	a[1] = tio_any_int(TAG_DESC);
	a[2] = tio_any_int(10000000000LL);
	ASSERT_OK(gcall("tio.net.recv_desc", a, 3, &rk));
	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	a[0] = self->w;
	a[1] = tio_any_object((tio_object_t *)b);
	ASSERT_OK(gcall("tio.net.register", a, 2, &m));
	tio_buffer_decref(b);

	EXPECT_EQ(-1, gcall("tio.net.worker", a, 1, &r));
	ASSERT_DEV_MSG(EINVAL, "tio.net.worker takes 0 arguments");
	a[0] = self->ep;	/* an Endpoint where a Worker goes */
	EXPECT_EQ(-1, gcall("tio.net.address", a, 1, &r));
	ASSERT_DEV_MSG(EINVAL, "argument 0 must be a tio.net.Worker");
	a[0] = self->w; a[1] = tio_any_int(1); a[2] = tio_any_none();
	EXPECT_EQ(-1, gcall("tio.net.connect", a, 3, &r));
	ASSERT_DEV_MSG(EINVAL, "argument 1 must be bytes");
	ASSERT_OK(tio_bytes_new("not a tensorio remote key, 40 bytes long", 40, &junk));
	a[0] = self->ep; a[1] = junk;
	EXPECT_EQ(-1, gcall("tio.net.rkey_unpack", a, 2, &r));
	ASSERT_DEV_MSG(EINVAL, "not a tensorio remote key");
	tio_any_decref(&junk);
	a[0] = self->ep; a[1] = m; a[2] = tio_any_int(-1); a[3] = rk;
	a[4] = tio_any_int(0); a[5] = tio_any_int(1); a[6] = tio_any_none();
	EXPECT_EQ(-1, gcall("tio.net.put", a, 7, &r));
	ASSERT_DEV_MSG(EINVAL, "negative offset");
	a[2] = tio_any_int(0); a[5] = tio_any_int(8192);
	EXPECT_EQ(-1, gcall("tio.net.get", a, 7, &r));
	ASSERT_DEV_MSG(EINVAL, "local range 0+8192 exceeds the 4096-byte buffer");
	a[5] = tio_any_int(1); a[6] = tio_any_int(3);
	EXPECT_EQ(-1, gcall("tio.net.get", a, 7, &r));
	ASSERT_DEV_MSG(EINVAL, "argument 6 must be a tio.Stream or None");
	a[2] = tio_any_dtype((DLDataType){ kDLFloat, 32, 1 }); a[3] = tio_any_int(4);
	a[4] = tio_any_int(1); a[5] = tio_any_int(0);
	EXPECT_EQ(-1, gcall("tio.net.send_desc", a, 6, &r));
	ASSERT_DEV_MSG(EINVAL, "argument 3 must be a Shape or a list of ints");
	a[2] = tio_any_raw_str("float33"); a[3] = tio_any_none();
	EXPECT_EQ(-1, gcall("tio.net.send_desc", a, 6, &r));
	ASSERT_DEV_MSG(EINVAL, "no dtype named 'float33'");
	tio_any_decref(&m);
	tio_any_decref(&rk);
}

/*
 * send_desc and recv_desc through an endpoint to the worker itself (UCX's
 * self transport): the descriptor and key come back, and a get through the
 * key reads the registered memory.
 */
TEST(net_ffi_self_desc_round_trip)
{
	tio_any_t w, addr, ep, m, m2, rk, a[7], r, shape_any;
	const int64_t dims[2] = { 16, 64 };
	tio_object_t *shape, *got;
	tio_buffer_t *b, *b2;
	int64_t objs;
	DLDataType dt;

	ASSERT_OK(tio_init());
	ASSERT_OK(tio_net_register_globals());
	setenv("UCX_TLS", "self,sm", 1);
	objs = tio_debug_live_objects();
	ASSERT_OK(gcall("tio.net.worker", NULL, 0, &w));
	ASSERT_OK(gcall("tio.net.address", &w, 1, &addr));
	a[0] = w; a[1] = addr; a[2] = tio_any_none();
	ASSERT_OK(gcall("tio.net.connect", a, 3, &ep));
	tio_any_decref(&addr);
	ASSERT_OK(tio_buffer_alloc(16 * 64 * 2, NULL, &b));
	fill(tio_buffer_data(b), 16 * 64 * 2, 5);
	a[0] = w; a[1] = tio_any_object((tio_object_t *)b);
	ASSERT_OK(gcall("tio.net.register", a, 2, &m));
	ASSERT_OK(tio_shape_new(dims, 2, &shape));
	shape_any = tio_any_object(shape);
	a[0] = ep; a[1] = m; a[2] = tio_any_dtype((DLDataType){ kDLBfloat, 16, 1 });
	a[3] = shape_any; a[4] = tio_any_int(42); a[5] = tio_any_int(10000000000LL);
	ASSERT_OK(gcall("tio.net.send_desc", a, 6, &r));
	a[1] = tio_any_int(42); a[2] = tio_any_int(10000000000LL);
	ASSERT_OK(gcall("tio.net.recv_desc", a, 3, &rk));
	ASSERT_OK(gcall("tio.net.rkey_dtype", &rk, 1, &r));
	ASSERT_OK(tio_any_to_dtype(&r, &dt));
	EXPECT_EQ(kDLBfloat, dt.code);
	EXPECT_EQ(16, dt.bits);
	ASSERT_OK(gcall("tio.net.rkey_shape", &rk, 1, &r));
	ASSERT_OK(tio_any_to_object(&r, TIO_TYPE_SHAPE, &got));
	ASSERT_EQ(2, tio_shape_ndim(got));
	EXPECT_EQ(16, tio_shape_data(got)[0]);
	EXPECT_EQ(64, tio_shape_data(got)[1]);
	tio_any_decref(&r);
	/* Read the "remote" tensor into a second buffer. */
	ASSERT_OK(tio_buffer_alloc(16 * 64 * 2, NULL, &b2));
	a[1] = tio_any_object((tio_object_t *)b2);
	a[0] = w;
	ASSERT_OK(gcall("tio.net.register", a, 2, &m2));
	a[0] = ep; a[1] = m2; a[2] = tio_any_int(0); a[3] = rk;
	a[4] = tio_any_int(0); a[5] = tio_any_int(16 * 64 * 2); a[6] = tio_any_none();
	ASSERT_OK(gcall("tio.net.get", a, 7, &r));
	EXPECT_EQ(0, check(tio_buffer_data(b2), 0, 16 * 64 * 2, 5));
	/* Every object released, in an order UCX alone would refuse. */
	tio_any_decref(&w);
	tio_any_decref(&ep);
	tio_any_decref(&m);
	tio_any_decref(&m2);
	tio_any_decref(&shape_any);
	tio_buffer_decref(b);
	tio_buffer_decref(b2);
	tio_any_decref(&rk);
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(objs, tio_debug_live_objects());
}

NET_HARNESS_MAIN
