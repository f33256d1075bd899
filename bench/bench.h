/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tio-bench: the benchmark harness.
 *
 * A case is registered by suite and name (BENCH_REGISTER in a constructor).
 * The harness calibrates an iteration count to a target sample time, warms
 * up, takes repeats (in each of several processes for a full run: the
 * harness re-executes itself) and reports min, median, mean, std and p99 of the
 * per-operation cost, allocations per operation (malloc is counted) and
 * throughput where a case moves bytes.
 *
 * The unit is ns/op on the host and guest instructions/op inside the VM
 * under QEMU's -icount shift=0, where CLOCK_MONOTONIC advances exactly one
 * nanosecond per guest instruction (see docs/benchmarks.md).
 */
#ifndef TIO_BENCH_H
#define TIO_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tensorio/dlpack.h>

/* setup() returns this (after filling run->why) when a case cannot run. */
#define BENCH_SKIP	1

enum bench_unit { BENCH_NS, BENCH_INSN };

struct bench_run;

/**
 * struct bench_case - one benchmark
 * @suite: suite name ("overhead", "ffi", ...)
 * @name: case name inside the suite, '/'-separated ("info/uring/b64")
 * @size: "small", "medium" or "large" (selected by --size), NULL for any
 * @ref: name of the case in the same suite the ratio column divides by
 * @ops: operations one iteration performs (a batch of 64 is 64), 0 = 1
 * @bytes: bytes one operation moves, for GB/s (0: no throughput)
 * @note: what one operation is, printed under the table
 * @setup: prepare @run->state; 0, BENCH_SKIP (reason in @run->why) or -errno
 * @run: perform @n iterations; 0 or -errno
 * @teardown: release @run->state (also after a failed run)
 * @arg: case parameter (a batch size, a byte count, ...)
 * @next: registry link
 */
struct bench_case {
	const char *suite;
	const char *name;
	const char *size;
	const char *ref;
	double ops;
	uint64_t bytes;
	const char *note;
	int (*setup)(struct bench_run *run);
	int (*run)(struct bench_run *run, uint64_t n);
	void (*teardown)(struct bench_run *run);
	uintptr_t arg;
	struct bench_case *next;
};

/**
 * struct bench_run - what a case sees while it runs
 * @c: the case
 * @state: the case's own state, set by setup
 * @fast: --fast was given (cases may shrink their working sets)
 * @unit: what the clock counts
 * @why: the reason when setup returns BENCH_SKIP, or an error message
 * @manual_ns: a run may measure its own time (e.g. fio's own report) and
 *	       store the elapsed clock units here; -1 means "time the call"
 * @bytes: setup may set the bytes one operation moves (overrides the case's)
 */
struct bench_run {
	const struct bench_case *c;
	void *state;
	int fast;
	enum bench_unit unit;
	char why[192];
	double manual_ns;
	uint64_t bytes;
};

/**
 * struct bench_stats - summary of per-operation costs over repeats
 * @n: number of samples
 * @min: smallest
 * @median: middle (mean of the two middle samples for even @n)
 * @mean: arithmetic mean
 * @std: sample standard deviation (n - 1), 0 for n < 2
 * @p99: 99th percentile, linear interpolation between closest ranks
 * @max: largest
 */
struct bench_stats {
	size_t n;
	double min, median, mean, std, p99, max;
};

enum bench_status { BENCH_OK, BENCH_SKIPPED, BENCH_FAILED };

/*
 * A target's verdict: the row has none (or did not run), met it, missed
 * it, or could not be judged (the row it is relative to did not run).
 */
enum bench_target_state { BENCH_T_NONE, BENCH_T_MET, BENCH_T_MISSED, BENCH_T_UNJUDGED };

