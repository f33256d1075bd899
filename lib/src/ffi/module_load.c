// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Modules loaded from shared objects with dlopen: their __tvm_ffi_<name>
 * functions, the ABI version check, the library context and an embedded
 * module tree (module_bin.c).
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
 * Whether dynamic symbol @name (with the prefix) is a function TVM FFI's
 * loader would find: __tvm_ffi_<name>, <name> possibly starting with '_'
 * ("_hidden"), but not the metadata and doc getters of other functions.
 */
static int is_function_symbol(const char *name, const GElf_Sym *sym)
{
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || !name[TIO_MODULE_PREFIX_LEN])
		return 0;
	return strncmp(name, TIO_MODULE_METADATA_PREFIX, sizeof(TIO_MODULE_METADATA_PREFIX) - 1) &&
	       strncmp(name, TIO_MODULE_DOC_PREFIX, sizeof(TIO_MODULE_DOC_PREFIX) - 1);
}

/*
 * Scan @path's dynamic symbols. Return: 0 with the function names and the
 * ABI version (*has_abi), or -1 with an error raised.
 */
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
			if (!name || strncmp(name, TIO_MODULE_SYMBOL_PREFIX, TIO_MODULE_PREFIX_LEN))
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
			names[n] = strdup(name + TIO_MODULE_PREFIX_LEN);
			if (!names[n])
				goto oom;
			n++;
		}
	}
	qsort(names, n, sizeof(*names), tio__module_cmp_name);
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

static void **dl_context_symbol(void *handle, const char *name)
{
	return dlsym(handle, name);
}

/*
 * As TVM FFI does after dlopen: the context symbols are set, the
 * library's context pointer is set to its module (borrowed: the library
 * lives as long as the module), and an embedded module tree replaces the
 * module by the tree's root.
 */
static int module_link(struct module_obj *m, const char *path, const struct scan *sc,
		       tio_object_t **out)
{
	void **ctx = dlsym(m->handle, TIO_MODULE_CTX_SYMBOL);
	const unsigned char *bin;
	int r;

	tio__module_set_context_symbols(dl_context_symbol, m->handle);
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
