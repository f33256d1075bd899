// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Modules: shared objects loaded with dlopen, their __tvm_ffi_<name>
 * functions, the ABI version check, and the system library.
 *
 * The module's dynamic symbol table is read with libelf before dlopen: the
 * ABI version symbol is checked there, so an incompatible module is refused
 * before any of its code (constructors included) runs, and the function
 * list comes from the same pass.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "ffi/module_internal.h"

/* What the ELF scan finds besides the function names. */
struct scan {
	int has_abi;
	uint32_t abi;
	int has_bin;
	size_t bin_size;
};

#define PREFIX_LEN (sizeof(TIO_MODULE_SYMBOL_PREFIX) - 1)

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void module_deleter(void *self, int flags)
{
	struct module_obj *m = self;
	size_t i;

	if (flags & TIO_DELETER_STRONG) {
		tio_object_decref(m->import_cache);
		m->import_cache = NULL;
		for (i = 0; i < m->nimports; i++)
			tio_object_decref(m->imports[i]);
		free(m->imports);
		m->imports = NULL;
		m->nimports = 0;
		pthread_mutex_destroy(&m->cache_lock);
		if (m->handle)
			dlclose(m->handle);
		m->handle = NULL;
		free_names(m->names, m->nnames);
		m->names = NULL;
		m->nnames = 0;
	}
	if (flags & TIO_DELETER_WEAK)
		tio__obj_free(m);
}

/* Reads the ABI version symbol's 4 bytes. Return: 0, or -1 if unreadable. */
static int read_u32(Elf *elf, const GElf_Sym *sym, uint32_t *out)
{
	Elf_Scn *scn = elf_getscn(elf, sym->st_shndx);
	GElf_Shdr shdr;
	Elf_Data *data;
	GElf_Addr off;

	if (!scn || !gelf_getshdr(scn, &shdr) || sym->st_size != sizeof(*out))
		return -1;
	if (shdr.sh_type == SHT_NOBITS) {
		*out = 0;
		return 0;
	}
	data = elf_getdata(scn, NULL);
	if (!data || sym->st_value < shdr.sh_addr)
		return -1;
	off = sym->st_value - shdr.sh_addr;
	if (off + sizeof(*out) > data->d_size)
		return -1;
	memcpy(out, (const char *)data->d_buf + off, sizeof(*out));
	return 0;
}

/*
 * Scan @path's dynamic symbols. Return: 0 with the function names and the
 * ABI version (*has_abi), or -1 with an error raised.
 */
/*
 * Whether dynamic symbol @name (with the prefix) is a function TVM FFI's
 * loader would find: __tvm_ffi_<name>, <name> possibly starting with '_'
 * ("_hidden"), but not the metadata and doc getters of other functions.
 */
static int is_function_symbol(const char *name, const GElf_Sym *sym)
{
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || !name[PREFIX_LEN])
		return 0;
	return strncmp(name, TIO_MODULE_METADATA_PREFIX, sizeof(TIO_MODULE_METADATA_PREFIX) - 1) &&
	       strncmp(name, TIO_MODULE_DOC_PREFIX, sizeof(TIO_MODULE_DOC_PREFIX) - 1);
}

static int elf_scan(const char *path, char ***names_out, size_t *n_out, struct scan *sc)
{
	char **names = NULL, **grown;
	size_t n = 0, cap = 0, i, count;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	Elf_Data *data;
	GElf_Sym sym;
	Elf *elf;
	int fd, ret = -1;

	memset(sc, 0, sizeof(*sc));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return tio_error_raise("OSError", "libelf: %s", elf_errmsg(-1));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tio_error_raise("OSError", "cannot open module '%s': %m", path);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		tio_error_raise("OSError", "'%s' is not an ELF object", path);
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM || !shdr.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		count = shdr.sh_size / shdr.sh_entsize;
		for (i = 0; i < count; i++) {
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (!name || strncmp(name, TIO_MODULE_SYMBOL_PREFIX, PREFIX_LEN))
				continue;
			if (!strcmp(name, TIO_MODULE_ABI_SYMBOL)) {
				if (read_u32(elf, &sym, &sc->abi)) {
					tio_error_raise("ImportError",
							"module '%s': unreadable %s", path,
							TIO_MODULE_ABI_SYMBOL);
					goto out;
				}
				sc->has_abi = 1;
				continue;
			}
			if (!strcmp(name, TIO_MODULE_BIN_SYMBOL)) {
				sc->has_bin = 1;
				sc->bin_size = sym.st_size;
				continue;
			}
			if (!is_function_symbol(name, &sym))
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				grown = realloc(names, cap * sizeof(*names));
				if (!grown)
					goto oom;
				names = grown;
			}
			names[n] = strdup(name + PREFIX_LEN);
			if (!names[n])
				goto oom;
			n++;
		}
	}
	qsort(names, n, sizeof(*names), cmp_str);
	*names_out = names;
	*n_out = n;
	names = NULL;
	n = 0;
	ret = 0;
	goto out;
