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

/* Result @i's row (under its suite's head when it is the first) and TAP line. */
static void report_row(const struct bench_opts *o, struct bench_result *res, size_t i)
{
	const struct bench_result *x = &res[i];
	int w = name_width(o, x->suite);

	if (!i || strcmp(res[i - 1].suite, x->suite))
		bench_print_table_head(stdout, x->suite, o->unit, w);
	set_ratio(res, i);
	bench_targets_judge(res, i + 1);
	if (res[i].goal.verdict == BENCH_T_UNJUDGED)
		res[i].goal.verdict = BENCH_T_NONE;	/* its reference may run later */
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
	      "  --list-targets     list the project's targets (bench/targets.c); exit 1\n"
	      "                     when one names a case no suite has\n"
	      "  --tap              a TAP line per case\n"
	      "  --json FILE, --md FILE, --plot DIR   write results (--plot also draws\n"
	      "                     overhead-batch.png: cost per command against batch size)\n"
	      "  --title TEXT       the --md report's title\n"
	      "  --load FILE        report a saved JSON run instead of running; again for\n"
	      "                     several runs in one report (--md, --plot)\n"
	      "  --targets          with --load: only the targets' verdicts and the total\n"
	      "  --save-baseline NAME, --baseline NAME\n"
	      "                     save / compare: warns when the 95% interval of a\n"
	      "                     median's change, less the reference loop's own\n"
	      "                     variation, lies above +5%; fails above +10% (exit 1).\n"
	      "                     With several processes a side the interval is over\n"
	      "                     process medians (Welch t), and every process of this\n"
	      "                     run must also be that far beyond the baseline's.\n"
	      "                     This run's figures are first divided by the scale,\n"
	      "                     the ratio of the two runs' reference-loop medians\n"
	      "                     (machine drift; applied when beyond that variation)\n"
	      "A run ends with its targets and the line \"targets: N met, M missed\";\n"
	      "a missed target is a verdict, not a failure (exit 1: a case failed).\n",
	      f);
}

/* The options; 0, or the exit code of a bad command line (2) or of --help (0). */
static int parse(int argc, char **argv, struct bench_opts *o, int *done)
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
		{ "list-targets", no_argument, NULL, 'T' },
		{ "tap", no_argument, NULL, 't' },
		{ "json", required_argument, NULL, 'j' },
		{ "md", required_argument, NULL, 'm' },
		{ "title", required_argument, NULL, 'i' },
		{ "plot", required_argument, NULL, 'p' },
		{ "save-baseline", required_argument, NULL, 'S' },
		{ "baseline", required_argument, NULL, 'B' },
		{ "load", required_argument, NULL, 'L' },
		{ "targets", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *unit = "auto", *clock = "auto";
	int ch, err;

	*done = 1;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o->suites = optarg; break;
		case 'c': o->glob = optarg; break;
		case 'z': o->size = optarg; break;
		case 'f': o->fast = 1; break;
		case 'r': o->repeat = atoi(optarg); break;
		case 'P':
			o->procs = atoi(optarg);
			if (o->procs < 1 || o->procs > BENCH_PROCS_MAX) {
				fprintf(stderr, "tio-bench: --procs %s: 1 to %d\n",
					optarg, BENCH_PROCS_MAX);
				return 2;
			}
			break;
		case 'W': o->worker = 1; break;
		case 'C': clock = optarg; break;
		case 'u': unit = optarg; break;
		case 'l': o->list = 1; break;
		case 'T': o->list_targets = 1; break;
		case 't': o->tap = 1; break;
		case 'j': o->json = optarg; break;
		case 'm': o->md = optarg; break;
		case 'i': o->title = optarg; break;
		case 'p': o->plot = optarg; break;
		case 'S': o->save = optarg; break;
		case 'B': o->baseline = optarg; break;
		case 'L':
			if (o->nload == BENCH_LOADS_MAX) {
				fprintf(stderr, "tio-bench: --load: at most %d\n", BENCH_LOADS_MAX);
				return 2;
			}
			o->load[o->nload++] = optarg;
			break;
		case 'V': o->targets = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || (o->size && strcmp(o->size, "small") &&
	    strcmp(o->size, "medium") && strcmp(o->size, "large") &&
	    strcmp(o->size, "all")) || o->repeat < 0 || (o->targets && !o->nload)) {
		usage(stderr);
		return 2;
	}
	if (o->worker) {
		/* One case, in this process, for a parent tio-bench. */
		if (!o->suites || !o->glob || !o->json) {
			fputs("tio-bench: --worker needs --suite, --case and --json\n",
			      stderr);
			return 2;
		}
		o->procs = 1;
	}
	if (!strcmp(unit, "insn"))
		o->unit = BENCH_INSN;
	else if (!strcmp(unit, "auto"))
		o->unit = bench_icount_mode() ? BENCH_INSN : BENCH_NS;
	else if (strcmp(unit, "ns")) {
		usage(stderr);
		return 2;
	}
	if (strcmp(clock, "auto") && strcmp(clock, "run") && strcmp(clock, "wall")) {
		usage(stderr);
		return 2;
	}
	err = bench_clock_init(o->unit, clock);
	if (err) {
		fprintf(stderr, "tio-bench: --clock run: /proc/thread-self/schedstat: %s\n",
			strerror(-err));
		return 2;
	}
	*done = 0;
	return 0;
}

