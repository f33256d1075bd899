// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Saving checkpoints: every dtype and shape round trips bit for bit; the
 * file is laid out as the safetensors library lays it out (byte for byte
 * for a known case, and by the format's rules for a mixed one); bad input
 * is refused by name before anything is written; an asynchronous save
 * captures the tensors before it returns and signals its point when
 * durable; sharded saves split as the transformers convention does and
 * load through their index; progress and cancellation; buffered writes.
 */
#include <json-c/json.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "save_test.h"

SAVE_FIXTURE(sv)

static const struct { uint8_t code, bits; } dtypes[] = {
	{ kDLFloat, 64 }, { kDLFloat, 32 }, { kDLFloat, 16 }, { kDLBfloat, 16 },
	{ kDLInt, 64 }, { kDLInt, 32 }, { kDLInt, 16 }, { kDLInt, 8 }, { kDLUInt, 64 },
	{ kDLUInt, 32 }, { kDLUInt, 16 }, { kDLUInt, 8 }, { TIO_DTYPE_BOOL, 8 },
	{ TIO_DL_COMPLEX, 64 }, { TIO_DL_FLOAT8_E4M3FN, 8 }, { TIO_DL_FLOAT8_E5M2, 8 },
	{ TIO_DL_FLOAT8_E8M0FNU, 8 },
};
#define ND (sizeof(dtypes) / sizeof(dtypes[0]))
#define NS 4	/* shapes: scalar, empty, 7, 3x5x2 */

static const int64_t shapes[NS][3] = { { 0 }, { 0 }, { 7 }, { 3, 5, 2 } };
static const int ndims[NS] = { 0, 1, 1, 3 };

TEST_F(sv, every_dtype_and_shape_round_trips)
{
	DLTensor t[ND * NS];
	const DLTensor *tv[ND * NS];
	char names[ND * NS][16];
	const char *nv[ND * NS];
	struct tio_save_opts o;
	tio_safetensors_t *st;
	tio_object_t *view;
	tio_save_t *h;
	unsigned int i, k, pass;

	memset(t, 0, sizeof(t));
	for (i = 0; i < ND * NS; i++) {
		size_t n = tio_tensor_nbytes(&(DLTensor){ .ndim = ndims[i % NS],
			.shape = (int64_t *)shapes[i % NS], .dtype = { dtypes[i / NS].code,
			dtypes[i / NS].bits, 1 } });

		t[i].ndim = ndims[i % NS];
		t[i].shape = (int64_t *)shapes[i % NS];
		t[i].dtype = (DLDataType){ dtypes[i / NS].code, dtypes[i / NS].bits, 1 };
		t[i].data = malloc(n + 1);
		for (k = 0; k < n; k++)
			((unsigned char *)t[i].data)[k] = (unsigned char)(rand() >> 3);
		tv[i] = &t[i];
		snprintf(names[i], sizeof(names[i]), "d%02u.s%u", i / NS, i % NS);
		nv[i] = names[i];
	}
	for (pass = 0; pass < 2; pass++) {
		memset(&o, 0, sizeof(o));
		if (pass) {
			ASSERT_OK(tio_safetensors_save_async(self->path, nv, tv, ND * NS, &o, &h));
			ASSERT_OK(tio_save_wait(h, -1));
			tio_save_free(h);
		} else {
			ASSERT_OK(tio_safetensors_save_opts(self->path, nv, tv, ND * NS, &o));
		}
		EXPECT_EQ(1, o.shards);
		ASSERT_OK(tio_safetensors_load(self->path, &st));
		ASSERT_EQ(ND * NS, tio_safetensors_count(st));
		for (i = 0; i < ND * NS; i++) {
			EXPECT_TRUE(sv_same(st, nv[i], t[i].data, tio_tensor_nbytes(&t[i])))
				TH_LOG("%s", nv[i]);
			ASSERT_OK(tio_safetensors_tensor(st, nv[i], &view));
			EXPECT_EQ(t[i].dtype.code, tio_tensor_dl(view)->dtype.code);
			EXPECT_EQ(t[i].ndim, tio_tensor_dl(view)->ndim);
			tio_object_decref(view);
		}
		tio_safetensors_free(st);
	}
	for (i = 0; i < ND * NS; i++)
		free(t[i].data);
}

/* 0 when @path holds exactly @want, else why not (on stderr). */
static __attribute__((noinline)) int same_file(const char *path, const void *want, size_t wlen)
{
	unsigned char *got;
	size_t len;
	int ret;

	got = sv_slurp(path, &len);
	if (!got)
		return -1;
	ret = len == wlen && !memcmp(got, want, len) ? 0 : -1;
	if (ret)
		fprintf(stderr, "# %zu bytes, want %zu; header: %.*s\n", len, wlen,
			(int)(len > 8 ? len - 8 : 0), got + 8);
	free(got);
	return ret;
}

/* The safetensors library's bytes for these tensors, written out by hand. */
TEST_F(sv, the_library_s_bytes)
{
	static const char *const meta[] = { "k", "v/w" };
	static const char json[] =
		"{\"__metadata__\":{\"k\":\"v/w\"},"
		"\"c\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
		"\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]},"
		"\"a\\\"\\n\\u0001\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[2],"
		"\"data_offsets\":[12,20]},"
		"\"b/\xc3\xa9\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[20,23]}}";
	float a[2] = { 1.5f, -2 }, s = 7;
	int64_t c = -3, two = 2, three = 3;
	uint8_t b[3] = { 9, 8, 7 };
	DLTensor tb = { .data = b, .ndim = 1, .shape = &three, .dtype = { kDLUInt, 8, 1 } };
	DLTensor ta = { .data = a, .ndim = 1, .shape = &two, .dtype = { kDLFloat, 32, 1 } };
	DLTensor ts = { .data = &s, .dtype = { kDLFloat, 32, 1 } };
	DLTensor tc = { .data = &c, .ndim = 1, .shape = &(int64_t){ 1 },
			.dtype = { kDLInt, 64, 1 } };
	const DLTensor *tv[4] = { &tb, &ta, &tc, &ts };
	/* A name with a quote, a newline, a control character, non-ASCII. */
	const char *nv[4] = { "b/\xc3\xa9", "a\"\n\x01\xc3\xa9", "c", "a" };
	char want[512];
	size_t jl = strlen(json), pad = (8 - jl % 8) % 8;
	int i;

	ASSERT_OK(tio_safetensors_save_ex(self->path, nv, tv, 4, meta, 1));
	memset(want, ' ', sizeof(want));
	for (i = 0; i < 8; i++)
		want[i] = (char)((jl + pad) >> (8 * i));
	memcpy(want + 8, json, jl);
	memcpy(want + 8 + jl + pad, &c, 8);
	memcpy(want + 16 + jl + pad, &s, 4);
	memcpy(want + 20 + jl + pad, a, 8);
	memcpy(want + 28 + jl + pad, b, 3);
	EXPECT_EQ(0, same_file(self->path, want, 31 + jl + pad));
}

static int rank_of(const char *d)
{
	static const char *const order[] = { "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3",
		"F8_E8M0", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64",
		"I64", "U64" };
	unsigned int i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (!strcmp(order[i], d))
			return (int)i;
	return -1;
}

/* Element alignment of a dtype name: 8, 4, 2 or 1. */
static int align_of(const char *d)
{
	int r = rank_of(d);

	return r >= rank_of("F64") ? 8 : r >= rank_of("I32") ? 4 : r >= rank_of("I16") ? 2 : 1;
}

/* The format's rules for file @f of @len bytes: NULL, or the first broken. */
static const char *header_rules(const unsigned char *f, size_t len)
{
	static char why[160];
	int64_t at = 0, last = 1000;
	uint64_t hlen = 0, i;
	json_object *root;
	char prev[64] = "";
	const char *bad = NULL;

	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)f[i] << (8 * i);
	if (hlen % 8 || len < 8 + hlen || f[8] != '{')
		return "the length is not a multiple of 8, or the header not an object";
	for (i = 8 + hlen; i > 8 && f[i - 1] == ' '; i--)
		;
	if (f[i - 1] != '}' || 8 + hlen - i >= 8)
		return "not padded with fewer than 8 spaces";
	root = json_tokener_parse((const char *)f + 8);
	if (!root)
		return "not JSON";
	{
		json_object_object_foreach(root, key, v) {
			json_object *dt, *offs;
			const char *d;

			if (bad || !json_object_object_get_ex(v, "dtype", &dt) ||
			    !json_object_object_get_ex(v, "data_offsets", &offs)) {
				bad = bad ? bad : "an entry without dtype or data_offsets";
				continue;
			}
			d = json_object_get_string(dt);
			snprintf(why, sizeof(why), "entry %s (%s) ", key, d);
			if (json_object_get_int64(json_object_array_get_idx(offs, 0)) != at)
				bad = strcat(why, "does not start where the one before ends");
			else if (rank_of(d) > last || (rank_of(d) == last && strcmp(key, prev) <= 0))
				bad = strcat(why, "is out of the library's order");
			else if ((8 + hlen + (uint64_t)at) % (uint64_t)align_of(d))
				bad = strcat(why, "is not aligned to its element");
			at = json_object_get_int64(json_object_array_get_idx(offs, 1));
			last = rank_of(d);
			snprintf(prev, sizeof(prev), "%s", key);
		}
	}
	json_object_put(root);
	if (!bad && len != 8 + hlen + (uint64_t)at)
		bad = "trailing bytes, or data missing";
	return bad;
}

