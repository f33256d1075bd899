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

#endif /* TIO_ST_INTERNAL_H */
