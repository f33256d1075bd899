// SPDX-License-Identifier: LGPL-2.1-or-later
/* A run's results as text tables, its targets' verdicts, and as JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/**
 * bench_num() - a cost with a precision that suits its size
 * @buf: where
 * @len: its size
 * @v: the cost
 *
 * Return: @buf.
 */
const char *bench_num(char *buf, size_t len, double v)
{
	if (v < 10)
		snprintf(buf, len, "%.2f", v);
	else if (v < 1000)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

/**
 * bench_target_state_name() - "met", "MISSED", "not judged" or ""
 * @v: a verdict
 *
 * Return: its name.
 */
const char *bench_target_state_name(enum bench_target_state v)
{
	return v == BENCH_T_MET ? "met" : v == BENCH_T_MISSED ? "MISSED" :
	       v == BENCH_T_UNJUDGED ? "not judged" : "";
}

/**
 * bench_target_cell() - a row's target column: "<= 10 ns: met",
 * "<= 0.10x info/ioctl: MISSED", "" for none; "judged at the end" while
 * the row it is relative to has not run
 * @buf: where
 * @len: its size
 * @x: the row, judged
 */
void bench_target_cell(char *buf, size_t len, const struct bench_result *x)
{
	char g[128];

	buf[0] = 0;
	if (x->status != BENCH_OK || !x->goal.set)
		return;
	bench_goal_text(g, sizeof(g), &x->goal, x->unit);
	snprintf(buf, len, "%s: %s", g, x->goal.verdict == BENCH_T_NONE ?
		 "judged at the end" : bench_target_state_name(x->goal.verdict));
}

void bench_print_header(FILE *f, const struct bench_header *h, const char *pfx)
{
	fprintf(f, "%smachine:  %s\n", pfx, h->machine);
	fprintf(f, "%skernel:   %s\n", pfx, h->kernel);
	fprintf(f, "%sbackend:  %s\n", pfx, h->backend);
	fprintf(f, "%scompiler: %s\n", pfx, h->compiler);
	fprintf(f, "%scommit:   %s\n", pfx, h->commit);
	fprintf(f, "%sdate:     %s\n", pfx, h->date);
	fprintf(f, "%smode:     %s\n", pfx, h->mode);
	if (h->repeats > 0)
		fprintf(f, "%ssamples:  %d per case%s", pfx, h->repeats,
			h->procs > 1 ? " and process, " : "\n");
	if (h->repeats > 0 && h->procs > 1)
		fprintf(f, "%d processes per case (in rounds)\n", h->procs);
	fprintf(f, "%sunit:     %s/op (%s)\n", pfx, bench_unit_name(h->unit),
		h->unit == BENCH_INSN ?
		"guest instructions per operation, deterministic" :
		"wall-clock nanoseconds per operation, CLOCK_MONOTONIC");
	if (h->ref_n)
		bench_print_reference(f, h, pfx);
}

/**
 * bench_print_reference() - the run's reference-loop figure
 * @f: where
 * @h: the run header, with its reference samples
 * @pfx: line prefix
 */
void bench_print_reference(FILE *f, const struct bench_header *h, const char *pfx)
{
	double *v = malloc((h->ref_n ? h->ref_n : 1) * sizeof(*v));
	struct bench_stats st;

	if (!v)
		return;
	memcpy(v, h->ref, h->ref_n * sizeof(*v));
	bench_stats_compute(v, h->ref_n, &st);
	free(v);
	fprintf(f, "%sreference: %.4g %s/iteration (median; min %.4g, std %.1f%%, "
		"%zu samples of %llu iterations between cases)\n", pfx, st.median,
		bench_unit_name(h->unit), st.min, st.mean > 0 ?
		100 * st.std / st.mean : 0, h->ref_n,
		(unsigned long long)h->ref_iters);
}

/**
 * bench_print_table() - one suite's results as an aligned text table
 * @f: where
 * @r: results of the run
 * @n: how many
 * @suite: the suite to print
 */
void bench_print_table(FILE *f, const struct bench_result *r, size_t n,
		       const char *suite)
{
	enum bench_unit unit = BENCH_NS;
	size_t i, w = 4, rows = 0;

	for (i = 0; i < n; i++) {
		if (strcmp(r[i].suite, suite))
			continue;
		if (strlen(r[i].name) > w)
			w = strlen(r[i].name);
		unit = r[i].unit;
		rows++;
	}
	if (!rows)
		return;
	bench_print_table_head(f, suite, unit, (int)w);
	for (i = 0; i < n; i++)
		if (!strcmp(r[i].suite, suite))
			bench_print_row(f, &r[i], (int)w);
	for (i = 0; i < n; i++)
		if (!strcmp(r[i].suite, suite) && r[i].ref &&
		    r[i].status == BENCH_OK && !strcmp(r[i].name, r[i].ref))
			fprintf(f, "(ratio: median / median of %s)\n", r[i].ref);
}

/**
 * bench_print_table_head() - a suite table's title and column names
 * @f: where
 * @suite: the suite
 * @unit: its unit
 * @w: width of the case column
 */
void bench_print_table_head(FILE *f, const char *suite, enum bench_unit unit, int w)
{
	fprintf(f, "\n== suite %s: cost per operation in %s/op "
		"(min, median, mean of n repeats; p99 from %d samples on)\n", suite,
		bench_unit_name(unit), BENCH_P99_MIN_SAMPLES);
	fprintf(f, "%-*s %10s %10s %10s %6s %4s %10s %8s %12s %16s  %s\n", w,
		"case", "min", "median", "mean", "std%", "n", "p99", "allocs",
		"throughput", "ratio", "target");
}

/**
 * bench_print_row() - one case's row, as soon as it finished
 * @f: where
 * @x: its result
 * @w: width of the case column
 */
void bench_print_row(FILE *f, const struct bench_result *x, int w)
{
	char a[32], b[32], c[32], d[32], tp[40], ratio[48], tgt[160];

	if (x->status != BENCH_OK) {
		fprintf(f, "%-*s %s: %s\n", w, x->name,
			x->status == BENCH_SKIPPED ? "skipped" : "FAILED", x->why);
		return;
	}
	tp[0] = 0;
	if (x->unit == BENCH_NS && x->bytes && x->st.median > 0)
		snprintf(tp, sizeof(tp), "%.2f GB/s", (double)x->bytes / x->st.median);
	else if (x->unit == BENCH_NS && x->st.median > 0)
		snprintf(tp, sizeof(tp), "%.3g op/s", 1e9 / x->st.median);
	ratio[0] = 0;
	if (x->ratio > 0)
		snprintf(ratio, sizeof(ratio), "%.3fx", x->ratio);
	bench_target_cell(tgt, sizeof(tgt), x);
	if (x->st.n >= BENCH_P99_MIN_SAMPLES)
		bench_num(d, sizeof(d), x->st.p99);
	else
		snprintf(d, sizeof(d), "-");
	fprintf(f, "%-*s %10s %10s %10s %6.1f %4zu %10s %8.2f %12s %16s  %s\n",
		w, x->name, bench_num(a, sizeof(a), x->st.min),
		bench_num(b, sizeof(b), x->st.median), bench_num(c, sizeof(c), x->st.mean),
		x->st.mean > 0 ? 100 * x->st.std / x->st.mean : 0, x->st.n, d,
		x->allocs_per_op, tp, ratio, tgt);
	fflush(f);
}

/**
 * bench_print_targets() - the rows of a run that have a target, judged
 * @f: where
 * @r: the run's results, judged
 * @n: how many
 * @label: what the run is (a file name), NULL for this run
 */
void bench_print_targets(FILE *f, const struct bench_result *r, size_t n, const char *label)
{
	char med[32], lim[32], goal[128];
	size_t i, w = 4, rows = 0;

	for (i = 0; i < n; i++) {
		size_t l = strlen(r[i].suite) + 1 + strlen(r[i].name);

		if (r[i].goal.verdict == BENCH_T_NONE)
			continue;
		rows++;
		if (l > w)
			w = l;
	}
	if (!rows)
		return;
	fprintf(f, "\n== targets%s%s: the project's goals (bench/targets.c), medians\n",
		label ? " of " : "", label ? label : "");
	for (i = 0; i < n; i++) {
		const struct bench_result *x = &r[i];

		if (x->goal.verdict == BENCH_T_NONE)
			continue;
		bench_goal_text(goal, sizeof(goal), &x->goal, x->unit);
		bench_num(med, sizeof(med), x->st.median);
		if (x->goal.verdict == BENCH_T_UNJUDGED)
			snprintf(lim, sizeof(lim), "-");
		else
			bench_num(lim, sizeof(lim), x->goal.limit);
		fprintf(f, "%s/%-*s %10s %-4s  limit %10s  %-10s  %s (%s)\n", x->suite,
			(int)(w - strlen(x->suite) - 1), x->name, med, bench_unit_name(x->unit),
			lim, bench_target_state_name(x->goal.verdict), goal,
			x->goal.why ? x->goal.why : "");
	}
}

/**
 * bench_print_verdict() - the last line: "targets: N met, M missed"
 * @f: where
 * @t: the tally of every run reported
 *
 * Targets whose reference row did not run are neither: a line before
 * says how many.
 */
void bench_print_verdict(FILE *f, const struct bench_tally *t)
{
	if (t->unjudged)
		fprintf(f, "(%zu more not judged: the row %s relative to did not run)\n",
			t->unjudged, t->unjudged == 1 ? "it is" : "each is");
	fprintf(f, "targets: %zu met, %zu missed\n", t->met, t->missed);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (v != v || v > 1e300 || v < -1e300)
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

/* A JSON array of numbers. */
static void json_nums(FILE *f, const double *v, size_t n)
{
	size_t i;

	fputc('[', f);
	for (i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		json_num(f, v[i]);
	}
	fputc(']', f);
}

/* A row's target: its terms, how it reads, and how it fared. */
static void json_goal(FILE *f, const struct bench_result *x)
{
	char text[160];

	bench_goal_text(text, sizeof(text), &x->goal, x->unit);
	fputs(", \"target\": {\"goal\": ", f);
	json_str(f, text);
	fputs(", \"against\": ", f);
	if (x->goal.against)
		json_str(f, x->goal.against);
	else
		fputs("null", f);
	fputs(", \"factor\": ", f);
	json_num(f, x->goal.factor);
	fputs(", \"plus\": ", f);
	json_num(f, x->goal.plus);
	if (x->goal.why) {
		fputs(", \"why\": ", f);
		json_str(f, x->goal.why);
	}
	fputs(", \"verdict\": ", f);
	json_str(f, bench_target_state_name(x->goal.verdict));
	if (x->goal.verdict == BENCH_T_MET || x->goal.verdict == BENCH_T_MISSED) {
		fputs(", \"limit\": ", f);
		json_num(f, x->goal.limit);
	}
	fputc('}', f);
}

static const char *status_name(enum bench_status s)
{
	return s == BENCH_OK ? "ok" : s == BENCH_SKIPPED ? "skipped" : "failed";
}

/**
 * bench_write_json() - the run as JSON (also the baseline format)
 * @path: file to write, "-" for stdout
 * @h: run header
 * @r: results
 * @n: how many
 *
 * Return: 0 or -errno.
 */
int bench_write_json(const char *path, const struct bench_header *h,
		     const struct bench_result *r, size_t n)
{
	const char *const hdr[][2] = {
		{ "machine", h->machine }, { "kernel", h->kernel },
		{ "backend", h->backend }, { "compiler", h->compiler },
		{ "commit", h->commit }, { "date", h->date },
		{ "mode", h->mode }, { "unit", bench_unit_name(h->unit) },
	};
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	size_t i;
	int err = 0;

	if (!f)
		return -errno;
	fputs("{\n  \"format\": \"tio-bench/2\",\n  \"header\": {", f);
	for (i = 0; i < sizeof(hdr) / sizeof(hdr[0]); i++) {
		fprintf(f, "%s\"%s\": ", i ? ", " : "", hdr[i][0]);
		json_str(f, hdr[i][1]);
	}
	fputs(", \"cpu\": ", f);
	json_str(f, h->cpu);
	fprintf(f, ", \"cpus\": %d", h->cpus);
	fprintf(f, ", \"fast\": %s, \"repeats\": %d, \"procs\": %d, "
		"\"min_samples\": %d", h->fast ? "true" : "false", h->repeats,
		h->procs > 0 ? h->procs : 1, BENCH_MIN_SAMPLES);
	if (h->sample_target > 0) {
		fputs(", \"sample_target\": ", f);
		json_num(f, h->sample_target);
	}
	if (h->ref_n) {
		double *v = malloc(h->ref_n * sizeof(*v));
		struct bench_stats st;

		if (!v) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(v, h->ref, h->ref_n * sizeof(*v));
		bench_stats_compute(v, h->ref_n, &st);
		free(v);
		fprintf(f, ",\n    \"reference\": {\"loop\": \"dependent 64-bit "
			"multiply-add\", \"iters\": %llu, \"unit\": ",
			(unsigned long long)h->ref_iters);
		json_str(f, bench_unit_name(h->unit));
		fputs(", \"median\": ", f);
		json_num(f, st.median);
		fputs(", \"min\": ", f);
		json_num(f, st.min);
		fprintf(f, ", \"n\": %zu, \"samples\": ", h->ref_n);
		json_nums(f, h->ref, h->ref_n);
		fputc('}', f);
	}
	fputs("},\n  \"results\": [", f);
	for (i = 0; i < n; i++) {
		const struct bench_result *x = &r[i];

		fputs(i ? ",\n    {" : "\n    {", f);
		fputs("\"suite\": ", f);
		json_str(f, x->suite);
		fputs(", \"case\": ", f);
		json_str(f, x->name);
		fputs(", \"status\": ", f);
		json_str(f, status_name(x->status));
		if (x->status != BENCH_OK) {
			fputs(", \"reason\": ", f);
			json_str(f, x->why);
			fputc('}', f);
			continue;
		}
		fputs(", \"unit\": ", f);
		json_str(f, bench_unit_name(x->unit));
		fprintf(f, ", \"iters\": %llu, \"ops_per_iter\": ",
			(unsigned long long)x->iters);
		json_num(f, x->ops_per_iter);
		fputs(", \"min\": ", f);
		json_num(f, x->st.min);
		fputs(", \"median\": ", f);
		json_num(f, x->st.median);
		fputs(", \"mean\": ", f);
		json_num(f, x->st.mean);
		fputs(", \"std\": ", f);
		json_num(f, x->st.std);
		/* No p99 where too few samples make one (null, as the table's "-"). */
		fputs(", \"p99\": ", f);
		if (x->st.n >= BENCH_P99_MIN_SAMPLES)
			json_num(f, x->st.p99);
		else
			fputs("null", f);
		fputs(", \"max\": ", f);
		json_num(f, x->st.max);
		fputs(", \"allocs_per_op\": ", f);
		json_num(f, x->allocs_per_op);
		if (x->bytes)
			fprintf(f, ", \"bytes_per_op\": %llu",
				(unsigned long long)x->bytes);
		if (x->ref && x->ratio > 0) {
			fputs(", \"ref\": ", f);
			json_str(f, x->ref);
			fputs(", \"ratio\": ", f);
			json_num(f, x->ratio);
		}
		if (x->goal.set)
			json_goal(f, x);
		fprintf(f, ", \"n\": %zu", x->st.n);
		fputs(", \"samples\": ", f);
		json_nums(f, x->samples, x->st.n);
		if (x->np) {
			fputs(", \"process_medians\": ", f);
			json_nums(f, x->pmed, x->np);
		}
		fputs("}", f);
	}
	fputs("\n  ]\n}\n", f);
out:
	if (ferror(f) && !err)
		err = -EIO;
	if (f != stdout && fclose(f) && !err)
		err = -errno;
	return err;
}
