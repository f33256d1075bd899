// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Baselines: a saved run (the bench_write_json() format, read back with
 * json-c) against which a later run's medians are compared, case by case,
 * after scaling by the two runs' reference workload, by their process
 * medians where both ran a case in several processes. More than 5 % slower
 * (beyond noise) warns, more than 10 % slower fails.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "bench.h"

/**
 * bench_baseline_path() - where baseline @name lives
 * @name: a bare name (bench/baselines/NAME.json, or $TIO_BENCH_BASELINES/)
 *	  or a path (contains '/' or ends in ".json")
 * @buf: result
 * @len: its size
 *
 * Return: 0 or -ENAMETOOLONG.
 */
int bench_baseline_path(const char *name, char *buf, size_t len)
{
	const char *dir = getenv("TIO_BENCH_BASELINES");
	size_t nl = strlen(name);
	int w;

	if (strchr(name, '/') || (nl > 5 && !strcmp(name + nl - 5, ".json")))
		w = snprintf(buf, len, "%s", name);
	else
		w = snprintf(buf, len, "%s/%s.json", dir && *dir ? dir :
			     "bench/baselines", name);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/**
 * bench_baseline_check() - can @path be compared against? Before any run
 * @path: the baseline file
 * @why: the fault, when there is one
 * @len: room at @why
 *
 * Return: 0, or -1 with @why saying what is wrong with the file.
 */
int bench_baseline_check(const char *path, char *why, size_t len)
{
	struct json_object *root, *results;
	int ok;

	errno = 0;
	root = json_object_from_file(path);
	if (!root) {
		if (errno == ENOENT)
			snprintf(why, len, "no such file (save one first with --save-baseline)");
		else if (errno)
			snprintf(why, len, "%s", strerror(errno));
		else
			snprintf(why, len, "not JSON: %s", json_util_get_last_err() ?
				 json_util_get_last_err() : "parse error");
		return -1;
	}
	ok = json_object_object_get_ex(root, "results", &results) &&
	     json_object_is_type(results, json_type_array);
	json_object_put(root);
	if (!ok) {
		snprintf(why, len, "not a tio-bench result (no \"results\" array)");
		return -1;
	}
	return 0;
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int num_of(struct json_object *o, const char *key, double *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    (!json_object_is_type(v, json_type_double) &&
	     !json_object_is_type(v, json_type_int)))
		return -1;
	*out = json_object_get_double(v);
	return 0;
}

/* An object's array of numbers @key (malloc'd), and how many; 0 for none. */
static size_t numbers_of(struct json_object *e, const char *key, double **out)
{
	struct json_object *a;
	size_t i, n;

	*out = NULL;
	if (!e || !json_object_object_get_ex(e, key, &a) ||
	    !json_object_is_type(a, json_type_array))
		return 0;
	n = json_object_array_length(a);
	*out = n ? malloc(n * sizeof(**out)) : NULL;
	if (!*out)
		return 0;
	for (i = 0; i < n; i++)
		(*out)[i] = json_object_get_double(json_object_array_get_idx(a, i));
	return n;
}

/* An object's "samples" array (malloc'd), and how many; 0 for none. */
static size_t samples_of(struct json_object *e, double **out)
{
	return numbers_of(e, "samples", out);
}

/* A run header's "reference" object, or NULL. */
static struct json_object *reference_of(struct json_object *root)
{
	struct json_object *hdr, *ref;

	if (!json_object_object_get_ex(root, "header", &hdr) ||
	    !json_object_object_get_ex(hdr, "reference", &ref) ||
	    !json_object_is_type(ref, json_type_object))
		return NULL;
	return ref;
}

/*
 * How the machine changed: the ratio of the two runs' reference medians
 * (1 when either lacks a reference, said on @out) and their variation.
 */
static struct bench_drift drift_of(struct json_object *root,
				   const struct bench_header *h, FILE *out)
{
	struct bench_drift d = { .scale = 1 };
	double *bs = NULL, scale, mb, mc, nc;
	size_t nb = samples_of(reference_of(root), &bs);

	scale = h ? bench_ref_scale(bs, nb, h->ref, h->ref_n) : 0;
	if (scale > 0) {
		d.noise = bench_ref_noise(bs, nb);
		nc = bench_ref_noise(h->ref, h->ref_n);
		if (nc > d.noise)
			d.noise = nc;
		/* A drift the loop's own variation could make is not one. */
		if (fabs(scale - 1) * 100 > d.noise)
			d.scale = scale;
	}
	free(bs);
	if (!out)
		return d;
	if (!(scale > 0)) {
		fprintf(out, "reference loop: missing in the %s: figures not scaled\n",
			nb ? "current run" : "baseline");
		return d;
	}
	mc = bench_ref_scale(&(double){ 1 }, 1, h->ref, h->ref_n); /* its median */
	mb = mc / scale;
	fprintf(out, "reference loop (%u multiply-adds, timed between cases): "
		"%.4g -> %.4g %s/iteration, scale %.3f", BENCH_REF_ITERS, mb, mc,
		bench_unit_name(h->unit), scale);
	if (d.scale != 1)
		fputs(": this run's figures are divided by it before comparing", out);
	else
		fputs(": within the loop's own variation, not applied", out);
	fprintf(out, "; the loop varied by %.1f%% (interquartile range), taken "
		"off each interval first\n", d.noise);
	return d;
}

/* The baseline entry for suite/case in the given unit, or NULL. */
static struct json_object *lookup(struct json_object *results,
				  const struct bench_result *x)
{
	size_t i, n = json_object_array_length(results);

	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(results, i);
		const char *s = str_of(e, "suite"), *c = str_of(e, "case");
		const char *st = str_of(e, "status"), *u = str_of(e, "unit");

		if (s && c && st && u && !strcmp(s, x->suite) &&
		    !strcmp(c, x->name) && !strcmp(st, "ok") &&
		    !strcmp(u, bench_unit_name(x->unit)))
			return e;
	}
	return NULL;
}

