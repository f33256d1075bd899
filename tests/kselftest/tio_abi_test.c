// SPDX-License-Identifier: GPL-2.0
/*
 * Structures grow at the end: the driver takes the size from the caller's
 * command number. A shorter structure is zero-extended in and truncated
 * out, a longer one is accepted when its bytes past the driver's are zero
 * (-E2BIG otherwise), and directions are those both numbers encode (as
 * drm_ioctl()). STREAM_CREATE grew in uapi 1.1 and 1.4: old-size (24 and
 * 32 bytes) and new-size callers are served side by side, by ioctl, by
 * uring_cmd and as SUBMIT records.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"

#define RW	(_IOC_READ | _IOC_WRITE)
/* A command number of the same type and nr with another size. */
#define SIZED(cmd, size)	_IOC(_IOC_DIR(cmd), TIO_IOC_MAGIC, _IOC_NR(cmd), size)
#define SC_V0	SIZED(TIO_IOC_STREAM_CREATE, TIO_STREAM_CREATE_SIZE_VER0)
#define SC_V1	SIZED(TIO_IOC_STREAM_CREATE, TIO_STREAM_CREATE_SIZE_VER1)
#define FILL	0xa5

FIXTURE(abi) {
	int fd;
	struct io_uring ring;
	unsigned int bound;	/* the fence_timeout_ms module parameter */
};

FIXTURE_VARIANT(abi) {
	int form;	/* 0 ioctl, 1 uring_cmd, 2 SUBMIT record */
};

FIXTURE_VARIANT_ADD(abi, ioctl) { .form = 0 };
FIXTURE_VARIANT_ADD(abi, uring_cmd) { .form = 1 };
FIXTURE_VARIANT_ADD(abi, submit) { .form = 2 };

static unsigned int read_bound(void)
{
	FILE *f = fopen("/sys/module/tensorio/parameters/fence_timeout_ms", "r");
	unsigned int v = 0;

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

FIXTURE_SETUP(abi)
{
	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	if (variant->form == 1)
		ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, 0));
	self->bound = read_bound();
	ASSERT_LT(0, self->bound);
}

FIXTURE_TEARDOWN(abi)
{
	if (variant->form == 1)
		io_uring_queue_exit(&self->ring);
	close(self->fd);
}

/*
 * Run @cmd on the @len bytes at @p (at most a record's payload for the
 * SUBMIT form, whose record is copied back into @p). Return: 0 or -errno.
 */
static int run(FIXTURE_DATA(abi) *self, const FIXTURE_VARIANT(abi) *variant,
	       unsigned int cmd, void *p, size_t len)
{
	struct tio_cmd rec = { .op = cmd };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)&rec, .count = 1 };
	int ret;

	switch (variant->form) {
	case 0:
		return tio_ioc(self->fd, cmd, p);
	case 1:
		return tio_uring_run(&self->ring, self->fd, false, cmd, p);
	}
	if (len > sizeof(rec.payload))
		return -1000;
	memcpy(rec.payload.bytes, p, len);
	ret = tio_ioc(self->fd, TIO_IOC_SUBMIT, &s);
	if (ret < 0)
		return ret;
	memcpy(p, rec.payload.bytes, len);
	return rec.result;
}

/* An old (uapi 1.0) caller: 24 bytes in and out, the default bound. */
TEST_F(abi, stream_create_old_size)
{
	unsigned char b[48];
	struct tio_stream_create *sc = (void *)b;
	unsigned int i;

	memset(b, FILL, sizeof(b));
	memset(b, 0, TIO_STREAM_CREATE_SIZE_VER0);
	ASSERT_EQ(0, run(self, variant, SC_V0, b, variant->form == 2 ?
			 TIO_STREAM_CREATE_SIZE_VER0 : sizeof(b)));
	EXPECT_LT(0, sc->handle);
	EXPECT_EQ((__u64)sc->handle << 40, sc->seqno_offset);
	/* Truncated out: nothing past the old structure was written. */
	if (variant->form != 2)
		for (i = TIO_STREAM_CREATE_SIZE_VER0; i < sizeof(b); i++)
			ASSERT_EQ(FILL, b[i]);
}

