// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Pictures of runs through gnuplot: a bar chart per question of a suite,
 * and the overhead suite's cost per command against batch size, one line
 * per way into the kernel (plot_batch.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/**
 * bench_gnuplot() - run gnuplot on a script
 * @script: its path
 *
 * Return: 0, -ENOENT when gnuplot is not installed, or -EIO.
 */
int bench_gnuplot(const char *script)
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

/* The target in the plotted unit (the limit of a judged goal), or 0. */
static double plot_target(const struct bench_result *x, int gbps)
{
	if (x->goal.verdict != BENCH_T_MET && x->goal.verdict != BENCH_T_MISSED)
		return 0;
	return plot_value(x, x->goal.limit, gbps);
}

/*
 * One question of a suite: a bar per case (median; whiskers min..max),
 * in GB/s when every case moves bytes (higher is better), else in
 * cost per operation on a log scale; targets as red marks, peers grey.
 */
static int plot_question(const char *dir, const char *prefix, const struct bench_header *h,
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
		snprintf(base, sizeof(base), "%s/%s%s%s", dir, prefix ? prefix : "",
			 prefix ? "-" : "", suite);
	else
		snprintf(base, sizeof(base), "%s/%s%s%s-%.*s", dir, prefix ? prefix : "",
			 prefix ? "-" : "", suite,
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
		t = plot_target(x, gbps);
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
	return bench_gnuplot(gp);
}

/* A suite: its questions, each its own plot. */
static int plot_suite(const char *dir, const char *prefix, const struct bench_header *h,
		      const struct bench_result *r, size_t n, const char *suite)
{
	int g, err;

	for (g = -1; g < (int)NGROUPS; g++) {
		err = plot_question(dir, prefix, h, r, n, suite, g);
		if (err)
			return err;
	}
	return 0;
}

/**
 * bench_write_plots() - SVG and PNG charts, one per question, via gnuplot
 * @dir: output directory (created)
 * @prefix: the files' names start with "PREFIX-" (one of several runs),
 *	    NULL: with the suite's name
 * @h: run header
 * @r: results, judged (targets are drawn)
 * @n: how many
 *
 * Return: 0 or -errno (-ENOENT: gnuplot is not installed).
 */
int bench_write_plots(const char *dir, const char *prefix, const struct bench_header *h,
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
		err = plot_suite(dir, prefix, h, r, n, r[i].suite);
		if (err)
			return err;
	}
	return 0;
}
