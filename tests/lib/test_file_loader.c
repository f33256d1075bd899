// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The loader engine through its entry points: sharded safetensors
 * checkpoints (good, a missing shard, a tensor in two shards, an index
 * naming an absent tensor), cancellation half way (nothing leaked),
 * unaligned ranges, a file on tmpfs (no O_DIRECT), the float8 dtypes and
 * the metadata map, the tiling policy; safe saving (duplicate names,
 * __metadata__, a save over the file size limit leaves the old file).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <tensorio/io.h>
#include <tensorio/pinned.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

#include "kselftest_harness.h"
#include "dev_test.h"

FIXTURE(ld) { int fds; int64_t objs; char dir[64]; char path[128]; };
FIXTURE_SETUP(ld)
{
	ASSERT_OK(tio_init());
	dev_warm_up();
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
	strcpy(self->dir, "/tmp/tio-ld-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->path, sizeof(self->path), "%s/model.safetensors", self->dir);
}
FIXTURE_TEARDOWN(ld)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	EXPECT_EQ(0, system(cmd));
	tio_pinned_trim();
	tio_error_clear();
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
	EXPECT_EQ(self->fds, dev_count_fds());
}

/* @n uint8 tensors "<prefix>k" of @bytes each, byte value k + @seed. */
static int save_u8(const char *path, const char *prefix, int n, int64_t bytes, int seed)
{
	DLTensor t[8];
	const DLTensor *tv[8] = { 0 };
	char names[8][32];
	const char *nv[8] = { 0 };
	int i, ret;

	memset(t, 0, sizeof(t));
	for (i = 0; i < n; i++) {
		t[i].data = malloc((size_t)bytes);
		memset(t[i].data, i + seed, (size_t)bytes);
		t[i].ndim = 1;
		t[i].shape = &bytes;
		t[i].dtype.code = kDLUInt;
		t[i].dtype.bits = 8;
		t[i].dtype.lanes = 1;
		tv[i] = &t[i];
		snprintf(names[i], sizeof(names[i]), "%s%d", prefix, i);
		nv[i] = names[i];
	}
	ret = tio_safetensors_save(path, nv, tv, n);
	for (i = 0; i < n; i++)
		free(t[i].data);
	return ret;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

static int check_u8(tio_safetensors_t *st, const char *name, int64_t bytes, int val)
{
	tio_object_t *t;
	DLTensor *dl;
	int64_t i;
	int bad = 0;

	if (tio_safetensors_tensor(st, name, &t))
		return -1;
	dl = tio_tensor_dl(t);
	for (i = 0; i < bytes; i++)
		bad |= ((unsigned char *)dl->data)[dl->byte_offset + i] != val;
	tio_object_decref(t);
	return bad;
}

TEST_F(ld, sharded_checkpoints)
{
	char a[160], b[160], idx[160];
	tio_safetensors_t *st;

	snprintf(a, sizeof(a), "%s/model-00001-of-00002.safetensors", self->dir);
	snprintf(b, sizeof(b), "%s/model-00002-of-00002.safetensors", self->dir);
	snprintf(idx, sizeof(idx), "%s/model.safetensors.index.json", self->dir);
	ASSERT_OK(save_u8(a, "a", 3, 100001, 1));
	ASSERT_OK(save_u8(b, "b", 2, 5000, 7));
	write_text(idx, "{\"metadata\": {\"total_size\": 310003}, \"weight_map\": {"
		   "\"a0\": \"model-00001-of-00002.safetensors\","
		   "\"a1\": \"model-00001-of-00002.safetensors\","
		   "\"a2\": \"model-00001-of-00002.safetensors\","
		   "\"b0\": \"model-00002-of-00002.safetensors\","
		   "\"b1\": \"model-00002-of-00002.safetensors\"}}");
	ASSERT_OK(tio_safetensors_load_ex(idx, NULL, &st));
	EXPECT_EQ(2, tio_safetensors_shards(st));
	EXPECT_EQ(5, tio_safetensors_count(st));
	EXPECT_STREQ("310003", tio_safetensors_metadata(st, "total_size"));
	EXPECT_EQ(0, check_u8(st, "a2", 100001, 3));
	EXPECT_EQ(0, check_u8(st, "b1", 5000, 8));
	tio_safetensors_free(st);

	/* The index names a tensor its shard lacks. */
	write_text(idx, "{\"weight_map\": {\"a0\": \"model-00001-of-00002.safetensors\","
		   "\"a1\": \"model-00001-of-00002.safetensors\","
		   "\"a2\": \"model-00001-of-00002.safetensors\","
		   "\"zz\": \"model-00001-of-00002.safetensors\","
		   "\"b0\": \"model-00002-of-00002.safetensors\","
		   "\"b1\": \"model-00002-of-00002.safetensors\"}}");
	ASSERT_EQ(-1, tio_safetensors_load_ex(idx, NULL, &st));
	ASSERT_DEV_MSG(EINVAL, "tensor zz is not in its shard");
	/* A tensor the weight_map puts in another shard. */
	write_text(idx, "{\"weight_map\": {\"a0\": \"model-00002-of-00002.safetensors\","
		   "\"a1\": \"model-00001-of-00002.safetensors\","
		   "\"a2\": \"model-00001-of-00002.safetensors\","
		   "\"b0\": \"model-00002-of-00002.safetensors\","
		   "\"b1\": \"model-00002-of-00002.safetensors\"}}");
	ASSERT_EQ(-1, tio_safetensors_load_ex(idx, NULL, &st));
	ASSERT_DEV_MSG(EINVAL, "the weight_map says");
	/* A missing shard. */
	write_text(idx, "{\"weight_map\": {\"a0\": \"model-00003-of-00002.safetensors\"}}");
	ASSERT_EQ(-1, tio_safetensors_load_ex(idx, NULL, &st));
	ASSERT_DEV_MSG(ENOENT, "model-00003-of-00002.safetensors");
	/* A tensor in two shards. */
	ASSERT_OK(save_u8(b, "a", 1, 10, 0));
	write_text(idx, "{\"weight_map\": {\"a0\": \"model-00001-of-00002.safetensors\","
		   "\"a1\": \"model-00001-of-00002.safetensors\","
		   "\"a2\": \"model-00001-of-00002.safetensors\","
		   "\"x\": \"model-00002-of-00002.safetensors\"}}");
	ASSERT_EQ(-1, tio_safetensors_load_ex(idx, NULL, &st));
	ASSERT_DEV_MSG(EINVAL, "tensor a0");
	/* Shards live next to the index. */
	write_text(idx, "{\"weight_map\": {\"a0\": \"../etc/passwd\"}}");
	ASSERT_EQ(-1, tio_safetensors_load_ex(idx, NULL, &st));
	ASSERT_DEV_MSG(EINVAL, "not a file next to the index");
	write_text(idx, "{\"nothing\": 1}");
	ASSERT_EQ(-1, tio_safetensors_load_ex(idx, NULL, &st));
	ASSERT_DEV_MSG(EINVAL, "without a weight_map");
}

struct cancel { int calls, at; uint64_t last, total; };

static int on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct cancel *c = arg;

	c->calls++;
	c->last = done;
	c->total = total;
	return c->at && c->calls >= c->at;
}