/**
 * bench_baseline_compare() - compare a run with a saved baseline
 * @path: the baseline file
 * @h: this run's header, with its reference samples (NULL: none)
 * @r: this run's results
 * @n: how many
 * @out: where to print one line per compared case and a summary (or NULL)
 *
 * Cases are matched by suite, name and unit; medians are compared with
 * bench_compare(): only a change beyond the runs' own noise warns or fails.
 * Where both runs ran the case in several processes (process_medians),
 * bench_compare_procs() judges those instead: a process is one
 * observation, so a case that is fast in some processes and slow in
 * others is not read as a change.
 * Before that, this run's samples are divided by the ratio of the two
 * runs' reference medians (bench_ref_scale()), printed as "scale" (and
 * applied only when it differs from 1 by more than the loop varied): a
 * machine uniformly slower than when the baseline was taken does not fail,
 * one case slower than the machine does. How much the reference varied
 * within either run (bench_ref_noise()) is taken off each interval: a
 * change the machine's own unsteadiness could make is not judged one.
 *
 * Return: the worst verdict (BENCH_SAME, BENCH_WARN, BENCH_FAIL; BENCH_NEW
 * counts as BENCH_SAME), or -errno when the file cannot be read or is not
 * a tio-bench result (-EINVAL).
 */
