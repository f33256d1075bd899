/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Module object's private layout, shared by module.c and module_bin.c.
 */
#ifndef TIO_MODULE_INTERNAL_H
#define TIO_MODULE_INTERNAL_H

#include <pthread.h>

#include "ffi/ffi_internal.h"

/* TVM FFI's special symbols (one more '_' than a function's prefix). */
#define TIO_MODULE_CTX_SYMBOL "__tvm_ffi__library_ctx"
#define TIO_MODULE_BIN_SYMBOL "__tvm_ffi__library_bin"
#define TIO_MODULE_METADATA_PREFIX "__tvm_ffi__metadata_"
#define TIO_MODULE_DOC_PREFIX "__tvm_ffi__doc_"

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

#endif /* TIO_MODULE_INTERNAL_H */
