// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Backtraces: libunwind's unw_backtrace() unwinds (DWARF CFI, with a
 * per-thread cache of frame shapes: ~20 ns a frame where glibc's
 * backtrace() through libgcc takes ~300), elfutils' libdwfl symbolises:
 * function name and offset, and file:line where the object has debug
 * information.
 *
 * Capture and symbolisation are apart: an error records raw return
 * addresses when raised (a microsecond) and its text is made only when
 * someone reads the backtrace (libdwfl: a few hundred microseconds, the
 * first time in a process tens of milliseconds).
 *
 * One Dwfl session describes the process; it is built on first use and
 * rebuilt when an address falls outside every module it knows (a library
 * loaded since). libdwfl is not thread-safe: dwfl_lock serialises it.
 */
#define UNW_LOCAL_ONLY
#include <elfutils/libdwfl.h>
#include <libunwind.h>
#include <unwind.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ffi/ffi_internal.h"

#define BT_MAX_FRAMES 64

static pthread_mutex_t dwfl_lock = PTHREAD_MUTEX_INITIALIZER;
static Dwfl *dwfl;		/* under dwfl_lock */
static char *debuginfo_path;

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static Dwfl *dwfl_open(void)
{
	Dwfl *d = dwfl_begin(&dwfl_callbacks);

	if (!d)
		return NULL;
	dwfl_report_begin(d);
	if (dwfl_linux_proc_report(d, getpid()) != 0 ||
	    dwfl_report_end(d, NULL, NULL) != 0) {
		dwfl_end(d);
		return NULL;
	}
	return d;
}

__attribute__((destructor)) static void dwfl_fini(void)
{
	pthread_mutex_lock(&dwfl_lock);
	if (dwfl)
		dwfl_end(dwfl);
	dwfl = NULL;
	pthread_mutex_unlock(&dwfl_lock);
}

static Dwfl_Module *find_module(Dwarf_Addr pc)
{
	Dwfl_Module *m;

	if (!dwfl)
		dwfl = dwfl_open();
	if (!dwfl)
		return NULL;
	m = dwfl_addrmodule(dwfl, pc);
	if (!m) {
		dwfl_end(dwfl);
		dwfl = dwfl_open();
		m = dwfl ? dwfl_addrmodule(dwfl, pc) : NULL;
	}
	return m;
}

static void describe(FILE *f, int n, void *addr)
{
	/* Return addresses point after the call: look up the call itself. */
	Dwarf_Addr pc = (Dwarf_Addr)(uintptr_t)addr - 1;
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = NULL, *file = NULL, *mname = NULL;
	Dwfl_Module *m;
	Dwfl_Line *line;
	int lineno = 0;

	m = find_module(pc);
	if (m) {
		name = dwfl_module_addrinfo(m, pc, &off, &sym, NULL, NULL, NULL);
		mname = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		line = dwfl_module_getsrc(m, pc);
		if (line)
			file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	}
	fprintf(f, "#%d 0x%" PRIxPTR " %s", n, (uintptr_t)addr, name ? name : "??");
	if (name)
		fprintf(f, "+0x%" PRIx64, (uint64_t)off);
	if (file)
		fprintf(f, " at %s:%d\n", file, lineno);
	else
		fprintf(f, " (%s)\n", mname ? mname : "?");
}

static int backtrace_enabled(void)
{
	static int enabled = -1;
	int e = __atomic_load_n(&enabled, __ATOMIC_RELAXED);

	if (e < 0) {
		const char *s = getenv("TIO_BACKTRACE");

		e = !(s && s[0] == '0');
		__atomic_store_n(&enabled, e, __ATOMIC_RELAXED);
	}
	return e;
}

#ifdef __SANITIZE_THREAD__
/*
 * ThreadSanitizer: libunwind frees its per-thread trace cache from a
 * thread-specific-data destructor that takes a mutex after TSan has retired
 * the thread, which crashes. The TSan build unwinds with libgcc instead
 * (about ten times slower, the same frames).
 */
struct bt_walk {
	void **frames;
	int n, max;
};

static _Unwind_Reason_Code bt_step(struct _Unwind_Context *uc, void *arg)
{
	struct bt_walk *w = arg;

	if (w->n >= w->max)
		return _URC_END_OF_STACK;
	w->frames[w->n++] = (void *)_Unwind_GetIP(uc);
	return _URC_NO_REASON;
}

static inline __attribute__((always_inline)) int unwind(void **frames, int max)
{
	struct bt_walk w = { frames, 0, max };

	_Unwind_Backtrace(bt_step, &w);
	return w.n;
}
#else
static inline __attribute__((always_inline)) int unwind(void **frames, int max)
{
	return unw_backtrace(frames, max);
}
#endif

/**
 * tio__backtrace_capture() - the calling thread's return addresses, raw
 * @frames: filled with up to @max addresses, most recent call first
 * @max: room in @frames
 * @skip: innermost frames to leave out (the caller's own is frame 0)
 *
 * Only unwinds: symbolising is tio__backtrace_symbolise()'s, done when
 * the text is wanted (an error that is handled never needs it).
 *
 * Return: the number of addresses stored; 0 when TIO_BACKTRACE=0.
 */
__attribute__((noinline)) int tio__backtrace_capture(void **frames, int max, int skip)
{
	void *all[BT_MAX_FRAMES];
	int n, first;

	if (!backtrace_enabled())
		return 0;
	n = unwind(all, BT_MAX_FRAMES);
	/* Frame 0 is this function. */
	first = 1 + (skip > 0 ? skip : 0);
	if (n <= first)
		return 0;
	n -= first;
	if (n > max)
		n = max;
	memcpy(frames, all + first, (size_t)n * sizeof(*frames));
	return n;
}

/**
 * tio__backtrace_symbolise() - captured addresses as text
 * @frames: from tio__backtrace_capture()
 * @n: their number
 *
 * Return: a new string, one frame a line, to free(); NULL without memory.
 */
char *tio__backtrace_symbolise(void *const *frames, int n)
{
	size_t size = 0;
	char *out = NULL;
	FILE *f;
	int i;

	f = open_memstream(&out, &size);
	if (!f)
		return NULL;
	pthread_mutex_lock(&dwfl_lock);
	for (i = 0; i < n; i++)
		describe(f, i, frames[i]);
	pthread_mutex_unlock(&dwfl_lock);
	if (fclose(f)) {
		free(out);
		return NULL;
	}
	return out;
}

int tio_backtrace(int skip, char **out)
{
	void *frames[BT_MAX_FRAMES];
	int n;

	/* + 1: this function. */
	n = tio__backtrace_capture(frames, BT_MAX_FRAMES, 1 + (skip > 0 ? skip : 0));
	*out = tio__backtrace_symbolise(frames, n);
	return *out ? 0 : -1;
}
