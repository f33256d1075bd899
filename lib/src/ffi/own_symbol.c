// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A loaded object's own definition of a symbol, read from its dynamic
 * symbol table in memory (the object as dl_iterate_phdr() describes it).
 *
 * dlsym() needs a handle, and taking one of an object loaded as another's
 * dependency (dlopen with RTLD_NOLOAD) makes the dynamic linker build and
 * keep state for it (its search list, a wider scope array) that valgrind
 * reports lost: foreign_rt.c looks at every object of the process, so it
 * reads their tables instead, through their GNU or SysV hash table.
 */
#include <elf.h>
#include <link.h>

#include "ffi/ffi_internal.h"

struct dyn_tables {
	const ElfW(Sym) *sym;
	const char *str;
	const uint32_t *gnu_hash;
	const uint32_t *sysv_hash;
};

/* d_ptr is the address once the dynamic linker relocated it (not the vDSO's). */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
	return (const void *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
}

static int dyn_tables(const struct dl_phdr_info *info, struct dyn_tables *t)
{
	const ElfW(Dyn) *d = NULL;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			d = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	memset(t, 0, sizeof(*t));
	for (; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			t->sym = dyn_ptr(info, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			t->str = dyn_ptr(info, d->d_un.d_ptr);
		else if (d->d_tag == DT_GNU_HASH)
			t->gnu_hash = dyn_ptr(info, d->d_un.d_ptr);
		else if (d->d_tag == DT_HASH)
			t->sysv_hash = dyn_ptr(info, d->d_un.d_ptr);
	}
	return t->sym && t->str && (t->gnu_hash || t->sysv_hash) ? 0 : -1;
}

/* A function this object defines, named @name. */
static int defines(const struct dyn_tables *t, uint32_t i, const char *name)
{
	const ElfW(Sym) *s = &t->sym[i];

	/* ELF64_ST_TYPE is also ELF32_ST_TYPE: the low 4 bits. */
	return s->st_shndx != SHN_UNDEF && s->st_value &&
	       ELF64_ST_TYPE(s->st_info) == STT_FUNC && !strcmp(t->str + s->st_name, name);
}

static uint32_t gnu_find(const struct dyn_tables *t, const char *name)
{
	const uint32_t *h = t->gnu_hash;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_words = h[2], hash = 5381, i, c;
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(h + 4) + bloom_words);
	const uint32_t *chain = buckets + nbuckets;
	const unsigned char *p;

	for (p = (const unsigned char *)name; *p; p++)
		hash = hash * 33 + *p;
	if (!nbuckets)
		return 0;
	for (i = buckets[hash % nbuckets]; i >= symoffset; i++) {
		c = chain[i - symoffset];
		if ((c | 1) == (hash | 1) && defines(t, i, name))
			return i;
		if (c & 1)
			break;
	}
	return 0;
}

static uint32_t sysv_find(const struct dyn_tables *t, const char *name)
{
	const uint32_t *h = t->sysv_hash;
	uint32_t nbucket = h[0], hash = 0, g, i;
	const uint32_t *bucket = h + 2, *chain = bucket + nbucket;
	const unsigned char *p;

	for (p = (const unsigned char *)name; *p; p++) {
		hash = (hash << 4) + *p;
		g = hash & 0xf0000000u;
		hash ^= g >> 24;
		hash &= ~g;
	}
	if (!nbucket)
		return 0;
	for (i = bucket[hash % nbucket]; i; i = chain[i])
		if (defines(t, i, name))
			return i;
	return 0;
}

/**
 * tio__own_symbol() - where a loaded object's own function @name is
 * @info: the object, as dl_iterate_phdr() gives it (call it from there, or
 *	while the object cannot be unloaded)
 * @name: the function's name (unversioned)
 *
 * Return: its address, or NULL when the object does not define it (a
 * function it imports from another object is not its own).
 */
void *tio__own_symbol(const struct dl_phdr_info *info, const char *name)
{
	struct dyn_tables t;
	uint32_t i;

	if (dyn_tables(info, &t))
		return NULL;
	i = t.gnu_hash ? gnu_find(&t, name) : sysv_find(&t, name);
	return i ? (void *)(info->dlpi_addr + t.sym[i].st_value) : NULL;
}
