// SPDX-License-Identifier: GPL-2.0
/*
 * Buffers: BUF_ALLOC, BUF_PIN_USER, BUF_FREE, BUF_INFO, BUF_SET_DESC, mmap
 * through the device fd, descriptor validation and pinned-memory
 * accounting (RLIMIT_MEMLOCK and the max_pinned module parameter).
 */
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tio_buf_common.h"

#define MAX_PINNED_PARAM "/sys/module/tensorio/parameters/max_pinned"

FIXTURE(buf) {
	int fd;
	long long pinned0;
};

FIXTURE_SETUP(buf)
{
	struct tio_info info = { 0 };

	self->fd = tio_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	ASSERT_TRUE(info.features & TIO_FEAT_BUFFERS);
	ASSERT_TRUE(info.features & TIO_FEAT_PIN_USER);
	self->pinned0 = info.pinned;
}

FIXTURE_TEARDOWN(buf)
{
	close(self->fd);
}

TEST_F(buf, alloc_info_mmap_free)
{
	struct tio_buf_alloc a = { .size = 3 * PAGE - 100 };
	struct tio_buf_info bi = { 0 };
	unsigned char *p;
	size_t nonzero = 0, bad = 0;
	long vmpin0 = tio_vmpin_kb();

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
	EXPECT_NE(0, a.handle);
	EXPECT_EQ((uint64_t)a.handle << 40, a.mmap_offset);
	EXPECT_EQ(3 * PAGE - 100, a.size);	/* in only */
	EXPECT_EQ(self->pinned0 + 3 * PAGE, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0 + 12, tio_vmpin_kb());

	bi.handle = a.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(3 * PAGE, bi.size);
	EXPECT_EQ(a.mmap_offset, bi.mmap_offset);
	EXPECT_EQ(TIO_BUF_KIND_ALLOC, bi.kind);
	EXPECT_EQ(0, bi.state);

	p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (size_t i = 0; i < 3 * PAGE; i++)
		nonzero += p[i] != 0;
	EXPECT_EQ(0, nonzero);
	tio_fill(p, 3 * PAGE, 7);
	ASSERT_EQ(0, munmap(p, 3 * PAGE));
	/* A second mapping, of the last page only, sees the same bytes. */
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
		 a.mmap_offset + 2 * PAGE);
	ASSERT_NE(MAP_FAILED, p);
	for (size_t i = 0; i < PAGE; i++)
		bad += p[i] != (unsigned char)((i + 2 * PAGE) * 31 + 7);
	EXPECT_EQ(0, bad);
	ASSERT_EQ(0, munmap(p, PAGE));

	ASSERT_EQ(0, tio_free(self->fd, a.handle));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0, tio_vmpin_kb());
	EXPECT_EQ(-ENOENT, tio_free(self->fd, a.handle));
	EXPECT_EQ(-ENOENT, tio_ioc(self->fd, TIO_IOC_BUF_INFO, &bi));
}

TEST_F(buf, alloc_bad_inputs)
{
	struct tio_info info = { 0 };
	struct tio_tensor_desc d = tio_desc_2d(100, 100);	/* 40000 bytes */
	struct tio_buf_alloc a = { .size = PAGE, .flags = 1 };
	uint32_t h;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	EXPECT_EQ(-EINVAL, tio_alloc(self->fd, 0, NULL, &h, NULL));
	EXPECT_EQ(-E2BIG, tio_alloc(self->fd, info.max_buf_size + 1, NULL, &h, NULL));
	EXPECT_EQ(-E2BIG, tio_alloc(self->fd, ~0ULL, NULL, &h, NULL));
	EXPECT_EQ(-E2BIG, tio_alloc(self->fd, ~0ULL - PAGE + 2, NULL, &h, NULL));
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_ALLOC, &a));
	EXPECT_EQ(0, a.handle);
	a.flags = 0;
	a.desc_ptr = 8;	/* unmapped */
	EXPECT_EQ(-EFAULT, tio_ioc(self->fd, TIO_IOC_BUF_ALLOC, &a));
	/* A descriptor that does not fit. */
	EXPECT_EQ(-ERANGE, tio_alloc(self->fd, 8 * PAGE, &d, &h, NULL));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	ASSERT_EQ(0, tio_alloc(self->fd, 10 * PAGE, &d, &h, NULL));
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