int bench_baseline_compare(const char *path, const struct bench_header *h,
			   const struct bench_result *r, size_t n, FILE *out)
{
	struct json_object *root, *results;
	unsigned int counts[4] = { 0 }, within = 0;
	int worst = BENCH_SAME;
	struct bench_drift drift;
	double scale;
	size_t i;

	errno = 0;
	root = json_object_from_file(path);
	if (!root)
		return errno ? -errno : -EINVAL;
	if (!json_object_object_get_ex(root, "results", &results) ||
	    !json_object_is_type(results, json_type_array)) {
		json_object_put(root);
		return -EINVAL;
	}
	if (out)
		fprintf(out, "\n== baseline %s (median per case; warns when the "
			"95%% interval of the change lies above +%.0f%%, fails "
			"above +%.0f%%; with several processes a side, only when "
			"every process median of this run is also that far beyond "
			"the baseline's)\n", path, BENCH_WARN_PCT, BENCH_FAIL_PCT);
	drift = drift_of(root, h, out);
	scale = drift.scale;
	for (i = 0; i < n; i++) {
		const struct bench_result *x = &r[i];
		struct json_object *e;
		enum bench_verdict v;
		struct bench_cmp cmp;
		double base = 0, *bs = NULL, *bp = NULL;
		size_t nb = 0, nbp = 0, j;
		static const char *const tag[] = { "ok", "new", "WARN", "FAIL" };

		if (x->status != BENCH_OK)
			continue;
		e = lookup(results, x);
		if (!e || num_of(e, "median", &base)) {
			v = BENCH_NEW;
		} else if ((nbp = numbers_of(e, "process_medians", &bp)) >= 2 &&
			   x->np >= 2) {
			v = bench_compare_procs(bp, nbp, x->pmed, x->np, &drift, &cmp);
		} else {
			within += nbp >= 2 || x->np >= 2;
			nb = samples_of(e, &bs);
			if (!nb) {	/* an old baseline: its median only */
				bs = &base;
				nb = 1;
			}
			v = bench_compare(bs, nb, x->samples, x->st.n, &drift, &cmp);
			if (bs != &base)
				free(bs);
		}
		counts[v]++;
		if (v != BENCH_NEW && (int)v > worst)
			worst = v;
		if (!out) {
			free(bp);
			continue;
		}
		if (v == BENCH_NEW) {
			fprintf(out, "%-4s %s/%s: not in the baseline\n", tag[v],
				x->suite, x->name);
			free(bp);
			continue;
		}
		fprintf(out, "%-4s %s/%s: %.4g -> %.4g %s/op", tag[v], x->suite,
			x->name, base, x->st.median, bench_unit_name(x->unit));
		if (scale != 1)
			fprintf(out, " (/ scale %.3f = %.4g", scale,
				x->st.median / scale);
		fprintf(out, "%s%+.1f%%", scale != 1 ? ": " : " (", cmp.pct);
		if (cmp.procs) {
			fprintf(out, " over %zu and %zu processes, 95%% CI %+.1f..%+.1f%%; "
				"process medians", nbp, x->np, cmp.lo, cmp.hi);
			for (j = 0; j < nbp; j++)
				fprintf(out, " %.4g", bp[j]);
			fputs(" ->", out);
			for (j = 0; j < x->np; j++)
				fprintf(out, " %.4g", x->pmed[j]);
			if (cmp.gap < 0)
				fputs(": ranges overlap", out);
			else
				fprintf(out, ": apart by %+.1f%%", cmp.gap);
			fprintf(out, "%s)\n", cmp.noise ? ": within noise" : "");
		} else if (cmp.too_few) {
			fprintf(out, "; %zu and %zu samples: too few to tell from noise)\n",
				nb, x->st.n);
		} else {
			fprintf(out, ", 95%% CI %+.1f..%+.1f%%%s)\n", cmp.lo, cmp.hi,
				cmp.noise ? ": within noise" : "");
		}
		free(bp);
	}
	if (out && within)
		fprintf(out, "%u cases judged on their samples within one process, "
			"which cannot see a case change speed from one process to "
			"the next: one side ran each case in one process (a "
			"tio-bench/1 file, --fast or --procs 1)\n", within);
	if (out)
		fprintf(out, "baseline: %u same or faster, %u warnings, %u "
			"failures, %u new\n", counts[BENCH_SAME],
			counts[BENCH_WARN], counts[BENCH_FAIL], counts[BENCH_NEW]);
	json_object_put(root);
	return worst;
}

static void copy_str(char *dst, size_t len, struct json_object *o,
		     const char *key)
{
	const char *v = str_of(o, key);

	snprintf(dst, len, "%s", v ? v : "");
}

/*
 * The CPU's model and count: their own fields, else from the machine
 * line ("host, model, N cpus").
 */