/**
 * struct bench_target - one of the project's goals, for one case
 * @suite, @name: the case
 * @against: a case of the same suite the goal is relative to, NULL for
 *	     an absolute goal
 * @factor: the goal is: median <= @factor * median(@against) + @plus
 * @plus: in @unit
 * @unit: the unit of @plus; a goal with a @plus applies only to runs in
 *	  that unit, a pure ratio to runs in any
 * @why: what the goal means and where it comes from, in a few words
 */
struct bench_target {
	const char *suite;
	const char *name;
	const char *against;
	double factor;
	double plus;
	enum bench_unit unit;
	const char *why;
};

/**
 * struct bench_goal - a result's target (from the table, or a saved run)
 * @set: the result has one
 * @against: the row it is relative to (owned), NULL: absolute
 * @factor, @plus: as struct bench_target's, @plus in the result's unit
 * @why: as struct bench_target's (owned), NULL when unknown
 * @verdict: set by bench_targets_judge()
 * @limit: the median the row had to reach, once judged
 */
struct bench_goal {
	int set;
	char *against;
	double factor;
	double plus;
	char *why;
	enum bench_target_state verdict;
	double limit;
};

/**
 * struct bench_result - one case's outcome
 * @suite, @name: copied from the case (owned by the result)
 * @status: ok, skipped (@why says why) or failed (@why says what)
 * @unit: unit of every cost figure
 * @iters: iterations per sample
 * @ops_per_iter: operations per iteration
 * @st: statistics of cost per operation
 * @samples: per-repeat cost per operation (@st.n of them)
 * @allocs_per_op: malloc/calloc/realloc calls per operation
 * @bytes: bytes per operation (0: none)
 * @pmed: the median of each process's samples (owned; @np of them): the
 *	  case ran in @np processes of @st.n / @np samples each, and @samples
 *	  holds them in process order
 * @np: how many processes (1: the case ran in this process)
 * @ref: the reference case (owned), @ratio = median / reference median
 * @goal: its target, if the project has one for it (bench/targets.c)
 * @note: copied from the case
 */
struct bench_result {
	char *suite;
	char *name;
	enum bench_status status;
	char why[192];
	enum bench_unit unit;
	uint64_t iters;
	double ops_per_iter;
	struct bench_stats st;
	double *samples;
	double *pmed;
	size_t np;
	double allocs_per_op;
	uint64_t bytes;
	char *ref;
	double ratio;
	struct bench_goal goal;
	const char *note;
};

/**
 * struct bench_header - where and how a run was taken
 */
struct bench_header {
	char machine[256];
	char cpu[256];		/* the CPU's model name */
	int cpus;		/* CPUs online (0: unknown) */
	char kernel[256];
	char backend[128];
	char compiler[96];
	char commit[128];
	char date[32];
	char mode[96];
	enum bench_unit unit;
	int fast;		/* --fast: short samples */
	int repeats;		/* samples per case and process (0: the default) */
	int procs;		/* processes per case (0: unknown, an old file) */
	double sample_target;	/* clock units one sample aims at (0: unknown) */
	uint64_t ref_iters;	/* iterations of one reference sample */
	double *ref;		/* reference samples, clock units/iteration (owned) */
	size_t ref_n;		/* how many */
};

/*
 * The reference workload: a fixed loop of BENCH_REF_ITERS dependent
 * multiply-adds, timed BENCH_REF_PER_POINT times before every case and
 * after the last. A baseline comparison divides this run's figures by the
 * ratio of the two runs' reference medians, so that a machine that is
 * uniformly slower (load, clock, steal) does not read as a regression.
 */
#define BENCH_REF_ITERS		(1u << 18)
#define BENCH_REF_PER_POINT	3

/* --fast: this many samples per case (enough to judge), each this short. */
#define BENCH_FAST_REPEATS	10
#define BENCH_FAST_SAMPLE	1e5

/*
 * Processes per case: a full run on the host (ns) runs each case in this
 * many processes of its own (the harness re-executes itself), so that a
 * case whose speed depends on where one process put its stack, heap and
 * pages is seen at each of them; --fast and instruction counts, 1.
 */