oom:
	tio__oom();
out:
	free_names(names, n);
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* A Module object for @handle (NULL: none), owning @names. */
static struct module_obj *module_new(void *handle, char **names, size_t n)
{
	struct module_obj *m = tio__obj_new(sizeof(*m), TIO_TYPE_MODULE, module_deleter);

	if (!m)
		return NULL;
	m->handle = handle;
	m->prefix = NULL;
	m->names = names;
	m->nnames = n;
	m->imports = NULL;
	m->nimports = 0;
	m->import_cache = NULL;
	pthread_mutex_init(&m->cache_lock, NULL);
	return m;
}

/* Context symbols: names set to values in every library loaded after. */
struct ctx_symbol {
	char *name;
	void *value;
};

static pthread_mutex_t ctxsym_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctx_symbol *ctxsyms;	/* under ctxsym_lock */
static size_t nctxsyms, ctxsyms_cap;

int tio_module_register_context_symbol(const char *name, void *value)
{
	struct ctx_symbol *grown;
	size_t i;
	char *copy;

	if (!name || !*name)
		return tio_error_raise("ValueError", "context symbol name must be given");
	pthread_mutex_lock(&ctxsym_lock);
	for (i = 0; i < nctxsyms && strcmp(ctxsyms[i].name, name); i++)
		;
	if (i < nctxsyms) {
		ctxsyms[i].value = value;
		pthread_mutex_unlock(&ctxsym_lock);
		return 0;
	}
	copy = strdup(name);
	if (copy && nctxsyms == ctxsyms_cap) {
		grown = realloc(ctxsyms, (ctxsyms_cap ? 2 * ctxsyms_cap : 8) * sizeof(*grown));
		if (grown) {
			ctxsyms = grown;
			ctxsyms_cap = ctxsyms_cap ? 2 * ctxsyms_cap : 8;
		}
	}
	if (!copy || nctxsyms == ctxsyms_cap) {
		pthread_mutex_unlock(&ctxsym_lock);
		free(copy);
		return tio__oom();
	}
	ctxsyms[nctxsyms].name = copy;
	ctxsyms[nctxsyms++].value = value;
	pthread_mutex_unlock(&ctxsym_lock);
	return 0;
}

/* The registered context symbols the library has (a void * each) are set. */
static void set_context_symbols(void *handle)
{
	void **p;
	size_t i;

	pthread_mutex_lock(&ctxsym_lock);
	for (i = 0; i < nctxsyms; i++) {
		p = dlsym(handle, ctxsyms[i].name);
		if (p)
			*p = ctxsyms[i].value;
	}
	pthread_mutex_unlock(&ctxsym_lock);
}

/*
 * As TVM FFI does after dlopen: the context symbols are set, the
 * library's context pointer is set to its module (borrowed: the library lives as long as the module), and an
 * embedded module tree replaces the module by the tree's root.
 */
static int module_link(struct module_obj *m, const char *path, const struct scan *sc,
		       tio_object_t **out)
{
	void **ctx = dlsym(m->handle, TIO_MODULE_CTX_SYMBOL);
	const unsigned char *bin;
	int r;

	set_context_symbols(m->handle);
	if (ctx)
		*ctx = m;
	if (!sc->has_bin) {
		*out = &m->header;
		return 0;
	}
	bin = dlsym(m->handle, TIO_MODULE_BIN_SYMBOL);
	if (!bin) {
		tio_object_decref(&m->header);
		return tio_error_raise("ImportError", "module '%s': %s cannot be resolved", path,
				       TIO_MODULE_BIN_SYMBOL);
	}
	r = tio__module_bin_load(m, path, bin, sc->bin_size, out);
	tio_object_decref(&m->header);
	return r;
}

