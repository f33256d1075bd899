// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The Module object (TVM FFI's ffi.Module): its functions by name, its
 * imports and the lookup through them. A module is loaded from a shared
 * object (module_load.c), built from an embedded tree (module_bin.c), or
 * is a system library (module_syslib.c).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "ffi/module_internal.h"

int tio__module_add_import(struct module_obj *m, tio_object_t *child)
{
	tio_object_t **grown;

	if (m->prefix)
		return tio_error_raise("ValueError", "a system library takes no imports");
	if (!child || child->type_index != TIO_TYPE_MODULE)
		return tio_error_raise("TypeError", "a module imports only Modules");
	grown = realloc(m->imports, (m->nimports + 1) * sizeof(*grown));
	if (!grown)
		return tio__oom();
	m->imports = grown;
	tio_object_incref(child);
	m->imports[m->nimports++] = child;
	return 0;
}

static struct module_obj *as_module(tio_object_t *o)
{
	tio_any_t a;

	if (o && o->type_index == TIO_TYPE_MODULE)
		return (struct module_obj *)o;
	a = tio_any_object(o);
	tio_any_type_error(&a, "ffi.Module");
	return NULL;
}

static int has_name(const struct module_obj *m, const char *name)
{
	return bsearch(&name, m->names, m->nnames, sizeof(*m->names), tio__module_cmp_name) != NULL;
}

static int own_function(struct module_obj *m, const char *name, tio_object_t **out);

int tio_module_get_function(tio_object_t *mod, const char *name, tio_object_t **out)
{
	struct module_obj *m = as_module(mod);
	size_t i;

	if (!m)
		return -1;
	if (!name || !out)
		return tio_error_raise("ValueError", "name and output must be given");
	*out = NULL;
	if (own_function(m, name, out))
		return -1;
	for (i = 0; !*out && i < m->nimports; i++)
		if (tio_module_get_function(m->imports[i], name, out))
			return -1;
	return 0;
}

static int own_function(struct module_obj *m, const char *name, tio_object_t **out)
{
	tio_safe_call_t call = NULL;
	char sym[256];

	if (m->prefix) {
		*(void **)&call = tio__syslib_function(m->prefix, name);
		if (!call)
			return 0;
		return tio__func_new_owned(call, NULL, out);
	}
	if (!has_name(m, name))
		return 0;
	if ((size_t)snprintf(sym, sizeof(sym), "%s%s", TIO_MODULE_SYMBOL_PREFIX, name) >=
	    sizeof(sym))
		return 0;
	*(void **)&call = dlsym(m->handle, sym);
	if (!call)
		return 0;
	return tio__func_new_owned(call, &m->header, out);
}

int tio_module_imports(tio_object_t *mod, tio_any_t *out)
{
	struct module_obj *m = as_module(mod);
	tio_object_t *arr;
	tio_any_t a;
	size_t i;

	*out = tio_any_none();
	if (!m)
		return -1;
	if (tio_array_new(NULL, 0, &arr))
		return -1;
	for (i = 0; i < m->nimports; i++) {
		a = tio_any_object(m->imports[i]);
		if (tio_array_push(arr, &a)) {
			tio_object_decref(arr);
			return -1;
		}
	}
	*out = tio_any_object(arr);
	return 0;
}

/* Under m->cache_lock: the cached Function for @key, borrowed, or NULL. */
static tio_object_t *cache_get(struct module_obj *m, const tio_any_t *key)
{
	tio_any_t v;

	if (!m->import_cache || !tio_map_contains(m->import_cache, key) ||
	    tio_map_get(m->import_cache, key, &v))
		return NULL;
	tio_any_decref(&v);	/* the cache keeps its own reference */
	return v.v_obj;
}

static int import_lookup(struct module_obj *m, const char *name, tio_object_t **found)
{
	size_t i;

	*found = NULL;
	for (i = 0; !*found && i < m->nimports; i++)
		if (tio_module_get_function(m->imports[i], name, found))
			return -1;
	if (!*found && tio_func_get_global(name, found))
		return -1;
	if (!*found)
		return tio_error_raise("RuntimeError",
				       "Cannot find function %s in the imported modules or global registry",
				       name);
	return 0;
}

int tio_module_lookup_from_imports(tio_object_t *mod, const char *name, tio_object_t **out)
{
	struct module_obj *m = as_module(mod);
	tio_object_t *f;
	tio_any_t key, val;
	int r = -1;

	if (!m)
		return -1;
	if (!name || !out)
		return tio_error_raise("ValueError", "name and output must be given");
	if (tio_str_new(name, strlen(name), &key))
		return -1;
	pthread_mutex_lock(&m->cache_lock);
	*out = cache_get(m, &key);
	if (*out) {
		r = 0;
		goto out;
	}
	if (!m->import_cache && tio_map_new(&m->import_cache))
		goto out;
	if (import_lookup(m, name, &f))
		goto out;
	val = tio_any_object(f);
	r = tio_map_set(m->import_cache, &key, &val);
	tio_object_decref(f);
	if (!r)
		*out = f;	/* alive in the cache */
out:
	pthread_mutex_unlock(&m->cache_lock);
	tio_any_decref(&key);
	return r;
}

int tio_module_implements_function(tio_object_t *mod, const char *name)
{
	struct module_obj *m;
	size_t i;

	if (!mod || mod->type_index != TIO_TYPE_MODULE || !name)
		return 0;
	m = (struct module_obj *)mod;
	if (!m->prefix) {
		if (has_name(m, name))
			return 1;
		for (i = 0; i < m->nimports; i++)
			if (tio_module_implements_function(m->imports[i], name))
				return 1;
		return 0;
	}
	return tio__syslib_function(m->prefix, name) != NULL;
}

int tio_module_list_functions(tio_object_t *mod, tio_any_t *out)
{
	struct module_obj *m = as_module(mod);

	*out = tio_any_none();
	if (!m)
		return -1;
	if (!m->prefix)
		return tio__str_array(m->names, m->nnames, out);
	return tio__syslib_list(m->prefix, out);
}
