// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TVM FFI type entry points: key to index, allocation, and the
 * TVMFFITypeInfo of a type, built from libtensorio's registry the first
 * time it is asked for and kept for the process (rebuilt when fields or
 * methods were added since; an old info is never freed, as callers may
 * hold it).
 */
#include <pthread.h>
#include <stdlib.h>

#include "compat.h"

#define TABLE_SIZE 4096		/* libtensorio's type table */

static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;
static TVMFFITypeInfo *infos[TABLE_SIZE];	/* written under info_lock */
static TVMFFITypeMetadata *metas[TABLE_SIZE];	/* written under info_lock, never freed */

/* A registered metadata: the one it replaced (still readable), a copy, its doc. */
struct kept_meta {
	TVMFFITypeMetadata *prev;
	TVMFFITypeMetadata m;
	char doc[];
};

int TVMFFITypeKeyToIndex(const TVMFFIByteArray *type_key, int32_t *out_tindex)
{
	struct cname c;
	int r;

	if (!out_tindex)
		return tio_error_raise("ValueError", "NULL output");
	if (tvmffi__cname(&c, type_key))
		return -1;
	r = tio_type_key_to_index(c.s, out_tindex);
	tvmffi__cname_free(&c);
	return r;
}

/*
 * As TVM FFI: a known key gives its index, whatever the other arguments;
 * parent -2 only asks (-2 when unknown); a static index places the new
 * type there. Child slots are not reserved: a new dynamic type takes the
 * next free index. Errors are raised and -1 returned.
 */
int32_t TVMFFITypeGetOrAllocIndex(const TVMFFIByteArray *type_key, int32_t static_type_index,
				  int32_t type_depth, int32_t num_child_slots,
				  int32_t child_slots_can_overflow, int32_t parent_type_index)
{
	int32_t index = -1, parent;
	struct cname c;
	int r = 0;

	(void)type_depth;
	(void)num_child_slots;
	(void)child_slots_can_overflow;
	if (tvmffi__cname(&c, type_key))
		return -1;
	if (!tio_type_key_to_index(c.s, &index))
		goto out;
	tio_error_clear();
	parent = parent_type_index < 0 ? TIO_TYPE_OBJECT : parent_type_index;
	if (parent_type_index == -2)
		index = -2;
	else if (static_type_index >= 0)
		r = tio_type_register_static(c.s, parent, static_type_index, &index);
	else
		r = tio_type_register(c.s, parent, &index);
	if (parent_type_index != -2 && r)
		index = -1;
out:
	tvmffi__cname_free(&c);
	return index;
}

static uint64_t shift_mix(uint64_t v)
{
	return v ^ (v >> 47);
}

/*
 * TVM FFI's type_key_hash is std::hash of the key as its C++ library
 * computes it; this is GNU libstdc++'s on 64-bit targets (a MurmurHash2
 * variant, seed 0xc70f6907), so the two runtimes give equal hashes.
 */
uint64_t tvmffi__key_hash(const char *key, size_t len)
{
	const uint64_t mul = (UINT64_C(0xc6a4a793) << 32) + UINT64_C(0x5bd1e995);
	uint64_t h = UINT64_C(0xc70f6907) ^ (len * mul), w;
	size_t i, tail = len & 7;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, key + i, 8);
		h ^= shift_mix(w * mul) * mul;
		h *= mul;
	}
	if (tail) {
		for (w = 0; tail--; )
			w = (w << 8) | (unsigned char)key[i + tail];
		h ^= w;
		h *= mul;
	}
	return shift_mix(shift_mix(h) * mul);
}

static TVMFFIByteArray text(const char *s)
{
	TVMFFIByteArray b = { s ? s : "", s ? strlen(s) : 0 };

	return b;
}

static void fill_field(TVMFFIFieldInfo *d, const tio_field_info_t *f)
{
	memset(d, 0, sizeof(*d));
	d->name = text(f->name);
	d->doc = text(f->doc);
	d->metadata = text(NULL);
	d->flags = (f->flags & TIO_FIELD_WRITABLE) ? kTVMFFIFieldFlagBitMaskWritable : 0;
	d->size = f->size;
	d->alignment = f->size;
	d->offset = f->offset;
	d->getter = (TVMFFIFieldGetter)f->getter;
	d->setter = (void *)f->setter;
	d->field_static_type_index = f->field_type_index;
}