int tio_module_load(const char *path, tio_object_t **out)
{
	struct module_obj *m;
	char **names = NULL;
	size_t n = 0;
	struct scan sc;
	void *h;

	if (!path || !out)
		return tio_error_raise("ValueError", "module path and output must be given");
	if (elf_scan(path, &names, &n, &sc))
		return -1;
	if (sc.has_abi && sc.abi != TIO_ABI_VERSION) {
		free_names(names, n);
		return tio_error_raise("ImportError",
				       "module '%s' was built for ABI version %u; this library has %u",
				       path, sc.abi, (unsigned)TIO_ABI_VERSION);
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		free_names(names, n);
		return tio_error_raise("OSError", "cannot load module '%s': %s", path, dlerror());
	}
	m = module_new(h, names, n);
	if (!m) {
		dlclose(h);
		free_names(names, n);
		return tio__oom();
	}
	return module_link(m, path, &sc, out);
}

/*
 * System libraries. As TVM FFI: one registry of symbols (full names, a
 * later registration of a name replaces the earlier) shared by the system
 * library of every prefix, each made on first use and kept for the
 * process; the one of prefix P finds function NAME as __tvm_ffi_<P><NAME>,
 * else as __tvm_ffi_<NAME>. When it is made, each context symbol NAME
 * registered as <P>NAME, else as NAME, (a void *) is set, and then its
 * P__tvm_ffi__library_ctx to itself. Lock order: syslib_lock, then
 * ctxsym_lock.
 */
struct syslib_entry {
	char *symbol;
	void *ptr;
};

static pthread_mutex_t syslib_lock = PTHREAD_MUTEX_INITIALIZER;
static struct syslib_entry *syslib;	/* under syslib_lock, as all below */
static size_t syslib_n, syslib_cap;
static struct syslib_entry *syslib_data;	/* names of no function: void *s */
static size_t syslib_data_n, syslib_data_cap;
static struct syslib_entry *syslib_ctx;	/* symbol: the prefix; ptr: the void ** */
static size_t syslib_ctx_n, syslib_ctx_cap;
static struct module_obj **prefixed;	/* the system libraries with a prefix */
static size_t prefixed_n, prefixed_cap;
static int system_lib_made;	/* the one of prefix "" */

static void static_deleter(void *self, int flags)
{
	(void)self;
	(void)flags;
}

#define STATIC_REFS (UINT64_C(1) << 30)	/* never reaches zero */

static struct module_obj system_lib = {
	.header = { .combined_ref_count = STATIC_REFS,
		    .type_index = TIO_TYPE_MODULE,
		    .deleter = static_deleter },
	.prefix = "",
	.cache_lock = PTHREAD_MUTEX_INITIALIZER,
};

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

/* Under syslib_lock: @symbol's entry in @arr (@n entries), or NULL. */
static struct syslib_entry *entry_find(struct syslib_entry *arr, size_t n, const char *symbol)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(arr[i].symbol, symbol))
			return &arr[i];
	return NULL;
}

static struct syslib_entry *syslib_find(const char *symbol)
{
	return entry_find(syslib, syslib_n, symbol);
}

/* Under syslib_lock: any registered symbol, function or not. */
static void *symbol_find(const char *symbol)
{
	struct syslib_entry *e = entry_find(syslib_data, syslib_data_n, symbol);

	if (!e)
		e = syslib_find(symbol);
	return e ? e->ptr : NULL;
}

/*
 * Under syslib_lock, as TVM FFI when it makes the system library of
 * @prefix: a context symbol NAME registered as <prefix>NAME, else as NAME,
 * is set to its value.
 */
static void syslib_set_context_symbols(const char *prefix)
{
	char sym[256];
	void **p;
	size_t i;

	pthread_mutex_lock(&ctxsym_lock);
	for (i = 0; i < nctxsyms; i++) {
		p = NULL;
		if (*prefix && (size_t)snprintf(sym, sizeof(sym), "%s%s", prefix,
						ctxsyms[i].name) < sizeof(sym))
			p = symbol_find(sym);
		if (!p)
			p = symbol_find(ctxsyms[i].name);
		if (p)
			*p = ctxsyms[i].value;
	}
	pthread_mutex_unlock(&ctxsym_lock);
}

