// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors: our writer and loader round trip; malformed files get a
 * clear error and leak nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tensorio/safetensors.h>

#include "kselftest_harness.h"
#include "dev_test.h"

FIXTURE(sft) { int fds; int64_t objs; char path[64]; };
FIXTURE_SETUP(sft)
{
	int fd;

	ASSERT_OK(tio_init());
	dev_warm_up();
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
	strcpy(self->path, "/tmp/tio-st-XXXXXX");
	fd = mkstemp(self->path);
	ASSERT_LE(0, fd);
	close(fd);
}
FIXTURE_TEARDOWN(sft)
{
	unlink(self->path);
	tio_error_clear();
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
	EXPECT_EQ(self->fds, dev_count_fds());
}

TEST_F(sft, round_trip)
{
	float w[3][5];
	int64_t ids[7], shw[2] = { 3, 5 }, shi[1] = { 7 };
	DLTensor tw = { 0 }, ti = { 0 };
	const DLTensor *ts[2] = { &tw, &ti };
	const char *names[2] = { "layer.weight", "ids" };
	tio_safetensors_t *st;
	tio_object_t *t;
	DLTensor *dl;
	int i, j;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 5; j++)
			w[i][j] = (float)(i * 10 + j) / 4;
	for (i = 0; i < 7; i++)
		ids[i] = -i * 1000;
	tw.data = w;
	tw.ndim = 2;
	tw.shape = shw;
	tw.dtype.code = kDLFloat;
	tw.dtype.bits = 32;
	tw.dtype.lanes = 1;
	ti.data = ids;
	ti.ndim = 1;
	ti.shape = shi;
	ti.dtype.code = kDLInt;
	ti.dtype.bits = 64;
	ti.dtype.lanes = 1;
	ASSERT_OK(tio_safetensors_save(self->path, names, ts, 2));
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	ASSERT_EQ(2, tio_safetensors_count(st));
	EXPECT_STREQ("layer.weight", tio_safetensors_name(st, 0));
	EXPECT_STREQ("ids", tio_safetensors_name(st, 1));
	EXPECT_EQ(NULL, tio_safetensors_name(st, 2));
	ASSERT_OK(tio_safetensors_tensor(st, "ids", &t));
	tio_safetensors_free(st);	/* the view keeps the buffer */
	EXPECT_EQ(1, tio_debug_live_handles());
	dl = tio_tensor_dl(t);
	EXPECT_EQ(1, dl->ndim);
	EXPECT_EQ(7, dl->shape[0]);
	EXPECT_EQ(kDLInt, dl->dtype.code);
	EXPECT_EQ(0, memcmp(ids, (char *)dl->data + dl->byte_offset, sizeof(ids)));
	tio_object_decref(t);
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	ASSERT_OK(tio_safetensors_tensor(st, "layer.weight", &t));
	dl = tio_tensor_dl(t);
	EXPECT_EQ(5, dl->shape[1]);
	EXPECT_EQ(0, memcmp(w, (char *)dl->data + dl->byte_offset, sizeof(w)));
	/* Zero copy: the view points into the file's one buffer. */
	EXPECT_EQ(tio_buffer_data(tio_safetensors_buffer(st)), dl->data);
	tio_object_decref(t);
	ASSERT_EQ(-1, tio_safetensors_tensor(st, "nope", &t));
	ASSERT_DEV_ERR(ENOENT, "KeyError");
	tio_safetensors_free(st);
}

static void write_raw(const char *path, uint64_t hlen, const char *json, size_t data)
{
	FILE *f = fopen(path, "wb");
	unsigned char l[8];
	int i;

	for (i = 0; i < 8; i++)
		l[i] = (unsigned char)(hlen >> (8 * i));
	fwrite(l, 8, 1, f);
	fwrite(json, strlen(json), 1, f);
	while (data--)
		fputc(0, f);
	fclose(f);
}

#define JLEN 0
#define BAD(hlen, json, data, err, part) do {				\
	tio_safetensors_t *st_ = NULL;					\
	write_raw(self->path, (hlen) ? (hlen) : strlen(json), json, data); \
	ASSERT_EQ(-1, tio_safetensors_load(self->path, &st_));		\
	ASSERT_DEV_MSG(err, part);					\
} while (0)

TEST_F(sft, malformed_files)
{
	const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
	tio_safetensors_t *st;
	FILE *f;

	/* Sanity: the good one loads. */
	write_raw(self->path, strlen(ok), ok, 8);
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	tio_safetensors_free(st);
	f = fopen(self->path, "wb");
	fwrite("abc", 3, 1, f);
	fclose(f);
	ASSERT_EQ(-1, tio_safetensors_load(self->path, &st));
	ASSERT_DEV_MSG(EINVAL, "shorter than its 8-byte header");
	BAD(strlen(ok) + 100, ok, 8, EINVAL, "truncated header");
	BAD((uint64_t)1 << 40, ok, 8, E2BIG, "limit");
	BAD(strlen(ok), ok, 4, EINVAL, "data_offsets out of range");
	BAD(JLEN, "[1,2]", 0, EINVAL, "not a JSON object");
	BAD(JLEN, "{\"a\":", 0, EINVAL, "not a JSON object");
	BAD(JLEN, "{\"a\":{\"dtype\":\"F33\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
	    EINVAL, "unknown dtype");
	BAD(JLEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
	    EINVAL, "bad shape");
	BAD(JLEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
	    EINVAL, "do not match");
	BAD(JLEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4,
	    EINVAL, "out of range");
	BAD(JLEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, EINVAL,
	    "needs dtype, shape and data_offsets");
	BAD(JLEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
		 "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", 8,
	    EINVAL, "overlapping");
	BAD(JLEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
	    1, EINVAL, "more than 8");
	ASSERT_EQ(-1, tio_safetensors_load("/nonexistent.safetensors", &st));
	ASSERT_DEV_ERR(ENOENT, "OSError");
}

TEST_HARNESS_MAIN
