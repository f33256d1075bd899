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
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner.h"

static int suite_selected(const struct bench_opts *o, const char *suite)
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

static int selected(const struct bench_opts *o, const struct bench_case *c)
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
static int name_width(const struct bench_opts *o, const char *suite)
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
static int check_paths(const struct bench_opts *o)
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
static void report_row(const struct bench_opts *o, struct bench_result *res, size_t i)
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
	struct bench_opts o = { .unit = BENCH_NS };
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
		o.unit = bench_icount_mode() ? BENCH_INSN : BENCH_NS;
	else if (strcmp(unit, "ns")) {
		usage(stderr);
		return 2;
	}

	if (strcmp(clock, "auto") && strcmp(clock, "run") && strcmp(clock, "wall")) {
		usage(stderr);
		return 2;
	}
	err = bench_clock_init(o.unit, clock);
	if (err) {
		fprintf(stderr, "tio-bench: --clock run: /proc/thread-self/schedstat: %s\n",
			strerror(-err));
		return 2;
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
	bench_make_header(&h, o.unit);
	h.fast = o.fast;
	h.repeats = bench_repeats_of(&o);
	h.procs = bench_procs_of(&o);
	h.sample_target = bench_sample_target_of(&o);
	h.ref_iters = BENCH_REF_ITERS;
	h.ref = calloc((n * (size_t)h.procs + 1) * BENCH_REF_PER_POINT, sizeof(*h.ref));
	if (!h.ref) {
		perror("tio-bench");
		return 1;
	}
	bench_print_header(stdout, &h, "# ");
	fflush(stdout);
	rounds = bench_procs_of(&o);
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
			bench_reference_point(&h);
			if (rounds == 1) {
				bench_run_case(&o, c, &res[i]);
			} else {
				if (!round)
					bench_proc_begin(&o, c, &res[i]);
				bench_proc_round(&o, c, &res[i]);
			}
			if (round + 1 == rounds) {
				if (rounds > 1)
					bench_proc_end(&res[i]);
				report_row(&o, res, i);
				if (res[i].status == BENCH_FAILED)
					rc = 1;
			}
			i++;
		}
	}
	bench_reference_point(&h);
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