TEST_F(buf, handles_bad_freed_other_file)
{
	struct tio_buf_info bi = { 0 };
	struct tio_handle_op op = { 0 };
	uint32_t h;
	int fd2;

	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, NULL));
	fd2 = tio_open();
	ASSERT_LE(0, fd2);
	bi.handle = h;
	EXPECT_EQ(-ENOENT, tio_ioc(fd2, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(-ENOENT, tio_free(fd2, h));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd2,
				   (off_t)h << 40));
	close(fd2);
	bi.handle = 0;
	EXPECT_EQ(-ENOENT, tio_ioc(self->fd, TIO_IOC_BUF_INFO, &bi));
	bi.handle = 0xffffff;
	EXPECT_EQ(-ENOENT, tio_ioc(self->fd, TIO_IOC_BUF_INFO, &bi));
	bi.handle = h;
	bi.flags = 1;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_INFO, &bi));
	bi.flags = 0;
	bi.desc_ptr = 8;
	EXPECT_EQ(-EFAULT, tio_ioc(self->fd, TIO_IOC_BUF_INFO, &bi));
	op.handle = h;
	op.flags = 1;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_FREE, &op));
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(-ENOENT, tio_free(self->fd, h));
	EXPECT_EQ(-ENOENT, tio_free(self->fd, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
				   (off_t)h << 40));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(buf, handles_other_process)
{
	uint32_t h;
	pid_t pid;
	int st;

	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct tio_buf_info bi = { .handle = h };
		int fd = tio_open();

		_exit(fd >= 0 && tio_ioc(fd, TIO_IOC_BUF_INFO, &bi) == -ENOENT &&
		      tio_free(fd, h) == -ENOENT ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	EXPECT_EQ(0, tio_free(self->fd, h));
}

TEST_F(buf, mmap_bounds)
{
	uint32_t h;
	uint64_t off;
	void *p;

	ASSERT_EQ(0, tio_alloc(self->fd, 2 * PAGE, NULL, &h, &off));
	p = mmap(NULL, 3 * PAGE, PROT_READ, MAP_SHARED, self->fd, off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, off + 2 * PAGE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* Not a handle's window at all. */
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, (off_t)1 << 62);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(0, tio_free(self->fd, h));
}

TEST_F(buf, mapping_outlives_free_and_close)
{
	uint32_t h;
	uint64_t off;
	unsigned char *p;
	int fd = tio_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tio_alloc(fd, 4 * PAGE, NULL, &h, &off));
	p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	ASSERT_NE(MAP_FAILED, p);
	tio_fill(p, 4 * PAGE, 3);
	ASSERT_EQ(0, tio_free(fd, h));
	close(fd);
	/* The mapping keeps the buffer (and its charge) alive. */
	EXPECT_EQ(self->pinned0 + 4 * PAGE, tio_pinned(self->fd));
	EXPECT_EQ(0, tio_check(p, 4 * PAGE, 3));
	tio_fill(p, 4 * PAGE, 4);
	EXPECT_EQ(0, tio_check(p, 4 * PAGE, 4));
	ASSERT_EQ(0, munmap(p, 4 * PAGE));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

TEST_F(buf, close_with_live_buffers)
{
	uint32_t h;
	int fd = tio_open();

	ASSERT_LE(0, fd);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, tio_alloc(fd, (i + 1) * PAGE, NULL, &h, NULL));
	EXPECT_EQ(self->pinned0 + 36 * PAGE, tio_pinned(self->fd));
	close(fd);
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

/* ---- descriptors ---- */

static int set_desc(int fd, uint32_t h, const struct tio_tensor_desc *d)
{
	struct tio_buf_desc sd = { .handle = h, .desc_ptr = (uintptr_t)d };

	return tio_ioc(fd, TIO_IOC_BUF_SET_DESC, &sd);
}

TEST_F(buf, desc_set_get_clear)
{
	struct tio_tensor_desc d = tio_desc_2d(32, 32), out;
	struct tio_buf_info bi = { .desc_ptr = (uintptr_t)&out };
	struct tio_buf_desc sd = { 0 };
	uint32_t h;

	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, NULL));
	bi.handle = h;
	memset(&out, 0xaa, sizeof(out));
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(0, bi.state & TIO_BUF_S_DESC);
	EXPECT_EQ(0, out.bits);		/* zeroed when there is none */

	ASSERT_EQ(0, set_desc(self->fd, h, &d));
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(TIO_BUF_S_DESC, bi.state & TIO_BUF_S_DESC);
	EXPECT_EQ(0, memcmp(&d, &out, sizeof(d)));

	/* Exactly fills the buffer; one more byte of offset does not fit. */
	d = tio_desc_2d(32, 32);
	ASSERT_EQ(0, set_desc(self->fd, h, &d));
	d.byte_offset = 1;
	EXPECT_EQ(-ERANGE, set_desc(self->fd, h, &d));
	/* The failed set left the old descriptor. */
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(0, out.byte_offset);

	sd.handle = h;
	sd.flags = TIO_DESC_CLEAR;
	sd.desc_ptr = (uintptr_t)&d;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_SET_DESC, &sd));
	sd.desc_ptr = 0;
	sd.flags = 0;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_SET_DESC, &sd));
	sd.flags = 2;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_SET_DESC, &sd));
	sd.flags = 0;
	sd.desc_ptr = 8;
	EXPECT_EQ(-EFAULT, tio_ioc(self->fd, TIO_IOC_BUF_SET_DESC, &sd));
	sd.handle = h + 1000;
	sd.desc_ptr = (uintptr_t)&d;
	EXPECT_EQ(-ENOENT, tio_ioc(self->fd, TIO_IOC_BUF_SET_DESC, &sd));
	sd.handle = h;
	sd.flags = TIO_DESC_CLEAR;
	sd.desc_ptr = 0;
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_SET_DESC, &sd));
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(0, bi.state & TIO_BUF_S_DESC);
	EXPECT_EQ(0, tio_free(self->fd, h));
}

