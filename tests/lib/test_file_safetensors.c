// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors: our writer and loader round trip; malformed files (and the
 * corpus in tests/fuzz/corpus/safetensors-bad) get a clear error naming
 * the rule and leak nothing; the valid edge cases load.
 */
#include <dirent.h>
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
	/* In file order: the writer puts I64 before F32, as safetensors does. */
	EXPECT_STREQ("ids", tio_safetensors_name(st, 0));
	EXPECT_STREQ("layer.weight", tio_safetensors_name(st, 1));
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

static int is_corpus_file(const char *name)
{
	size_t n = strlen(name);

	return n > 12 && !strcmp(name + n - 12, ".safetensors");
}

/*
 * Every file of the malformed corpus (tests/fuzz/corpus/safetensors-bad;
 * EXPECTED names each one's message) is refused with it.
 */
TEST_F(sft, corpus_refused)
{
	char line[512], file[600];
	FILE *f = fopen(ST_CORPUS "/EXPECTED", "r");
	int listed = 0, present = 0;
	struct dirent *d;
	DIR *dir;

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		tio_safetensors_t *st = NULL;
		char *tab = strchr(line, '\t');

		if (line[0] == '#' || !tab)
			continue;
		*tab = '\0';
		tab[strcspn(tab + 1, "\n") + 1] = '\0';
		snprintf(file, sizeof(file), "%s/%s", ST_CORPUS, line);
		EXPECT_EQ(-1, tio_safetensors_load(file, &st)) TH_LOG("%s loaded", line);
		ASSERT_DEV_MSG(EINVAL, tab + 1);
		listed++;
	}
	fclose(f);
	/* Every file of the folder is listed. */
	dir = opendir(ST_CORPUS);
	ASSERT_NE(NULL, dir);
	while ((d = readdir(dir)))
		present += is_corpus_file(d->d_name);
	closedir(dir);
	EXPECT_EQ(present, listed);
	EXPECT_LT(20, listed);
}

/* The tensor @name of @st: its DLTensor; the Tensor goes into @t. */
static DLTensor *get(tio_safetensors_t *st, const char *name, tio_object_t **t)
{
	*t = NULL;
	if (tio_safetensors_tensor(st, name, t))
		return NULL;
	return tio_tensor_dl(*t);
}

/*
 * The valid edge cases load: an empty name, zero-element tensors, BOOL,
 * unknown fields in an entry, names beyond ASCII (one escaped), space
 * padding after the header.
 */
TEST_F(sft, edge_cases_load)
{
	const char *json =
		"{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
		"\"zero\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
		"\"zero2\":{\"dtype\":\"I64\",\"shape\":[3,0],\"data_offsets\":[4,4]},"
		"\"flags\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[4,7],"
		"\"quant\":{\"scale\":[1,2]},\"note\":\"unknown fields are left out\"},"
		"\"caf\\u00e9\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[7,8]},"
		"\"\xe5\x90\x8d\xe5\x89\x8d\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[8,9]},"
		"\"__metadata__\":{\"format\":\"pt\",\"k\\u00e9y\":\"v\xc3\xa9\"}}        ";
	tio_safetensors_t *st;
	tio_object_t *t[6];
	DLTensor *dl;
	int i;

	write_raw(self->path, strlen(json), json, 9);
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	EXPECT_EQ(6, tio_safetensors_count(st));
	dl = get(st, "", &t[0]);
	ASSERT_NE(NULL, dl);
	EXPECT_EQ(1, dl->shape[0]);
	dl = get(st, "zero", &t[1]);
	ASSERT_NE(NULL, dl);
	EXPECT_EQ(1, dl->ndim);
	EXPECT_EQ(0, dl->shape[0]);
	dl = get(st, "zero2", &t[2]);
	ASSERT_NE(NULL, dl);
	EXPECT_EQ(2, dl->ndim);
	EXPECT_EQ(0, dl->shape[1]);
	dl = get(st, "flags", &t[3]);
	ASSERT_NE(NULL, dl);
	EXPECT_EQ(TIO_DTYPE_BOOL, dl->dtype.code);	/* DLPack's kDLBool */
	EXPECT_EQ(8, dl->dtype.bits);
	EXPECT_EQ(3, dl->shape[0]);
	EXPECT_NE(NULL, get(st, "caf\xc3\xa9", &t[4]));
	dl = get(st, "\xe5\x90\x8d\xe5\x89\x8d", &t[5]);
	ASSERT_NE(NULL, dl);
	EXPECT_EQ(0, dl->ndim);
	tio_safetensors_free(st);
	for (i = 0; i < 6; i++)
		tio_object_decref(t[i]);

	/* Spaces after the object only: an empty header of padding loads too. */
	write_raw(self->path, 8, "{}      ", 0);
	ASSERT_OK(tio_safetensors_load(self->path, &st));
	EXPECT_EQ(0, tio_safetensors_count(st));
	tio_safetensors_free(st);
	BAD(JLEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}\t", 1,
	    EINVAL, "not spaces (0x09");
}

TEST_HARNESS_MAIN
