/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Module object's private layout and what its files share: module.c
 * (the object), module_load.c (shared objects), module_syslib.c (system
 * libraries, context symbols) and module_bin.c (embedded module trees).
 */
#ifndef TIO_MODULE_INTERNAL_H
#define TIO_MODULE_INTERNAL_H

#include <pthread.h>
#include <string.h>

#include "ffi/ffi_internal.h"

/* TVM FFI's special symbols (one more '_' than a function's prefix). */
#define TIO_MODULE_CTX_SYMBOL "__tvm_ffi__library_ctx"
#define TIO_MODULE_BIN_SYMBOL "__tvm_ffi__library_bin"
#define TIO_MODULE_METADATA_PREFIX "__tvm_ffi__metadata_"
#define TIO_MODULE_DOC_PREFIX "__tvm_ffi__doc_"
#define TIO_MODULE_PREFIX_LEN (sizeof(TIO_MODULE_SYMBOL_PREFIX) - 1)

struct module_obj {
	tio_object_t header;
	void *handle;		/* NULL for a system library */
	char *prefix;		/* a system library's symbol prefix ("" for the
				 * unprefixed one), else NULL */
	char **names;		/* sorted, without the prefix */
	size_t nnames;
	tio_object_t **imports;	/* owned Modules, in import order */
	size_t nimports;
	tio_object_t *import_cache;	/* Map name -> Function, or NULL */
	pthread_mutex_t cache_lock;	/* guards import_cache */
};

/* Append @child (a Module; a new reference is taken) to @m's imports. */
int tio__module_add_import(struct module_obj *m, tio_object_t *child);

/*
 * Build the module tree a library's __tvm_ffi__library_bin describes
 * (@size bytes readable at @bin). @lib is the library's own module (the
 * "_lib" entry). On success *root is the tree's root (a new reference).
 */
int tio__module_bin_load(struct module_obj *lib, const char *path, const unsigned char *bin,
			 size_t size, tio_object_t **root);

/* qsort() and bsearch() order of a module's names (char *). */
static inline int tio__module_cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * module_syslib.c: set each registered context symbol NAME for which
 * @find(@arg, NAME) gives the address of a void * in a library.
 */
void tio__module_set_context_symbols(void **(*find)(void *arg, const char *name), void *arg);

/* module_syslib.c: the function @name of the system library of @prefix, or NULL. */
void *tio__syslib_function(const char *prefix, const char *name);

/* module_syslib.c: the function names of the system library of @prefix. */
int tio__syslib_list(const char *prefix, tio_any_t *out);

#endif /* TIO_MODULE_INTERNAL_H */