TEST_F(buf, desc_validation)
{
	struct tio_tensor_desc d;
	uint32_t h;

	ASSERT_EQ(0, tio_alloc(self->fd, 4 * PAGE, NULL, &h, NULL));
#define BAD(err, stmt) do {						\
		d = tio_desc_2d(4, 4);					\
		stmt;							\
		EXPECT_EQ(err, set_desc(self->fd, h, &d)) TH_LOG("%s", #stmt); \
	} while (0)
	BAD(0, (void)0);
	BAD(-EINVAL, d.code = 99);
	BAD(-EINVAL, d.bits = 0);
	BAD(-EINVAL, d.bits = 12);
	BAD(-EINVAL, d.lanes = 0);
	BAD(-EINVAL, d.ndim = 9);
	BAD(-EINVAL, d.shape[1] = -1);
	BAD(-EINVAL, d.shape[2] = 1);		/* past ndim */
	BAD(-EINVAL, d.strides[0] = 4);		/* no TIO_DESC_F_STRIDED */
	BAD(-EINVAL, (d.flags = TIO_DESC_F_STRIDED, d.strides[3] = 1));
	BAD(-EINVAL, d.flags = 0x80);
	BAD(0, (d.code = TIO_DTYPE_INT, d.bits = 4, d.shape[0] = 8192, d.shape[1] = 4));
	BAD(-ERANGE, (d.code = TIO_DTYPE_INT, d.bits = 4, d.shape[0] = 8193, d.shape[1] = 4));
	BAD(0, (d.bits = 8, d.lanes = 4, d.shape[0] = 64, d.shape[1] = 64));
	BAD(-ERANGE, (d.bits = 8, d.lanes = 4, d.shape[0] = 64, d.shape[1] = 65));
	BAD(0, (d.ndim = 0, d.shape[0] = 0, d.shape[1] = 0));	/* a scalar */
	BAD(0, (d.shape[0] = 0, d.shape[1] = 1LL << 62, d.byte_offset = 4 * PAGE));
	BAD(-ERANGE, (d.shape[0] = 0, d.byte_offset = 4 * PAGE + 1));
	BAD(-EOVERFLOW, (d.shape[0] = 1LL << 40, d.shape[1] = 1LL << 40));
	BAD(-EOVERFLOW, (d.shape[0] = 1LL << 62, d.shape[1] = 1));
	BAD(-ERANGE, d.byte_offset = ~0ULL);
	/* Strided: a transposed 64x64 view fits, a stride past the end not. */
	BAD(0, (d.flags = TIO_DESC_F_STRIDED, d.shape[0] = 64, d.shape[1] = 64,
		d.strides[0] = 1, d.strides[1] = 64));
	BAD(-ERANGE, (d.flags = TIO_DESC_F_STRIDED, d.shape[0] = 64, d.shape[1] = 64,
		      d.strides[0] = 1, d.strides[1] = 65));
	/* Negative strides: fine while element 0 is far enough in. */
	BAD(0, (d.flags = TIO_DESC_F_STRIDED, d.strides[0] = -4, d.strides[1] = 1,
		d.byte_offset = 48));
	BAD(-ERANGE, (d.flags = TIO_DESC_F_STRIDED, d.strides[0] = -4, d.strides[1] = 1,
		      d.byte_offset = 44));
	BAD(-EOVERFLOW, (d.flags = TIO_DESC_F_STRIDED, d.strides[0] = 1LL << 62));
	BAD(-EOVERFLOW, (d.flags = TIO_DESC_F_STRIDED, d.strides[0] = -(1LL << 62)));
	/* Broadcast (stride 0) of a huge extent still fits. */
	BAD(0, (d.flags = TIO_DESC_F_STRIDED, d.shape[0] = 1LL << 40,
		d.strides[0] = 0, d.strides[1] = 1));
#undef BAD
	EXPECT_EQ(0, tio_free(self->fd, h));
}

