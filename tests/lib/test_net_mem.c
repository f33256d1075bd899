// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * UCX's memory through the net layer (tio_net_mem_alloc): whole pages of
 * zeroes in a buffer of their own, and a buffer or Tensor of it that
 * outlives the registration and the worker, the memory unmapped and
 * everything freed when the last of them goes.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "net_test.h"

/*
 * tio_net_mem_alloc(): whole pages of zeroes, a buffer of its own
 * (tio_buffer_data is the registered memory); size 0 is EINVAL.
 */
TEST(net_mem_alloc)
{
	int64_t objs;
	tio_net_worker_t *w;
	tio_net_mem_t *m = NULL;
	tio_buffer_t *b;
	unsigned char *p;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	ASSERT_OK(tio_init());
	objs = tio_debug_live_objects();
	setenv("UCX_TLS", "sm,self", 1);
	ASSERT_OK(tio_net_worker_create(&w));
	ASSERT_OK(tio_net_mem_alloc(w, page + 1, &m));
	b = tio_net_mem_buffer(m);
	ASSERT_NE(NULL, b);
	EXPECT_EQ(2 * page, tio_buffer_size(b));
	p = tio_buffer_data(b);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, (uintptr_t)p % page);
	EXPECT_EQ(0, p[0]);
	EXPECT_EQ(0, memcmp(p, p + 1, 2 * page - 1));
	memset(p, 0xa5, 2 * page);
	tio_net_mem_deregister(m);
	m = NULL;
	EXPECT_EQ(-1, tio_net_mem_alloc(w, 0, &m));
	EXPECT_EQ(NULL, m);
	ASSERT_DEV_MSG(EINVAL, "allocating 0 bytes: bad size");
	tio_net_worker_destroy(w);
	EXPECT_EQ(objs, tio_debug_live_objects());
}

/* Whether [p, p + n) is mapped in this process (mincore: ENOMEM if not). */
static bool mapped(void *p, size_t n)
{
	unsigned char v[16];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return n / page <= sizeof(v) && !mincore(p, n, v);
}

/*
 * A buffer of UCX's memory, and a Tensor of it, outlive the registration
 * (and the worker): the memory stays mapped and usable until the last of
 * them is gone, then it is unmapped and every object and handle freed.
 */
FIXTURE(net_mem_outlives) {
	int64_t objs, handles;
	tio_net_worker_t *w;
	tio_net_mem_t *m;
	tio_buffer_t *b;
	unsigned char *p;
	size_t n;
};

FIXTURE_SETUP(net_mem_outlives)
{
	ASSERT_OK(tio_init());
	self->objs = tio_debug_live_objects();
	self->handles = tio_debug_live_handles();
	setenv("UCX_TLS", "sm,self", 1);
	self->n = 2 * (size_t)sysconf(_SC_PAGESIZE);
	ASSERT_OK(tio_net_worker_create(&self->w));
	ASSERT_OK(tio_net_mem_alloc(self->w, self->n, &self->m));
	self->b = tio_net_mem_buffer(self->m);
	self->p = tio_buffer_data(self->b);
	ASSERT_NE(NULL, self->p);
	ASSERT_TRUE(mapped(self->p, self->n));
	memset(self->p, 0x5a, self->n);
}

FIXTURE_TEARDOWN(net_mem_outlives)
{
	EXPECT_FALSE(mapped(self->p, self->n));
	EXPECT_EQ(self->handles, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
}

TEST_F(net_mem_outlives, buffer_reference_outlives_deregister)
{
	tio_buffer_t *b = self->b;

	tio_object_incref((tio_object_t *)b);
	tio_net_mem_deregister(self->m);
	ASSERT_TRUE(mapped(self->p, self->n));
	EXPECT_EQ(0x5a, ((unsigned char *)tio_buffer_data(b))[self->n - 1]);
	memset(tio_buffer_data(b), 0x3c, self->n);
	EXPECT_EQ(0x3c, self->p[0]);
	EXPECT_EQ(self->handles + 1, tio_debug_live_handles());
	tio_buffer_decref(b);	/* the last: the memory goes */
	EXPECT_FALSE(mapped(self->p, self->n));
	tio_net_worker_destroy(self->w);
}

TEST_F(net_mem_outlives, tensor_outlives_deregister_and_worker)
{
	const int64_t shape[1] = { (int64_t)self->n / 4 };
	struct tio_desc d;
	tio_object_t *t;
	uint32_t *u;

	ASSERT_OK(tio_desc_init(&d, (DLDataType){ kDLUInt, 32, 1 }, 1, shape));
	ASSERT_OK(tio_buffer_tensor(self->b, &d, &t));
	tio_net_mem_deregister(self->m);	/* drops the buffer; the tensor holds it */
	tio_net_worker_destroy(self->w);	/* the context stays for the memory */
	ASSERT_TRUE(mapped(self->p, self->n));
	u = tio_tensor_dl(t)->data;
	EXPECT_EQ(0x5a5a5a5au, u[shape[0] - 1]);
	u[0] = 0xdeadbeefu;
	EXPECT_EQ(0xef, self->p[0]);
	EXPECT_EQ(self->handles + 1, tio_debug_live_handles());
	tio_object_decref(t);	/* the last: memory, context, worker go */
}

/* Dropped in the other order: the registration last. */
TEST_F(net_mem_outlives, deregister_after_the_last_buffer_reference)
{
	tio_object_t *t;
	struct tio_desc d;
	const int64_t shape[1] = { (int64_t)self->n };

	ASSERT_OK(tio_desc_init(&d, (DLDataType){ kDLUInt, 8, 1 }, 1, shape));
	ASSERT_OK(tio_buffer_tensor(self->b, &d, &t));
	tio_object_decref(t);
	ASSERT_TRUE(mapped(self->p, self->n));	/* the registration holds it */
	EXPECT_EQ(0x5a, self->p[self->n - 1]);
	tio_net_mem_deregister(self->m);
	tio_net_worker_destroy(self->w);
}

NET_HARNESS_MAIN