/* The format's rules, checked on a file of every dtype in a shuffled order. */
TEST_F(sv, the_header_follows_the_format)
{
	DLTensor t[ND];
	const DLTensor *tv[ND];
	char names[ND][16];
	const char *nv[ND];
	int64_t shape = 5;
	unsigned char *f;
	size_t len;
	unsigned int i;

	for (i = 0; i < ND; i++) {
		unsigned int k = (i * 7) % ND;

		memset(&t[i], 0, sizeof(t[i]));
		t[i].ndim = 1;
		t[i].shape = &shape;
		t[i].dtype = (DLDataType){ dtypes[k].code, dtypes[k].bits, 1 };
		t[i].data = calloc(5, 8);
		tv[i] = &t[i];
		snprintf(names[i], sizeof(names[i]), "n%u.%u", (unsigned int)((ND - i) % 5), i);
		nv[i] = names[i];
	}
	ASSERT_OK(tio_safetensors_save(self->path, nv, tv, ND));
	f = sv_slurp(self->path, &len);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(NULL, header_rules(f, len));
	free(f);
	for (i = 0; i < ND; i++)
		free(t[i].data);
}

/* @what fails with EINVAL naming @part; the old file and nothing else stays. */
#define REFUSED(nv, tv, n, part) do {					\
	struct stat b_;							\
	int strays_;							\
	ASSERT_EQ(-1, tio_safetensors_save(self->path, nv, tv, n));	\
	ASSERT_DEV_MSG(EINVAL, part);					\
	ASSERT_EQ(0, stat(self->path, &b_));				\
	EXPECT_EQ(old.st_ino, b_.st_ino);				\
	EXPECT_EQ(1, sv_count(self->dir, &strays_));			\
} while (0)

