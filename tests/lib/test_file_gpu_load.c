// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors onto a GPU through the ring of bounce buffers, on a fake HIP
 * runtime (fixture_fake_hip.c: device memory is host memory, copies run
 * only when their stream is synchronised, so a bounce buffer reused too
 * early shows as wrong data). Tensors of odd sizes cross the ring's
 * pieces; the ring wraps several times; a sharded checkpoint (pieces
 * found by binary search over shard-major entries) lands byte for byte;
 * a cancelled load frees every device tensor; without CUDA the CUDA path
 * says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tensorio/gpu.h>
#include <tensorio/pinned.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

#include "kselftest_harness.h"
#include "dev_test.h"

#define NT 6

FIXTURE(gl) { int fds; int64_t objs; char path[64]; int64_t len[NT]; };
FIXTURE_SETUP(gl)
{
	const DLTensor *tv[NT];
	const char *nv[NT];
	static char names[NT][16];
	char hip[PATH_MAX];
	DLTensor t[NT];
	int i, fd;

	ASSERT_OK(tio_init());
	dev_warm_up();
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
	strcpy(self->path, "/tmp/tio-gl-XXXXXX");
	fd = mkstemp(self->path);
	ASSERT_LE(0, fd);
	close(fd);
	memset(t, 0, sizeof(t));
	for (i = 0; i < NT; i++) {
		int64_t k;

		self->len[i] = (3 << 20) + 12345 * (i + 1) + (i == 2 ? (9 << 20) : 0);
		t[i].data = malloc((size_t)self->len[i]);
		ASSERT_NE(NULL, t[i].data);
		for (k = 0; k < self->len[i]; k++)
			((unsigned char *)t[i].data)[k] = (unsigned char)(k * 7 + i);
		t[i].ndim = 1;
		t[i].shape = &self->len[i];
		t[i].dtype.code = kDLUInt;
		t[i].dtype.bits = 8;
		t[i].dtype.lanes = 1;
		tv[i] = &t[i];
		snprintf(names[i], sizeof(names[i]), "t%d", i);
		nv[i] = names[i];
	}
	ASSERT_OK(tio_safetensors_save(self->path, nv, tv, NT));
	for (i = 0; i < NT; i++)
		free(t[i].data);
	dev_fixture_path("fake_hip.so", hip, sizeof(hip));
	setenv("TIO_HIP_LIBRARY", hip, 1);
	setenv("TIO_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
}
FIXTURE_TEARDOWN(gl)
{
	unlink(self->path);
	tio_pinned_trim();
	tio_error_clear();
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
}

struct prog { int calls, at, backwards; uint64_t last, total; };

/* Called in the caller's thread, once per piece: done only grows. */
static int on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	p->backwards += done <= p->last;
	p->calls++;
	p->last = done;
	p->total = total;
	return p->at && p->calls >= p->at;
}

TEST_F(gl, through_the_bounce_ring)
{
	DLDevice dev = { kDLROCM, 0 };
	struct prog p = { 0, 0, 0, 0, 0 };
	struct tio_io_opts o;
	tio_safetensors_t *st;
	tio_object_t *t;
	int i, bad = 0;
	int64_t k;

	if (tio_gpu_init(kDLROCM))
		SKIP(return, "fake HIP runtime not loaded: %s",
		     tio_error_message(tio_error_peek_raised()));
	memset(&o, 0, sizeof(o));
	o.progress = on_progress;
	o.progress_arg = &p;
	ASSERT_OK(tio_safetensors_load_device(self->path, dev, &o, &st));
	EXPECT_EQ(NULL, tio_safetensors_buffer(st));
	EXPECT_EQ(p.total, p.last);
	EXPECT_LT(4, p.calls);
	EXPECT_EQ(0, p.backwards);
	for (i = 0; i < NT; i++) {
		char name[16];
		DLTensor *dl;

		snprintf(name, sizeof(name), "t%d", i);
		ASSERT_OK(tio_safetensors_tensor(st, name, &t));
		dl = tio_tensor_dl(t);
		EXPECT_EQ(kDLROCM, dl->device.device_type);
		EXPECT_EQ(self->len[i], dl->shape[0]);
		for (k = 0; k < self->len[i]; k++)
			bad += ((unsigned char *)dl->data)[k] != (unsigned char)(k * 7 + i);
		tio_object_decref(t);
	}
	EXPECT_EQ(0, bad);
	tio_safetensors_free(st);
}

