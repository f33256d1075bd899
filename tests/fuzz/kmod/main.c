// SPDX-License-Identifier: GPL-2.0
/*
 * tio_fuzz: libFuzzer entry points. An input is a program of 32-byte
 * instructions (kfuzz.h); the header byte of each names its thread (three
 * threads share one process), its file, whether it arms an interrupt, its
 * kind and its command, the rest is its tape. SUBMIT, ring and fork
 * instructions take the next 1..8 instructions as their records or as the
 * child's program. Per input: two files of /dev/tensorio are opened, the
 * program runs, then the oracles (oracle.c) check what it left behind,
 * and the threads' KCOV traces become libFuzzer's extra counters (kcov.c).
 *
 * The command list is the driver's (kmod/tio_cmds.h). Environment:
 *   TIO_FUZZ_SECTIONS  the module's code sections and sizes ("NAME SIZE")
 *   TIO_FUZZ_COVER     where to write every PC seen, at exit
 *   TIO_FUZZ_SUBMIT_MS bound on one io_uring_submit() (default 500)
 *   TIO_FUZZ_SLACK_MS  a fence's slack past its deadline (default 1000)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <tensorio/batch.h>

#include "kfuzz.h"
#include "tio_peers.h"

struct op g_ops[MAX_OPS];
unsigned int g_nops;

static uint64_t n_inputs, t_start;
_Atomic uint64_t g_prof[P_N][2];

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
unsigned int group_size(const uint8_t *insn);
void on_fault(int sig);

static void on_kick(int sig)
{
}

/* Every PC seen so far, for the line coverage: at exit and at a failure. */
void cover_dump(void)
{
	const char *cover = getenv("TIO_FUZZ_COVER");

	if (cover && !W.in_child)
		kcov_report(cover);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	on_fault(sig);		/* returns only for a fault outside touch() */
	cover_dump();
	abort();		/* libFuzzer saves the input */
}

/* ---- module parameters and debugfs switches the programs may turn ---- */

static const char *const knob_path[] = {
	"/sys/module/tensorio/parameters/fence_timeout_ms",
	"/sys/module/tensorio/parameters/max_buf_size",
	"/sys/module/tensorio/parameters/max_pinned",
	"/sys/module/tensorio/parameters/doorbell_poll_us",
	"/sys/module/tensorio/parameters/doorbell_poll_max_us",
	"/sys/kernel/debug/tensorio/timing",
	"/sys/kernel/debug/tensorio/commands",
};
#define NKNOBS		(sizeof(knob_path) / sizeof(knob_path[0]))
#define NRESTORE	6	/* all but "commands": restored after each input */
static char knob_orig[NRESTORE][32];

static void write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	/* Refused values are part of the test: the result does not matter. */
	if (write(fd, s, strlen(s)) < 0)
		errno = 0;
	close(fd);
}

static void knobs_init(void)
{
	unsigned int i;

	for (i = 0; i < NRESTORE; i++) {
		int fd = open(knob_path[i], O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, knob_orig[i], sizeof(knob_orig[i]) - 1) : -1;

		knob_orig[i][n > 0 ? n : 0] = 0;
		if (fd >= 0)
			close(fd);
	}
	W.module_bound_ms = atoi(knob_orig[0]) ?: 10000;
	W.max_buf = strtoull(knob_orig[1], NULL, 0) ?: 1 << 20;
}

void set_knob(struct worker *k)
{
	static const unsigned int refused_ms[] = { 0, TIO_FENCE_TIMEOUT_MAX_MS + 1, ~0U };
	unsigned int i = t_rnd(&k->t, NKNOBS);
	char v[32];

	switch (i) {
	case 0:		/* within the bound the fence oracle assumes, or refused */
		snprintf(v, sizeof(v), "%u", t_one_in(&k->t, 3) ?
			 refused_ms[t_rnd(&k->t, 3)] :
			 1 + (unsigned int)t_rnd(&k->t, W.module_bound_ms));
		break;
	case 1: case 2:
		snprintf(v, sizeof(v), "%" PRIu64, t_one_in(&k->t, 2) ? t_rnd(&k->t, 3) * PAGE :
			 t_rnd(&k->t, 1 << 24));
		break;
	case 3: case 4:	/* doorbell poll periods, us: 1..1 s, or refused */
		snprintf(v, sizeof(v), "%u", t_one_in(&k->t, 4) ?
			 (unsigned int)t_rnd(&k->t, 2) * 1000001 :
			 1 + (unsigned int)t_rnd(&k->t, 2000));
		break;
	default:
		snprintf(v, sizeof(v), "%u", (unsigned int)t_rnd(&k->t, 2));
		break;
	}
	S->knobs_dirty = 1;
	write_str(knob_path[i], v);
}

void restore_knobs(void)
{
	unsigned int i;

	if (!S->knobs_dirty)
		return;
	for (i = 0; i < NRESTORE; i++)
		write_str(knob_path[i], knob_orig[i]);
	S->knobs_dirty = 0;
}

