// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tio-bench: run registered benchmark cases and report them.
 *
 *   tio-bench [--suite S[,S]] [--case GLOB[,GLOB]] [--size small|medium|large|all]
 *             [--fast] [--repeat N] [--procs N] [--unit auto|ns|insn]
 *             [--clock auto|run|wall] [--list] [--tap]
 *             [--json FILE] [--md FILE] [--plot DIR]
 *             [--save-baseline NAME] [--baseline NAME]
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#ifndef BENCH_COMMIT
#define BENCH_COMMIT "unknown"
#endif

struct opts {
	const char *suites;
	const char *glob;
	const char *size;
	const char *json, *md, *plot, *save, *baseline, *load;
	int fast, list, tap, repeat, procs;
	int worker;	/* run exactly --suite/--case, for a parent tio-bench */
	enum bench_unit unit;
};

/*
 * --clock run: the time this thread waited, runnable, for a CPU (the
 * second field of /proc/thread-self/schedstat, ns) is taken off every
 * timed span. On a host shared with busier processes a 10 ms sample is
 * otherwise as long as the time slices others got meanwhile. -1: wall.
 */
static int runq_fd = -1;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Is the guest clock counting instructions? tests/vm/run.sh -i says so. */
static int icount_mode(void)
{
	char buf[4096];
	FILE *f = fopen("/proc/cmdline", "r");
	int yes = 0;

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		yes = strstr(buf, "tio.icount=1") != NULL;
	fclose(f);
	return yes;
}