TEST_F(gl, cancelled_half_way_frees_everything)
{
	DLDevice dev = { kDLROCM, 0 };
	struct prog p = { 0, 3, 0, 0, 0 };
	struct tio_io_opts o;
	tio_safetensors_t *st;

	if (tio_gpu_init(kDLROCM))
		SKIP(return, "fake HIP runtime not loaded");
	memset(&o, 0, sizeof(o));
	o.chunk_size = 1 << 20;
	o.progress = on_progress;
	o.progress_arg = &p;
	ASSERT_EQ(-1, tio_safetensors_load_device(self->path, dev, &o, &st));
	ASSERT_DEV_ERR(ECANCELED, "CancelledError");
	EXPECT_GT(p.total, p.last);
	EXPECT_EQ(3, p.calls);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
}

/* A copy failing in one slot's thread reaches the caller; the rest stop. */
TEST_F(gl, copy_failing_in_a_slot_thread)
{
	DLDevice dev = { kDLROCM, 0 };
	tio_safetensors_t *st;
	int n;

	if (tio_gpu_init(kDLROCM))
		SKIP(return, "fake HIP runtime not loaded");
	for (n = 1; n <= 9; n += 4) {
		char v[16];

		snprintf(v, sizeof(v), "%d", n);
		setenv("FAKE_HIP_FAIL_HTOD", v, 1);
		ASSERT_EQ(-1, tio_safetensors_load_device(self->path, dev, NULL, &st));
		unsetenv("FAKE_HIP_FAIL_HTOD");
		ASSERT_DEV_MSG(EINVAL, "hipErrorFake");
		EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
		/* Unset, the copies reset the fake's count; the load is whole. */
		ASSERT_OK(tio_safetensors_load_device(self->path, dev, NULL, &st));
		tio_safetensors_free(st);
	}
}

/* One shard: @n uint8 tensors, byte k of tensor i is k * 7 + seed + i. */
static int save_shard(const char *path, const char *const *names,
		      const int64_t *len, int n, int seed)
{
	const DLTensor *tv[4];
	DLTensor t[4];
	int i, ret = -1;
	int64_t k;

	memset(t, 0, sizeof(t));
	for (i = 0; i < n; i++) {
		t[i].data = malloc(len[i] ? (size_t)len[i] : 1);
		if (!t[i].data)
			goto out;
		for (k = 0; k < len[i]; k++)
			((unsigned char *)t[i].data)[k] = (unsigned char)(k * 7 + seed + i);
		t[i].ndim = 1;
		t[i].shape = (int64_t *)&len[i];
		t[i].dtype.code = kDLUInt;
		t[i].dtype.bits = 8;
		t[i].dtype.lanes = 1;
		tv[i] = &t[i];
	}
	ret = tio_safetensors_save(path, names, tv, n);
out:
	for (i = 0; i < n; i++)
		free(t[i].data);
	return ret;
}

/* Bytes of device tensor @name that differ from save_shard()'s pattern. */
static int64_t shard_bad(tio_safetensors_t *st, const char *name, int64_t len,
			 int seed)
{
	tio_object_t *t;
	DLTensor *dl;
	int64_t k, bad = 0;

	if (tio_safetensors_tensor(st, name, &t))
		return -1;
	dl = tio_tensor_dl(t);
	if (dl->device.device_type != kDLROCM || dl->shape[0] != len)
		bad = -2;
	for (k = 0; !bad && k < len; k++)
		bad += ((unsigned char *)dl->data)[k] != (unsigned char)(k * 7 + seed);
	tio_object_decref(t);
	return bad;
}

/*
 * Three shards named in the index out of file-name order; in each, names
 * sort apart from file order; tensors cross 4 MiB pieces, one is empty,
 * one shard is a single piece. Every byte lands on its tensor.
 */
