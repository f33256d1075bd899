// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TVM FFI type attributes: named columns of values indexed by type index
 * (TVMFFITypeRegisterAttr, TVMFFIGetTypeAttrColumn). A column's data is
 * allocated once for the whole type table, so the pointer a reader holds
 * never moves; its size grows to the highest index set, as in TVM FFI.
 * Columns and their values live as long as the process.
 */
#include <pthread.h>
#include <stdlib.h>

#include "compat.h"

#define TABLE_SIZE 4096		/* libtensorio's type table */

struct column {
	struct column *next;
	TVMFFITypeAttrColumn col;	/* size: written under attr_lock, read atomically */
	size_t name_len;
	char name[];
};

static pthread_mutex_t attr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct column *columns;		/* under attr_lock */

/* Under attr_lock. */
static struct column *find(const TVMFFIByteArray *name)
{
	struct column *c;

	for (c = columns; c; c = c->next)
		if (c->name_len == name->size && !memcmp(c->name, name->data, name->size))
			return c;
	return NULL;
}

/* Under attr_lock. Return: the column, new if need be, or NULL (raised). */
static struct column *get_or_add(const TVMFFIByteArray *name)
{
	struct column *c = find(name);

	if (c)
		return c;
	c = calloc(1, sizeof(*c) + name->size + 1);
	if (c)
		c->col.data = calloc(TABLE_SIZE, sizeof(TVMFFIAny));	/* all None */
	if (!c || !c->col.data) {
		free(c);
		tio_error_raise("MemoryError", "out of memory");
		return NULL;
	}
	memcpy(c->name, name->data, name->size);
	c->name_len = name->size;
	c->next = columns;
	columns = c;
	return c;
}

/*
 * As TVM FFI: type index 0 (None) only makes the column exist; a type has
 * one value per attribute (register a mutable container to change it).
 */
int TVMFFITypeRegisterAttr(int32_t type_index, const TVMFFIByteArray *attr_name,
			   const TVMFFIAny *attr_value)
{
	TVMFFIAny *slot;
	struct column *c;
	int r = 0;

	if (!attr_name || (!attr_name->data && attr_name->size) || !attr_value)
		return tio_error_raise("ValueError", "NULL attribute name or value");
	if (type_index < 0 || type_index >= TABLE_SIZE)
		return tio_error_raise("ValueError", "type index %d is outside [0, %d)", type_index,
				       TABLE_SIZE);
	pthread_mutex_lock(&attr_lock);
	c = get_or_add(attr_name);
	if (!c) {
		r = -1;
	} else if (type_index != kTVMFFINone) {
		slot = (TVMFFIAny *)&c->col.data[type_index];
		if (slot->type_index != kTVMFFINone)
			r = tio_error_raise("RuntimeError",
					    "TypeAttr `%.*s` is already registered for type index %d",
					    (int)attr_name->size, attr_name->data, type_index);
		else
			r = tio_any_copy((tio_any_t *)slot, (const tio_any_t *)attr_value);
		if (!r && type_index >= c->col.size)
			__atomic_store_n(&c->col.size, type_index + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&attr_lock);
	return r;
}

const TVMFFITypeAttrColumn *TVMFFIGetTypeAttrColumn(const TVMFFIByteArray *attr_name)
{
	struct column *c;

	if (!attr_name || (!attr_name->data && attr_name->size))
		return NULL;
	pthread_mutex_lock(&attr_lock);
	c = find(attr_name);
	pthread_mutex_unlock(&attr_lock);
	return c ? &c->col : NULL;
}