/* Every selected case, @rounds processes each (1: in this process). */
static int run_all(const struct bench_opts *o, struct bench_header *h,
		   struct bench_result *res, size_t n)
{
	int round, rounds = bench_procs_of(o), rc = 0;
	const struct bench_case *c;
	size_t i;

	for (round = 0; round < rounds; round++) {
		if (rounds > 1) {
			printf("%s# round %d of %d: process %d of every case%s\n",
			       round ? "" : "\n", round + 1, rounds, round + 1,
			       round + 1 < rounds ? "" : " (rows as each case ends)");
			fflush(stdout);
		}
		i = 0;
		for (c = bench_cases(); c; c = c->next) {
			if (!selected(o, c))
				continue;
			bench_reference_point(h);
			if (rounds == 1) {
				bench_run_case(o, c, &res[i]);
			} else {
				if (!round)
					bench_proc_begin(o, c, &res[i]);
				bench_proc_round(o, c, &res[i]);
			}
			if (round + 1 == rounds) {
				if (rounds > 1)
					bench_proc_end(&res[i]);
				report_row(o, res, i);
				if (res[i].status == BENCH_FAILED)
					rc = 1;
			}
			i++;
		}
	}
	bench_reference_point(h);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .unit = BENCH_NS };
	struct bench_tally t = { 0 };
	struct bench_runset set;
	struct bench_result *res;
	struct bench_header h;
	struct bench_case *c;
	size_t n = 0, i;
	int rc, done;

	rc = parse(argc, argv, &o, &done);
	if (done)
		return rc;
	if (o.list_targets)
		return bench_list_targets();
	if (o.nload)
		return bench_report_loaded(&o);
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
	if (bench_check_paths(&o))
		return 2;
	res = calloc(n, sizeof(*res));
	if (!res) {
		perror("tio-bench");
		return 1;
	}
	bench_make_header(&h, o.unit);
	h.fast = o.fast;
	h.repeats = bench_repeats_of(&o);
	h.procs = bench_procs_of(&o);
	h.sample_target = bench_sample_target_of(&o);
	h.ref_iters = BENCH_REF_ITERS;
	h.ref = calloc((n * (size_t)h.procs + 1) * BENCH_REF_PER_POINT, sizeof(*h.ref));
	if (!h.ref) {
		perror("tio-bench");
		free(res);
		return 1;
	}
	bench_print_header(stdout, &h, "# ");
	fflush(stdout);
	rc = run_all(&o, &h, res, n);
	putchar('\n');
	bench_print_reference(stdout, &h, "# ");
	/* A reference row that ran after its rows: their ratios and verdicts now. */
	for (i = 0; i < n; i++)
		set_ratio(res, i);
	bench_targets_judge(res, n);
	bench_targets_tally(res, n, &t);
	if (!o.worker && t.met + t.missed + t.unjudged) {
		bench_print_targets(stdout, res, n, NULL);
		bench_print_verdict(stdout, &t);
	}
	if (o.tap)
		printf("1..%zu\n", n);
	set = (struct bench_runset){ .h = &h, .r = res, .n = n };
	if (bench_write_outputs(&o, &set, 1))
		rc = 1;
	bench_results_free(res, n);
	bench_header_free(&h);
	return rc;
}