/* ---- pinned user memory ---- */

static int pin(int fd, void *addr, uint64_t size, uint32_t flags, uint32_t *h,
	       uint64_t *off)
{
	struct tio_buf_pin p = {
		.addr = (uintptr_t)addr, .size = size, .flags = flags,
	};
	int ret = tio_ioc(fd, TIO_IOC_BUF_PIN_USER, &p);

	if (!ret) {
		*h = p.handle;
		if (off)
			*off = p.mmap_offset;
	}
	return ret;
}

TEST_F(buf, pin_user_round_trip)
{
	struct tio_buf_info bi = { 0 };
	unsigned char *u, *m;
	uint32_t h;
	uint64_t off;
	long vmpin0 = tio_vmpin_kb();

	u = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, u);
	tio_fill(u, 4 * PAGE, 1);
	ASSERT_EQ(0, pin(self->fd, u, 4 * PAGE, 0, &h, &off));
	EXPECT_EQ(self->pinned0 + 4 * PAGE, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0 + 16, tio_vmpin_kb());
	bi.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(TIO_BUF_KIND_USER, bi.kind);
	EXPECT_EQ(4 * PAGE, bi.size);
	EXPECT_EQ(off, bi.mmap_offset);

	m = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, tio_check(m, 4 * PAGE, 1));
	tio_fill(m, 4 * PAGE, 2);		/* device view -> user view */
	EXPECT_EQ(0, tio_check(u, 4 * PAGE, 2));
	tio_fill(u + PAGE, PAGE, 9);		/* and back */
	EXPECT_EQ(0, tio_check(m + PAGE, PAGE, 9));
	ASSERT_EQ(0, munmap(m, 4 * PAGE));

	ASSERT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0, tio_vmpin_kb());
	/* The user memory itself is untouched by the unpin. */
	EXPECT_EQ(0, tio_check(u + PAGE, PAGE, 9));
	munmap(u, 4 * PAGE);
}