static void fill_method(TVMFFIMethodInfo *d, const tio_method_info_t *m)
{
	memset(d, 0, sizeof(*d));
	d->name = text(m->name);
	d->doc = text(m->doc);
	d->metadata = text(NULL);
	d->flags = (m->flags & TIO_METHOD_STATIC) ? kTVMFFIFieldFlagBitMaskIsStaticMethod : 0;
	d->method.type_index = kTVMFFIFunction;
	d->method.v_obj = (TVMFFIObject *)m->func;
}

static const TVMFFITypeInfo *info_locked(int32_t index);

/* Whether fields, methods or metadata were registered since @d was built. */
static int stale(const TVMFFITypeInfo *d, const tio_type_info_t *t)
{
	return d->num_fields != t->num_fields || d->num_methods != t->num_methods ||
	       d->metadata != __atomic_load_n(&metas[t->type_index], __ATOMIC_ACQUIRE);
}

/*
 * Under info_lock. One allocation: the info it replaces (kept reachable,
 * never freed), the info, ancestors, fields, methods.
 */
static TVMFFITypeInfo *build(const tio_type_info_t *t, TVMFFITypeInfo *old)
{
	size_t size = sizeof(void *) + sizeof(TVMFFITypeInfo) + sizeof(void *) * (size_t)t->type_depth +
		      sizeof(TVMFFIFieldInfo) * (size_t)t->num_fields +
		      sizeof(TVMFFIMethodInfo) * (size_t)t->num_methods;
	const TVMFFITypeInfo **anc;
	TVMFFIFieldInfo *fields;
	TVMFFIMethodInfo *methods;
	TVMFFITypeInfo *d;
	void **block;
	int32_t i;

	block = calloc(1, size);
	if (!block)
		return NULL;
	block[0] = old;
	d = (TVMFFITypeInfo *)(block + 1);
	anc = (const TVMFFITypeInfo **)(d + 1);
	fields = (TVMFFIFieldInfo *)(anc + t->type_depth);
	methods = (TVMFFIMethodInfo *)(fields + t->num_fields);
	d->type_index = t->type_index;
	d->type_depth = t->type_depth;
	d->type_key = text(t->type_key);
	d->type_key_hash = tvmffi__key_hash(t->type_key, d->type_key.size);
	for (i = 0; i < t->type_depth; i++) {
		anc[i] = info_locked(t->ancestors[i]);
		if (!anc[i]) {
			free(block);
			return NULL;
		}
	}
	for (i = 0; i < t->num_fields; i++)
		fill_field(&fields[i], &t->fields[i]);
	for (i = 0; i < t->num_methods; i++)
		fill_method(&methods[i], &t->methods[i]);
	d->type_ancestors = t->type_depth ? anc : NULL;	/* as TVM FFI */
	d->num_fields = t->num_fields;
	d->num_methods = t->num_methods;
	d->fields = fields;
	d->methods = methods;
	d->metadata = metas[t->type_index];
	return d;
}

static const TVMFFITypeInfo *info_locked(int32_t index)
{
	const tio_type_info_t *t = tio_type_info(index);
	TVMFFITypeInfo *d;

	if (!t || index < 0 || index >= TABLE_SIZE)
		return NULL;
	d = infos[index];
	if (d && !stale(d, t))
		return d;
	/* The old one stays allocated: a caller may still read it. */
	d = build(t, d);
	if (d)
		__atomic_store_n(&infos[index], d, __ATOMIC_RELEASE);
	return d;
}

const TVMFFITypeInfo *TVMFFIGetTypeInfo(int32_t type_index)
{
	const tio_type_info_t *t = tio_type_info(type_index);
	const TVMFFITypeInfo *d;

	if (!t || type_index < 0 || type_index >= TABLE_SIZE)
		return NULL;
	d = __atomic_load_n(&infos[type_index], __ATOMIC_ACQUIRE);
	if (d && !stale(d, t))
		return d;
	pthread_mutex_lock(&info_lock);
	d = info_locked(type_index);
	pthread_mutex_unlock(&info_lock);
	return d;
}

