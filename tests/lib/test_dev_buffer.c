// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The device context, buffers and tensors over buffers, on whichever
 * backend runs (the user backend on the host, TIO_BACKEND=kernel in the VM).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "dev_test.h"

static struct tio_desc f32_desc(int64_t rows, int64_t cols)
{
	struct tio_desc d;

	memset(&d, 0, sizeof(d));
	d.code = TIO_DTYPE_FLOAT;
	d.bits = 32;
	d.lanes = 1;
	d.ndim = 2;
	d.shape[0] = rows;
	d.shape[1] = cols;
	return d;
}

TEST(backend_is_chosen_and_named)
{
	const char *want = getenv("TIO_BACKEND");
	const char *name = tio_backend_name();

	ASSERT_NE(NULL, name);
	if (want && *want) {
		EXPECT_STREQ(want, name);
	} else {
		EXPECT_STREQ(access("/dev/tensorio", F_OK) ? "user" : "kernel", name);
	}
	EXPECT_EQ(strcmp(name, "kernel") ? TIO_BACKEND_USER : TIO_BACKEND_KERNEL,
		  tio_backend());
}

TEST(forced_kernel_backend_says_why)
{
	if (!access("/dev/tensorio", F_OK))
		SKIP(return, "/dev/tensorio exists: the kernel backend is usable");
	tio_object_t *e;
	const char *m;

	setenv("TIO_BACKEND", "kernel", 1);
	ASSERT_EQ(-1, tio_init());
	/* A missing device file is an OSError with ENOENT, said once. */
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_EQ(ENOENT, tio_errno());
	EXPECT_STREQ("OSError", tio_error_kind(e));
	m = tio_error_message(e);
	EXPECT_NE(NULL, strstr(m, "TIO_BACKEND=kernel forced")) TH_LOG("%s", m);
	EXPECT_NE(NULL, strstr(m, "No such file or directory (ENOENT)")) TH_LOG("%s", m);
	EXPECT_EQ(strstr(m, "No such file or directory"),
		  strstr(m, "No such file or directory (ENOENT)")) TH_LOG("%s", m);
	tio_object_decref(e);
	/* No context was made: the next call fails the same way. */
	ASSERT_EQ(NULL, tio_backend_name());
	ASSERT_DEV_MSG(ENOENT, "is tensorio.ko loaded?");
}

TEST(unknown_backend_is_refused)
{
	setenv("TIO_BACKEND", "gpu", 1);
	ASSERT_EQ(-1, tio_init());
	ASSERT_DEV_MSG(EINVAL, "unknown backend");
}

TEST(forced_user_backend_and_shutdown_close_everything)
{
	tio_buffer_t *b;
	int fds;

	setenv("TIO_BACKEND", "user", 1);
	dev_warm_up();
	ASSERT_OK(tio_shutdown());
	fds = dev_count_fds();
	ASSERT_OK(tio_init());
	ASSERT_STREQ("user", tio_backend_name());
	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	ASSERT_EQ(-1, tio_shutdown());
	ASSERT_DEV_MSG(EBUSY, "alive");
	tio_buffer_decref(b);
	ASSERT_OK(tio_shutdown());
	EXPECT_EQ(fds, dev_count_fds());
	EXPECT_EQ(0, tio_debug_live_handles());
	/* A later call makes a new context. */
	ASSERT_OK(tio_init());
	ASSERT_OK(tio_shutdown());
}

DEV_FIXTURE(buf);

TEST_F(buf, driver_info)
{
	struct tio_driver_info info;

	ASSERT_OK(tio_driver_info(&info));
	EXPECT_EQ(TIO_UAPI_VERSION_MAJOR, info.version >> 16);
	EXPECT_TRUE(info.features & TIO_FEAT_BUFFERS);
	EXPECT_TRUE(info.features & TIO_FEAT_STREAMS);
	EXPECT_LT(0, info.max_submit);
	EXPECT_LT(0, info.max_buf_size);
}

