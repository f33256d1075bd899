// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a run leaves: its JSON, Markdown and pictures, a baseline saved or
 * compared; and reports of saved runs (--load), their targets (--targets)
 * and the table of targets itself (--list-targets).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner.h"

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

/**
 * bench_check_paths() - every path the run will use, before it runs
 * @o: the options
 *
 * Return: 0, or -1 with the fault said on stderr.
 */
int bench_check_paths(const struct bench_opts *o)
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

/* The run's pictures: each run's bar charts, and the overhead picture. */
static int write_plots(const char *dir, struct bench_runset *s, size_t ns)
{
	char base[4096];
	size_t i;
	int err = 0;

	for (i = 0; i < ns && !err; i++)
		err = bench_write_plots(dir, ns > 1 ? s[i].label : NULL, s[i].h, s[i].r,
					s[i].n);
	snprintf(base, sizeof(base), "%s/overhead-batch", dir);
	return err ? err : bench_write_batch_plot(base, s, ns);
}

/**
 * bench_write_outputs() - what --json, --md, --plot, --save-baseline and
 * --baseline ask for
 * @o: the options (--json and the baselines take one run)
 * @s: the runs, judged
 * @ns: how many
 *
 * Return: 0, or 1 when one could not be written or a baseline comparison
 * failed (said on stderr or stdout).
 */
int bench_write_outputs(const struct bench_opts *o, struct bench_runset *s, size_t ns)
{
	char path[4096];
	int rc = 0, err;

	if (o->json && (err = bench_write_json(o->json, s->h, s->r, s->n))) {
		fprintf(stderr, "tio-bench: %s: %s\n", o->json, strerror(-err));
		rc = 1;
	}
	if (o->md && (err = bench_write_md(o->md, o->title, s, ns))) {
		fprintf(stderr, "tio-bench: %s: %s\n", o->md, strerror(-err));
		rc = 1;
	}
	if (o->plot && (err = write_plots(o->plot, s, ns))) {
		fprintf(stderr, "tio-bench: plots in %s: %s\n", o->plot,
			err == -ENOENT ? "gnuplot not found" : strerror(-err));
		rc = 1;
	}
	if (o->save) {
		err = bench_baseline_path(o->save, path, sizeof(path));
		if (!err)
			err = bench_write_json(path, s->h, s->r, s->n);
		if (err) {
			fprintf(stderr, "tio-bench: baseline %s: %s\n", o->save,
				strerror(-err));
			rc = 1;
		} else {
			printf("baseline saved: %s\n", path);
		}
	}
	if (o->baseline) {
		err = bench_baseline_path(o->baseline, path, sizeof(path));
		if (!err)
			err = bench_baseline_compare(path, s->h, s->r, s->n, stdout);
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
	return rc;
}

/* A saved run's label: its file's name less ".json". */
static char *label_of(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t l;

	b = b ? b + 1 : path;
	l = strlen(b);
	if (l > 5 && !strcmp(b + l - 5, ".json"))
		l -= 5;
	return strndup(b, l);
}

/* One saved run: its header and tables (unless @targets_only), its targets. */
static void report_one(const struct bench_opts *o, const struct bench_runset *s, int several)
{
	size_t i, j;

	if (!o->targets) {
		if (several)
			printf("\n# %s\n", s->label);
		bench_print_header(stdout, s->h, "# ");
		for (i = 0; i < s->n; i++) {
			for (j = 0; j < i; j++)
				if (!strcmp(s->r[j].suite, s->r[i].suite))
					break;
			if (j == i)
				bench_print_table(stdout, s->r, s->n, s->r[i].suite);
		}
	}
	bench_print_targets(stdout, s->r, s->n, several ? s->label : NULL);
}

/**
 * bench_report_loaded() - report saved runs (--load FILE, once or more)
 * @o: the options
 *
 * Each run's tables and targets, then the verdict over all of them;
 * outputs as for a run (--json and the baselines for one run only).
 *
 * Return: the exit code: 0, 1 (a run had a failed row, or an output
 * failed), 2 (bad usage).
 */
int bench_report_loaded(const struct bench_opts *o)
{
	struct bench_header h[BENCH_LOADS_MAX];
	struct bench_runset s[BENCH_LOADS_MAX];
	struct bench_tally t = { 0 };
	int i, k, rc = 0, err;
	size_t j;

	if (o->nload > 1 && (o->json || o->save || o->baseline)) {
		fputs("tio-bench: --json, --save-baseline and --baseline take one --load\n",
		      stderr);
		return 2;
	}
	if (bench_check_paths(o))
		return 2;
	for (i = 0; i < o->nload; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		err = bench_load_json(o->load[i], &h[i], &s[i].r, &s[i].n);
		if (!err && !(s[i].label = label_of(o->load[i]))) {
			bench_results_free(s[i].r, s[i].n);
			bench_header_free(&h[i]);
			err = -ENOMEM;
		}
		if (err) {
			fprintf(stderr, "tio-bench: %s: %s\n", o->load[i],
				err == -EINVAL ? "not a tio-bench result" : strerror(-err));
			rc = 1;
			goto out;
		}
		s[i].h = &h[i];
		bench_targets_judge(s[i].r, s[i].n);
		bench_targets_tally(s[i].r, s[i].n, &t);
		for (j = 0; j < s[i].n; j++)
			if (s[i].r[j].status == BENCH_FAILED)
				rc = 1;
		report_one(o, &s[i], o->nload > 1);
	}
	if (o->targets || t.met + t.missed + t.unjudged)
		bench_print_verdict(stdout, &t);
	if (bench_write_outputs(o, s, (size_t)o->nload))
		rc = 1;
out:
	for (k = 0; k < i; k++) {
		bench_results_free(s[k].r, s[k].n);
		bench_header_free(&h[k]);
		free((char *)s[k].label);
	}
	return rc;
}

/**
 * bench_list_targets() - the table of targets, each checked against the
 * registered cases
 *
 * Return: 0, or 1 when a target names a case (or a row it is relative
 * to) that no suite registers.
 */
int bench_list_targets(void)
{
	const struct bench_target *t;
	const struct bench_case *c;
	struct bench_goal g;
	size_t i, n = bench_targets(&t);
	char text[160], name[160];
	int rc = 0, have, have_ref;

	for (i = 0; i < n; i++) {
		have = 0;
		have_ref = !t[i].against;
		for (c = bench_cases(); c; c = c->next) {
			if (strcmp(c->suite, t[i].suite))
				continue;
			have |= !strcmp(c->name, t[i].name);
			have_ref |= t[i].against && !strcmp(c->name, t[i].against);
		}
		if (bench_goal_set(&g, &t[i], t[i].unit)) {
			perror("tio-bench");
			return 1;
		}
		bench_goal_text(text, sizeof(text), &g, t[i].unit);
		bench_goal_free(&g);
		snprintf(name, sizeof(name), "%s/%s", t[i].suite, t[i].name);
		printf("%-34s %-38s %s%s\n", name, text, t[i].why,
		       !have ? " [NO SUCH CASE]" : !have_ref ? " [NO SUCH REFERENCE ROW]" : "");
		if (!have || !have_ref)
			rc = 1;
	}
	printf("%zu targets\n", n);
	return rc;
}
