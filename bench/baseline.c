// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Baselines: a saved run (the bench_write_json() format, read back with
 * json-c) against which a later run's medians are compared, case by case.
 * More than 5 % slower warns, more than 10 % slower fails.
 */
#include <errno.h>
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
 * @r: this run's results
 * @n: how many
 * @out: where to print one line per compared case and a summary (or NULL)
 *
 * Cases are matched by suite, name and unit; medians are compared.
 *
 * Return: the worst verdict (BENCH_SAME, BENCH_WARN, BENCH_FAIL; BENCH_NEW
 * counts as BENCH_SAME), or -errno when the file cannot be read or is not
 * a tio-bench result (-EINVAL).
 */
int bench_baseline_compare(const char *path, const struct bench_result *r,
			   size_t n, FILE *out)
{
	struct json_object *root, *results;
	unsigned int counts[4] = { 0 };
	int worst = BENCH_SAME;
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
		fprintf(out, "\n== baseline %s (median per case; > %.0f%% slower "
			"warns, > %.0f%% fails)\n", path, BENCH_WARN_PCT,
			BENCH_FAIL_PCT);
	for (i = 0; i < n; i++) {
		const struct bench_result *x = &r[i];
		struct json_object *e;
		enum bench_verdict v;
		double base = 0, pct = 0;
		static const char *const tag[] = { "ok", "new", "WARN", "FAIL" };

		if (x->status != BENCH_OK)
			continue;
		e = lookup(results, x);
		if (!e || num_of(e, "median", &base))
			v = BENCH_NEW;
		else
			v = bench_verdict_of(base, x->st.median, &pct);
		counts[v]++;
		if (v != BENCH_NEW && (int)v > worst)
			worst = v;
		if (!out)
			continue;
		if (v == BENCH_NEW)
			fprintf(out, "%-4s %s/%s: not in the baseline\n", tag[v],
				x->suite, x->name);
		else
			fprintf(out, "%-4s %s/%s: %.4g -> %.4g %s/op (%+.1f%%)\n",
				tag[v], x->suite, x->name, base, x->st.median,
				bench_unit_name(x->unit), pct);
	}
	if (out)
		fprintf(out, "baseline: %u same or faster, %u warnings, %u "
			"failures, %u new\n", counts[BENCH_SAME],
			counts[BENCH_WARN], counts[BENCH_FAIL], counts[BENCH_NEW]);
	json_object_put(root);
	return worst;
}