TEST_F(buf, alloc_is_zeroed_page_rounded_and_mapped)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct tio_buffer_info info;
	tio_buffer_t *b;
	unsigned char *p;
	size_t i;

	ASSERT_OK(tio_buffer_alloc(pg + 1, NULL, &b));
	EXPECT_EQ(2 * pg, tio_buffer_size(b));
	EXPECT_NE(0, tio_buffer_handle(b));
	p = tio_buffer_data(b);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(p, tio_buffer_data(b));
	for (i = 0; i < 2 * pg; i++)
		ASSERT_EQ(0, p[i]);
	memset(p, 0xab, 2 * pg);
	ASSERT_OK(tio_buffer_info(b, &info, NULL));
	EXPECT_EQ(2 * pg, info.size);
	EXPECT_EQ(TIO_BUF_KIND_ALLOC, info.kind);
	EXPECT_EQ(0, info.state & TIO_BUF_S_DESC);
	tio_buffer_decref(b);
}

TEST_F(buf, alloc_errors)
{
	struct tio_desc d = f32_desc(1024, 2);
	struct tio_driver_info info;
	tio_buffer_t *b = NULL;

	ASSERT_EQ(-1, tio_buffer_alloc(0, NULL, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_OK(tio_driver_info(&info));
	ASSERT_EQ(-1, tio_buffer_alloc(info.max_buf_size + 1, NULL, &b));
	ASSERT_DEV_ERR(E2BIG, "ValueError");
	/* 8 KiB of floats do not fit one page. */
	ASSERT_EQ(-1, tio_buffer_alloc(4096, &d, &b));
	ASSERT_DEV_ERR(ERANGE, "ValueError");
	d.code = 99;
	ASSERT_EQ(-1, tio_buffer_alloc(1 << 16, &d, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(NULL, b);
}

TEST_F(buf, descriptors_set_read_back_and_cleared)
{
	struct tio_desc d = f32_desc(16, 16), got;
	struct tio_buffer_info info;
	tio_buffer_t *b;

	ASSERT_OK(tio_buffer_alloc(1024, &d, &b));
	memset(&got, 0, sizeof(got));
	ASSERT_OK(tio_buffer_info(b, &info, &got));
	EXPECT_TRUE(info.state & TIO_BUF_S_DESC);
	EXPECT_EQ(0, memcmp(&d, &got, sizeof(d)));
	/* Strided, reversed rows: elements before byte_offset. */
	d.flags = TIO_DESC_F_STRIDED;
	d.strides[0] = -16;
	d.strides[1] = 1;
	d.byte_offset = 15 * 16 * 4;
	ASSERT_OK(tio_buffer_set_desc(b, &d));
	d.byte_offset = 0;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_DEV_ERR(ERANGE, "ValueError");
	d.flags = 0;	/* strides without the flag */
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	d = f32_desc(INT64_MAX, 4);
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_DEV_ERR(EOVERFLOW, "ValueError");
	d = f32_desc(2, 2);
	d.shape[5] = 1;	/* past ndim */
	ASSERT_EQ(-1, tio_desc_check(&d, 4096));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_OK(tio_buffer_set_desc(b, NULL));
	ASSERT_OK(tio_buffer_info(b, &info, NULL));
	EXPECT_EQ(0, info.state & TIO_BUF_S_DESC);
	tio_buffer_decref(b);
}

TEST_F(buf, pin_user_memory)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct tio_buffer_info info;
	tio_buffer_t *b = NULL;
	char *mem, *hole;

	mem = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	memset(mem, 7, 4 * pg);
	ASSERT_OK(tio_buffer_pin(mem, 2 * pg, 0, &b));
	EXPECT_EQ((void *)mem, tio_buffer_data(b));
	EXPECT_EQ(2 * pg, tio_buffer_size(b));
	ASSERT_OK(tio_buffer_info(b, &info, NULL));
	EXPECT_EQ(TIO_BUF_KIND_USER, info.kind);
	tio_buffer_decref(b);
	b = NULL;
	ASSERT_EQ(-1, tio_buffer_pin(mem + 1, pg, 0, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_buffer_pin(mem, pg + 1, 0, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_buffer_pin(mem, 0, 0, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_buffer_pin(mem, pg, 0x80, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	/* A hole in the range. */
	hole = mem + 2 * pg;
	ASSERT_EQ(0, munmap(hole, pg));
	ASSERT_EQ(-1, tio_buffer_pin(mem, 4 * pg, 0, &b));
	ASSERT_DEV_ERR(EFAULT, "OSError");
	EXPECT_EQ(NULL, b);
	munmap(mem, 2 * pg);
	munmap(mem + 3 * pg, pg);
}

/* tio_buffer_pin_owned()'s release: counts its calls, checks the memory is unpinned. */
struct owned {
	char *mem;
	size_t size;
	int64_t handles;	/* live handles expected when released */
	int released;
};

static void owned_release(void *arg)
{
	struct owned *o = arg;

	o->released++;
	o->handles -= tio_debug_live_handles();	/* 0 if the buffer was freed first */
}

/*
 * The owner gets its memory back once, after the last reference (a Tensor's
 * here) is gone and the buffer freed; never when the pin fails.
 */
TEST_F(buf, pin_owned_gives_memory_back_after_last_reference)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct owned o = { .size = 2 * pg };
	struct tio_desc d = f32_desc(2, 8);
	tio_object_t *t;
	tio_buffer_t *b = NULL;
	float *f;

	o.mem = mmap(NULL, o.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, o.mem);
	o.handles = tio_debug_live_handles();
	ASSERT_OK(tio_buffer_pin_owned(o.mem, o.size, 0, owned_release, &o, &b));
	EXPECT_EQ((void *)o.mem, tio_buffer_data(b));
	ASSERT_OK(tio_buffer_tensor(b, &d, &t));
	tio_buffer_decref(b);	/* the tensor holds it now */
	EXPECT_EQ(0, o.released);
	f = tio_tensor_dl(t)->data;
	f[15] = 2.5f;
	EXPECT_EQ(2.5f, ((float *)o.mem)[15]);
	tio_object_decref(t);
	EXPECT_EQ(1, o.released);
	EXPECT_EQ(0, o.handles);
	/* Bad arguments: a clear error, no release, nothing pinned. */
	b = NULL;
	o.released = 0;
	ASSERT_EQ(-1, tio_buffer_pin_owned(o.mem, o.size, 0, NULL, &o, &b));
	ASSERT_DEV_MSG(EINVAL, "tio_buffer_pin_owned: no release function");
	ASSERT_EQ(-1, tio_buffer_pin_owned(o.mem + 1, pg, 0, owned_release, &o, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(NULL, b);
	EXPECT_EQ(0, o.released);
	EXPECT_EQ(0, tio_debug_live_handles());
	munmap(o.mem, o.size);
}

TEST_F(buf, export_and_import_dmabuf)
{
	tio_buffer_t *b, *c = NULL;
	int fd = -1;
	char *p, *q;

	ASSERT_OK(tio_buffer_alloc(8192, NULL, &b));
	p = tio_buffer_data(b);
	ASSERT_NE(NULL, p);
	strcpy(p, "shared through a dma-buf");
	if (tio_buffer_export(b, TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR, &fd)) {
		ASSERT_FALSE(dev_is_kernel());
		ASSERT_DEV_ERR(EOPNOTSUPP, "NotImplementedError");
		tio_buffer_decref(b);
		SKIP(return, "user backend without /dev/udmabuf: no dma-buf export");
	}
	ASSERT_OK(tio_buffer_import(fd, &c));
	EXPECT_EQ(8192, tio_buffer_size(c));
	q = tio_buffer_data(c);
	ASSERT_NE(NULL, q);
	EXPECT_STREQ("shared through a dma-buf", q);
	q[0] = 'S';
	EXPECT_EQ('S', p[0]);
	close(fd);
	tio_buffer_decref(c);
	tio_buffer_decref(b);
}

TEST_F(buf, import_errors)
{
	tio_buffer_t *b = NULL;
	int fd;

	ASSERT_EQ(-1, tio_buffer_import(-1, &b));
	ASSERT_DEV_ERR(EBADF, "OSError");
	ASSERT_EQ(-1, tio_buffer_import(1000, &b));
	ASSERT_DEV_ERR(EBADF, "OSError");
	fd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 4096));
	ASSERT_EQ(-1, tio_buffer_import(fd, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	close(fd);
	EXPECT_EQ(NULL, b);
}

TEST_F(buf, tensor_keeps_its_buffer_alive)
{
	struct tio_desc d = f32_desc(4, 8);
	DLManagedTensorVersioned *mt;
	tio_object_t *t;
	tio_buffer_t *b;
	float *f;

	ASSERT_OK(tio_buffer_alloc(4096, &d, &b));
	ASSERT_OK(tio_buffer_tensor(b, NULL, &t));
	tio_buffer_decref(b);	/* the tensor holds it now */
	EXPECT_EQ(1, tio_debug_live_handles());
	EXPECT_EQ(2, tio_tensor_dl(t)->ndim);
	EXPECT_EQ(8, tio_tensor_dl(t)->shape[1]);
	EXPECT_EQ(kDLFloat, tio_tensor_dl(t)->dtype.code);
	f = tio_tensor_dl(t)->data;
	f[31] = 1.5f;
	ASSERT_OK(tio_tensor_to_dlpack_versioned(t, &mt));
	tio_object_decref(t);	/* the DLPack export holds it now */
	EXPECT_EQ(1, tio_debug_live_handles());
	EXPECT_EQ(1.5f, ((float *)mt->dl_tensor.data)[31]);
	mt->deleter(mt);
	EXPECT_EQ(0, tio_debug_live_handles());
}

TEST_F(buf, dlpack_needs_a_descriptor)
{
	struct tio_desc d = f32_desc(2, 2);
	DLManagedTensorVersioned *mt;
	tio_buffer_t *b;

	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	ASSERT_EQ(-1, tio_buffer_to_dlpack(b, NULL, &mt));
	ASSERT_DEV_MSG(EINVAL, "no tensor descriptor");
	d.flags = TIO_DESC_F_STRIDED;
	d.strides[0] = 1;
	d.strides[1] = 2;	/* column-major */
	ASSERT_OK(tio_buffer_to_dlpack(b, &d, &mt));
	EXPECT_EQ(2, mt->dl_tensor.strides[1]);
	mt->deleter(mt);
	tio_buffer_decref(b);
}

TEST_F(buf, ffi_globals_drive_buffers)
{
	tio_any_t args[2], ret = tio_any_none(), v = tio_any_none();
	tio_object_t *alloc, *info;

	ASSERT_OK(tio_func_get_global("tio.buffer.alloc", &alloc));
	ASSERT_NE(NULL, alloc);
	ASSERT_OK(tio_func_get_global("tio.buffer.info", &info));
	args[0] = tio_any_int(10000);
	ASSERT_OK(tio_func_call_any(alloc, args, 1, &ret));
	ASSERT_OK(tio_object_get_field(ret.v_obj, "size", &v));
	EXPECT_EQ(12288, v.v_int64);
	ASSERT_OK(tio_object_get_field(ret.v_obj, "kind", &v));
	EXPECT_EQ(TIO_BUF_KIND_ALLOC, v.v_int64);
	args[0] = ret;
	ASSERT_OK(tio_func_call_any(info, args, 1, &v));
	EXPECT_EQ(12288, v.v_int64);
	tio_any_decref(&ret);
	/* Bad arguments: a clear error, nothing allocated. */
	args[0] = tio_any_float(1.0);
	ASSERT_EQ(-1, tio_func_call_any(alloc, args, 1, &ret));
	ASSERT_DEV_MSG(EINVAL, "tio.buffer.alloc: argument 1 (size) must be an int");
	ASSERT_EQ(-1, tio_func_call_any(alloc, args, 0, &ret));
	ASSERT_DEV_MSG(EINVAL, "takes 1 to 2 arguments");
	args[0] = tio_any_int(1);
	ASSERT_EQ(-1, tio_func_call_any(info, args, 1, &ret));
	ASSERT_DEV_MSG(EINVAL, "must be a tio.Buffer");
	tio_object_decref(alloc);
	tio_object_decref(info);
}

/* How many mappings of the user backend's buffer memfds this process has. */
static int memfd_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:tensorio-buffer") != NULL;
	fclose(f);
	return n;
}

/* The user backend maps a buffer once: tio_buffer_data() reuses it. */
TEST_F(buf, user_backend_maps_a_buffer_once)
{
	tio_buffer_t *b;
	int before;
	char *p;

	if (tio_backend() != TIO_BACKEND_USER)
		SKIP(return, "the user backend's memfds");
	before = memfd_mappings();
	ASSERT_OK(tio_buffer_alloc(8192, NULL, &b));
	EXPECT_EQ(before + 1, memfd_mappings());
	p = tio_buffer_data(b);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(before + 1, memfd_mappings());
	p[8191] = 1;
	EXPECT_EQ(p, tio_buffer_data(b));
	tio_buffer_decref(b);
	EXPECT_EQ(before, memfd_mappings());
}

/* A descriptor from a dtype and a shape; an allocation sized by it. */
TEST_F(buf, desc_init_sizes_an_allocation)
{
	DLDataType f32 = { kDLFloat, 32, 1 };
	int64_t shape[2] = { 3, 1000 }, bad[1] = { -1 };
	struct tio_desc d;
	tio_buffer_t *b = NULL;
	uint64_t bytes;

	ASSERT_OK(tio_desc_init(&d, f32, 2, shape));
	EXPECT_EQ(2, d.ndim);
	EXPECT_EQ(1000, d.shape[1]);
	ASSERT_OK(tio_desc_nbytes(&d, &bytes));
	EXPECT_EQ(12000, bytes);
	ASSERT_OK(tio_buffer_alloc(0, &d, &b));
	EXPECT_LE(12000, tio_buffer_size(b));
	tio_buffer_decref(b);
	ASSERT_EQ(-1, tio_desc_init(&d, f32, 1, bad));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_desc_init(&d, f32, TIO_MAX_NDIM + 1, shape));
	ASSERT_DEV_MSG(EINVAL, "tio_desc_init: ndim 9");
}

/* Every uapi command has its FFI global: BUF_PIN_USER and BUF_SET_DESC too. */
TEST_F(buf, ffi_globals_pin_and_set_desc)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct tio_desc d = f32_desc(4, 8), got;
	tio_object_t *pin, *set_desc, *info;
	tio_any_t args[3], ret = tio_any_none(), v = tio_any_none();
	struct tio_buffer_info bi;
	char *mem;

	mem = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_OK(tio_func_get_global("tio.buffer.pin_user", &pin));
	ASSERT_OK(tio_func_get_global("tio.buffer.set_desc", &set_desc));
	ASSERT_OK(tio_func_get_global("tio.buffer.info", &info));
	args[0] = tio_any_ptr(mem);
	args[1] = tio_any_int((int64_t)pg);
	ASSERT_OK(tio_func_call_any(pin, args, 2, &ret));
	EXPECT_EQ((void *)mem, tio_buffer_data((tio_buffer_t *)ret.v_obj));
	ASSERT_OK(tio_object_get_field(ret.v_obj, "kind", &v));
	EXPECT_EQ(TIO_BUF_KIND_USER, v.v_int64);
	args[0] = ret;
	args[1] = tio_any_ptr(&d);
	ASSERT_OK(tio_func_call_any(set_desc, args, 2, &v));
	ASSERT_OK(tio_buffer_info((tio_buffer_t *)ret.v_obj, &bi, &got));
	EXPECT_TRUE(bi.state & TIO_BUF_S_DESC);
	EXPECT_EQ(8, got.shape[1]);
	/* None with TIO_DESC_CLEAR drops it. */
	args[1] = tio_any_none();
	args[2] = tio_any_int(TIO_DESC_CLEAR);
	ASSERT_OK(tio_func_call_any(set_desc, args, 3, &v));
	ASSERT_OK(tio_buffer_info((tio_buffer_t *)ret.v_obj, &bi, NULL));
	EXPECT_FALSE(bi.state & TIO_BUF_S_DESC);
	/* Bad arguments: clear errors, nothing pinned. */
	args[1] = tio_any_float(1.0);
	ASSERT_EQ(-1, tio_func_call_any(set_desc, args, 2, &v));
	ASSERT_DEV_MSG(EINVAL, "tio.buffer.set_desc: argument 2 (desc) must be a pointer");
	args[2] = tio_any_int(-1);
	args[1] = tio_any_none();
	ASSERT_EQ(-1, tio_func_call_any(set_desc, args, 3, &v));
	ASSERT_DEV_MSG(EINVAL, "argument 3 (flags) must be in [0, 4294967295], got -1");
	tio_any_decref(&ret);
	args[0] = tio_any_ptr(mem);
	args[1] = tio_any_int(0);
	ASSERT_EQ(-1, tio_func_call_any(pin, args, 2, &ret));
	ASSERT_DEV_MSG(EINVAL, "tio.buffer.pin_user: argument 2 (size) must be positive, got 0");
	EXPECT_EQ(0, tio_debug_live_handles());
	tio_object_decref(pin);
	tio_object_decref(set_desc);
	tio_object_decref(info);
	munmap(mem, pg);
}

TEST_HARNESS_MAIN