/*
 * As TVM FFI's: the field's name, doc, flags (writable), offset, size,
 * value type, getter and setter go to libtensorio's registry; its default
 * and metadata are dropped. A setter given as a Function object is refused.
 */
int TVMFFITypeRegisterField(int32_t type_index, const TVMFFIFieldInfo *info)
{
	tio_field_info_t f = { .struct_size = sizeof(f) };
	struct cname name, doc;
	int r;

	if (!info)
		return tio_error_raise("ValueError", "NULL field info");
	if (info->flags & kTVMFFIFieldFlagBitSetterIsFunctionObj)
		return tio_error_raise("ValueError", "field setters as Function objects are not supported");
	if (tvmffi__cname(&name, &info->name))
		return -1;
	if (tvmffi__cname(&doc, &info->doc)) {
		tvmffi__cname_free(&name);
		return -1;
	}
	f.flags = (info->flags & kTVMFFIFieldFlagBitMaskWritable) ? TIO_FIELD_WRITABLE : 0;
	f.name = name.s;
	f.doc = doc.s[0] ? doc.s : NULL;
	f.offset = info->offset;
	f.size = info->size;
	f.field_type_index = info->field_static_type_index;
	f.getter = (tio_field_getter_t)info->getter;
	f.setter = (tio_field_setter_t)info->setter;
	r = tio_type_register_field(type_index, &f);
	tvmffi__cname_free(&doc);
	tvmffi__cname_free(&name);
	return r;
}

/* A registered method's Function, called as libtensorio calls methods. */
static int call_method(void *func, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	return tio_func_call_any(func, args, nargs, ret);
}

/*
 * As TVM FFI's: the method's Function (kept for the process' life), name,
 * doc and static flag; its metadata is dropped.
 */
int TVMFFITypeRegisterMethod(int32_t type_index, const TVMFFIMethodInfo *info)
{
	tio_method_info_t m = { .struct_size = sizeof(m), .call = call_method };
	struct cname name, doc;
	int r;

	if (!info)
		return tio_error_raise("ValueError", "NULL method info");
	if (info->method.type_index != kTVMFFIFunction)
		return tio_any_type_error((const tio_any_t *)&info->method, "ffi.Function");
	if (tvmffi__cname(&name, &info->name))
		return -1;
	if (tvmffi__cname(&doc, &info->doc)) {
		tvmffi__cname_free(&name);
		return -1;
	}
	m.flags = (info->flags & kTVMFFIFieldFlagBitMaskIsStaticMethod) ? TIO_METHOD_STATIC : 0;
	m.name = name.s;
	m.doc = doc.s[0] ? doc.s : NULL;
	m.self = info->method.v_obj;
	r = tio_type_register_method(type_index, &m);
	if (!r)
		tio_object_incref((tio_object_t *)info->method.v_obj);
	tvmffi__cname_free(&doc);
	tvmffi__cname_free(&name);
	return r;
}

/*
 * Kept (with its doc) for TVMFFIGetTypeInfo's metadata; the doc is also
 * the type's doc in libtensorio. A second registration replaces the first.
 */
int TVMFFITypeRegisterMetadata(int32_t type_index, const TVMFFITypeMetadata *metadata)
{
	struct kept_meta *k;
	struct cname doc;

	if (!metadata)
		return tio_error_raise("ValueError", "NULL metadata");
	if (!tio_type_info(type_index) || type_index < 0 || type_index >= TABLE_SIZE)
		return tio_error_raise("ValueError", "type index %d is not registered", type_index);
	if (tvmffi__cname(&doc, &metadata->doc))
		return -1;
	k = malloc(sizeof(*k) + metadata->doc.size + 1);
	if (!k) {
		tvmffi__cname_free(&doc);
		return tio_error_raise("MemoryError", "out of memory");
	}
	if (tio_type_set_doc(type_index, doc.s[0] ? doc.s : NULL)) {
		tvmffi__cname_free(&doc);
		free(k);
		return -1;
	}
	k->m = *metadata;
	memcpy(k->doc, doc.s, metadata->doc.size + 1);
	k->m.doc.data = k->doc;
	tvmffi__cname_free(&doc);
	pthread_mutex_lock(&info_lock);
	k->prev = metas[type_index];
	__atomic_store_n(&metas[type_index], &k->m, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&info_lock);
	return 0;
}
