// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The overhead suite's picture: for each operation, its cost per command
 * against batch size, one line per way into the kernel (ioctl, uring_cmd,
 * the payload in the SQE, SUBMIT, the command ring, the library), beside
 * the user backend doing the same in userspace and the syscall floor.
 * Every line comes from runs in one unit (the icount VM's instructions).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

static const struct {
	const char *kind, *title;
} kinds[] = {
	{ "info", "INFO, the driver's no-op" },
	{ "buf4k", "a 4 KiB BUF_ALLOC + BUF_FREE" },
	{ "fence", "FENCE_EMIT + FENCE_SIGNAL" },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/*
 * The lines: rows KIND/PATH/bN (or KIND/PATH alone, drawn flat across
 * every batch size when @flat), from the kernel run or the user one.
 */
static const struct series {
	const char *path, *title, *style;
	int flat, user;
} series[] = {
	{ "ioctl", "ioctl, one command per syscall", "lc rgb 'black' dt 2 lw 2", 1, 0 },
	{ "uring", "uring_cmd, one SQE per command", "lc rgb '#1f77b4' pt 7 lw 2", 0, 0 },
	{ "uring-inline", "uring_cmd, payload in the SQE", "lc rgb '#17becf' pt 5 lw 2", 0, 0 },
	{ "submit", "SUBMIT vector, by ioctl", "lc rgb '#ff7f0e' pt 9 lw 2", 0, 0 },
	{ "submit-uring", "SUBMIT vector, in one uring_cmd", "lc rgb '#8c564b' pt 11 lw 2", 0, 0 },
	{ "ring", "command ring, RING_ENTER ioctl", "lc rgb '#2ca02c' pt 13 lw 3", 0, 0 },
	{ "ring-uring", "command ring, entered by uring_cmd", "lc rgb '#bcbd22' pt 15 ps 2 lw 2", 0, 0 },
	{ "lib", "libtensorio call, kernel backend", "lc rgb '#9467bd' pt 4 ps 2 lw 2", 0, 0 },
	{ "lib/ring", "libtensorio tio_batch, ring mode", "lc rgb '#e377c2' pt 6 ps 2 lw 2", 0, 0 },
	{ "lib/vectored", "libtensorio tio_batch, vectored mode", "lc rgb '#7f7f7f' pt 8 ps 2 lw 2", 0, 0 },
	{ "lib", "libtensorio call, user backend (no kernel)", "lc rgb '#d62728' dt 4 lw 3", 1, 1 },
};

#define NSERIES (sizeof(series) / sizeof(series[0]))

static const unsigned int batches[] = { 1, 4, 16, 64, 256 };

/* A run's median for @name, or 0. */
static double median_of(const struct bench_runset *s, const char *name)
{
	size_t i;

	for (i = 0; s && i < s->n; i++)
		if (s->r[i].status == BENCH_OK && !strcmp(s->r[i].suite, "overhead") &&
		    !strcmp(s->r[i].name, name))
			return s->r[i].st.median;
	return 0;
}

static int is_user(const struct bench_runset *s)
{
	return !strncmp(s->h->backend, "user", 4);
}

/* One line's points: 0 when it has none. */
static size_t write_series(FILE *f, const struct bench_runset *run, const char *kind,
			   const struct series *sr)
{
	char name[128];
	size_t i, pts = 0;
	double y;

	if (sr->flat || !strcmp(sr->path, "lib")) {
		snprintf(name, sizeof(name), "%s/%s", kind, sr->path);
		y = median_of(run, name);
		if (!(y > 0))
			return 0;
		fprintf(f, "1 %g\n", y);
		if (sr->flat)
			fprintf(f, "256 %g\n", y);
		return 1;
	}
	for (i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		snprintf(name, sizeof(name), "%s/%s/b%u", kind, sr->path, batches[i]);
		y = median_of(run, name);
		if (y > 0) {
			fprintf(f, "%u %g\n", batches[i], y);
			pts++;
		}
	}
	return pts;
}

/* The kernel run: the first with an ioctl row; the user run: the first on the user backend. */
static void pick_runs(const struct bench_runset *s, size_t ns,
		      const struct bench_runset **kern, const struct bench_runset **user)
{
	size_t i;

	*kern = *user = NULL;
	for (i = 0; i < ns && !*kern; i++)
		if (!is_user(&s[i]) && median_of(&s[i], "info/ioctl") > 0)
			*kern = &s[i];
	for (i = 0; *kern && i < ns && !*user; i++)
		if (is_user(&s[i]) && s[i].h->unit == (*kern)->h->unit &&
		    median_of(&s[i], "info/lib") > 0)
			*user = &s[i];
}

static void write_gp_head(FILE *f, const char *base, const struct bench_header *h)
{
	fprintf(f, "set terminal pngcairo noenhanced size 1500,1100 font ',11'\n"
		"set output '%s.png'\n"
		"set multiplot layout 2,2 title \"tio-bench overhead: cost per command against batch "
		"size, by way into the kernel\\n%s; %s; commit %s, %s\" noenhanced\n"
		"set logscale xy\nset xrange [0.8:320]\nset xtics (1, 4, 16, 64, 256)\n"
		"set grid xtics ytics mytics\nset key off\n"
		"set xlabel 'batch size (commands per kernel entry)'\n"
		"set ylabel '%s per command (log scale)'\n", base, h->mode, h->kernel,
		h->commit, h->date, bench_unit_name(h->unit));
}

/**
 * bench_write_batch_plot() - the overhead suite's picture, PATH.png
 * @base: the picture's path less ".png"; BASE.dat and BASE.gp are kept
 * @s: runs: the first with the kernel's overhead rows is drawn, beside
 *     the first user-backend run in the same unit
 * @ns: how many
 *
 * Return: 0 (also when no run has the rows: nothing is drawn), or -errno
 * (-ENOENT: gnuplot is not installed).
 */
int bench_write_batch_plot(const char *base, const struct bench_runset *s, size_t ns)
{
	const struct bench_runset *kern, *user;
	int index[NKINDS][NSERIES];
	char dat[4096], gp[4096];
	size_t k, i, blocks = 0;
	double floor_y;
	FILE *f;

	pick_runs(s, ns, &kern, &user);
	if (!kern)
		return 0;
	snprintf(dat, sizeof(dat), "%s.dat", base);
	snprintf(gp, sizeof(gp), "%s.gp", base);
	f = fopen(dat, "w");
	if (!f)
		return -errno;
	for (k = 0; k < NKINDS; k++) {
		for (i = 0; i < NSERIES; i++) {
			fprintf(f, "# %s %s%s\n", kinds[k].kind, series[i].path,
				series[i].user ? " (user backend)" : "");
			index[k][i] = write_series(f, series[i].user ? user : kern,
						   kinds[k].kind, &series[i]) ? (int)blocks : -1;
			if (index[k][i] < 0)
				fputs("1 NaN\n", f);
			fputs("\n\n", f);
			blocks++;
		}
	}
	if (fclose(f))
		return -errno;
	floor_y = median_of(kern, "sys/getppid");
	f = fopen(gp, "w");
	if (!f)
		return -errno;
	write_gp_head(f, base, kern->h);
	for (k = 0; k < NKINDS; k++) {
		const char *sep = "plot ";

		fprintf(f, "set title \"%s\"\n", kinds[k].title);
		for (i = 0; i < NSERIES; i++) {
			if (index[k][i] < 0)
				continue;
			fprintf(f, "%s'%s' index %d using 1:2 with %s %s notitle", sep, dat,
				index[k][i], series[i].flat ? "lines" : "linespoints",
				series[i].style);
			sep = ", \\\n     ";
		}
		if (floor_y > 0)
			fprintf(f, "%s%g with lines lc rgb '#aaaaaa' dt 3 lw 2 notitle", sep,
				floor_y);
		fputc('\n', f);
	}
	/* The fourth panel: the legend alone. */
	fputs("unset title\nunset xlabel\nunset ylabel\nunset border\nunset tics\n"
	      "unset grid\nunset logscale\nset xrange [0:1]\nset yrange [0:1]\n"
	      "set key center center box Left reverse spacing 1.4 width 2\n", f);
	fputs("plot ", f);
	for (i = 0; i < NSERIES; i++)
		fprintf(f, "NaN with %s %s title \"%s\", \\\n     ",
			series[i].flat ? "lines" : "linespoints", series[i].style,
			series[i].title);
	fputs("NaN with lines lc rgb '#aaaaaa' dt 3 lw 2 title 'getppid(), the syscall floor'\n"
	      "unset multiplot\n", f);
	if (fclose(f))
		return -errno;
	return bench_gnuplot(gp);
}