TEST_F(sv, bad_input_is_refused_by_name_before_writing)
{
	int64_t sh[2] = { 2, 3 }, st_bad[2] = { 1, 2 }, st_ok[2] = { 3, 1 };
	float w[6] = { 0 };
	DLTensor t = { .data = w, .ndim = 2, .shape = sh, .dtype = { kDLFloat, 32, 1 } };
	DLTensor u = t;
	const DLTensor *tv[2] = { &t, &u };
	const char *nv[2] = { "weight", "other" };
	struct stat old;

	ASSERT_OK(tio_safetensors_save(self->path, nv, tv, 2));
	ASSERT_EQ(0, stat(self->path, &old));
	u.strides = st_bad;
	REFUSED(nv, tv, 2, "tensor other is not contiguous");
	u.strides = st_ok;	/* compact strides are fine */
	ASSERT_OK(tio_safetensors_save(self->path, nv, tv, 2));
	ASSERT_EQ(0, stat(self->path, &old));
	u.strides = NULL;
	u.device.device_type = kDLVulkan;
	REFUSED(nv, tv, 2, "tensor other is on device type 7");
	u.device.device_type = kDLCUDA;
	t.device = (DLDevice){ kDLROCM, 0 };
	REFUSED(nv, tv, 2, "one save takes the tensors of one GPU");
	t.device = u.device = (DLDevice){ kDLCPU, 0 };
	u.dtype.bits = 80;
	REFUSED(nv, tv, 2, "tensor other: safetensors has no dtype");
	u.dtype = (DLDataType){ kDLFloat, 32, 2 };
	REFUSED(nv, tv, 2, "tensor other: safetensors has no dtype");
	u.dtype.lanes = 1;
	nv[1] = "weight";
	REFUSED(nv, tv, 2, "\"weight\" given twice");
	nv[1] = "__metadata__";
	REFUSED(nv, tv, 2, "reserved for the metadata");
	nv[1] = "bad\xff";
	REFUSED(nv, tv, 2, "not valid UTF-8");
	nv[1] = NULL;
	REFUSED(nv, tv, 2, "NULL tensor name");
	nv[1] = "other";
	u.data = NULL;
	REFUSED(nv, tv, 2, "tensor other has no data");
}