TEST_F(ld, progress_and_cancel_half_way)
{
	struct tio_pinned_stats before, after;
	struct cancel c = { 0, 0, 0, 0 };
	struct tio_io_opts o;
	tio_safetensors_t *st;
	struct stat sb;

	ASSERT_OK(save_u8(self->path, "t", 8, 1 << 20, 0));
	ASSERT_EQ(0, stat(self->path, &sb));
	memset(&o, 0, sizeof(o));
	o.chunk_size = 64 << 10;
	o.queue_depth = 2;
	o.progress = on_progress;
	o.progress_arg = &c;
	ASSERT_OK(tio_safetensors_load_ex(self->path, &o, &st));
	EXPECT_LE(100, c.calls);
	EXPECT_EQ((uint64_t)sb.st_size, c.last);
	EXPECT_EQ((uint64_t)sb.st_size, c.total);
	tio_safetensors_free(st);
	tio_pinned_trim();
	tio_pinned_stats(&before);
	c.calls = 0;
	c.at = 60;	/* about half way */
	ASSERT_EQ(-1, tio_safetensors_load_ex(self->path, &o, &st));
	ASSERT_DEV_MSG(ECANCELED, "cancelled by the progress callback");
	EXPECT_EQ(60, c.calls);
	EXPECT_GT((uint64_t)sb.st_size, c.last);
	tio_pinned_stats(&after);
	EXPECT_EQ(0, after.bytes_in_use);	/* the destination is gone */
	EXPECT_EQ(before.bytes_cached, after.bytes_cached);
}

TEST_F(ld, unaligned_ranges_and_tmpfs)
{
	const char *shm = "/dev/shm/tio-ld-test";
	struct tio_io_opts o;
	struct statfs fs;
	unsigned char *p, *q;
	tio_buffer_t *a, *b;
	size_t i, n = (5 << 20) + 4097;

	ASSERT_OK(tio_buffer_alloc(n + 8192, NULL, &a));
	ASSERT_OK(tio_buffer_alloc(n + 8192, NULL, &b));
	p = tio_buffer_data(a);
	q = tio_buffer_data(b);
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 >> 3);
	ASSERT_OK(tio_file_write(self->path, 0, n, a, 0, NULL));
	/* Head and tail unaligned in the file, congruent in memory. */
	memset(&o, 0, sizeof(o));
	o.chunk_size = 1 << 20;
	ASSERT_OK(tio_file_read(self->path, 4095, n - 4095 - 3, b, 4095, &o));
	EXPECT_EQ(0, memcmp(p + 4095, q + 4095, n - 4095 - 3));
	/* Not congruent: buffered throughout, still right. */
	memset(q, 0, n);
	ASSERT_OK(tio_file_read(self->path, 1, n - 1, b, 2, &o));
	EXPECT_EQ(0, memcmp(p + 1, q + 2, n - 1));
	EXPECT_EQ(0, o.used_direct);
	/* tmpfs refuses O_DIRECT: buffered (where /dev/shm is one). */
	if (!statfs("/dev/shm", &fs) && fs.f_type == TMPFS_MAGIC) {
		unlink(shm);
		ASSERT_OK(tio_file_write(shm, 0, n, a, 0, NULL));
		memset(q, 0, n);
		ASSERT_OK(tio_file_read(shm, 0, n, b, 0, &o));
		EXPECT_EQ(0, o.used_direct);
		EXPECT_EQ(0, memcmp(p, q, n));
		unlink(shm);
	} else {
		TH_LOG("no tmpfs at /dev/shm: that part skipped");
	}
	tio_buffer_decref(a);
	tio_buffer_decref(b);
}