static void make_header(struct bench_header *h, enum bench_unit unit)
{
	char line[512], model[256] = "unknown cpu";
	const char *env;
	struct utsname u;
	time_t t = time(NULL);
	struct tm tm;
	FILE *f;
	int fd;

	memset(h, 0, sizeof(*h));
	h->unit = unit;
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && p) {
			snprintf(model, sizeof(model), "%s", p + 2);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	uname(&u);
	snprintf(h->machine, sizeof(h->machine), "%s, %s, %ld cpus", u.nodename,
		 model, sysconf(_SC_NPROCESSORS_ONLN));
	snprintf(h->kernel, sizeof(h->kernel), "%s %s %s", u.sysname, u.release,
		 u.machine);
	env = getenv("TIO_BACKEND");
	fd = open("/dev/tensorio", O_RDWR | O_CLOEXEC);
	if (env && *env)
		snprintf(h->backend, sizeof(h->backend), "%s (TIO_BACKEND)", env);
	else
		snprintf(h->backend, sizeof(h->backend), "%s", fd >= 0 ?
			 "kernel (/dev/tensorio)" : "user (no /dev/tensorio)");
	if (fd >= 0)
		close(fd);
#ifdef __clang__
	snprintf(h->compiler, sizeof(h->compiler), "clang %s", __clang_version__);
#else
	snprintf(h->compiler, sizeof(h->compiler), "gcc %s", __VERSION__);
#endif
	env = getenv("TIO_COMMIT");
	snprintf(h->commit, sizeof(h->commit), "%s", env && *env ? env : BENCH_COMMIT);
	gmtime_r(&t, &tm);
	strftime(h->date, sizeof(h->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (unit == BENCH_INSN)
		snprintf(h->mode, sizeof(h->mode), "QEMU TCG -icount shift=0 "
			 "(1 clock ns = 1 guest instruction)");
	else if (icount_mode())
		snprintf(h->mode, sizeof(h->mode), "icount guest, forced ns");
	else
		snprintf(h->mode, sizeof(h->mode), "%s", runq_fd >= 0 ?
			 "wall clock less run-queue wait" : "wall clock");
}

static int suite_selected(const struct opts *o, const char *suite)
{
	const char *p = o->suites;
	size_t l = strlen(suite);

	if (!p || !*p || !strcmp(p, "all"))
		return 1;
	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == l && !strncmp(p, suite, l))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

/* Whether case @c's name (or suite/name) matches one of @globs' comma-separated globs. */
static int glob_selected(const char *globs, const struct bench_case *c)
{
	char full[256], g[256];
	const char *p = globs;
	size_t n;

	snprintf(full, sizeof(full), "%s/%s", c->suite, c->name);
	while (*p) {
		n = strcspn(p, ",");
		snprintf(g, sizeof(g), "%.*s", (int)n, p);
		if (!fnmatch(g, c->name, 0) || !fnmatch(g, full, 0))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

static int selected(const struct opts *o, const struct bench_case *c)
{

	if (!suite_selected(o, c->suite))
		return 0;
	if (o->size && strcmp(o->size, "all") && c->size &&
	    strcmp(o->size, c->size))
		return 0;
	if (!o->glob)
		return 1;
	if (o->worker)
		return !strcmp(o->glob, c->name);
	return glob_selected(o->glob, c);
}

static double runq_wait(void)
{
	char buf[128];
	unsigned long long run, wait;
	ssize_t r;

	if (runq_fd < 0)
		return 0;
	r = pread(runq_fd, buf, sizeof(buf) - 1, 0);
	if (r <= 0)
		return 0;
	buf[r] = 0;
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return 0;
	return (double)wait;
}

/* A span from @t0, @w0 (now(), runq_wait() at its start) to now. */
static double span_since(double t0, double w0)
{
	double t = now() - t0, w = runq_wait() - w0;

	return w > 0 && w < t ? t - w : t;
}

static double timed(const struct bench_case *c, struct bench_run *run,
		    uint64_t n, int *err)
{
	double t0, w0, t;

	run->manual_ns = -1;
	w0 = runq_wait();
	t0 = now();
	*err = c->run(run, n);
	t = span_since(t0, w0);
	return run->manual_ns >= 0 ? run->manual_ns : t;
}

/*
 * On a terminal, a case whose samples take a while shows which sample it
 * is at (on stderr, erased when the case ends): i < 0 erases.
 */
static void progress(const struct bench_case *c, int i, int repeats, double sample_ns)
{
	static int shown;

	if (!isatty(STDERR_FILENO))
		return;
	if (i < 0) {
		if (shown)
			fputs("\r\033[K", stderr);
		shown = 0;
		return;
	}
	if (!shown && sample_ns < 2e8)	/* under 0.2 s a sample: no need */
		return;
	fprintf(stderr, "\r\033[K  %s/%s: sample %d of %d", c->suite, c->name,
		i + 1, repeats);
	shown = 1;
}

/*
 * Samples per case: --repeat, else BENCH_FAST_REPEATS (10) for --fast,
 * 9 instruction counts, 15. --fast takes enough for a baseline comparison
 * to judge (BENCH_MIN_SAMPLES), each sample shorter instead.
 */
static int repeats_of(const struct opts *o)
{
	if (o->repeat > 0)
		return o->repeat;
	return o->fast ? BENCH_FAST_REPEATS : (o->unit == BENCH_INSN ? 9 : 15);
}

/*
 * Processes per case: --procs, else BENCH_PROCS for a full run in ns; one
 * for --fast (a smoke test) and for instruction counts (where a process's
 * placement changes nothing counted).
 */
static int procs_of(const struct opts *o)
{
	if (o->procs > 0)
		return o->procs;
	return o->fast || o->unit == BENCH_INSN ? 1 : BENCH_PROCS;
}

/* Sample length, in clock units: instructions in the icount VM. */
static double sample_target_of(const struct opts *o)
{
	if (o->fast)
		return BENCH_FAST_SAMPLE;
	return o->unit == BENCH_INSN ? 3e6 : 1e7;
}

/* The reference workload: fixed work, a chain the compiler cannot fold. */
static void __attribute__((noinline)) reference_loop(uint64_t iters)
{
	uint64_t x = 1, i;

	for (i = 0; i < iters; i++) {
		x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
		bench_launder(x);
	}
	bench_keep(x);
}

/* BENCH_REF_PER_POINT reference samples into @h (room was made for them). */
static void reference_point(struct bench_header *h)
{
	int i;

	for (i = 0; i < BENCH_REF_PER_POINT; i++) {
		double w0 = runq_wait(), t0 = now();

		reference_loop(h->ref_iters);
		h->ref[h->ref_n++] = span_since(t0, w0) / (double)h->ref_iters;
	}
}

/* A result's fields that come from the case itself; -ENOMEM fails it. */
static int result_init(const struct opts *o, const struct bench_case *c,
		       struct bench_result *res)
{
	memset(res, 0, sizeof(*res));
	res->suite = strdup(c->suite);
	res->name = strdup(c->name);
	res->unit = o->unit;
	res->ops_per_iter = c->ops > 0 ? c->ops : 1;
	res->bytes = c->bytes;
	res->ref = c->ref ? strdup(c->ref) : NULL;
	res->target = c->target;
	res->target_ratio = c->target_ratio;
	res->note = c->note;
	if (!res->suite || !res->name || (c->ref && !res->ref)) {
		res->status = BENCH_FAILED;
		snprintf(res->why, sizeof(res->why), "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Run case @c in this process. */
static void run_case(const struct opts *o, const struct bench_case *c,
		     struct bench_result *res)
{
	double target, t = 0, ops = c->ops > 0 ? c->ops : 1;
	struct bench_run run = { .c = c, .fast = o->fast, .unit = o->unit };
	int repeats = repeats_of(o), err = 0, i;
	uint64_t n = 1, m0, total;

	if (result_init(o, c, res))
		return;
	target = sample_target_of(o);

	err = c->setup ? c->setup(&run) : 0;
	if (err == BENCH_SKIP) {
		res->status = BENCH_SKIPPED;
		memcpy(res->why, run.why, sizeof(res->why));
		return;
	}
	if (err)
		goto failed;
	if (run.bytes)
		res->bytes = run.bytes;
	/* Calibrate: grow n until a call lasts about the target. */
	for (;;) {
		t = timed(c, &run, n, &err);
		if (err)
			goto failed;
		if (t >= target / 2 || n >= (1ULL << 40))
			break;
		if (t < target / 1000)
			n *= 100;
		else
			n = (uint64_t)((double)n * target / t) + 1;
	}
	if (t > target && n > 1)
		n = (uint64_t)((double)n * target / t);
	if (!n)
		n = 1;
	/* Warm-up at the final count. */
	if (!o->fast) {
		timed(c, &run, n, &err);
		if (err)
			goto failed;
	}
	res->samples = calloc((size_t)repeats, sizeof(double));
	if (!res->samples) {
		err = bench_fail(&run, ENOMEM, "samples");
		goto failed;
	}
	m0 = bench_malloc_count();
	for (i = 0; i < repeats; i++) {
		progress(c, i, repeats, t);
		t = timed(c, &run, n, &err);
		if (err)
			goto failed;
		res->samples[i] = t / ((double)n * ops);
	}
	progress(c, -1, 0, 0);
	total = bench_malloc_count() - m0;
	res->iters = n;
	res->allocs_per_op = (double)total / ((double)n * ops * repeats);
	{
		/* Stats sort their input: keep samples in run order. */
		double *sorted = malloc((size_t)repeats * sizeof(double));

		if (!sorted) {
			err = bench_fail(&run, ENOMEM, "samples");
			goto failed;
		}
		memcpy(sorted, res->samples, (size_t)repeats * sizeof(double));
		bench_stats_compute(sorted, (size_t)repeats, &res->st);
		free(sorted);
	}
	res->pmed = malloc(sizeof(*res->pmed));
	if (!res->pmed) {
		err = bench_fail(&run, ENOMEM, "samples");
		goto failed;
	}
	res->pmed[0] = res->st.median;
	res->np = 1;
	res->status = BENCH_OK;
	if (c->teardown)
		c->teardown(&run);
	return;
failed:
	res->status = BENCH_FAILED;
	if (run.why[0])
		memcpy(res->why, run.why, sizeof(res->why));
	else
		snprintf(res->why, sizeof(res->why), "error %d (%s)", err,
			 strerror(err < 0 ? -err : err));
	if (c->teardown)
		c->teardown(&run);
}

/*
 * One process of case @c: this program again (/proc/self/exe), told to
 * run that case alone with this run's settings and to write its result
 * to an unlinked temporary file; its standard output goes nowhere. A fresh exec,
 * not a fork: the new process gets its own stack, heap and mappings.
 */
static int run_worker(const struct opts *o, const struct bench_case *c,
		      struct bench_result **wr, size_t *wn, char *why, size_t len)
{
	const char *dir = getenv("TMPDIR");
	char tmp[4096], rep[16], exe[4096], *argv[18];
	struct bench_header wh;
	int fd, st = 0, argc = 0, err;
	ssize_t len_exe;
	pid_t pid;

	snprintf(tmp, sizeof(tmp), "%s/tio-bench-XXXXXX.json",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemps(tmp, 5);
	if (fd < 0) {
		err = -errno;
		snprintf(why, len, "a result file for its process in %s: %s",
			 dir && *dir ? dir : "/tmp", strerror(-err));
		return err;
	}
	/*
	 * Unlinked at once: an interrupted run leaves nothing behind. The
	 * worker writes it as /dev/fd/N (inherited), this process reads it
	 * back as /proc/self/fd/N.
	 */
	unlink(tmp);
	snprintf(tmp, sizeof(tmp), "/dev/fd/%d", fd);
	snprintf(rep, sizeof(rep), "%d", repeats_of(o));
	argv[argc++] = "tio-bench";
	argv[argc++] = "--worker";
	argv[argc++] = "--suite";
	argv[argc++] = (char *)c->suite;
	argv[argc++] = "--case";
	argv[argc++] = (char *)c->name;
	argv[argc++] = "--repeat";
	argv[argc++] = rep;
	argv[argc++] = "--unit";
	argv[argc++] = o->unit == BENCH_INSN ? "insn" : "ns";
	argv[argc++] = "--clock";
	argv[argc++] = runq_fd >= 0 ? "run" : "wall";
	if (o->fast)
		argv[argc++] = "--fast";
	argv[argc++] = "--json";
	argv[argc++] = tmp;
	argv[argc] = NULL;
	/* The path, not /proc/self/exe itself: under valgrind that is valgrind. */
	len_exe = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len_exe > 0)
		exe[len_exe] = 0;
	else
		snprintf(exe, sizeof(exe), "/proc/self/exe");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(fd);
		snprintf(why, len, "fork for its process: %s", strerror(-err));
		return err;
	}
	if (!pid) {
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		execv(exe, argv);
		fprintf(stderr, "tio-bench: exec %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	snprintf(tmp, sizeof(tmp), "/proc/self/fd/%d", fd);
	err = bench_load_json(tmp, &wh, wr, wn);
	close(fd);
	if (!err) {
		bench_header_free(&wh);
		if (*wn == 1)
			return 0;
		bench_results_free(*wr, *wn);
		err = -EPROTO;
	}
	snprintf(why, len, "its process %s %d and left no result",
		 WIFSIGNALED(st) ? "was killed by signal" : "exited with status",
		 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return err;
}

/*
 * A case in several processes is measured in rounds: round @p runs
 * process @p of every case, so that a case's processes lie apart in time
 * as well as in memory. proc_begin() makes room, proc_round() runs one
 * process and adds its samples and median, proc_end() summarises.
 */
static void proc_begin(const struct opts *o, const struct bench_case *c,
		       struct bench_result *res)
{
	size_t np = (size_t)procs_of(o), repeats = (size_t)repeats_of(o);

	if (result_init(o, c, res))
		return;
	res->pmed = calloc(np, sizeof(*res->pmed));
	res->samples = calloc(np * repeats, sizeof(*res->samples));
	if (!res->pmed || !res->samples) {
		res->status = BENCH_FAILED;
		snprintf(res->why, sizeof(res->why), "out of memory");
	}
}

static void proc_round(const struct opts *o, const struct bench_case *c,
		       struct bench_result *res)
{
	size_t repeats = (size_t)repeats_of(o), cnt;
	struct bench_result *wr;
	size_t wn;

	if (res->status != BENCH_OK)
		return;
	if (run_worker(o, c, &wr, &wn, res->why, sizeof(res->why))) {
		res->status = BENCH_FAILED;
		return;
	}
	if (wr->status != BENCH_OK) {
		res->status = wr->status;
		memcpy(res->why, wr->why, sizeof(res->why));
		bench_results_free(wr, wn);
		return;
	}
	cnt = wr->st.n < repeats ? wr->st.n : repeats;
	memcpy(res->samples + res->st.n, wr->samples, cnt * sizeof(double));
	res->st.n += cnt;
	res->pmed[res->np] = wr->st.median;
	/* The mean over processes, summed here and divided at the end. */
	res->allocs_per_op += wr->allocs_per_op;
	if (!res->np) {
		res->iters = wr->iters;
		if (wr->bytes)
			res->bytes = wr->bytes;
	}
	res->np++;
	bench_results_free(wr, wn);
}

static void proc_end(struct bench_result *res)
{
	double *sorted;

	if (res->status != BENCH_OK)
		return;
	res->allocs_per_op /= (double)(res->np ? res->np : 1);
	sorted = malloc((res->st.n ? res->st.n : 1) * sizeof(*sorted));
	if (!sorted) {
		res->status = BENCH_FAILED;
		snprintf(res->why, sizeof(res->why), "out of memory");
		return;
	}
	memcpy(sorted, res->samples, res->st.n * sizeof(*sorted));
	bench_stats_compute(sorted, res->st.n, &res->st);
	free(sorted);
}

/* The ratio of result @i to its suite's reference row, once both exist. */
static void set_ratio(struct bench_result *res, size_t i)
{
	size_t j, k;

	for (k = 0; k <= i; k++) {
		if (!res[k].ref || res[k].status != BENCH_OK || res[k].ratio > 0)
			continue;
		for (j = 0; j <= i; j++)
			if (res[j].status == BENCH_OK &&
			    !strcmp(res[j].suite, res[k].suite) &&
			    !strcmp(res[j].name, res[k].ref) && res[j].st.median > 0)
				res[k].ratio = res[k].st.median / res[j].st.median;
	}
}

/* The case column's width: the longest selected name of the suite. */
static int name_width(const struct opts *o, const char *suite)
{
	const struct bench_case *c;
	size_t w = 4;

	for (c = bench_cases(); c; c = c->next)
		if (selected(o, c) && !strcmp(c->suite, suite) && strlen(c->name) > w)
			w = strlen(c->name);
	return (int)w;
}

/* mkdir -p of @path's directory part (the file itself is not made). */
static int make_parent(const char *path)
{
	char dir[4096], *p;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	p = strrchr(dir, '/');
	if (!p || p == dir)
		return 0;
	*p = 0;
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0777) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0777) && errno != EEXIST)
		return -errno;
	return 0;
}

/* An output file: its directory must exist (or be made) and be writable. */
static int check_output(const char *opt, const char *path, int make_dir)
{
	char dir[4096], *p;
	int err = 0;

	if (!strcmp(path, "-"))
		return 0;
	if (make_dir)
		err = make_parent(path);
	snprintf(dir, sizeof(dir), "%s", path);
	p = strrchr(dir, '/');
	if (!p)
		snprintf(dir, sizeof(dir), ".");
	else if (p == dir)
		dir[1] = 0;
	else
		*p = 0;
	if (!err && access(dir, W_OK))
		err = -errno;
	if (!err && !access(path, F_OK) && access(path, W_OK))
		err = -errno;
	if (err)
		fprintf(stderr, "tio-bench: %s %s: %s%s: %s\n", opt, path,
			make_dir ? "cannot create or write " : "cannot write in ",
			dir, strerror(-err));
	return err;
}

/* Every path the run will use, checked before the first case runs. */
static int check_paths(const struct opts *o)
{
	char path[4096], why[256];

	if ((o->json && check_output("--json", o->json, 0)) ||
	    (o->md && check_output("--md", o->md, 0)))
		return -1;
	if (o->plot) {
		snprintf(path, sizeof(path), "%s/x", o->plot);
		if (check_output("--plot", path, 1))
			return -1;
	}
	if (o->save) {
		if (bench_baseline_path(o->save, path, sizeof(path))) {
			fprintf(stderr, "tio-bench: --save-baseline %s: name too long\n", o->save);
			return -1;
		}
		if (check_output("--save-baseline", path, 1))
			return -1;
	}
	if (o->baseline) {
		if (bench_baseline_path(o->baseline, path, sizeof(path))) {
			fprintf(stderr, "tio-bench: --baseline %s: name too long\n", o->baseline);
			return -1;
		}
		if (bench_baseline_check(path, why, sizeof(why))) {
			fprintf(stderr, "tio-bench: --baseline %s: %s: %s\n", o->baseline,
				path, why);
			return -1;
		}
	}
	return 0;
}

/* Result @i's row (under its suite's head when it is the first) and TAP line. */
static void report_row(const struct opts *o, struct bench_result *res, size_t i)
{
	const struct bench_result *x = &res[i];
	int w = name_width(o, x->suite);

	if (!i || strcmp(res[i - 1].suite, x->suite))
		bench_print_table_head(stdout, x->suite, o->unit, w);
	set_ratio(res, i);
	bench_print_row(stdout, x, w);
	if (!o->tap)
		return;
	if (x->status == BENCH_OK)
		printf("ok %zu - %s/%s\n", i + 1, x->suite, x->name);
	else if (x->status == BENCH_SKIPPED)
		printf("ok %zu - %s/%s # SKIP %s\n", i + 1, x->suite, x->name, x->why);
	else
		printf("not ok %zu - %s/%s: %s\n", i + 1, x->suite, x->name, x->why);
	fflush(stdout);
}

static void usage(FILE *f)
{
	fputs("usage: tio-bench [options]\n"
	      "  --suite S[,S]      suites to run (default: all)\n"
	      "  --case, --op GLOB[,GLOB]  cases whose name or suite/name matches one\n"
	      "  --size small|medium|large|all  (default all)\n"
	      "  --fast             10 samples of 0.1 ms (0.1 M insn) per case: short,\n"
	      "                     still enough for --baseline to judge\n"
	      "  --repeat N         samples per case and process (default 15, 9 in the\n"
	      "                     icount VM; fewer than 5 a side are not judged)\n"
	      "  --procs N          run each case in N processes of its own, one after\n"
	      "                     the other (default 3 for a full run in ns, 1 for\n"
	      "                     --fast and insn); keeps each process's median\n"
	      "  --unit auto|ns|insn  clock unit (auto: insn under tio.icount=1)\n"
	      "  --clock auto|run|wall  run (auto where the kernel has schedstat):\n"
	      "                     ns less the time the thread waited for a CPU\n"
	      "  --list             list the cases and exit\n"
	      "  --tap              a TAP line per case\n"
	      "  --json FILE, --md FILE, --plot DIR   write results\n"
	      "  --load FILE        report a saved JSON run instead of running\n"
	      "  --save-baseline NAME, --baseline NAME\n"
	      "                     save / compare: warns when the 95% interval of a\n"
	      "                     median's change, less the reference loop's own\n"
	      "                     variation, lies above +5%; fails above +10% (exit 1).\n"
	      "                     With several processes a side the interval is over\n"
	      "                     process medians (Welch t), and every process of this\n"
	      "                     run must also be that far beyond the baseline's.\n"
	      "                     This run's figures are first divided by the scale,\n"
	      "                     the ratio of the two runs' reference-loop medians\n"
	      "                     (machine drift; applied when beyond that variation)\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "suite", required_argument, NULL, 's' },
		{ "case", required_argument, NULL, 'c' },
		{ "op", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 'z' },
		{ "fast", no_argument, NULL, 'f' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "procs", required_argument, NULL, 'P' },
		{ "worker", no_argument, NULL, 'W' },
		{ "clock", required_argument, NULL, 'C' },
		{ "unit", required_argument, NULL, 'u' },
		{ "list", no_argument, NULL, 'l' },
		{ "tap", no_argument, NULL, 't' },
		{ "json", required_argument, NULL, 'j' },
		{ "md", required_argument, NULL, 'm' },
		{ "plot", required_argument, NULL, 'p' },
		{ "save-baseline", required_argument, NULL, 'S' },
		{ "baseline", required_argument, NULL, 'B' },
		{ "load", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .unit = BENCH_NS };
	const char *unit = "auto", *clock = "auto";
	struct bench_result *res;
	struct bench_header h;
	struct bench_case *c;
	size_t n = 0, i, j;
	int ch, rc = 0, err, round, rounds;
	char path[4096];

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.suites = optarg; break;
		case 'c': o.glob = optarg; break;
		case 'z': o.size = optarg; break;
		case 'f': o.fast = 1; break;
		case 'r': o.repeat = atoi(optarg); break;
		case 'P':
			o.procs = atoi(optarg);
			if (o.procs < 1 || o.procs > BENCH_PROCS_MAX) {
				fprintf(stderr, "tio-bench: --procs %s: 1 to %d\n",
					optarg, BENCH_PROCS_MAX);
				return 2;
			}
			break;
		case 'W': o.worker = 1; break;
		case 'C': clock = optarg; break;
		case 'u': unit = optarg; break;
		case 'l': o.list = 1; break;
		case 't': o.tap = 1; break;
		case 'j': o.json = optarg; break;
		case 'm': o.md = optarg; break;
		case 'p': o.plot = optarg; break;
		case 'S': o.save = optarg; break;
		case 'B': o.baseline = optarg; break;
		case 'L': o.load = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || (o.size && strcmp(o.size, "small") &&
	    strcmp(o.size, "medium") && strcmp(o.size, "large") &&
	    strcmp(o.size, "all")) || o.repeat < 0) {
		usage(stderr);
		return 2;
	}
	if (o.worker) {
		/* One case, in this process, for a parent tio-bench. */
		if (!o.suites || !o.glob || !o.json) {
			fputs("tio-bench: --worker needs --suite, --case and --json\n",
			      stderr);
			return 2;
		}
		o.procs = 1;
	}
	if (!strcmp(unit, "insn"))
		o.unit = BENCH_INSN;
	else if (!strcmp(unit, "auto"))
		o.unit = icount_mode() ? BENCH_INSN : BENCH_NS;
	else if (strcmp(unit, "ns")) {
		usage(stderr);
		return 2;
	}

	if (strcmp(clock, "auto") && strcmp(clock, "run") && strcmp(clock, "wall")) {
		usage(stderr);
		return 2;
	}
	/* Run-queue wait is taken off host wall-clock figures only. */
	if (o.unit == BENCH_NS && strcmp(clock, "wall")) {
		runq_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
		if (runq_fd < 0 && !strcmp(clock, "run")) {
			fprintf(stderr, "tio-bench: --clock run: /proc/thread-self/schedstat: %s\n",
				strerror(errno));
			return 2;
		}
	}
	if (o.load) {
		err = bench_load_json(o.load, &h, &res, &n);
		if (err) {
			fprintf(stderr, "tio-bench: %s: %s\n", o.load,
				err == -EINVAL ? "not a tio-bench result" :
				strerror(-err));
			return 1;
		}
		bench_print_header(stdout, &h, "# ");
		goto report;
	}
	for (c = bench_cases(); c; c = c->next)
		if (selected(&o, c))
			n++;
	if (o.list) {
		for (c = bench_cases(); c; c = c->next)
			if (selected(&o, c))
				printf("%s/%-28s %-7s %s\n", c->suite, c->name,
				       c->size ? c->size : "-",
				       c->note ? c->note : "");
		return 0;
	}
	if (!n) {
		fprintf(stderr, "tio-bench: no case matches\n");
		return 2;
	}
	res = calloc(n, sizeof(*res));
	if (!res) {
		perror("tio-bench");
		return 1;
	}
	if (check_paths(&o))
		return 2;
	make_header(&h, o.unit);
	h.fast = o.fast;
	h.repeats = repeats_of(&o);
	h.procs = procs_of(&o);
	h.sample_target = sample_target_of(&o);
	h.ref_iters = BENCH_REF_ITERS;
	h.ref = calloc((n * (size_t)h.procs + 1) * BENCH_REF_PER_POINT, sizeof(*h.ref));
	if (!h.ref) {
		perror("tio-bench");
		return 1;
	}
	bench_print_header(stdout, &h, "# ");
	fflush(stdout);
	rounds = procs_of(&o);
	for (round = 0; round < rounds; round++) {
		if (rounds > 1) {
			printf("%s# round %d of %d: process %d of every case%s\n",
			       round ? "" : "\n", round + 1, rounds, round + 1,
			       round + 1 < rounds ? "" : " (rows as each case ends)");
			fflush(stdout);
		}
		i = 0;
		for (c = bench_cases(); c; c = c->next) {
			if (!selected(&o, c))
				continue;
			reference_point(&h);
			if (rounds == 1) {
				run_case(&o, c, &res[i]);
			} else {
				if (!round)
					proc_begin(&o, c, &res[i]);
				proc_round(&o, c, &res[i]);
			}
			if (round + 1 == rounds) {
				if (rounds > 1)
					proc_end(&res[i]);
				report_row(&o, res, i);
				if (res[i].status == BENCH_FAILED)
					rc = 1;
			}
			i++;
		}
	}
	reference_point(&h);
	putchar('\n');
	bench_print_reference(stdout, &h, "# ");
	if (o.tap)
		printf("1..%zu\n", n);
	/* A reference that ran after its rows: their ratios now. */
	for (i = 0; i < n; i++)
		set_ratio(res, i);
	goto written;
report:
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(res[j].suite, res[i].suite))
				break;
		if (j == i)
			bench_print_table(stdout, res, n, res[i].suite);
		if (res[i].status == BENCH_FAILED)
			rc = 1;
	}
written:
	if (o.json && (err = bench_write_json(o.json, &h, res, n))) {
		fprintf(stderr, "tio-bench: %s: %s\n", o.json, strerror(-err));
		rc = 1;
	}
	if (o.md && (err = bench_write_md(o.md, &h, res, n))) {
		fprintf(stderr, "tio-bench: %s: %s\n", o.md, strerror(-err));
		rc = 1;
	}
	if (o.plot && (err = bench_write_plots(o.plot, &h, res, n))) {
		fprintf(stderr, "tio-bench: plots in %s: %s\n", o.plot,
			err == -ENOENT ? "gnuplot not found" : strerror(-err));
		rc = 1;
	}
	if (o.save) {
		err = bench_baseline_path(o.save, path, sizeof(path));
		if (!err)
			err = bench_write_json(path, &h, res, n);
		if (err) {
			fprintf(stderr, "tio-bench: baseline %s: %s\n", o.save,
				strerror(-err));
			rc = 1;
		} else {
			printf("baseline saved: %s\n", path);
		}
	}
	if (o.baseline) {
		err = bench_baseline_path(o.baseline, path, sizeof(path));
		if (!err)
			err = bench_baseline_compare(path, &h, res, n, stdout);
		if (err < 0) {
			fprintf(stderr, "tio-bench: baseline %s: %s\n", path,
				strerror(-err));
			rc = 1;
		} else if (err == BENCH_FAIL) {
			printf("baseline: regression over %.0f%%: failing\n",
			       BENCH_FAIL_PCT);
			rc = 1;
		}
	}
	bench_results_free(res, n);
	bench_header_free(&h);
	return rc;
}