TEST_F(buf, pin_user_bad_ranges)
{
	unsigned char *u;
	uint32_t h;
	uint64_t big;

	u = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, u);
	EXPECT_EQ(-EINVAL, pin(self->fd, u + 1, PAGE, 0, &h, NULL));
	EXPECT_EQ(-EINVAL, pin(self->fd, u, PAGE + 1, 0, &h, NULL));
	EXPECT_EQ(-EINVAL, pin(self->fd, u, 100, 0, &h, NULL));
	EXPECT_EQ(-EINVAL, pin(self->fd, u, 0, 0, &h, NULL));
	EXPECT_EQ(-EINVAL, pin(self->fd, u, PAGE, 2, &h, NULL));
	EXPECT_EQ(-EINVAL, pin(self->fd, (void *)-PAGE, 2 * PAGE, 0, &h, NULL));
	/* Kernel addresses. */
	EXPECT_EQ(-EFAULT, pin(self->fd, (void *)0xffff888000000000ULL, PAGE, 0, &h, NULL));
	/* Larger than max_buf_size. */
	big = (1ULL << 40);
	EXPECT_EQ(-E2BIG, pin(self->fd, u, big, 0, &h, NULL));
	/* Unmapped: the whole range, and the tail of it. */
	ASSERT_EQ(0, munmap(u + 2 * PAGE, 2 * PAGE));
	EXPECT_EQ(-EFAULT, pin(self->fd, u + 2 * PAGE, PAGE, 0, &h, NULL));
	EXPECT_EQ(-EFAULT, pin(self->fd, u, 4 * PAGE, 0, &h, NULL));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	if (tio_vmpin_kb() >= 0)
		EXPECT_EQ(0, tio_vmpin_kb());
	munmap(u, 2 * PAGE);
}

TEST_F(buf, pin_user_readonly)
{
	unsigned char *u, *m;
	uint32_t h;
	uint64_t off;
	int dmafd;

	u = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, u);
	tio_fill(u, 2 * PAGE, 5);
	ASSERT_EQ(0, mprotect(u, 2 * PAGE, PROT_READ));
	/* Writable pin of read-only memory fails and pins nothing. */
	EXPECT_EQ(-EFAULT, pin(self->fd, u, 2 * PAGE, 0, &h, NULL));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	ASSERT_EQ(0, pin(self->fd, u, 2 * PAGE, TIO_PIN_F_READONLY, &h, &off));
	m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EACCES, errno);
	m = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, tio_check(m, 2 * PAGE, 5));
	/* It cannot be made writable later either. */
	EXPECT_EQ(-1, mprotect(m, 2 * PAGE, PROT_READ | PROT_WRITE));
	EXPECT_EQ(-EACCES, tio_export(self->fd, h, TIO_EXPORT_F_RDWR, &dmafd));
	munmap(m, 2 * PAGE);
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	munmap(u, 2 * PAGE);
}

TEST_F(buf, pin_user_file_backed)
{
	unsigned char *u;
	uint32_t h;
	int mfd = memfd_create("tio", 0);

	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, 2 * PAGE));
	u = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, u);
	tio_fill(u, 2 * PAGE, 6);
	ASSERT_EQ(0, pin(self->fd, u, 2 * PAGE, 0, &h, NULL));
	EXPECT_EQ(0, tio_free(self->fd, h));
	munmap(u, 2 * PAGE);
	close(mfd);
}

/* ---- limits ---- */