/* A file of header @json and @n data bytes. */
static void write_raw(const char *path, const char *json, const char *data, size_t n)
{
	uint64_t hlen = strlen(json);
	unsigned char l[8];
	FILE *f = fopen(path, "w");
	int i;

	for (i = 0; i < 8; i++)
		l[i] = (unsigned char)(hlen >> (8 * i));
	fwrite(l, 8, 1, f);
	fwrite(json, hlen, 1, f);
	fwrite(data, n, 1, f);
	fclose(f);
}

TEST_F(ld, dtypes_metadata_and_tiling)
{
	static const char *const meta[] = { "format", "pt", "note", "x" };
	uint8_t f8[4] = { 1, 2, 3, 4 };
	int64_t shape = 4;
	DLTensor t = { .data = f8, .ndim = 1, .shape = &shape,
		       .dtype = { TIO_DL_FLOAT8_E4M3FN, 8, 1 } };
	const DLTensor *tv[2] = { &t, &t };
	const char *names[2] = { "w", "w" };
	tio_safetensors_t *st;
	tio_object_t *o;
	FILE *f;

	ASSERT_OK(tio_safetensors_save_ex(self->path, names, tv, 1, meta, 2));
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	EXPECT_STREQ("pt", tio_safetensors_metadata(st, "format"));
	EXPECT_STREQ("x", tio_safetensors_metadata(st, "note"));
	EXPECT_EQ(NULL, tio_safetensors_metadata(st, "nope"));
	EXPECT_NE(NULL, tio_safetensors_metadata_key(st, 1));
	EXPECT_EQ(NULL, tio_safetensors_metadata_key(st, 2));
	ASSERT_OK(tio_safetensors_tensor(st, "w", &o));
	EXPECT_EQ(TIO_DL_FLOAT8_E4M3FN, tio_tensor_dl(o)->dtype.code);
	tio_object_decref(o);
	tio_safetensors_free(st);
	/* Duplicate names and __metadata__ are refused, the file kept. */
	ASSERT_EQ(-1, tio_safetensors_save(self->path, names, tv, 2));
	ASSERT_DEV_MSG(EINVAL, "\"w\" given twice");
	names[1] = "__metadata__";
	ASSERT_EQ(-1, tio_safetensors_save(self->path, names, tv, 2));
	ASSERT_DEV_MSG(EINVAL, "reserved for the metadata");
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	tio_safetensors_free(st);
	/* Trailing bytes and gaps are refused. */
	f = fopen(self->path, "a");
	fputc(0, f);
	fclose(f);
	ASSERT_EQ(-1, tio_safetensors_load(self->path, &st));
	ASSERT_DEV_MSG(EINVAL, "1 trailing bytes");
	write_raw(self->path, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
		  "xy", 2);
	ASSERT_EQ(-1, tio_safetensors_load(self->path, &st));
	ASSERT_DEV_MSG(EINVAL, "a gap before the data of entry a");
	write_raw(self->path, "{\"a\":{\"dtype\":\"F4\",\"shape\":[1],\"data_offsets\":[0,1]}}",
		  "x", 1);
	ASSERT_EQ(-1, tio_safetensors_load(self->path, &st));
	ASSERT_DEV_MSG(EINVAL, "unknown dtype \"F4\"");
}

TEST_F(ld, save_over_the_file_size_limit_keeps_the_old_file)
{
	struct rlimit rl = { 1 << 20, 1 << 20 };
	char cmd[160];
	struct stat a, b;
	FILE *p;
	int n = -1;

	ASSERT_OK(save_u8(self->path, "old", 1, 1000, 0));
	ASSERT_EQ(0, stat(self->path, &a));
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &rl));
	ASSERT_EQ(-1, save_u8(self->path, "new", 2, 1 << 20, 0));
	ASSERT_DEV_MSG(EFBIG, "ulimit -f");
	ASSERT_EQ(0, stat(self->path, &b));
	EXPECT_EQ(a.st_size, b.st_size);
	EXPECT_EQ(a.st_ino, b.st_ino);
	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", self->dir);
	p = popen(cmd, "r");
	ASSERT_EQ(1, fscanf(p, "%d", &n));
	pclose(p);
	EXPECT_EQ(1, n);	/* no temporary left */
}

TEST_HARNESS_MAIN
