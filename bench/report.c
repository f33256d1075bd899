// SPDX-License-Identifier: LGPL-2.1-or-later
/* Tables, JSON, Markdown and gnuplot plots of a run's results. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* A cost with a precision that suits its size. */
static const char *num(char *buf, size_t len, double v)
{
	if (v < 10)
		snprintf(buf, len, "%.2f", v);
	else if (v < 1000)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

/* "<= 1.5 ns: met", "<= 0.50x info/ioctl: MISSED", "" */
static void target_text(char *buf, size_t len, const struct bench_result *x)
{
	char t[64];

	buf[0] = 0;
	if (x->status != BENCH_OK)
		return;
	if (x->target > 0) {
		num(t, sizeof(t), x->target);
		if (x->unit != BENCH_NS)
			snprintf(buf, len, "<= %s ns (host)", t);
		else
			snprintf(buf, len, "<= %s ns: %s", t,
				 x->st.median <= x->target ? "met" : "MISSED");
	} else if (x->target_ratio > 0 && x->ref) {
		if (x->ratio > 0)
			snprintf(buf, len, "<= %.2fx: %s", x->target_ratio,
				 x->ratio <= x->target_ratio ? "met" : "MISSED");
		else
			snprintf(buf, len, "<= %.2fx (no ref)", x->target_ratio);
	}
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
	char a[32], b[32], c[32], d[32], tp[40], ratio[48], tgt[80];

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
	target_text(tgt, sizeof(tgt), x);
	if (x->st.n >= BENCH_P99_MIN_SAMPLES)
		num(d, sizeof(d), x->st.p99);
	else
		snprintf(d, sizeof(d), "-");
	fprintf(f, "%-*s %10s %10s %10s %6.1f %4zu %10s %8.2f %12s %16s  %s\n",
		w, x->name, num(a, sizeof(a), x->st.min),
		num(b, sizeof(b), x->st.median), num(c, sizeof(c), x->st.mean),
		x->st.mean > 0 ? 100 * x->st.std / x->st.mean : 0, x->st.n, d,
		x->allocs_per_op, tp, ratio, tgt);
	fflush(f);
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
		if (x->target > 0) {
			fputs(", \"target_ns\": ", f);
			json_num(f, x->target);
		}
		if (x->target_ratio > 0) {
			fputs(", \"target_ratio\": ", f);
			json_num(f, x->target_ratio);
		}
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

/**
 * bench_write_md() - the run as Markdown tables, one per suite
 * @path: file to write
 * @h: run header
 * @r: results
 * @n: how many
 *
 * Return: 0 or -errno.
 */
int bench_write_md(const char *path, const struct bench_header *h,
		   const struct bench_result *r, size_t n)
{
	char a[32], b[32], c[32], tgt[80];
	FILE *f = fopen(path, "w");
	size_t i, j;
	int err = 0;

	if (!f)
		return -errno;
	fputs("# tio-bench results\n\n", f);
	bench_print_header(f, h, "- ");
	fputs("\nFigures are comparable across runs only through baselines "
	      "(`--save-baseline`, `--baseline`): a different machine, kernel "
	      "or build changes them.\n", f);
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(r[j].suite, r[i].suite))
				break;
		if (j < i)
			continue;
		fprintf(f, "\n## %s (%s/op)\n\n", r[i].suite,
			bench_unit_name(r[i].unit));
		fputs("| case | min | median | p99 | std % | allocs/op | GB/s | ratio | target |\n"
		      "|---|---:|---:|---:|---:|---:|---:|---:|---|\n", f);
		for (j = i; j < n; j++) {
			const struct bench_result *x = &r[j];

			if (strcmp(x->suite, r[i].suite))
				continue;
			if (x->status != BENCH_OK) {
				fprintf(f, "| %s | %s: %s | | | | | | | |\n", x->name,
					x->status == BENCH_SKIPPED ? "skipped" : "FAILED",
					x->why);
				continue;
			}
			target_text(tgt, sizeof(tgt), x);
			fprintf(f, "| %s | %s | %s | %s | %.1f | %.2f | ", x->name,
				num(a, sizeof(a), x->st.min),
				num(b, sizeof(b), x->st.median),
				x->st.n >= BENCH_P99_MIN_SAMPLES ?
				num(c, sizeof(c), x->st.p99) : "-",
				x->st.mean > 0 ? 100 * x->st.std / x->st.mean : 0,
				x->allocs_per_op);
			if (x->unit == BENCH_NS && x->bytes && x->st.median > 0)
				fprintf(f, "%.2f | ", (double)x->bytes / x->st.median);
			else
				fputs(" | ", f);
			if (x->ratio > 0)
				fprintf(f, "%.3fx | %s |\n", x->ratio, tgt);
			else
				fprintf(f, " | %s |\n", tgt);
		}
	}
	if (ferror(f))
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static int run_gnuplot(const char *script)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (!pid) {
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return WIFEXITED(st) && WEXITSTATUS(st) == 127 ? -ENOENT : -EIO;
	return 0;
}

/*
 * One plot per question: cases whose name starts with one of these
 * prefixes are plotted apart from the rest of their suite (a page-cache
 * read and an O_DIRECT file load answer different questions, as do a
 * copy's bandwidth and a call's latency).
 */
static const struct {
	const char *suite, *prefix, *question;
} plot_groups[] = {
	{ "io", "safetensors/", "safetensors load (O_DIRECT, file to pinned buffer)" },
	{ "gpu", "h2d/", "host to device copies" },
	{ "gpu", "d2h/", "device to host copies" },
};

#define NGROUPS (sizeof(plot_groups) / sizeof(plot_groups[0]))

/* The group of a case of @suite: an index in plot_groups, or -1 (the rest). */
static int plot_group_of(const char *suite, const char *name)
{
	size_t g;

	for (g = 0; g < NGROUPS; g++)
		if (!strcmp(suite, plot_groups[g].suite) &&
		    !strncmp(name, plot_groups[g].prefix, strlen(plot_groups[g].prefix)))
			return (int)g;
	return -1;
}

/* Peers: other projects' mechanisms, drawn in their own colour. */
static int is_peer(const char *name)
{
	return strstr(name, "peer/") || !strncmp(name, "fio", 3) || strstr(name, "ref/");
}

/* Its GB/s (when it moves bytes) or its cost per operation. */
static double plot_value(const struct bench_result *x, double cost, int gbps)
{
	return gbps ? (cost > 0 ? (double)x->bytes / cost : 0) : cost;
}

/* The target in the plotted unit, or 0: a cost, or a ratio to a reference. */
static double plot_target(const struct bench_result *r, size_t n,
			  const struct bench_result *x, int gbps)
{
	size_t i;

	if (x->target > 0 && x->unit == BENCH_NS)
		return plot_value(x, x->target, gbps);
	if (!(x->target_ratio > 0) || !x->ref)
		return 0;
	for (i = 0; i < n; i++)
		if (r[i].status == BENCH_OK && !strcmp(r[i].suite, x->suite) &&
		    !strcmp(r[i].name, x->ref) && r[i].st.median > 0)
			/* "<= 0.9x the reference's cost": GB/s of 1/0.9 x. */
			return gbps ? plot_value(&r[i], r[i].st.median, 1) / x->target_ratio :
			       r[i].st.median * x->target_ratio;
	return 0;
}

/*
 * One question of a suite: a bar per case (median; whiskers min..max),
 * in GB/s when every case moves bytes (higher is better), else in
 * cost per operation on a log scale; targets as red marks, peers grey.
 */
static int plot_question(const char *dir, const struct bench_header *h,
			 const struct bench_result *r, size_t n, const char *suite,
			 int group)
{
	char dat[4096], gp[4096], base[512];
	const char *unit = "ns";
	size_t i, rows = 0, longest = 4;
	int term, gbps = 1;
	FILE *f;

	for (i = 0; i < n; i++) {
		if (strcmp(r[i].suite, suite) || r[i].status != BENCH_OK ||
		    plot_group_of(suite, r[i].name) != group)
			continue;
		rows++;
		unit = bench_unit_name(r[i].unit);
		if (!r[i].bytes || r[i].unit != BENCH_NS)
			gbps = 0;
		if (strlen(r[i].name) > longest)
			longest = strlen(r[i].name);
	}
	if (!rows)
		return 0;
	if (group < 0)
		snprintf(base, sizeof(base), "%s/%s", dir, suite);
	else
		snprintf(base, sizeof(base), "%s/%s-%.*s", dir, suite,
			 (int)strcspn(plot_groups[group].prefix, "/"), plot_groups[group].prefix);
	snprintf(dat, sizeof(dat), "%s.dat", base);
	snprintf(gp, sizeof(gp), "%s.gp", base);
	f = fopen(dat, "w");
	if (!f)
		return -errno;
	fprintf(f, "# case value low high target peer (%s)\n", gbps ? "GB/s" : unit);
	for (i = 0; i < n; i++) {
		const struct bench_result *x = &r[i];
		char target[32] = "NaN";
		double t;

		if (strcmp(x->suite, suite) || x->status != BENCH_OK ||
		    plot_group_of(suite, x->name) != group)
			continue;
		t = plot_target(r, n, x, gbps);
		if (t > 0)
			snprintf(target, sizeof(target), "%g", t);
		fprintf(f, "\"%s\" %g %g %g %s %d\n", x->name,
			plot_value(x, x->st.median, gbps),
			plot_value(x, gbps ? x->st.max : x->st.min, gbps),
			plot_value(x, gbps ? x->st.min : x->st.max, gbps),
			target, is_peer(x->name) ? 1 : 0);
	}
	if (fclose(f))
		return -errno;
	f = fopen(gp, "w");
	if (!f)
		return -errno;
	for (term = 0; term < 2; term++) {
		fprintf(f, "set terminal %s size %zu,%zu\n", term ? "pngcairo" : "svg",
			rows < 12 ? (size_t)760 : 280 + rows * 42, 420 + longest * 6);
		fprintf(f, "set output '%s.%s'\n", base, term ? "png" : "svg");
		fprintf(f, "set title \"tio-bench %s%s%s: %s (%s, %s)\" noenhanced\n", suite,
			group < 0 ? "" : ", ", group < 0 ? "" : plot_groups[group].question,
			gbps ? "GB/s, higher is better" : "cost per operation, lower is better",
			h->mode, h->date);
		fputs("set style fill solid 0.6 border -1\n"
		      "set boxwidth 0.7\n"
		      "set grid ytics\n"
		      "set key top left noenhanced\n"
		      "set xtics rotate by -45 noenhanced\n", f);
		/* Room for the longest label, rotated 45 degrees: none is clipped. */
		fprintf(f, "set lmargin 12\nset bmargin %zu\nset rmargin %zu\n",
			2 + longest * 4 / 10, 4 + longest * 6 / 10);
		fprintf(f, "set offsets 0.5, 0.5, 0, 0\n");
		if (gbps)
			fputs("set ylabel 'GB/s, median (whiskers: all samples)'\n"
			      "set yrange [0:*]\n", f);
		else
			fprintf(f, "set logscale y\nset ylabel '%s/op, median (log)'\n", unit);
		fprintf(f, "plot '%s' using 0:($6 != 0 ? NaN : $2):xtic(1) with boxes lc rgb '#4a78b5' title 'tensorio', "
			"'' using 0:($6 != 0 ? $2 : NaN) with boxes lc rgb '#999999' title 'peer', "
			"'' using 0:2:3:4 with yerrorbars lc rgb 'black' pt 0 notitle, "
			"'' using 0:5 with points pt 2 ps 2 lw 2 lc rgb 'red' title 'target'\n",
			dat);
	}
	if (fclose(f))
		return -errno;
	return run_gnuplot(gp);
}

/* A suite: its questions, each its own plot. */
static int plot_suite(const char *dir, const struct bench_header *h,
		      const struct bench_result *r, size_t n, const char *suite)
{
	int g, err;

	for (g = -1; g < (int)NGROUPS; g++) {
		err = plot_question(dir, h, r, n, suite, g);
		if (err)
			return err;
	}
	return 0;
}

/**
 * bench_write_plots() - SVG and PNG charts, one per question, via gnuplot
 * @dir: output directory (created)
 * @h: run header
 * @r: results
 * @n: how many
 *
 * Return: 0 or -errno (-ENOENT: gnuplot is not installed).
 */
int bench_write_plots(const char *dir, const struct bench_header *h,
		      const struct bench_result *r, size_t n)
{
	size_t i, j;
	int err;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(r[j].suite, r[i].suite))
				break;
		if (j < i)
			continue;
		err = plot_suite(dir, h, r, n, r[i].suite);
		if (err)
			return err;
	}
	return 0;
}