/* A uapi 1.1 caller: 32 bytes, its bound; no doorbell offset written. */
TEST_F(abi, stream_create_v1_size)
{
	unsigned char b[48];
	struct tio_stream_create *sc = (void *)b;
	unsigned int i;

	memset(b, FILL, sizeof(b));
	memset(b, 0, TIO_STREAM_CREATE_SIZE_VER1);
	sc->fence_timeout_ms = 1;
	ASSERT_EQ(0, run(self, variant, SC_V1, b, variant->form == 2 ?
			 TIO_STREAM_CREATE_SIZE_VER1 : sizeof(b)));
	EXPECT_LT(0, sc->handle);
	EXPECT_EQ(1, sc->fence_timeout_ms);
	if (variant->form != 2)
		for (i = TIO_STREAM_CREATE_SIZE_VER1; i < sizeof(b); i++)
			ASSERT_EQ(FILL, b[i]);
	/* The doorbell flag in an old-size call: the stream has one. */
	memset(b, 0, sizeof(b));
	sc->flags = TIO_STREAM_F_DOORBELL;
	ASSERT_EQ(0, run(self, variant, SC_V1, b, TIO_STREAM_CREATE_SIZE_VER1));
	EXPECT_LT(0, sc->handle);
}

/* A new caller sets the bound and reads back the one in force. */
TEST_F(abi, stream_create_new_size)
{
	struct tio_stream_create sc = { .fence_timeout_ms = 0 };

	ASSERT_EQ(0, run(self, variant, TIO_IOC_STREAM_CREATE, &sc, sizeof(sc)));
	EXPECT_LT(0, sc.handle);
	EXPECT_EQ(self->bound, sc.fence_timeout_ms);
	sc = (struct tio_stream_create){ .fence_timeout_ms = 1 };
	ASSERT_EQ(0, run(self, variant, TIO_IOC_STREAM_CREATE, &sc, sizeof(sc)));
	EXPECT_EQ(1, sc.fence_timeout_ms);
	sc = (struct tio_stream_create){ .fence_timeout_ms = self->bound };
	ASSERT_EQ(0, run(self, variant, TIO_IOC_STREAM_CREATE, &sc, sizeof(sc)));
	EXPECT_EQ(self->bound, sc.fence_timeout_ms);
	/* Above the module's bound, and a non-zero pad: refused. */
	sc = (struct tio_stream_create){ .fence_timeout_ms = self->bound + 1 };
	EXPECT_EQ(-EINVAL, run(self, variant, TIO_IOC_STREAM_CREATE, &sc, sizeof(sc)));
	sc = (struct tio_stream_create){ .pad = 1 };
	EXPECT_EQ(-EINVAL, run(self, variant, TIO_IOC_STREAM_CREATE, &sc, sizeof(sc)));
}

/* A future, longer structure: zero bytes past ours are fine. */
TEST_F(abi, longer_zero_tail_accepted)
{
	unsigned char b[64];
	struct tio_info *info = (void *)b;
	struct tio_stream_create *sc = (void *)b;

	/* INFO is 48 bytes already: longer, it fits no record. */
	memset(b, 0, sizeof(b));
	if (variant->form != 2) {
		ASSERT_EQ(0, run(self, variant, SIZED(TIO_IOC_INFO, 64), b, sizeof(b)));
		EXPECT_EQ(TIO_UAPI_VERSION, info->version);
		EXPECT_EQ(1024, info->max_submit);
	}
	memset(b, 0, sizeof(b));
	ASSERT_EQ(0, run(self, variant, SIZED(TIO_IOC_STREAM_CREATE, 48), b, 48));
	EXPECT_LT(0, sc->handle);
	EXPECT_EQ(self->bound, sc->fence_timeout_ms);
	memset(b, 0, sizeof(b));
	((struct tio_buf_alloc *)b)->size = 4096;
	ASSERT_EQ(0, run(self, variant, SIZED(TIO_IOC_BUF_ALLOC, 40), b, 40));
	EXPECT_LT(0, ((struct tio_buf_alloc *)b)->handle);
}

