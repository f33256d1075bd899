// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Reflection: fields with default or custom accessors, methods, the
 * __ffi_init__ constructor.
 *
 * Field and method arrays grow by copy under type_lock: the new array is
 * published before the new count (release), the old one is retired, so a
 * reader that loads the count (acquire) and then the array never reads past
 * the end of what it sees.
 */
#include <float.h>

#include "ffi/type_internal.h"

/* Default accessors. */
#define INT_ACCESSORS(T, NAME, MIN, MAX)					\
	static int get_##NAME(void *f, tio_any_t *out)				\
	{									\
		T v;								\
		memcpy(&v, f, sizeof(v));					\
		*out = tio_any_int((int64_t)v);					\
		return 0;							\
	}									\
	static int set_##NAME(void *f, const tio_any_t *val)			\
	{									\
		int64_t v;							\
		T t;								\
		if (tio_any_to_int(val, &v))					\
			return -1;						\
		if (v < (int64_t)(MIN) || v > (int64_t)(MAX))			\
			return tio_error_raise("ValueError",			\
				"%lld does not fit in %zu bytes",		\
				(long long)v, sizeof(T));			\
		t = (T)v;							\
		memcpy(f, &t, sizeof(t));					\
		return 0;							\
	}

INT_ACCESSORS(int8_t, i8, INT8_MIN, INT8_MAX)
INT_ACCESSORS(int16_t, i16, INT16_MIN, INT16_MAX)
INT_ACCESSORS(int32_t, i32, INT32_MIN, INT32_MAX)
INT_ACCESSORS(int64_t, i64, INT64_MIN, INT64_MAX)

static int get_bool(void *f, tio_any_t *out)
{
	*out = tio_any_bool(*(uint8_t *)f);
	return 0;
}

static int set_bool(void *f, const tio_any_t *val)
{
	int b;

	if (tio_any_to_bool(val, &b))
		return -1;
	*(uint8_t *)f = (uint8_t)b;
	return 0;
}

static int get_f64(void *f, tio_any_t *out)
{
	double v;

	memcpy(&v, f, sizeof(v));
	*out = tio_any_float(v);
	return 0;
}

static int set_f64(void *f, const tio_any_t *val)
{
	double v;

	if (tio_any_to_float(val, &v))
		return -1;
	memcpy(f, &v, sizeof(v));
	return 0;
}

static int get_f32(void *f, tio_any_t *out)
{
	float v;

	memcpy(&v, f, sizeof(v));
	*out = tio_any_float(v);
	return 0;
}

static int set_f32(void *f, const tio_any_t *val)
{
	double v;
	float t;

	if (tio_any_to_float(val, &v))
		return -1;
	t = (float)v;
	memcpy(f, &t, sizeof(t));
	return 0;
}

static int get_dtype(void *f, tio_any_t *out)
{
	DLDataType v;

	memcpy(&v, f, sizeof(v));
	*out = tio_any_dtype(v);
	return 0;
}

static int set_dtype(void *f, const tio_any_t *val)
{
	DLDataType v;

	if (tio_any_to_dtype(val, &v))
		return -1;
	memcpy(f, &v, sizeof(v));
	return 0;
}

static int get_device(void *f, tio_any_t *out)
{
	DLDevice v;

	memcpy(&v, f, sizeof(v));
	*out = tio_any_device(v);
	return 0;
}

static int set_device(void *f, const tio_any_t *val)
{
	DLDevice v;

	if (tio_any_to_device(val, &v))
		return -1;
	memcpy(f, &v, sizeof(v));
	return 0;
}

static int get_any(void *f, tio_any_t *out)
{
	return tio_any_copy(out, (const tio_any_t *)f);
}

static int set_any(void *f, const tio_any_t *val)
{
	tio_any_t v, *slot = f;

	if (tio_any_copy(&v, val))
		return -1;
	tio_any_decref(slot);
	*slot = v;
	return 0;
}

static int get_obj(void *f, tio_any_t *out)
{
	tio_object_t *o = *(tio_object_t **)f;

	tio_object_incref(o);
	*out = tio_any_object(o);
	return 0;
}

