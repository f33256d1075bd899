// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The process-wide symbol registries of modules: context symbols (set in
 * every library made or loaded after) and the system libraries, whose
 * functions are registered by name rather than loaded.
 */
#include <pthread.h>
#include <stdio.h>

#include "ffi/module_internal.h"

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

/**
 * tio__module_set_context_symbols() - set the context symbols a library has
 * @find: the address of the void * named @name in the library, or NULL
 * @arg: @find's first argument
 */
void tio__module_set_context_symbols(void **(*find)(void *arg, const char *name), void *arg)
{
	void **p;
	size_t i;

	pthread_mutex_lock(&ctxsym_lock);
	for (i = 0; i < nctxsyms; i++) {
		p = find(arg, ctxsyms[i].name);
		if (p)
			*p = ctxsyms[i].value;
	}
	pthread_mutex_unlock(&ctxsym_lock);
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
static void **symbol_find(const char *symbol)
{
	struct syslib_entry *e = entry_find(syslib_data, syslib_data_n, symbol);

	if (!e)
		e = syslib_find(symbol);
	return e ? (void **)e->ptr : NULL;
}

/* A context symbol NAME of the library of prefix @arg: <prefix>NAME, else NAME. */
static void **syslib_context_symbol(void *arg, const char *name)
{
	const char *prefix = arg;
	char sym[256];
	void **p = NULL;

	if (*prefix && (size_t)snprintf(sym, sizeof(sym), "%s%s", prefix, name) < sizeof(sym))
		p = symbol_find(sym);
	return p ? p : symbol_find(name);
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
	if (!strncmp(symbol, TIO_MODULE_SYMBOL_PREFIX, TIO_MODULE_PREFIX_LEN) &&
	    symbol[TIO_MODULE_PREFIX_LEN]) {
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
				       "than %zu bytes", name, sizeof(sym) - 1 - TIO_MODULE_PREFIX_LEN);
	if (ends_with(sym, CTX_SUFFIX, &head) || ends_with(sym, BIN_SUFFIX, &head))
		return tio_error_raise("ValueError", "'%s' is a library symbol, not a function",
				       name);
	return tio_system_lib_register_symbol(sym, (void *)call);
}

int tio_module_system_lib(tio_object_t **out)
{
	return tio_module_system_lib_prefixed("", out);
}

/*
 * Under syslib_lock (then ctxsym_lock): @m is made: its context symbols,
 * then its library context.
 */
static void syslib_made(struct module_obj *m)
{
	size_t i;

	tio__module_set_context_symbols(syslib_context_symbol, m->prefix);
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

/* The function @name of the system library of @prefix, or NULL. */
void *tio__syslib_function(const char *prefix, const char *name)
{
	void *p;

	pthread_mutex_lock(&syslib_lock);
	p = syslib_lookup(prefix, name);
	pthread_mutex_unlock(&syslib_lock);
	return p;
}

/* The function names of the system library of @prefix, as an Array in *@out. */
int tio__syslib_list(const char *prefix, tio_any_t *out)
{
	size_t i, n = 0, k, plen = strlen(prefix);
	const char *sym;
	char **names;
	int r;

	pthread_mutex_lock(&syslib_lock);
	/* NAME for __tvm_ffi_<prefix><NAME> and for __tvm_ffi_<NAME>. */
	names = calloc(2 * syslib_n + 1, sizeof(*names));
	for (i = 0; names && i < syslib_n; i++) {
		sym = syslib[i].symbol + TIO_MODULE_PREFIX_LEN;
		if (plen && !strncmp(sym, prefix, plen) && sym[plen])
			names[n++] = (char *)sym + plen;
		names[n++] = (char *)sym;
	}
	pthread_mutex_unlock(&syslib_lock);
	if (!names)
		return tio__oom();
	qsort(names, n, sizeof(*names), tio__module_cmp_name);
	for (i = k = 0; i < n; i++)
		if (!k || strcmp(names[k - 1], names[i]))
			names[k++] = names[i];
	r = tio__str_array(names, k, out);
	free(names);	/* the strings stay the registry's */
	return r;
}