#define BENCH_PROCS		3
#define BENCH_PROCS_MAX		64

/* A p99 means something from this many samples on. */
#define BENCH_P99_MIN_SAMPLES	100

/* Baseline verdicts, in increasing severity. */
enum bench_verdict { BENCH_SAME, BENCH_NEW, BENCH_WARN, BENCH_FAIL };

#define BENCH_WARN_PCT	5.0
#define BENCH_FAIL_PCT	10.0
/* Below this many samples a side, a change cannot be told from noise. */
#define BENCH_MIN_SAMPLES	5
#define BENCH_BOOTSTRAP		2000

/**
 * struct bench_cmp - a case against its baseline
 * @pct: change of the median in percent (positive: slower), after scaling
 * @lo, @hi: its 95 % bootstrap confidence interval
 * @gap: several processes a side: how far (percent) this run's lowest
 *	 process median lies above the baseline's highest (negative: the
 *	 ranges overlap)
 * @procs: judged on process medians (bench_compare_procs())
 * @too_few: a side had fewer than BENCH_MIN_SAMPLES samples
 * @noise: the median change alone would warn or fail more than the
 *	   interval's lower end does: the rest is within noise
 */
struct bench_cmp {
	double pct, lo, hi, gap;
	int procs, too_few, noise;
};

/* Registry (registry.c). */
void bench_register(struct bench_case *c);
struct bench_case *bench_cases(void);

/* Statistics (stats.c): @v is sorted in place. */
void bench_stats_compute(double *v, size_t n, struct bench_stats *st);
double bench_percentile(const double *sorted, size_t n, double p);
enum bench_verdict bench_verdict_of(double base, double cur, double *pct);
/**
 * struct bench_drift - how the machine itself changed between two runs
 * @scale: this run's reference median / the baseline's (1: unchanged)
 * @noise: how much the machine's speed varied within either run: the
 *	   larger interquartile range of the two runs' reference samples,
 *	   in percent of their median (0: none known)
 */
struct bench_drift {
	double scale, noise;
};

enum bench_verdict bench_compare(const double *base, size_t nb, const double *cur,
				 size_t nc, const struct bench_drift *drift,
				 struct bench_cmp *cmp);
enum bench_verdict bench_compare_procs(const double *base, size_t nb,
				       const double *cur, size_t nc,
				       const struct bench_drift *drift,
				       struct bench_cmp *cmp);
double bench_t975(double df);
double bench_ref_scale(const double *base, size_t nb, const double *cur, size_t nc);
double bench_ref_noise(const double *v, size_t n);

/* Units. */
const char *bench_unit_name(enum bench_unit u);

/* Targets (targets.c): the project's current goals, each defined once. */
size_t bench_targets(const struct bench_target **t);
const struct bench_target *bench_target_of(const char *suite, const char *name);
int bench_goal_set(struct bench_goal *g, const struct bench_target *t, enum bench_unit unit);
void bench_goal_free(struct bench_goal *g);
void bench_goal_text(char *buf, size_t len, const struct bench_goal *g, enum bench_unit unit);
void bench_targets_judge(struct bench_result *r, size_t n);

/**
 * struct bench_tally - how a run's targets fared
 * @met, @missed: judged rows
 * @unjudged: rows whose reference row did not run
 */
struct bench_tally {
	size_t met, missed, unjudged;
};

void bench_targets_tally(const struct bench_result *r, size_t n, struct bench_tally *t);
void bench_print_targets(FILE *f, const struct bench_result *r, size_t n, const char *label);
void bench_print_verdict(FILE *f, const struct bench_tally *t);

/**
 * struct bench_runset - one run's results, for reports of several runs
 * @label: what it is (its file's name less .json), NULL for this run
 * @h: its header
 * @r: its results, judged (bench_targets_judge())
 * @n: how many
 */