/* The value was checked to be None or an instance of the field's type. */
static int set_obj(void *f, const tio_any_t *val)
{
	tio_object_t **slot = f, *old = *slot;
	tio_object_t *o = val->type_index == TIO_TYPE_NONE ? NULL : val->v_obj;

	tio_object_incref(o);
	*slot = o;
	tio_object_decref(old);
	return 0;
}

static int default_accessors(tio_field_info_t *f)
{
	tio_field_getter_t g = NULL;
	tio_field_setter_t s = NULL;
	int32_t t = f->field_type_index;

	if (t == TIO_TYPE_INT) {
		switch (f->size) {
		case 1: g = get_i8; s = set_i8; break;
		case 2: g = get_i16; s = set_i16; break;
		case 4: g = get_i32; s = set_i32; break;
		case 8: g = get_i64; s = set_i64; break;
		}
	} else if (t == TIO_TYPE_BOOL && f->size == 1) {
		g = get_bool;
		s = set_bool;
	} else if (t == TIO_TYPE_FLOAT && (f->size == 8 || f->size == 4)) {
		g = f->size == 8 ? get_f64 : get_f32;
		s = f->size == 8 ? set_f64 : set_f32;
	} else if (t == TIO_TYPE_DATA_TYPE && f->size == sizeof(DLDataType)) {
		g = get_dtype;
		s = set_dtype;
	} else if (t == TIO_TYPE_DEVICE && f->size == sizeof(DLDevice)) {
		g = get_device;
		s = set_device;
	} else if (t == TIO_TYPE_ANY && f->size == sizeof(tio_any_t)) {
		g = get_any;
		s = set_any;
	} else if (t >= TIO_TYPE_STATIC_OBJECT_BEGIN && f->size == sizeof(void *) &&
		   tio_type_info(t)) {
		g = get_obj;
		s = set_obj;
	}
	if (!f->getter)
		f->getter = g;
	if (!f->setter)
		f->setter = s;
	if (!f->getter)
		return tio_error_raise("ValueError",
				       "field '%s': no default accessor for type %d of size %lld",
				       f->name, t, (long long)f->size);
	return 0;
}

static const tio_field_info_t *own_field(const struct type_entry *e, const char *name)
{
	int32_t n = __atomic_load_n(&e->info.num_fields, __ATOMIC_ACQUIRE);
	const tio_field_info_t *f = __atomic_load_n(&e->info.fields, __ATOMIC_ACQUIRE);
	int32_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

static const tio_method_info_t *own_method(const struct type_entry *e, const char *name)
{
	int32_t n = __atomic_load_n(&e->info.num_methods, __ATOMIC_ACQUIRE);
	const tio_method_info_t *m = __atomic_load_n(&e->info.methods, __ATOMIC_ACQUIRE);
	int32_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(m[i].name, name))
			return &m[i];
	return NULL;
}

const tio_field_info_t *tio_type_find_field(int32_t type_index, const char *name)
{
	const struct type_entry *e = tio__type_entry(type_index);
	const tio_field_info_t *f;

	while (e && name) {
		f = own_field(e, name);
		if (f)
			return f;
		e = tio__type_entry(e->info.parent_index);
	}
	return NULL;
}

const tio_method_info_t *tio_type_find_method(int32_t type_index, const char *name)
{
	const struct type_entry *e = tio__type_entry(type_index);
	const tio_method_info_t *m;

	while (e && name) {
		m = own_method(e, name);
		if (m)
			return m;
		e = tio__type_entry(e->info.parent_index);
	}
	return NULL;
}

/* Grow an array of @elem-sized items under type_lock; retire the old. */
static void *grow(const void *old, int32_t n, int32_t *cap, size_t elem)
{
	int32_t c = *cap ? 2 * *cap : 4;
	void *p;

	if (n < *cap)
		return NULL;	/* not needed; callers check n == cap first */
	p = calloc((size_t)c, elem);
	if (!p)
		return NULL;
	if (n)
		memcpy(p, old, (size_t)n * elem);
	*cap = c;
	return p;
}