TEST_F(sv, async_save_captures_before_returning)
{
	int64_t n = 3 << 20;
	DLTensor a, b;
	int64_t sa, sb;
	const DLTensor *tv[2] = { &a, &b };
	const char *nv[2] = { "a", "b" };
	unsigned char *ca, *cb;
	struct tio_save_opts o;
	tio_safetensors_t *st;
	tio_stream_t *s;
	uint64_t seq;
	tio_save_t *h;
	int status = 1, fd;

	sv_u8(&a, &sa, n, 1);
	sv_u8(&b, &sb, 12345, 2);
	ca = malloc((size_t)n);
	cb = malloc(12345);
	memcpy(ca, a.data, (size_t)n);
	memcpy(cb, b.data, 12345);
	memset(&o, 0, sizeof(o));
	o.chunk_size = 256 << 10;
	ASSERT_OK(tio_safetensors_save_async(self->path, nv, tv, 2, &o, &h));
	memset(a.data, 0xee, (size_t)n);	/* the caller's, once it returned */
	memset(b.data, 0xee, 12345);
	ASSERT_OK(tio_save_point(h, &s, &seq));
	ASSERT_OK(tio_fence_wait(s, seq, -1, &status));
	EXPECT_EQ(0, status);
	if (dev_is_kernel()) {
		struct pollfd p = { .events = POLLIN };

		ASSERT_OK(tio_fence_export(s, seq, 0, &fd));
		p.fd = fd;
		EXPECT_EQ(1, poll(&p, 1, 0));	/* a signalled sync_file */
		close(fd);
	}
	ASSERT_OK(tio_save_wait(h, 0));
	tio_save_free(h);
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	EXPECT_TRUE(sv_same(st, "a", ca, (size_t)n));
	EXPECT_TRUE(sv_same(st, "b", cb, 12345));
	tio_safetensors_free(st);

	/* TIO_SAVE_NO_COPY: written from the tensors themselves. */
	o.flags = TIO_SAVE_NO_COPY;
	ASSERT_OK(tio_safetensors_save_async(self->path, nv, tv, 2, &o, &h));
	ASSERT_OK(tio_save_wait(h, -1));
	tio_save_free(h);
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	EXPECT_TRUE(sv_same(st, "a", a.data, (size_t)n));
	tio_safetensors_free(st);
	free(ca);
	free(cb);
	free(a.data);
	free(b.data);
}