/* Under syslib_lock: the function @name of the library of @prefix, or NULL. */
static void *syslib_lookup(const char *prefix, const char *name)
{
	char sym[256];
	struct syslib_entry *e = NULL;

	if (*prefix && (size_t)snprintf(sym, sizeof(sym), "%s%s%s", TIO_MODULE_SYMBOL_PREFIX,
					prefix, name) < sizeof(sym))
		e = syslib_find(sym);
	if (!e && (size_t)snprintf(sym, sizeof(sym), "%s%s", TIO_MODULE_SYMBOL_PREFIX, name) <
		  sizeof(sym))
		e = syslib_find(sym);
	return e ? e->ptr : NULL;
}

/* Under syslib_lock: append {@a, @b} to @arr (@n entries, @cap slots). */
static int entry_push(struct syslib_entry **arr, size_t *n, size_t *cap, char *a, void *b)
{
	struct syslib_entry *grown;
	size_t c;

	if (*n == *cap) {
		c = *cap ? 2 * *cap : 16;
		grown = realloc(*arr, c * sizeof(*grown));
		if (!grown)
			return -1;
		*arr = grown;
		*cap = c;
	}
	(*arr)[*n].symbol = a;
	(*arr)[(*n)++].ptr = b;
	return 0;
}

/* Under syslib_lock: the system library of @prefix if made, else NULL. */
static struct module_obj *prefixed_find(const char *prefix)
{
	size_t i;

	if (!*prefix)
		return system_lib_made ? &system_lib : NULL;
	for (i = 0; i < prefixed_n; i++)
		if (!strcmp(prefixed[i]->prefix, prefix))
			return prefixed[i];
	return NULL;
}

/* Under syslib_lock: a library context symbol, for the library of @prefix (owned). */
static int syslib_add_ctx(char *prefix, void **addr)
{
	struct module_obj *m = prefixed_find(prefix);

	if (entry_push(&syslib_ctx, &syslib_ctx_n, &syslib_ctx_cap, prefix, addr))
		return -1;
	if (m)
		*addr = m;
	return 0;
}

#define CTX_SUFFIX TIO_MODULE_CTX_SYMBOL
#define BIN_SUFFIX TIO_MODULE_BIN_SYMBOL

/* Whether @s ends with @suffix; its length before the suffix in *@head. */
static int ends_with(const char *s, const char *suffix, size_t *head)
{
	size_t n = strlen(s), k = strlen(suffix);

	*head = n - k;
	return n >= k && !strcmp(s + n - k, suffix);
}

int tio_system_lib_register_symbol(const char *symbol, void *ptr)
{
	struct syslib_entry *e = NULL, **arr = &syslib_data;
	size_t head, *n = &syslib_data_n, *cap = &syslib_data_cap;
	int r = 0, ctx;
	char *copy;

	if (!symbol || !*symbol || !ptr)
		return tio_error_raise("ValueError", "NULL or empty symbol name, or NULL address");
	if (ends_with(symbol, BIN_SUFFIX, &head))
		return tio_error_raise("ImportError", "'%s': a system library takes no embedded "
				       "library binary", symbol);
	ctx = ends_with(symbol, CTX_SUFFIX, &head);
	copy = ctx ? strndup(symbol, head) : strdup(symbol);
	if (!copy)
		return tio__oom();
	if (!strncmp(symbol, TIO_MODULE_SYMBOL_PREFIX, PREFIX_LEN) && symbol[PREFIX_LEN]) {
		arr = &syslib;		/* a function */
		n = &syslib_n;
		cap = &syslib_cap;
	}
	pthread_mutex_lock(&syslib_lock);
	if (!ctx)
		e = entry_find(*arr, *n, symbol);
	if (e) {
		e->ptr = ptr;	/* as TVM FFI: the later registration wins */
		free(copy);
	} else if (ctx) {
		r = syslib_add_ctx(copy, ptr);
	} else {
		r = entry_push(arr, n, cap, copy, ptr);
	}
	pthread_mutex_unlock(&syslib_lock);
	if (r) {
		free(copy);
		return tio__oom();
	}
	return 0;
}