int tio_type_register_field(int32_t type_index, const tio_field_info_t *info)
{
	struct type_entry *e = tio__type_entry(type_index);
	tio_field_info_t f = { 0 }, *arr;
	char *name = NULL, *doc = NULL;
	int32_t n;

	if (!e)
		return tio_error_raise("ValueError", "type index %d is not registered", type_index);
	if (!info || info->struct_size < sizeof(tio_field_info_t) || !info->name)
		return tio_error_raise("ValueError",
				       "field info must have struct_size >= %zu and a name",
				       sizeof(tio_field_info_t));
	memcpy(&f, info, sizeof(f));
	f.struct_size = sizeof(f);
	if (f.offset < (int64_t)sizeof(tio_object_t) || f.size <= 0)
		return tio_error_raise("ValueError",
				       "field '%s': offset %lld or size %lld is invalid",
				       f.name, (long long)f.offset, (long long)f.size);
	if (default_accessors(&f))
		return -1;
	name = strdup(info->name);
	doc = info->doc ? strdup(info->doc) : NULL;
	if (!name || (info->doc && !doc))
		goto oom;
	f.name = name;
	f.doc = doc;
	pthread_mutex_lock(&type_lock);
	if (tio_type_find_field(type_index, name)) {
		pthread_mutex_unlock(&type_lock);
		free(name);
		free(doc);
		return tio_error_raise("ValueError", "type '%s' already has a field '%s'",
				       e->info.type_key, info->name);
	}
	n = e->info.num_fields;
	arr = (tio_field_info_t *)e->info.fields;
	if (n == e->cap_fields) {
		arr = grow(e->info.fields, n, &e->cap_fields, sizeof(*arr));
		if (!arr) {
			pthread_mutex_unlock(&type_lock);
			goto oom;
		}
		if (e->info.fields)
			tio__type_retire((void *)e->info.fields);
		__atomic_store_n(&e->info.fields, arr, __ATOMIC_RELEASE);
	}
	arr[n] = f;
	__atomic_store_n(&e->info.num_fields, n + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&type_lock);
	return 0;
oom:
	free(name);
	free(doc);
	return tio__oom();
}

int tio_type_register_method(int32_t type_index, const tio_method_info_t *info)
{
	struct type_entry *e = tio__type_entry(type_index);
	tio_method_info_t m = { 0 }, *arr;
	char *name = NULL, *doc = NULL;
	tio_object_t *func = NULL;
	int32_t n;

	if (!e)
		return tio_error_raise("ValueError", "type index %d is not registered", type_index);
	if (!info || info->struct_size < sizeof(tio_method_info_t) || !info->name || !info->call)
		return tio_error_raise("ValueError",
				       "method info must have struct_size >= %zu, a name and a call",
				       sizeof(tio_method_info_t));
	memcpy(&m, info, sizeof(m));
	m.struct_size = sizeof(m);
	name = strdup(info->name);
	doc = info->doc ? strdup(info->doc) : NULL;
	if (!name || (info->doc && !doc))
		goto oom;
	if (tio__func_new_permanent(info->call, info->self, &func))
		goto fail;
	m.name = name;
	m.doc = doc;
	m.func = func;
	pthread_mutex_lock(&type_lock);
	if (own_method(e, name)) {
		pthread_mutex_unlock(&type_lock);
		tio_error_raise("ValueError", "type '%s' already has a method '%s'",
				e->info.type_key, name);
		goto fail;
	}
	n = e->info.num_methods;
	arr = (tio_method_info_t *)e->info.methods;
	if (n == e->cap_methods) {
		arr = grow(e->info.methods, n, &e->cap_methods, sizeof(*arr));
		if (!arr) {
			pthread_mutex_unlock(&type_lock);
			tio__oom();
			goto fail;
		}
		if (e->info.methods)
			tio__type_retire((void *)e->info.methods);
		__atomic_store_n(&e->info.methods, arr, __ATOMIC_RELEASE);
	}
	arr[n] = m;
	__atomic_store_n(&e->info.num_methods, n + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&type_lock);
	return 0;
oom:
	tio__oom();
fail:
	free(func);	/* permanent: plain memory, never shared yet */
	free(name);
	free(doc);
	return -1;
}