TEST_F(buf, memlock_rlimit)
{
	struct rlimit rl = { 16 * PAGE, 16 * PAGE };
	unsigned char *u;
	uint32_t a, b, c;
	long vmpin0;

	/* The harness runs each test in its own process. */
	ASSERT_EQ(0, drop_cap_ipc_lock());
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	vmpin0 = tio_vmpin_kb();
	u = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, u);
	memset(u, 1, 16 * PAGE);

	ASSERT_EQ(0, tio_alloc(self->fd, 8 * PAGE, NULL, &a, NULL));
	ASSERT_EQ(0, pin(self->fd, u, 6 * PAGE, 0, &b, NULL));
	/* 14 of 16 pages used: 3 more fail, by either path, pinning nothing. */
	EXPECT_EQ(-ENOMEM, tio_alloc(self->fd, 3 * PAGE, NULL, &c, NULL));
	EXPECT_EQ(-ENOMEM, pin(self->fd, u + 6 * PAGE, 3 * PAGE, 0, &c, NULL));
	EXPECT_EQ(self->pinned0 + 14 * PAGE, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0 + 14 * 4, tio_vmpin_kb());
	ASSERT_EQ(0, tio_alloc(self->fd, 2 * PAGE, NULL, &c, NULL));
	EXPECT_EQ(0, tio_free(self->fd, c));
	/* Freeing returns the charge. */
	EXPECT_EQ(0, tio_free(self->fd, a));
	ASSERT_EQ(0, pin(self->fd, u + 6 * PAGE, 10 * PAGE, 0, &c, NULL));
	EXPECT_EQ(0, tio_free(self->fd, c));
	EXPECT_EQ(0, tio_free(self->fd, b));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0, tio_vmpin_kb());
	/* A zero limit refuses outright, as mlock(2) does. */
	rl.rlim_cur = rl.rlim_max = 0;
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	EXPECT_EQ(-EPERM, tio_alloc(self->fd, PAGE, NULL, &a, NULL));
	EXPECT_EQ(-EPERM, pin(self->fd, u, PAGE, 0, &a, NULL));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	munmap(u, 16 * PAGE);
}

/* CAP_IPC_LOCK lifts RLIMIT_MEMLOCK, a zero one too; the charge stays exact. */
TEST_F(buf, memlock_cap_ipc_lock)
{
	struct rlimit rl = { 2 * PAGE, 2 * PAGE };
	uint32_t a, b;
	long vmpin0 = tio_vmpin_kb();

	if (geteuid())
		SKIP(return, "needs CAP_IPC_LOCK (root)");
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	ASSERT_EQ(0, tio_alloc(self->fd, 8 * PAGE, NULL, &a, NULL));
	rl.rlim_cur = rl.rlim_max = 0;
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &b, NULL));
	EXPECT_EQ(self->pinned0 + 9 * PAGE, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0 + 9 * 4, tio_vmpin_kb());
	EXPECT_EQ(0, tio_free(self->fd, a));
	EXPECT_EQ(0, tio_free(self->fd, b));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0, tio_vmpin_kb());
}

static int write_param(const char *path, unsigned long long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%llu\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

TEST_F(buf, module_cap_max_pinned)
{
	struct tio_info info = { 0 };
	uint32_t hs[2] = { 0, 0 };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (access(MAX_PINNED_PARAM, W_OK))
		SKIP(return, "no writable %s", MAX_PINNED_PARAM);
	ASSERT_EQ(0, write_param(MAX_PINNED_PARAM, info.pinned + 8 * PAGE));
	EXPECT_EQ(0, tio_alloc(self->fd, 6 * PAGE, NULL, &hs[0], NULL));
	EXPECT_EQ(-ENOMEM, tio_alloc(self->fd, 3 * PAGE, NULL, &hs[1], NULL));
	EXPECT_EQ(info.pinned + 6 * PAGE, tio_pinned(self->fd));
	EXPECT_EQ(0, tio_free(self->fd, hs[0]));
	EXPECT_EQ(0, tio_alloc(self->fd, 8 * PAGE, NULL, &hs[1], NULL));
	EXPECT_EQ(0, tio_free(self->fd, hs[1]));
	ASSERT_EQ(0, write_param(MAX_PINNED_PARAM, info.max_pinned));
	EXPECT_EQ(info.pinned, tio_pinned(self->fd));
}

TEST_HARNESS_MAIN