int tio_system_lib_register(const char *name, tio_safe_call_t call)
{
	char sym[256];
	size_t head;

	if (!name || !*name || !call)
		return tio_error_raise("ValueError", "name and function must be given");
	if ((size_t)snprintf(sym, sizeof(sym), "%s%s", TIO_MODULE_SYMBOL_PREFIX, name) >=
	    sizeof(sym))
		return tio_error_raise("ValueError", "system library name '%.32s...' is longer "
				       "than %zu bytes", name, sizeof(sym) - 1 - PREFIX_LEN);
	if (ends_with(sym, CTX_SUFFIX, &head) || ends_with(sym, BIN_SUFFIX, &head))
		return tio_error_raise("ValueError", "'%s' is a library symbol, not a function",
				       name);
	return tio_system_lib_register_symbol(sym, (void *)call);
}

int tio_module_system_lib(tio_object_t **out)
{
	return tio_module_system_lib_prefixed("", out);
}

/* Under syslib_lock: @m is made: its context symbols, then its library context. */
static void syslib_made(struct module_obj *m)
{
	size_t i;

	syslib_set_context_symbols(m->prefix);
	for (i = 0; i < syslib_ctx_n; i++)
		if (!strcmp(syslib_ctx[i].symbol, m->prefix))
			*(void **)syslib_ctx[i].ptr = m;
}

/* Under syslib_lock: make the system library of @prefix. */
static struct module_obj *prefixed_new(const char *prefix)
{
	struct module_obj *m, **grown;

	if (!*prefix) {
		system_lib_made = 1;
		syslib_made(&system_lib);
		return &system_lib;
	}

	if (prefixed_n == prefixed_cap) {
		grown = realloc(prefixed, (prefixed_cap ? 2 * prefixed_cap : 4) * sizeof(*grown));
		if (!grown)
			return NULL;
		prefixed = grown;
		prefixed_cap = prefixed_cap ? 2 * prefixed_cap : 4;
	}
	m = calloc(1, sizeof(*m));
	if (m)
		m->prefix = strdup(prefix);
	if (!m || !m->prefix) {
		free(m);
		return NULL;
	}
	m->header.combined_ref_count = STATIC_REFS;
	m->header.type_index = TIO_TYPE_MODULE;
	m->header.deleter = static_deleter;
	pthread_mutex_init(&m->cache_lock, NULL);
	prefixed[prefixed_n++] = m;
	syslib_made(m);
	return m;
}

int tio_module_system_lib_prefixed(const char *prefix, tio_object_t **out)
{
	struct module_obj *m;

	if (!prefix || !out)
		return tio_error_raise("ValueError", "prefix and output must be given");
	pthread_mutex_lock(&syslib_lock);
	m = prefixed_find(prefix);
	if (!m)
		m = prefixed_new(prefix);
	pthread_mutex_unlock(&syslib_lock);
	if (!m)
		return tio__oom();
	tio_object_incref(&m->header);
	*out = &m->header;
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
	return bsearch(&name, m->names, m->nnames, sizeof(*m->names), cmp_str) != NULL;
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
		pthread_mutex_lock(&syslib_lock);
		*(void **)&call = syslib_lookup(m->prefix, name);
		pthread_mutex_unlock(&syslib_lock);
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
	int r;

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
	pthread_mutex_lock(&syslib_lock);
	r = syslib_lookup(m->prefix, name) != NULL;
	pthread_mutex_unlock(&syslib_lock);
	return r;
}

int tio_module_list_functions(tio_object_t *mod, tio_any_t *out)
{
	struct module_obj *m = as_module(mod);
	size_t i, n = 0, k, plen;
	const char *sym;
	char **names;
	int r;

	*out = tio_any_none();
	if (!m)
		return -1;
	if (!m->prefix)
		return tio__str_array(m->names, m->nnames, out);
	plen = strlen(m->prefix);
	pthread_mutex_lock(&syslib_lock);
	/* NAME for __tvm_ffi_<prefix><NAME> and for __tvm_ffi_<NAME>. */
	names = calloc(2 * syslib_n + 1, sizeof(*names));
	for (i = 0; names && i < syslib_n; i++) {
		sym = syslib[i].symbol + PREFIX_LEN;
		if (plen && !strncmp(sym, m->prefix, plen) && sym[plen])
			names[n++] = (char *)sym + plen;
		names[n++] = (char *)sym;
	}
	pthread_mutex_unlock(&syslib_lock);
	if (!names)
		return tio__oom();
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = k = 0; i < n; i++)
		if (!k || strcmp(names[k - 1], names[i]))
			names[k++] = names[i];
	r = tio__str_array(names, k, out);
	free(names);	/* the strings stay the registry's */
	return r;
}