static int cancel_at_first(void *arg, uint64_t done, uint64_t total)
{
	(void)done;
	(void)total;
	return ++*(int *)arg >= 1;
}

TEST_F(sv, async_failure_reaches_point_and_wait)
{
	DLTensor a;
	int64_t sa;
	const DLTensor *tv[1] = { &a };
	const char *nv[1] = { "a" };
	struct tio_save_opts o;
	struct stat old, now;
	tio_stream_t *s;
	uint64_t seq;
	tio_save_t *h;
	int calls = 0, status = 0, strays;

	sv_u8(&a, &sa, 4 << 20, 3);
	ASSERT_OK(tio_safetensors_save(self->path, nv, tv, 1));
	ASSERT_EQ(0, stat(self->path, &old));
	memset(&o, 0, sizeof(o));
	o.chunk_size = 64 << 10;
	o.progress = cancel_at_first;
	o.progress_arg = &calls;
	ASSERT_OK(tio_safetensors_save_async(self->path, nv, tv, 1, &o, &h));
	ASSERT_OK(tio_save_point(h, &s, &seq));
	ASSERT_OK(tio_fence_wait(s, seq, -1, &status));
	EXPECT_EQ(-ECANCELED, status);
	ASSERT_EQ(-1, tio_save_wait(h, -1));
	ASSERT_DEV_MSG(ECANCELED, "model.safetensors: cancelled");
	ASSERT_EQ(-1, tio_save_wait(h, 0));	/* the same answer again */
	ASSERT_DEV_ERR(ECANCELED, "CancelledError");
	tio_save_free(h);
	ASSERT_EQ(0, stat(self->path, &now));
	EXPECT_EQ(old.st_ino, now.st_ino);
	EXPECT_EQ(1, sv_count(self->dir, &strays));
	ASSERT_EQ(-1, tio_safetensors_save_async(self->path, nv, tv, 1, &o, NULL));
	ASSERT_DEV_MSG(EINVAL, "NULL out");
	free(a.data);
}

/* The transformers split: in order, a tensor over the limit on its own. */
TEST_F(sv, sharded_save_and_its_index)
{
	static const int64_t sizes[6] = { 100, 300, 50, 1000, 200, 10 };
	static const char *const want[6] = { "00001", "00001", "00003", "00002", "00003",
					     "00003" };
	DLTensor t[6];
	int64_t sh[6];
	const DLTensor *tv[6];
	const char *nv[6] = { "t0", "t1", "t2", "t3", "t4", "t5" };
	char idx[160], p[200];
	struct tio_save_opts o;
	tio_safetensors_t *st;
	json_object *root, *m, *wm, *v;
	int i;

	for (i = 0; i < 6; i++) {
		sv_u8(&t[i], &sh[i], sizes[i], i);
		tv[i] = &t[i];
	}
	memset(&o, 0, sizeof(o));
	o.max_shard_size = 400;
	ASSERT_OK(tio_safetensors_save_opts(self->path, nv, tv, 6, &o));
	EXPECT_EQ(3, o.shards);
	snprintf(idx, sizeof(idx), "%s.index.json", self->path);
	root = json_object_from_file(idx);
	ASSERT_NE(NULL, root);
	ASSERT_TRUE(json_object_object_get_ex(root, "metadata", &m));
	ASSERT_TRUE(json_object_object_get_ex(m, "total_size", &v));
	EXPECT_EQ(1660, json_object_get_int64(v));
	ASSERT_TRUE(json_object_object_get_ex(root, "weight_map", &wm));
	for (i = 0; i < 6; i++) {
		snprintf(p, sizeof(p), "model-%s-of-00003.safetensors", want[i]);
		ASSERT_TRUE(json_object_object_get_ex(wm, nv[i], &v));
		EXPECT_STREQ(p, json_object_get_string(v));
	}
	json_object_put(root);
	EXPECT_EQ(4, sv_count(self->dir, NULL));
	ASSERT_OK(tio_safetensors_load(idx, &st));
	EXPECT_EQ(3, tio_safetensors_shards(st));
	for (i = 0; i < 6; i++)
		EXPECT_TRUE(sv_same(st, nv[i], t[i].data, (size_t)sizes[i]));
	tio_safetensors_free(st);
	/* Under the limit: one file, no index. */
	o.max_shard_size = 1 << 20;
	snprintf(p, sizeof(p), "%s/one.safetensors", self->dir);
	ASSERT_OK(tio_safetensors_save_opts(p, nv, tv, 6, &o));
	EXPECT_EQ(1, o.shards);
	EXPECT_EQ(5, sv_count(self->dir, NULL));
	for (i = 0; i < 6; i++)
		free(t[i].data);
}