static const tio_field_info_t *field_of(tio_object_t *obj, const char *name)
{
	const tio_field_info_t *f;
	const tio_type_info_t *ti;

	if (!obj || !name) {
		tio_error_raise("ValueError", "object and field name must be given");
		return NULL;
	}
	f = tio_type_find_field(obj->type_index, name);
	if (!f) {
		ti = tio_type_info(obj->type_index);
		tio_error_raise("AttributeError", "'%s' has no field '%s'",
				ti ? ti->type_key : "object", name);
	}
	return f;
}

int tio_object_get_field(tio_object_t *obj, const char *name, tio_any_t *out)
{
	const tio_field_info_t *f;

	*out = tio_any_none();
	f = field_of(obj, name);
	if (!f)
		return -1;
	return f->getter((char *)obj + f->offset, out);
}

int tio_object_set_field(tio_object_t *obj, const char *name, const tio_any_t *value)
{
	const tio_field_info_t *f = field_of(obj, name);
	const tio_type_info_t *ti;
	int32_t t;

	if (!f)
		return -1;
	if (!(f->flags & TIO_FIELD_WRITABLE) || !f->setter) {
		ti = tio_type_info(obj->type_index);
		return tio_error_raise("AttributeError", "field '%s' of '%s' is read-only",
				       name, ti ? ti->type_key : "object");
	}
	t = f->field_type_index;
	if (t >= TIO_TYPE_STATIC_OBJECT_BEGIN && value->type_index != TIO_TYPE_NONE &&
	    (value->type_index < TIO_TYPE_STATIC_OBJECT_BEGIN ||
	     !tio_object_is_instance(value->v_obj, t))) {
		ti = tio_type_info(t);
		return tio_error_raise("TypeError", "field '%s' expects %s, got %s", name,
				       ti ? ti->type_key : "object", tio_any_type_name(value));
	}
	return f->setter((char *)obj + f->offset, value);
}

#define MAX_METHOD_ARGS 64

int tio_object_call_method(tio_object_t *obj, const char *name, const tio_any_t *args,
			   int32_t nargs, tio_any_t *ret)
{
	tio_any_t argv[MAX_METHOD_ARGS];
	const tio_method_info_t *m;
	const tio_type_info_t *ti;

	*ret = tio_any_none();
	if (!obj || !name || nargs < 0 || (nargs && !args))
		return tio_error_raise("ValueError", "object, method name and arguments must be given");
	m = tio_type_find_method(obj->type_index, name);
	if (!m) {
		ti = tio_type_info(obj->type_index);
		return tio_error_raise("AttributeError", "'%s' has no method '%s'",
				       ti ? ti->type_key : "object", name);
	}
	if (m->flags & TIO_METHOD_STATIC)
		return tio_func_call(m->func, args, nargs, ret);
	if (nargs >= MAX_METHOD_ARGS)
		return tio_error_raise("ValueError", "too many arguments (%d)", nargs);
	argv[0] = tio_any_object(obj);
	if (nargs)
		memcpy(&argv[1], args, sizeof(*args) * (size_t)nargs);
	return tio_func_call(m->func, argv, nargs + 1, ret);
}

int tio_type_create(int32_t type_index, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	const struct type_entry *e = tio__type_entry(type_index);
	const tio_method_info_t *m;

	*ret = tio_any_none();
	if (!e)
		return tio_error_raise("ValueError", "type index %d is not registered", type_index);
	m = own_method(e, TIO_INIT_METHOD);
	if (!m)
		return tio_error_raise("TypeError", "type '%s' has no " TIO_INIT_METHOD,
				       e->info.type_key);
	if (tio_func_call(m->func, args, nargs, ret))
		return -1;
	if (ret->type_index < TIO_TYPE_STATIC_OBJECT_BEGIN ||
	    !tio_object_is_instance(ret->v_obj, type_index)) {
		tio_any_decref(ret);
		return tio_error_raise("TypeError", TIO_INIT_METHOD " of '%s' did not return one",
				       e->info.type_key);
	}
	return 0;
}
