// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Measuring a case: calibration, warm-up, samples, the reference loop
 * between cases, and a case run in processes of its own (the harness
 * re-executes itself).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

/*
 * --clock run: the time this thread waited, runnable, for a CPU (the
 * second field of /proc/thread-self/schedstat, ns) is taken off every
 * timed span. On a host shared with busier processes a 10 ms sample is
 * otherwise as long as the time slices others got meanwhile. -1: wall.
 */
static int runq_fd = -1;

/**
 * bench_clock_init() - the clock of host figures
 * @unit: the run's unit (run-queue wait is taken off ns only)
 * @clock: "auto", "run" or "wall"
 *
 * Return: 0, or -errno when "run" was asked for and schedstat is missing.
 */
int bench_clock_init(enum bench_unit unit, const char *clock)
{
	if (unit != BENCH_NS || !strcmp(clock, "wall"))
		return 0;
	runq_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	if (runq_fd < 0 && !strcmp(clock, "run"))
		return -errno;
	return 0;
}

/* Whether run-queue wait is taken off host figures. */
int bench_clock_run(void)
{
	return runq_fd >= 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
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
int bench_repeats_of(const struct bench_opts *o)
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
int bench_procs_of(const struct bench_opts *o)
{
	if (o->procs > 0)
		return o->procs;
	return o->fast || o->unit == BENCH_INSN ? 1 : BENCH_PROCS;
}

/* Sample length, in clock units: instructions in the icount VM. */
double bench_sample_target_of(const struct bench_opts *o)
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
void bench_reference_point(struct bench_header *h)
{
	int i;

	for (i = 0; i < BENCH_REF_PER_POINT; i++) {
		double w0 = runq_wait(), t0 = now();

		reference_loop(h->ref_iters);
		h->ref[h->ref_n++] = span_since(t0, w0) / (double)h->ref_iters;
	}
}

/* A result's fields that come from the case itself; -ENOMEM fails it. */
static int result_init(const struct bench_opts *o, const struct bench_case *c,
		       struct bench_result *res)
{
	memset(res, 0, sizeof(*res));
	res->suite = strdup(c->suite);
	res->name = strdup(c->name);
	res->unit = o->unit;
	res->ops_per_iter = c->ops > 0 ? c->ops : 1;
	res->bytes = c->bytes;
	res->ref = c->ref ? strdup(c->ref) : NULL;
	res->note = c->note;
	if (!res->suite || !res->name || (c->ref && !res->ref) ||
	    bench_goal_set(&res->goal, bench_target_of(c->suite, c->name), o->unit)) {
		res->status = BENCH_FAILED;
		snprintf(res->why, sizeof(res->why), "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Run case @c in this process. */
void bench_run_case(const struct bench_opts *o, const struct bench_case *c,
		     struct bench_result *res)
{
	double target, t = 0, ops = c->ops > 0 ? c->ops : 1;
	struct bench_run run = { .c = c, .fast = o->fast, .unit = o->unit };
	int repeats = bench_repeats_of(o), err = 0, i;
	uint64_t n = 1, m0, total;

	if (result_init(o, c, res))
		return;
	target = bench_sample_target_of(o);

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
static int run_worker(const struct bench_opts *o, const struct bench_case *c,
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
	snprintf(rep, sizeof(rep), "%d", bench_repeats_of(o));
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
	argv[argc++] = bench_clock_run() ? "run" : "wall";
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
void bench_proc_begin(const struct bench_opts *o, const struct bench_case *c,
		       struct bench_result *res)
{
	size_t np = (size_t)bench_procs_of(o), repeats = (size_t)bench_repeats_of(o);

	if (result_init(o, c, res))
		return;
	res->pmed = calloc(np, sizeof(*res->pmed));
	res->samples = calloc(np * repeats, sizeof(*res->samples));
	if (!res->pmed || !res->samples) {
		res->status = BENCH_FAILED;
		snprintf(res->why, sizeof(res->why), "out of memory");
	}
}

void bench_proc_round(const struct bench_opts *o, const struct bench_case *c,
		       struct bench_result *res)
{
	size_t repeats = (size_t)bench_repeats_of(o), cnt;
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

void bench_proc_end(struct bench_result *res)
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