/* Shards written apart (as by two processes), then the index of them all. */
TEST_F(sv, write_index_of_shards_saved_apart)
{
	DLTensor t[3];
	int64_t sh[3];
	const DLTensor *tv[3];
	const char *nv[3] = { "x", "y", "z" };
	char a[160], b[160], idx[160], other[160];
	const char *shards[2] = { a, b };
	static const char *const meta[] = { "format", "pt" };
	tio_safetensors_t *st;
	int i;

	for (i = 0; i < 3; i++) {
		sv_u8(&t[i], &sh[i], 1000 + i, i);
		tv[i] = &t[i];
	}
	snprintf(a, sizeof(a), "%s/model-00001-of-00002.safetensors", self->dir);
	snprintf(b, sizeof(b), "%s/model-00002-of-00002.safetensors", self->dir);
	snprintf(idx, sizeof(idx), "%s/model.safetensors.index.json", self->dir);
	ASSERT_OK(tio_safetensors_save(a, nv, tv, 2));
	ASSERT_OK(tio_safetensors_save(b, nv + 2, tv + 2, 1));
	ASSERT_OK(tio_safetensors_write_index(idx, shards, 2, meta, 1));
	ASSERT_OK(tio_safetensors_load(idx, &st));
	EXPECT_STREQ("3003", tio_safetensors_metadata(st, "total_size"));
	EXPECT_STREQ("pt", tio_safetensors_metadata(st, "format"));
	for (i = 0; i < 3; i++)
		EXPECT_TRUE(sv_same(st, nv[i], t[i].data, 1000 + i));
	tio_safetensors_free(st);
	/* A tensor in two shards; a shard elsewhere. */
	ASSERT_OK(tio_safetensors_save(b, nv + 1, tv + 1, 1));
	ASSERT_EQ(-1, tio_safetensors_write_index(idx, shards, 2, NULL, 0));
	ASSERT_DEV_MSG(EINVAL, "tensor y is in two shards");
	snprintf(other, sizeof(other), "/tmp/tio-sv-other.safetensors");
	ASSERT_OK(tio_safetensors_save(other, nv, tv, 1));
	shards[1] = other;
	ASSERT_EQ(-1, tio_safetensors_write_index(idx, shards, 2, NULL, 0));
	ASSERT_DEV_MSG(EINVAL, "not in the index's directory");
	unlink(other);
	for (i = 0; i < 3; i++)
		free(t[i].data);
}

struct prog { int calls, at, half; uint64_t last, total; };

/* Cancel at call @at, or (@half) once half is written. */
static int on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	p->calls++;
	p->last = done;
	p->total = total;
	return (p->at && p->calls >= p->at) || (p->half && done * 2 >= total);
}