struct bench_runset {
	const char *label;
	const struct bench_header *h;
	struct bench_result *r;
	size_t n;
};

/* Reports (report.c, md.c, plot.c, plot_batch.c). */
const char *bench_num(char *buf, size_t len, double v);
const char *bench_target_state_name(enum bench_target_state v);
void bench_target_cell(char *buf, size_t len, const struct bench_result *x);
void bench_print_header(FILE *f, const struct bench_header *h, const char *prefix);
void bench_print_reference(FILE *f, const struct bench_header *h, const char *pfx);
void bench_print_table(FILE *f, const struct bench_result *r, size_t n,
		       const char *suite);
void bench_print_table_head(FILE *f, const char *suite, enum bench_unit unit, int w);
void bench_print_row(FILE *f, const struct bench_result *x, int w);
int bench_write_json(const char *path, const struct bench_header *h,
		     const struct bench_result *r, size_t n);
int bench_write_md(const char *path, const char *title, const struct bench_runset *s,
		   size_t ns);
int bench_gnuplot(const char *script);
int bench_write_plots(const char *dir, const char *prefix, const struct bench_header *h,
		      const struct bench_result *r, size_t n);
int bench_write_batch_plot(const char *base, const struct bench_runset *s, size_t ns);

/* Baselines (baseline.c): JSON files in the bench_write_json() format. */
int bench_baseline_path(const char *name, char *buf, size_t len);
int bench_baseline_check(const char *path, char *why, size_t len);
int bench_baseline_compare(const char *path, const struct bench_header *h,
			   const struct bench_result *r, size_t n, FILE *out);

int bench_load_json(const char *path, struct bench_header *h,
		    struct bench_result **out, size_t *n);
void bench_results_free(struct bench_result *r, size_t n);
void bench_header_free(struct bench_header *h);

/* The malloc counter (malloc_count.c). */
uint64_t bench_malloc_count(void);

/*
 * bench_tool_pair() - a peer tool's server and client (peer_tool.c)
 * @server: argv of the server, argv[0] its path; its stdout is discarded
 * @client: argv of the client, which is retried (20 times, 0.1 s apart)
 *	    until the server listens and the client reports
 * @parse: called on each line of the client's stdout and stderr; 0 when
 *	   the line gave the value (the last such line wins)
 * @why: on failure, what went wrong: the client's last other line, and
 *	 whether the server exited first (its stderr is discarded)
 * @whylen: its size
 *
 * The server is stopped (SIGTERM) at the end. Return: the value, or -1
 * when no client run reported one or the server exited first.
 */
double bench_tool_pair(char *const server[], char *const client[],
		       int (*parse)(const char *line, double *val),
		       char *why, size_t whylen);

/* Helpers for cases. */
int bench_skip(struct bench_run *run, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int bench_fail(struct bench_run *run, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* suite_gpu.c, for the gpu suite's files: fail with the raised error. */
int gpu_error(struct bench_run *run, const char *what);
/* suite_gpu.c: the suite's GPU, CUDA device 0 or ROCm's (TIO_BENCH_GPU=rocm). */
DLDevice bench_gpu(void);

/* Keeps the compiler from discarding a value or assuming memory unchanged. */
#define bench_keep(v)	__asm__ __volatile__("" : : "g"(v) : "memory")
/* Hides where a value came from (an indirect call stays indirect). */
#define bench_launder(v) __asm__ __volatile__("" : "+r"(v))
#define bench_clobber()	__asm__ __volatile__("" : : : "memory")

#define BENCH_CONCAT_(a, b) a##b
#define BENCH_CONCAT(a, b) BENCH_CONCAT_(a, b)

/* Register a static struct bench_case at load time. */
#define BENCH_REGISTER(c)						\
	static void __attribute__((constructor))			\
	BENCH_CONCAT(bench_reg_, __LINE__)(void) { bench_register(&(c)); }

#endif /* TIO_BENCH_H */
