/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal interface of the safetensors loader (safetensors.c), shared with
 * its device path (st_device.c): the loaded checkpoint and the header,
 * index and shard steps.
 */
#ifndef TIO_ST_INTERNAL_H
#define TIO_ST_INTERNAL_H

#include <json-c/json.h>

#include <tensorio/safetensors.h>

#include "file/file_internal.h"

/* One tensor; @begin, @end count from its shard's data start. */
struct st_entry {
	char *name;
	struct tio_desc desc;
	uint64_t begin, end;
	uint8_t code;		/* the DLPack code (desc carries a checkable one) */
	int shard;
};

struct st_shard {
	char *path;
	uint64_t size;
	uint64_t data_start;
	struct tio_pinned_mem mem;
	struct tio_load_item it;
};

struct tio_safetensors {
	struct st_shard *sh;
	int nsh;
	struct st_entry *e;
	int64_t n, cap;
	char **meta;		/* key, value, key, value, ... */
	int64_t nmeta;
	tio_object_t **dev;	/* device tensors of a device load, per entry */
};

/* The shards @path names (itself, or an index's); @map: the index's weight_map. */
int tio_st_shards(const char *path, struct tio_safetensors *st, json_object **map);
int tio_st_is_index(const char *path);
int tio_st_index(const char *path, struct tio_safetensors *st, json_object **map);
/* Every tensor where the weight_map says, once. */
int tio_st_check_map(const char *path, struct tio_safetensors *st, json_object *map);
/* Read and check shard @shard's header; its fd stays open buffered. */
int tio_st_header(struct tio_safetensors *st, int shard);
/* The format's name of a DLPack dtype (lanes 1), or NULL. */
const char *tio_st_dtype_name(uint8_t code, uint8_t bits);

/* st_strict.c: whether @n bytes at @s are UTF-8 (strict, as Python's). */
int tio_st_utf8(const char *s, size_t n);
/* @s as text for a message: escaped (\xNN) unless printable UTF-8. */
const char *tio_st_name_text(const char *s, size_t n, char *buf, size_t size);
/*
 * The header's rules json-c does not check: only spaces after the object
 * (ending at @end of @hlen bytes), its @members names UTF-8, without NUL
 * bytes, none twice. Return: 0, or -1 with EINVAL naming the entry.
 */
int tio_st_strict(const char *path, const char *json, size_t hlen, size_t end, size_t members);
/* A header json-c refused as strict JSON: the error saying why. Return: -1. */
int tio_st_not_json(const char *path, const char *json, size_t hlen);

#endif /* TIO_ST_INTERNAL_H */
