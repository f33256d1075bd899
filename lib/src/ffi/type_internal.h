/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The type registry's internal entry, shared by type_registry.c and
 * reflection.c.
 */
#ifndef TIO_TYPE_INTERNAL_H
#define TIO_TYPE_INTERNAL_H

#include <pthread.h>

#include "ffi/ffi_internal.h"

#define TIO_TYPE_TABLE_SIZE 4096

struct type_meta {
	char *key;
	tio_any_t value;
};

struct type_entry {
	tio_type_info_t info;		/* first: what tio_type_info() returns */
	int32_t cap_fields, cap_methods;
	struct type_meta *meta;		/* under type_lock */
	int32_t num_meta, cap_meta;
};

extern pthread_mutex_t type_lock;

/* The entry for @index, or NULL. Lock-free. */
struct type_entry *tio__type_entry(int32_t index);

/* Keep @p reachable for the rest of the process (replaced arrays). */
void tio__type_retire(void *p);

#endif /* TIO_TYPE_INTERNAL_H */
