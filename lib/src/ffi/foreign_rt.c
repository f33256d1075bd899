// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Another TVM FFI runtime in the process: TVM FFI's own libtvm_ffi.so (the
 * tvm_ffi Python package, TVM, a module linked with it), or a second copy
 * of this library. Each runtime keeps its own thread-local raised error: a
 * module built on that runtime raises into that slot, and a caller on it
 * looks there after whatever it called failed, a tensorio module included.
 *
 * So that errors cross both ways, the first foreign runtime found becomes
 * the home of the raised error of every thread: error.c sets and takes it
 * through that runtime's TVMFFIErrorSetRaised and TVMFFIErrorMoveFromRaised.
 * Nothing links it. It is looked for among the loaded objects, again
 * whenever objects were loaded since the last look, by the error paths
 * (a raise, a caller finding nothing raised): an object whose own symbol
 * table defines both entry points (own_symbol.c) is a runtime, and one
 * whose symbol scope resolves tio_error_set_raised to this library
 * (libtensorio-tvmffi beside it) shares our slot already and is not
 * foreign. The runtime found
 * is pinned (RTLD_NODELETE): its entry points are called until the process
 * ends. A second foreign runtime is not looked for.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include "ffi/ffi_internal.h"

static const struct tio__foreign_rt *joined;	/* set once, never freed */

/*
 * The loaded objects as last looked at. No lock is held around a dl*()
 * call: those take the dynamic linker's lock, which a thread raising from
 * a constructor holds already. Threads that find the objects changed look
 * at the same time, each for itself; the first to find a runtime sets it.
 */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long seen_adds, seen_subs;	/* also read without it */
static size_t seen_n;			/* objects looked at, in load order */

struct gen {
	unsigned long long adds, subs;
};

static int gen_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct gen *g = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		g->adds = info->dlpi_adds;
		g->subs = info->dlpi_subs;
	}
	return 1;	/* the counters are the same in every entry */
}

/*
 * The objects from index @from on that define both error entry points
 * themselves, read from their own symbol tables (no handle is taken):
 * runtimes, a few at most.
 */
#define CANDIDATES_MAX 4

struct candidates {
	size_t from, i, n;
	char *name[CANDIDATES_MAX];
	void *set[CANDIDATES_MAX], *move[CANDIDATES_MAX];
	int failed;
};

static int candidates_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct candidates *c = arg;
	void *set, *move;

	(void)size;
	if (c->i++ < c->from || !info->dlpi_name || !info->dlpi_name[0])
		return 0;	/* the program itself has no name to open */
	set = tio__own_symbol(info, "TVMFFIErrorSetRaised");
	move = set ? tio__own_symbol(info, "TVMFFIErrorMoveFromRaised") : NULL;
	if (!move || c->n == CANDIDATES_MAX)
		return 0;
	c->name[c->n] = strdup(info->dlpi_name);	/* dlopen follows, outside */
	if (!c->name[c->n]) {
		c->failed = 1;
		return 1;
	}
	c->set[c->n] = set;
	c->move[c->n++] = move;
	return 0;
}

/*
 * Whether the runtime @name is not ours (its symbol scope does not resolve
 * tio_error_set_raised to this library); if so, pin it.
 */
static int foreign(const char *name)
{
	void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
	int found;

	if (!h)
		return 0;
	found = dlsym(h, "tio_error_set_raised") != (void *)tio_error_set_raised &&
		dlopen(name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	dlclose(h);
	return found;
}

/*
 * Publish the first runtime found; @rt is kept for the process. This
 * library is pinned too: the other runtime may hold our objects (errors
 * in its slot) after the module that brought us in is unloaded.
 */
static void join(struct tio__foreign_rt *rt)
{
	const struct tio__foreign_rt *none = NULL;
	Dl_info di;

	if (!__atomic_compare_exchange_n(&joined, &none, rt, 0, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED)) {
		free(rt);
		return;
	}
	if (dladdr((void *)tio_error_set_raised, &di) && di.dli_fname)
		dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

/* Look at the objects loaded since @from, the generation being @g. */
static void probe(const struct gen *g, size_t from)
{
	struct candidates c = { .from = from };
	struct tio__foreign_rt *rt;
	size_t i;

	dl_iterate_phdr(candidates_cb, &c);
	for (i = 0; !c.failed && i < c.n; i++) {
		if (!foreign(c.name[i]))
			continue;
		rt = malloc(sizeof(*rt));
		if (!rt) {
			c.failed = 1;
			break;
		}
		*(void **)&rt->set = c.set[i];
		*(void **)&rt->move = c.move[i];
		join(rt);
		break;
	}
	if (!c.failed) {	/* else look again next time */
		pthread_mutex_lock(&seen_lock);
		if (g->adds >= seen_adds && g->subs >= seen_subs) {
			seen_n = c.i;
			__atomic_store_n(&seen_adds, g->adds, __ATOMIC_RELEASE);
			__atomic_store_n(&seen_subs, g->subs, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&seen_lock);
	}
	for (i = 0; i < c.n; i++)
		free(c.name[i]);
}

const struct tio__foreign_rt *tio__foreign_rt_joined(void)
{
	return __atomic_load_n(&joined, __ATOMIC_ACQUIRE);
}

const struct tio__foreign_rt *tio__foreign_rt(void)
{
	const struct tio__foreign_rt *rt = tio__foreign_rt_joined();
	struct gen g = { 0, 0 };
	size_t from;

	if (TIO_LIKELY(rt))
		return rt;
	dl_iterate_phdr(gen_cb, &g);
	/*
	 * Looked at already, maybe by a thread that found a runtime since our
	 * first check: the acquire pairs with its release after joining.
	 */
	if (g.adds == __atomic_load_n(&seen_adds, __ATOMIC_ACQUIRE) &&
	    g.subs == __atomic_load_n(&seen_subs, __ATOMIC_ACQUIRE))
		return tio__foreign_rt_joined();
	pthread_mutex_lock(&seen_lock);
	from = g.subs == seen_subs ? seen_n : 0;
	pthread_mutex_unlock(&seen_lock);
	probe(&g, from);
	return tio__foreign_rt_joined();
}