/* ---- set-up ---- */

static int setup_memory(void)
{
	size_t len = PER_THREAD * NTHREADS;
	int memfd = memfd_create("tio-fuzz", MFD_CLOEXEC), f, i;

	if (memfd < 0 || ftruncate(memfd, len))
		return -1;
	W.rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	W.ro = mmap(NULL, len, PROT_READ, MAP_SHARED, memfd, 0);
	/* Inaccessible, but reserved: later mappings never reuse it. */
	W.hole = mmap(NULL, 16 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	close(memfd);
	if (W.rw == MAP_FAILED || W.ro == MAP_FAILED || W.hole == MAP_FAILED)
		return -1;
	W.rw_end = W.rw + len;
	for (i = 0; i < NTHREADS; i++) {
		struct worker *k = &workers[i];

		k->scratch = W.rw + i * PER_THREAD;
		k->scratch_ro = W.ro + i * PER_THREAD;
		k->pin = k->scratch + SCRATCH;
		k->guard = k->pin + PINAREA;
		mprotect(k->guard, PAGE, PROT_NONE);
	}
	f = open("/tmp/tio-fuzz-file", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (f >= 0 && !ftruncate(f, PAGE)) {
		W.filemap = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
		if (W.filemap == MAP_FAILED)
			W.filemap = NULL;
	}
	W.junk[W.njunk++] = f;
	return 0;
}

static void add_junk(int fd)
{
	if (fd >= 0 && W.njunk < NJUNK)
		W.junk[W.njunk++] = fd;
}

static void setup_junk(void)
{
	int p[2];

	add_junk(open("/dev/null", O_RDWR | O_CLOEXEC));
	if (!pipe2(p, O_CLOEXEC)) {
		add_junk(p[0]);
		add_junk(p[1]);
	}
	add_junk(eventfd(0, EFD_CLOEXEC));
	add_junk(memfd_create("tio-junk", MFD_CLOEXEC));
	add_junk(tio_udmabuf(4 * PAGE));
	add_junk(tio_heap_dmabuf(2 * PAGE));
	add_junk(tio_vgem_dmabuf(2));
	W.swtl = tio_sw_sync_timeline();
	if (W.swtl >= 0) {
		add_junk(tio_sw_sync_fence(W.swtl, 1));	  /* signals soon */
		add_junk(tio_sw_sync_fence(W.swtl, 1u << 30)); /* never */
	}
}

/*
 * The driver's own command rows (kmod/tio_cmds.h): a command added there
 * is fuzzed without a second list to update, and one the generator has no
 * payload for stops the fuzzer at its start (gen_knows()).
 */
enum {
	KF_NB_INLINE = 0, KF_NB_PUNT = 0, KF_NB_WAIT = TIO_COMMAND_WAITS,
	KF_KIND_TABLE = 0, KF_KIND_HOT = 0, KF_KIND_BATCH = TIO_COMMAND_RUNS_RECORDS,
};
#define TIO_CMD(NAME, fn, payload, nb, kind)				\
	{ TIO_IOC_##NAME, #NAME, KF_NB_##nb | KF_KIND_##kind |		\
	  (_IOC_DIR(TIO_IOC_##NAME) & _IOC_READ ? TIO_COMMAND_WRITES_BACK : 0) },
static const struct op kmod_ops[] = {
#include "tio_cmds.h"
};

static int load_ops(void)
{
	unsigned int i;

	_Static_assert(sizeof(kmod_ops) / sizeof(kmod_ops[0]) <= MAX_OPS, "MAX_OPS");
	for (i = 0; i < sizeof(kmod_ops) / sizeof(kmod_ops[0]); i++) {
		if (!gen_knows(kmod_ops[i].cmd)) {
			fprintf(stderr, "# fuzz: no payload generator for %s (kmod/tio_cmds.h)\n",
				kmod_ops[i].name);
			return -1;
		}
		g_ops[g_nops++] = kmod_ops[i];
	}
	return 0;
}

static void report(void)
{
	double s = (now_ns() - t_start) / 1e9;

	if (W.in_child)
		return;
	prog_finish();

	fprintf(stderr, "# fuzz: %" PRIu64 " inputs in %.0f s (%.0f/s), %" PRIu64
		" module PCs reached\n", n_inputs, s, n_inputs / (s > 0 ? s : 1), kcov_pcs());
	cover_dump();
	if (getenv("TIO_FUZZ_PROFILE")) {
		static const char *const names[P_N] = {
			"ioctl", "uring", "submit", "ring", "mmap", "fd", "file", "fork",
			"time", "open", "kids", "fences", "close", "drain", "after", "kcov",
			"check", "program", "libfuzzer", "fdcheck",
		};
		for (int i = 0; i < P_N; i++)
			fprintf(stderr, "# fuzz: profile %-7s %9" PRIu64 " calls %9.3f s %8.1f us/call\n",
				names[i], g_prof[i][1], g_prof[i][0] / 1e9,
				g_prof[i][1] ? g_prof[i][0] / 1e3 / g_prof[i][1] : 0.0);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER };
	const char *e;
	pthread_mutexattr_t ma;
	int i;

	if ((e = getenv("TIO_FUZZ_SUBMIT_MS")))
		g_submit_bound_ns = strtoull(e, NULL, 0) * 1000000ULL;
	if ((e = getenv("TIO_FUZZ_SLACK_MS")))
		g_fence_slack_ns = strtoull(e, NULL, 0) * 1000000ULL;
	g_trace = getenv("TIO_FUZZ_TRACE");
	g_shared = getenv("TIO_FUZZ_SHARED");
	if ((e = getenv("TIO_FUZZ_CHECK_EVERY")))
		g_check_every = strtoul(e, NULL, 0) ?: 1;
	/* Ours before libFuzzer's: a fault in touch() is expected. */
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_kick;	/* no SA_RESTART: waits return -EINTR */
	sigaction(SIGKICK, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (load_ops())
		exit(1);
	kcov_sections_init(getenv("TIO_FUZZ_SECTIONS") ?: "kcov-sections");
	if (!g_nops || !g_kcov) {
		fprintf(stderr, "# fuzz: %s\n", g_nops ? "no KCOV trace of tensorio.ko" :
			"no commands in kmod/tio_cmds.h");
		exit(1);
	}
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED || setup_memory())
		exit(1);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	for (i = 0; i < MAXF; i++) {
		pthread_mutex_init(&S->ringlock[i], &ma);
		W.f[i].ringlock = &S->ringlock[i];
		W.f[i].fd = -1;
	}
	pthread_mutex_init(&W.lock, NULL);
	setup_junk();
	knobs_init();
	start_threads();
	oracle_selftest();
	oracle_init(&W);
	for (i = 1; i < *argc; i++)
		if (!strncmp((*argv)[i], "-artifact_prefix=", 17))
			snprintf(g_artifacts, sizeof(g_artifacts), "%s", (*argv)[i] + 17);
	t_start = now_ns();
	atexit(report);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t t_end;
	uint64_t t0 = now_ns();

	if (t_end)
		prof_add(P_GAP, t_end, t0);
	else
		oracle_rebase();
	prog_run(data, size);
	prof_add(P_PROG, t0, t_end = now_ns());
	n_inputs++;
	return 0;
}

/* ---- instruction-aware mutation ---- */

static uint64_t mrand(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	uint64_t s = seed;
	size_t n = size / INSN, cap = max / INSN, i, j;
	uint8_t tmp[INSN];

	if (cap > MAX_INSNS)
		cap = MAX_INSNS;
	if (!n) {
		for (i = 0; i < INSN; i++)
			data[i] = mrand(&s);
		return INSN;
	}
	i = mrand(&s) % n;
	switch (mrand(&s) % 8) {
	case 3:		/* a new instruction, random or a copy */
		if (n >= cap)
			break;
		memmove(data + (i + 1) * INSN, data + i * INSN, (n - i) * INSN);
		j = mrand(&s) % (n + 1);
		if (mrand(&s) & 1)
			for (j = 0; j < INSN; j++)
				data[i * INSN + j] = mrand(&s);
		else
			memcpy(data + i * INSN, data + (j % n) * INSN, INSN);
		return (n + 1) * INSN;
	case 4:		/* drop one */
		if (n < 2)
			break;
		memmove(data + i * INSN, data + (i + 1) * INSN, (n - i - 1) * INSN);
		return (n - 1) * INSN;
	case 5:		/* swap two */
		j = mrand(&s) % n;
		memcpy(tmp, data + i * INSN, INSN);
		memcpy(data + i * INSN, data + j * INSN, INSN);
		memcpy(data + j * INSN, tmp, INSN);
		return n * INSN;
	case 6:		/* libFuzzer's own mutations, over the whole program */
		n = LLVMFuzzerMutate(data, size, cap * INSN) / INSN;
		return (n ? n : 1) * INSN;
	}
	/* libFuzzer's mutations inside one instruction */
	LLVMFuzzerMutate(data + i * INSN, INSN, INSN);
	return n * INSN;
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2,
				 size_t s2, uint8_t *out, size_t max, unsigned int seed)
{
	uint64_t s = seed;
	size_t n1 = s1 / INSN, n2 = s2 / INSN, cap = max / INSN, a, b;

	if (cap > MAX_INSNS)
		cap = MAX_INSNS;
	a = n1 ? mrand(&s) % (n1 + 1) : 0;
	b = n2 ? mrand(&s) % (n2 + 1) : 0;
	if (a > cap)
		a = cap;
	if (a + (n2 - b) > cap)
		b = n2 - (cap - a);
	memcpy(out, d1, a * INSN);
	memcpy(out + a * INSN, d2 + b * INSN, (n2 - b) * INSN);
	return (a + n2 - b) * INSN;
}