static void cpu_of(struct json_object *hdr, struct bench_header *h)
{
	const char *p = strchr(h->machine, ','), *q = strrchr(h->machine, ',');
	double v;

	copy_str(h->cpu, sizeof(h->cpu), hdr, "cpu");
	if (!num_of(hdr, "cpus", &v))
		h->cpus = (int)v;
	if (!h->cpu[0] && p && q > p)
		snprintf(h->cpu, sizeof(h->cpu), "%.*s", (int)(q - p - 2), p + 2);
	if (!h->cpus && q)
		h->cpus = atoi(q + 1);
}

/*
 * A result's target: the "target" object, or an older file's target_ns
 * (absolute, host ns) or target_ratio (to its ref). -ENOMEM, else 0.
 */
static int goal_of(struct json_object *e, struct bench_result *x)
{
	struct json_object *t;
	const char *a, *why;
	double v;

	memset(&x->goal, 0, sizeof(x->goal));
	if (json_object_object_get_ex(e, "target", &t) &&
	    json_object_is_type(t, json_type_object)) {
		a = str_of(t, "against");
		why = str_of(t, "why");
		num_of(t, "factor", &x->goal.factor);
		num_of(t, "plus", &x->goal.plus);
	} else if (!num_of(e, "target_ns", &v) && x->unit == BENCH_NS) {
		a = why = NULL;
		x->goal.plus = v;
	} else if (!num_of(e, "target_ratio", &v) && x->ref) {
		a = x->ref;
		why = NULL;
		x->goal.factor = v;
	} else {
		return 0;
	}
	x->goal.set = 1;
	x->goal.against = a ? strdup(a) : NULL;
	x->goal.why = why ? strdup(why) : NULL;
	return (a && !x->goal.against) || (why && !x->goal.why) ? -ENOMEM : 0;
}

/**
 * bench_load_json() - read a saved run back (tio-bench --load)
 * @path: a bench_write_json() file
 * @h: its header (free with bench_header_free())
 * @out: its results (free with bench_results_free())
 * @n: how many
 *
 * Return: 0, or -errno (-EINVAL: not a tio-bench result).
 */
int bench_load_json(const char *path, struct bench_header *h,
		    struct bench_result **out, size_t *n)
{
	struct json_object *root, *results, *hdr, *samples;
	struct bench_result *r;
	size_t i, cnt;
	double v;