TEST_F(sv, progress_and_cancel_keep_the_old_files)
{
	DLTensor t[4];
	int64_t sh[4];
	const DLTensor *tv[4];
	const char *nv[4] = { "a", "b", "c", "d" };
	struct prog p = { 0, 0, 0, 0, 0 };
	struct tio_pinned_stats ps;
	struct tio_save_opts o;
	struct stat before[4], after;
	char shard[4][160];
	int i, strays;

	for (i = 0; i < 4; i++) {
		sv_u8(&t[i], &sh[i], 2 << 20, i);
		tv[i] = &t[i];
	}
	memset(&o, 0, sizeof(o));
	o.chunk_size = 64 << 10;
	o.progress = on_progress;
	o.progress_arg = &p;
	ASSERT_OK(tio_safetensors_save_opts(self->path, nv, tv, 4, &o));
	EXPECT_LE(128, p.calls);
	EXPECT_EQ(p.total, p.last);
	ASSERT_EQ(0, stat(self->path, &before[0]));
	EXPECT_EQ((uint64_t)before[0].st_size, p.total);
	p.calls = 0;
	p.at = 50;
	ASSERT_EQ(-1, tio_safetensors_save_opts(self->path, nv, tv, 4, &o));
	ASSERT_DEV_MSG(ECANCELED, "cancelled after");
	EXPECT_EQ(50, p.calls);
	ASSERT_EQ(0, stat(self->path, &after));
	EXPECT_EQ(before[0].st_ino, after.st_ino);
	EXPECT_EQ(1, sv_count(self->dir, &strays));
	/* Sharded, written in parallel: no shard is replaced before all are durable. */
	o.max_shard_size = 2 << 20;
	p.calls = 0;
	p.at = 0;
	ASSERT_OK(tio_safetensors_save_opts(self->path, nv, tv, 4, &o));
	EXPECT_EQ(4, o.shards);
	for (i = 0; i < 4; i++) {
		snprintf(shard[i], sizeof(shard[i]), "%s/model-%05d-of-00004.safetensors",
			 self->dir, i + 1);
		ASSERT_EQ(0, stat(shard[i], &before[i]));
	}
	p.calls = 0;
	p.half = 1;	/* the writers' progress is reported as it comes */
	ASSERT_EQ(-1, tio_safetensors_save_opts(self->path, nv, tv, 4, &o));
	ASSERT_DEV_MSG(ECANCELED, "cancelled after");
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, stat(shard[i], &after));
		EXPECT_EQ(before[i].st_ino, after.st_ino);
	}
	EXPECT_EQ(6, sv_count(self->dir, &strays));
	EXPECT_EQ(0, strays);
	tio_pinned_stats(&ps);
	EXPECT_EQ(0, ps.bytes_in_use);	/* the staging is back in the cache */
	for (i = 0; i < 4; i++)
		free(t[i].data);
}

TEST_F(sv, buffered_writes_where_asked_and_on_tmpfs)
{
	DLTensor a;
	int64_t sa;
	const DLTensor *tv[1] = { &a };
	const char *nv[1] = { "a" };
	const char *shm = "/dev/shm/tio-sv-test.safetensors";
	struct tio_save_opts o;
	struct statfs fs;
	tio_safetensors_t *st;

	sv_u8(&a, &sa, (1 << 20) + 3, 5);
	memset(&o, 0, sizeof(o));
	o.flags = TIO_SAVE_NO_DIRECT;
	ASSERT_OK(tio_safetensors_save_opts(self->path, nv, tv, 1, &o));
	EXPECT_EQ(0, o.used_direct);
	o.flags = 0;
	ASSERT_OK(tio_safetensors_save_opts(self->path, nv, tv, 1, &o));
	if (!statfs(self->dir, &fs) && (fs.f_type == EXT4_SUPER_MAGIC ||
					fs.f_type == XFS_SUPER_MAGIC || fs.f_type == BTRFS_SUPER_MAGIC))
		EXPECT_EQ(1, o.used_direct);
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	EXPECT_TRUE(sv_same(st, "a", a.data, (1 << 20) + 3));
	tio_safetensors_free(st);
	ASSERT_OK(tio_safetensors_save_opts(shm, nv, tv, 1, &o));
	TH_LOG("tmpfs: %s", o.used_direct ? "O_DIRECT" : "buffered");
	ASSERT_OK(tio_safetensors_load(shm, &st));
	EXPECT_TRUE(sv_same(st, "a", a.data, (1 << 20) + 3));
	tio_safetensors_free(st);
	unlink(shm);
	free(a.data);
}

TEST_HARNESS_MAIN