/* ... but a field we do not know, set, is refused with E2BIG. */
TEST_F(abi, longer_nonzero_tail_refused)
{
	unsigned char b[64];

	memset(b, 0, sizeof(b));
	b[sizeof(struct tio_info) + 3] = 1;
	if (variant->form != 2)
		EXPECT_EQ(-E2BIG, run(self, variant, SIZED(TIO_IOC_INFO, 64), b, sizeof(b)));
	memset(b, 0, sizeof(b));
	((struct tio_buf_alloc *)b)->size = 4096;
	b[sizeof(struct tio_buf_alloc)] = 1;
	EXPECT_EQ(-E2BIG, run(self, variant, SIZED(TIO_IOC_BUF_ALLOC, 40), b, 40));
	memset(b, 0, sizeof(b));
	b[47] = 1;
	EXPECT_EQ(-E2BIG, run(self, variant, SIZED(TIO_IOC_STREAM_CREATE, 48), b, 48));
	/* Nothing was created by the refused calls. */
	memset(b, 0, sizeof(b));
	((struct tio_handle_op *)b)->handle = 1;
	EXPECT_EQ(-ENOENT, run(self, variant, TIO_IOC_STREAM_DESTROY, b,
			       sizeof(struct tio_handle_op)));
	EXPECT_EQ(-ENOENT, run(self, variant, TIO_IOC_BUF_FREE, b,
			       sizeof(struct tio_handle_op)));
}

/* A shorter structure is zero-extended: INFO in 8 bytes is flags == 0. */
TEST_F(abi, shorter_zero_extended)
{
	unsigned char b[48];
	struct tio_info *info = (void *)b;
	unsigned int i;

	memset(b, FILL, sizeof(b));
	memset(b, 0, 8);
	ASSERT_EQ(0, run(self, variant, SIZED(TIO_IOC_INFO, 8), b,
			 variant->form == 2 ? 8 : sizeof(b)));
	EXPECT_EQ(TIO_UAPI_VERSION, info->version);
	if (variant->form != 2)
		for (i = 8; i < sizeof(b); i++)
			ASSERT_EQ(FILL, b[i]);
	/* BUF_ALLOC cut before desc_ptr: no descriptor, as if zero. */
	memset(b, 0, sizeof(b));
	((struct tio_buf_alloc *)b)->size = 4096;
	ASSERT_EQ(0, run(self, variant, SIZED(TIO_IOC_BUF_ALLOC, 24), b, 24));
	EXPECT_LT(0, ((struct tio_buf_alloc *)b)->handle);
}

/*
 * Directions are the ones both numbers have: a caller's _IOW INFO is
 * not written back, a caller's _IOR INFO is not read (its flags unseen).
 */
TEST_F(abi, directions_intersect)
{
	struct tio_info info;

	memset(&info, 0, sizeof(info));
	ASSERT_EQ(0, run(self, variant, _IOW(TIO_IOC_MAGIC, 0, struct tio_info),
			 &info, sizeof(info)));
	EXPECT_EQ(0, info.version);
	memset(&info, 0, sizeof(info));
	info.flags = 1;
	ASSERT_EQ(0, run(self, variant, _IOR(TIO_IOC_MAGIC, 0, struct tio_info),
			 &info, sizeof(info)));
	EXPECT_EQ(TIO_UAPI_VERSION, info.version);
}

/* A record whose number does not fit its 48 bytes, or garbage past it. */
TEST(submit_record_sizes)
{
	struct tio_cmd rec = { .op = SIZED(TIO_IOC_INFO, 56) };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)&rec, .count = 1 };
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(1, tio_ioc(fd, TIO_IOC_SUBMIT, &s));
	EXPECT_EQ(-EINVAL, rec.result);
	rec = (struct tio_cmd){ .op = SC_V0 };
	rec.payload.bytes[TIO_STREAM_CREATE_SIZE_VER0] = 1;
	ASSERT_EQ(1, tio_ioc(fd, TIO_IOC_SUBMIT, &s));
	EXPECT_EQ(-EINVAL, rec.result);
	rec = (struct tio_cmd){ .op = SC_V0 };
	ASSERT_EQ(0, tio_ioc(fd, TIO_IOC_SUBMIT, &s));
	EXPECT_EQ(0, rec.result);
	/* Truncated out: the grown field stays as the caller left it. */
	EXPECT_EQ(0, ((struct tio_stream_create *)rec.payload.bytes)->fence_timeout_ms);
	close(fd);
}

TEST_HARNESS_MAIN