TEST_F(gl, sharded_checkpoint)
{
	static const char *const an[] = { "z.a", "b.a", "m.a", "c.a" };
	static const char *const bn[] = { "y.b", "a.b", "e.b" };
	static const char *const cn[] = { "q.c", "d.c" };
	static const int64_t al[] = { (3 << 20) + 4097, (5 << 20) + 3, 12345, (2 << 20) + 1 };
	static const int64_t bl[] = { (1 << 20) + 77, 0, (2 << 20) + 5 };
	static const int64_t cl[] = { (4 << 20) + 8191, 999 };
	DLDevice dev = { kDLROCM, 0 };
	char dir[64], a[128], b[128], c[128], idx[128], cmd[160];
	struct prog p = { 0, 0, 0, 0, 0 };
	struct tio_io_opts o;
	tio_safetensors_t *st;
	FILE *f;
	int i;

	if (tio_gpu_init(kDLROCM))
		SKIP(return, "fake HIP runtime not loaded");
	strcpy(dir, "/tmp/tio-gls-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/m-1.safetensors", dir);
	snprintf(b, sizeof(b), "%s/m-2.safetensors", dir);
	snprintf(c, sizeof(c), "%s/m-3.safetensors", dir);
	snprintf(idx, sizeof(idx), "%s/m.safetensors.index.json", dir);
	ASSERT_OK(save_shard(a, an, al, 4, 10));
	ASSERT_OK(save_shard(b, bn, bl, 3, 20));
	ASSERT_OK(save_shard(c, cn, cl, 2, 30));
	f = fopen(idx, "w");
	ASSERT_NE(NULL, f);
	fputs("{\"weight_map\": {\"q.c\": \"m-3.safetensors\", \"y.b\": \"m-2.safetensors\","
	      "\"z.a\": \"m-1.safetensors\", \"d.c\": \"m-3.safetensors\","
	      "\"a.b\": \"m-2.safetensors\", \"e.b\": \"m-2.safetensors\","
	      "\"b.a\": \"m-1.safetensors\", \"m.a\": \"m-1.safetensors\","
	      "\"c.a\": \"m-1.safetensors\"}}", f);
	fclose(f);

	memset(&o, 0, sizeof(o));
	o.progress = on_progress;
	o.progress_arg = &p;
	ASSERT_OK(tio_safetensors_load_device(idx, dev, &o, &st));
	EXPECT_EQ(3, tio_safetensors_shards(st));
	EXPECT_EQ(9, tio_safetensors_count(st));
	EXPECT_EQ(p.total, p.last);
	EXPECT_LT(5, p.calls);
	EXPECT_EQ(0, p.backwards);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, shard_bad(st, an[i], al[i], 10 + i));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, shard_bad(st, bn[i], bl[i], 20 + i));
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, shard_bad(st, cn[i], cl[i], 30 + i));
	tio_safetensors_free(st);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));

	/* Cancelled with a shard still to load: every device tensor goes. */
	p = (struct prog){ 0, 4, 0, 0, 0 };
	ASSERT_EQ(-1, tio_safetensors_load_device(idx, dev, &o, &st));
	ASSERT_DEV_ERR(ECANCELED, "CancelledError");
	EXPECT_EQ(4, p.calls);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));

	/* A shard gone: named, nothing allocated on the device is left. */
	ASSERT_EQ(0, unlink(b));
	ASSERT_EQ(-1, tio_safetensors_load_device(idx, dev, NULL, &st));
	ASSERT_DEV_MSG(ENOENT, "m-2.safetensors");
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ(0, system(cmd));
}

TEST_F(gl, no_cuda_and_bad_devices)
{
	DLDevice cuda = { kDLCUDA, 0 }, cpu = { kDLCPU, 0 };
	tio_safetensors_t *st;

	ASSERT_EQ(-1, tio_safetensors_load_device(self->path, cuda, NULL, &st));
	ASSERT_DEV_MSG(ENODEV, "no CUDA driver");
	ASSERT_EQ(-1, tio_safetensors_load_device(self->path, cpu, NULL, &st));
	ASSERT_DEV_MSG(EINVAL, "neither CUDA");
}

TEST_HARNESS_MAIN
