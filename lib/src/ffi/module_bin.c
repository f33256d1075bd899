// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A library's embedded module tree (__tvm_ffi__library_bin), read as TVM
 * FFI writes it:
 *
 *   u64 nbytes, then nbytes of:
 *   vec<u64> indptr, vec<u64> children   (CSR: children of module i are
 *                                         children[indptr[i] .. indptr[i+1]])
 *   per module: str kind, then bytes unless kind is "_lib"
 *
 * vec and str/bytes are a u64 count then the items; all little-endian.
 * "_lib" is the library itself; any other kind is rebuilt by the global
 * function "ffi.Module.load_from_bytes.<kind>" from its bytes. Module 0 is
 * the root. Every count is checked against the symbol's size.
 */
#include <stdio.h>

#include "ffi/module_internal.h"

#define LOADER_PREFIX "ffi.Module.load_from_bytes."

struct reader {
	const unsigned char *p;
	size_t left;
	const char *path;
};

static int bad(const struct reader *r, const char *what)
{
	return tio_error_raise("ImportError", "module '%s': %s is malformed (%s)", r->path,
			       TIO_MODULE_BIN_SYMBOL, what);
}

static int read_u64(struct reader *r, uint64_t *v)
{
	int i;

	if (r->left < 8)
		return bad(r, "truncated");
	for (*v = 0, i = 7; i >= 0; i--)
		*v = (*v << 8) | r->p[i];
	r->p += 8;
	r->left -= 8;
	return 0;
}

/* A u64 count of @elem-byte items; the items stay in place. */
static int read_span(struct reader *r, size_t elem, const unsigned char **data, uint64_t *n)
{
	if (read_u64(r, n))
		return -1;
	if (*n > r->left / elem)
		return bad(r, "count past its end");
	*data = r->p;
	r->p += *n * elem;
	r->left -= *n * elem;
	return 0;
}

static uint64_t u64_at(const unsigned char *p, uint64_t i)
{
	uint64_t v = 0;
	int k;

	for (k = 7; k >= 0; k--)
		v = (v << 8) | p[i * 8 + (uint64_t)k];
	return v;
}

/* Rebuild one embedded module of kind @kind from its bytes. */
static int load_kind(struct reader *r, const unsigned char *kind, uint64_t klen,
		     tio_object_t **out)
{
	const unsigned char *data;
	tio_object_t *loader = NULL;
	tio_any_t arg, ret = tio_any_none();
	uint64_t n;
	char name[128];

	if (read_span(r, 1, &data, &n))
		return -1;
	if (klen > sizeof(name) - sizeof(LOADER_PREFIX) || memchr(kind, 0, klen))
		return bad(r, "module kind");
	snprintf(name, sizeof(name), "%s%.*s", LOADER_PREFIX, (int)klen, (const char *)kind);
	if (tio_func_get_global(name, &loader))
		return -1;
	if (!loader)
		return tio_error_raise("ImportError",
				       "module '%s' embeds a module of kind '%.*s' and no loader '%s' is registered",
				       r->path, (int)klen, (const char *)kind, name);
	if (tio_bytes_new(data, n, &arg)) {
		tio_object_decref(loader);
		return -1;
	}
	if (tio_func_call_any(loader, &arg, 1, &ret)) {
		tio_any_decref(&arg);
		tio_object_decref(loader);
		return tio_error_raise_chained("ImportError", "module '%s': loader '%s' failed",
					       r->path, name);
	}
	tio_any_decref(&arg);
	tio_object_decref(loader);
	if (ret.type_index != TIO_TYPE_MODULE) {
		tio_any_decref(&ret);
		return tio_error_raise("ImportError", "module '%s': loader '%s' returned no Module",
				       r->path, name);
	}
	*out = ret.v_obj;
	return 0;
}

/* Kahn's algorithm: refuse an import graph with a cycle (it would leak). */
static int acyclic(const unsigned char *indptr, const unsigned char *child, uint64_t nmods)
{
	uint64_t *indeg, *queue, head = 0, tail = 0, i, j, seen = 0;
	int ok;

	indeg = calloc(nmods, sizeof(*indeg));
	queue = calloc(nmods, sizeof(*queue));
	if (!indeg || !queue) {
		free(indeg);
		free(queue);
		return -1;
	}
	for (i = 0; i < nmods; i++)
		for (j = u64_at(indptr, i); j < u64_at(indptr, i + 1); j++)
			indeg[u64_at(child, j)]++;
	for (i = 0; i < nmods; i++)
		if (!indeg[i])
			queue[tail++] = i;
	while (head < tail) {
		i = queue[head++];
		seen++;
		for (j = u64_at(indptr, i); j < u64_at(indptr, i + 1); j++)
			if (!--indeg[u64_at(child, j)])
				queue[tail++] = u64_at(child, j);
	}
	ok = seen == nmods;
	free(indeg);
	free(queue);
	return ok;
}

static void release_all(tio_object_t **mods, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		tio_object_decref(mods[i]);
	free(mods);
}

int tio__module_bin_load(struct module_obj *lib, const char *path, const unsigned char *bin,
			 size_t size, tio_object_t **root)
{
	struct reader r = { bin, size, path };
	const unsigned char *indptr, *child, *kind;
	uint64_t nbytes, nptr, nchild, klen, nmods, i, j, c;
	tio_object_t **mods;

	if (read_u64(&r, &nbytes))
		return -1;
	if (nbytes > r.left)
		return bad(&r, "size past the symbol's end");
	r.left = nbytes;
	if (read_span(&r, 8, &indptr, &nptr) || read_span(&r, 8, &child, &nchild))
		return -1;
	if (nptr < 2)
		return bad(&r, "no module");
	nmods = nptr - 1;
	for (i = 0; i < nmods; i++)
		if (u64_at(indptr, i) > u64_at(indptr, i + 1) || u64_at(indptr, i + 1) > nchild)
			return bad(&r, "import tree");
	for (j = 0; j < nchild; j++)
		if (u64_at(child, j) >= nmods)
			return bad(&r, "import index");
	switch (acyclic(indptr, child, nmods)) {
	case -1:
		return tio__oom();
	case 0:
		return bad(&r, "import cycle");
	}
	mods = calloc(nmods, sizeof(*mods));
	if (!mods)
		return tio__oom();
	for (i = 0; i < nmods; i++) {
		if (read_span(&r, 1, &kind, &klen))
			goto fail;
		if (klen == 4 && !memcmp(kind, "_lib", 4)) {
			tio_object_incref(&lib->header);
			mods[i] = &lib->header;
		} else if (load_kind(&r, kind, klen, &mods[i])) {
			goto fail;
		}
	}
	for (i = 0; i < nmods; i++) {
		for (j = u64_at(indptr, i); j < u64_at(indptr, i + 1); j++) {
			c = u64_at(child, j);
			if (tio__module_add_import((struct module_obj *)mods[i], mods[c]))
				goto fail;
		}
	}
	tio_object_incref(mods[0]);
	*root = mods[0];
	release_all(mods, nmods);
	return 0;
fail:
	release_all(mods, nmods);
	return -1;
}
