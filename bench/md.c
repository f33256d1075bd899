// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Markdown reports: one or several runs (a make run writes four JSON
 * files) in one file, with where each ran, the targets' verdicts and
 * every suite's table. docs/results/ is written this way.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* A table cell: '|' would end it. */
static void md_cell(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
}

static void md_runs(FILE *f, const struct bench_runset *s, size_t ns)
{
	size_t i;

	fputs("| run | CPU | cpus | kernel | backend | unit | commit | date |\n"
	      "|---|---|---:|---|---|---|---|---|\n", f);
	for (i = 0; i < ns; i++) {
		const struct bench_header *h = s[i].h;

		fputs("| ", f);
		md_cell(f, s[i].label ? s[i].label : "this run");
		fputs(" | ", f);
		md_cell(f, h->cpu[0] ? h->cpu : h->machine);
		fprintf(f, " | %d | ", h->cpus);
		md_cell(f, h->kernel);
		fputs(" | ", f);
		md_cell(f, h->backend);
		fprintf(f, " | %s/op | ", bench_unit_name(h->unit));
		md_cell(f, h->commit);
		fputs(" | ", f);
		md_cell(f, h->date);
		fputs(" |\n", f);
	}
}

static void md_targets(FILE *f, const struct bench_runset *s, size_t ns)
{
	char med[32], lim[32], goal[128];
	size_t i, j, rows = 0;

	for (i = 0; i < ns; i++)
		for (j = 0; j < s[i].n; j++)
			rows += s[i].r[j].goal.verdict != BENCH_T_NONE;
	if (!rows)
		return;
	fputs("\n## Targets\n\nThe project's goals (`bench/targets.c`), judged on "
	      "medians of the same run.\n\n"
	      "| run | case | median | goal | limit | verdict | what |\n"
	      "|---|---|---:|---|---:|---|---|\n", f);
	for (i = 0; i < ns; i++) {
		for (j = 0; j < s[i].n; j++) {
			const struct bench_result *x = &s[i].r[j];

			if (x->goal.verdict == BENCH_T_NONE)
				continue;
			bench_goal_text(goal, sizeof(goal), &x->goal, x->unit);
			if (x->goal.verdict == BENCH_T_UNJUDGED)
				snprintf(lim, sizeof(lim), "-");
			else
				bench_num(lim, sizeof(lim), x->goal.limit);
			fputs("| ", f);
			md_cell(f, s[i].label ? s[i].label : "this run");
			fprintf(f, " | %s/%s | %s %s | ", x->suite, x->name,
				bench_num(med, sizeof(med), x->st.median),
				bench_unit_name(x->unit));
			md_cell(f, goal);
			fprintf(f, " | %s | %s | ", lim, bench_target_state_name(x->goal.verdict));
			md_cell(f, x->goal.why);
			fputs(" |\n", f);
		}
	}
}

static void md_row(FILE *f, const struct bench_result *x)
{
	char a[32], b[32], c[32], tgt[160];

	fputs("| ", f);
	md_cell(f, x->name);
	if (x->status != BENCH_OK) {
		fprintf(f, " | %s: ", x->status == BENCH_SKIPPED ? "skipped" : "FAILED");
		md_cell(f, x->why);
		fputs(" | | | | | | | |\n", f);
		return;
	}
	fprintf(f, " | %s | %s | %s | %.1f | %.2f | ", bench_num(a, sizeof(a), x->st.min),
		bench_num(b, sizeof(b), x->st.median),
		x->st.n >= BENCH_P99_MIN_SAMPLES ? bench_num(c, sizeof(c), x->st.p99) : "-",
		x->st.mean > 0 ? 100 * x->st.std / x->st.mean : 0, x->allocs_per_op);
	if (x->unit == BENCH_NS && x->bytes && x->st.median > 0)
		fprintf(f, "%.2f", (double)x->bytes / x->st.median);
	fputs(" | ", f);
	if (x->ratio > 0)
		fprintf(f, "%.3fx", x->ratio);
	fputs(" | ", f);
	bench_target_cell(tgt, sizeof(tgt), x);
	md_cell(f, tgt);
	fputs(" |\n", f);
}

/* One run: where it ran, then a table per suite. */
static void md_run(FILE *f, const struct bench_runset *s, int several)
{
	const struct bench_result *r = s->r;
	size_t i, j;

	if (several) {
		fputs("\n## ", f);
		md_cell(f, s->label ? s->label : "this run");
		fputs("\n\n", f);
	} else {
		fputc('\n', f);
	}
	bench_print_header(f, s->h, "- ");
	for (i = 0; i < s->n; i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(r[j].suite, r[i].suite))
				break;
		if (j < i)
			continue;
		fprintf(f, "\n%s %s (%s/op)\n\n", several ? "###" : "##", r[i].suite,
			bench_unit_name(r[i].unit));
		fputs("| case | min | median | p99 | std % | allocs/op | GB/s | ratio | target |\n"
		      "|---|---:|---:|---:|---:|---:|---:|---:|---|\n", f);
		for (j = i; j < s->n; j++)
			if (!strcmp(r[j].suite, r[i].suite))
				md_row(f, &r[j]);
	}
}

/**
 * bench_write_md() - runs as Markdown: where they ran, the targets, tables
 * @path: file to write
 * @title: the report's title, NULL for "tio-bench results"
 * @s: the runs, their results judged (bench_targets_judge())
 * @ns: how many
 *
 * Return: 0 or -errno.
 */
int bench_write_md(const char *path, const char *title, const struct bench_runset *s,
		   size_t ns)
{
	struct bench_tally t = { 0 };
	FILE *f = fopen(path, "w");
	size_t i;
	int err = 0;

	if (!f)
		return -errno;
	for (i = 0; i < ns; i++)
		bench_targets_tally(s[i].r, s[i].n, &t);
	fputs("# ", f);
	md_cell(f, title ? title : "tio-bench results");
	fputs("\n\nWritten by tio-bench from the runs' JSON (`make bench-report`); "
	      "figures are comparable across runs only through baselines "
	      "(`--save-baseline`, `--baseline`): a different machine, kernel or "
	      "build changes them.\n\n", f);
	md_runs(f, s, ns);
	if (t.unjudged)
		fprintf(f, "\n%zu target%s not judged: the row %s relative to did not "
			"run.\n", t.unjudged, t.unjudged == 1 ? " is" : "s are",
			t.unjudged == 1 ? "it is" : "each is");
	fprintf(f, "\ntargets: %zu met, %zu missed\n", t.met, t.missed);
	md_targets(f, s, ns);
	for (i = 0; i < ns; i++)
		md_run(f, &s[i], ns > 1);
	if (ferror(f))
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}