	errno = 0;
	root = json_object_from_file(path);
	if (!root)
		return errno ? -errno : -EINVAL;
	if (!json_object_object_get_ex(root, "results", &results) ||
	    !json_object_is_type(results, json_type_array) ||
	    !json_object_object_get_ex(root, "header", &hdr)) {
		json_object_put(root);
		return -EINVAL;
	}
	memset(h, 0, sizeof(*h));
	copy_str(h->machine, sizeof(h->machine), hdr, "machine");
	copy_str(h->kernel, sizeof(h->kernel), hdr, "kernel");
	copy_str(h->backend, sizeof(h->backend), hdr, "backend");
	copy_str(h->compiler, sizeof(h->compiler), hdr, "compiler");
	copy_str(h->commit, sizeof(h->commit), hdr, "commit");
	copy_str(h->date, sizeof(h->date), hdr, "date");
	copy_str(h->mode, sizeof(h->mode), hdr, "mode");
	cpu_of(hdr, h);
	h->unit = str_of(hdr, "unit") && !strcmp(str_of(hdr, "unit"), "insn") ?
		  BENCH_INSN : BENCH_NS;
	if (json_object_object_get_ex(hdr, "fast", &samples))
		h->fast = json_object_get_boolean(samples);
	if (!num_of(hdr, "repeats", &v))
		h->repeats = (int)v;
	if (!num_of(hdr, "procs", &v))
		h->procs = (int)v;
	num_of(hdr, "sample_target", &h->sample_target);
	if (reference_of(root) && !num_of(reference_of(root), "iters", &v))
		h->ref_iters = (uint64_t)v;
	h->ref_n = samples_of(reference_of(root), &h->ref);
	if (!h->ref_n && json_object_object_get_ex(reference_of(root) ?
						   reference_of(root) : hdr,
						   "samples", &samples) &&
	    json_object_array_length(samples)) {
		json_object_put(root);
		return -ENOMEM;
	}
	cnt = json_object_array_length(results);
	r = calloc(cnt ? cnt : 1, sizeof(*r));
	if (!r) {
		bench_header_free(h);
		json_object_put(root);
		return -ENOMEM;
	}
	for (i = 0; i < cnt; i++) {
		struct json_object *e = json_object_array_get_idx(results, i);
		const char *st = str_of(e, "status");
		size_t j, ns;

		r[i].suite = strdup(str_of(e, "suite") ? str_of(e, "suite") : "?");
		r[i].name = strdup(str_of(e, "case") ? str_of(e, "case") : "?");
		r[i].ref = str_of(e, "ref") ? strdup(str_of(e, "ref")) : NULL;
		if (!r[i].suite || !r[i].name || (str_of(e, "ref") && !r[i].ref))
			goto nomem;
		r[i].unit = h->unit;
		r[i].status = st && !strcmp(st, "ok") ? BENCH_OK :
			      st && !strcmp(st, "skipped") ? BENCH_SKIPPED :
			      BENCH_FAILED;
		copy_str(r[i].why, sizeof(r[i].why), e, "reason");
		if (r[i].status != BENCH_OK)
			continue;
		r[i].unit = str_of(e, "unit") && !strcmp(str_of(e, "unit"),
							 "insn") ?
			    BENCH_INSN : BENCH_NS;
		num_of(e, "min", &r[i].st.min);
		num_of(e, "median", &r[i].st.median);
		num_of(e, "mean", &r[i].st.mean);
		num_of(e, "std", &r[i].st.std);
		num_of(e, "p99", &r[i].st.p99);
		num_of(e, "max", &r[i].st.max);
		num_of(e, "allocs_per_op", &r[i].allocs_per_op);
		num_of(e, "ratio", &r[i].ratio);
		if (goal_of(e, &r[i]))
			goto nomem;
		num_of(e, "ops_per_iter", &r[i].ops_per_iter);
		if (!num_of(e, "iters", &v))
			r[i].iters = (uint64_t)v;
		if (!num_of(e, "bytes_per_op", &v))
			r[i].bytes = (uint64_t)v;
		if (json_object_object_get_ex(e, "samples", &samples) &&
		    json_object_is_type(samples, json_type_array)) {
			ns = json_object_array_length(samples);
			r[i].samples = calloc(ns ? ns : 1, sizeof(double));
			if (!r[i].samples)
				goto nomem;
			for (j = 0; j < ns; j++)
				r[i].samples[j] = json_object_get_double(
					json_object_array_get_idx(samples, j));
			r[i].st.n = ns;
		}
		if (json_object_object_get_ex(e, "process_medians", &samples) &&
		    json_object_is_type(samples, json_type_array) &&
		    json_object_array_length(samples) &&
		    !(r[i].np = numbers_of(e, "process_medians", &r[i].pmed)))
			goto nomem;
	}
	json_object_put(root);
	*out = r;
	*n = cnt;
	return 0;
nomem:
	bench_results_free(r, cnt);
	bench_header_free(h);
	json_object_put(root);
	return -ENOMEM;
}

/**
 * bench_results_free() - free results made by run or bench_load_json()
 * @r: the results (NULL is ignored)
 * @n: how many
 */
void bench_results_free(struct bench_result *r, size_t n)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < n; i++) {
		free(r[i].suite);
		free(r[i].name);
		free(r[i].samples);
		free(r[i].pmed);
		free(r[i].ref);
		bench_goal_free(&r[i].goal);
	}
	free(r);
}

/**
 * bench_header_free() - free what a header owns (its reference samples)
 * @h: the header; left with no reference
 */
void bench_header_free(struct bench_header *h)
{
	free(h->ref);
	h->ref = NULL;
	h->ref_n = 0;
}
