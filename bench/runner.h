/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tio-bench's own parts, apart from the harness the unit tests link
 * (bench.h): the options of a run, measuring a case (runner.c) and the
 * run header (header.c).
 */
#ifndef TIO_BENCH_RUNNER_H
#define TIO_BENCH_RUNNER_H

#include "bench.h"

/* --load FILE, at most this many times. */
#define BENCH_LOADS_MAX	16

/**
 * struct bench_opts - what the command line asked for
 * @suites: comma-separated suites, NULL or "all" for every one
 * @glob: comma-separated case globs, NULL for every case
 * @size: size class, NULL or "all" for every one
 * @json, @md, @plot, @save, @baseline: outputs, NULL for none
 * @load: saved runs to report instead of running (@nload of them)
 * @title: the Markdown report's title, NULL for the default
 * @fast, @list, @tap: --fast, --list, --tap
 * @targets: report only the targets' verdicts
 * @list_targets: list the targets and check that their cases exist
 * @repeat: samples per case and process (0: the default)
 * @procs: processes per case (0: the default)
 * @worker: run exactly --suite/--case, for a parent tio-bench
 * @unit: what the clock counts
 */
struct bench_opts {
	const char *suites;
	const char *glob;
	const char *size;
	const char *json, *md, *plot, *save, *baseline;
	const char *load[BENCH_LOADS_MAX];
	int nload;
	const char *title;
	int fast, list, tap, repeat, procs, targets, list_targets;
	int worker;
	enum bench_unit unit;
};

/* Clock (runner.c): -ENOENT when --clock run is asked for and unavailable. */
int bench_clock_init(enum bench_unit unit, const char *clock);
int bench_clock_run(void);

int bench_repeats_of(const struct bench_opts *o);
int bench_procs_of(const struct bench_opts *o);
double bench_sample_target_of(const struct bench_opts *o);
void bench_reference_point(struct bench_header *h);

/* Case @c in this process. */
void bench_run_case(const struct bench_opts *o, const struct bench_case *c,
		    struct bench_result *res);
/*
 * Case @c in several processes, measured in rounds: round p runs process
 * p of every case, so that a case's processes lie apart in time as well
 * as in memory. begin makes room, round runs one process and adds its
 * samples and median, end summarises.
 */
void bench_proc_begin(const struct bench_opts *o, const struct bench_case *c,
		      struct bench_result *res);
void bench_proc_round(const struct bench_opts *o, const struct bench_case *c,
		      struct bench_result *res);
void bench_proc_end(struct bench_result *res);

/* Outputs and reports (outputs.c). */
int bench_check_paths(const struct bench_opts *o);
int bench_write_outputs(const struct bench_opts *o, struct bench_runset *s, size_t ns);
int bench_report_loaded(const struct bench_opts *o);
int bench_list_targets(void);

/* The run header (header.c). */
int bench_icount_mode(void);
void bench_make_header(struct bench_header *h, enum bench_unit unit);

#endif /* TIO_BENCH_RUNNER_H */
