// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics of per-operation costs, and the baseline verdict. Pure
 * functions, unit-tested by tests/bench/test_bench_stats.c.
 */
#include <math.h>
#include <stdlib.h>

#include "bench.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/**
 * bench_percentile() - a percentile of sorted samples
 * @sorted: samples in ascending order
 * @n: how many (0 gives 0)
 * @p: percentile, 0..100
 *
 * Linear interpolation between the closest ranks: rank = p/100 * (n - 1),
 * the definition of numpy's default and of Excel's PERCENTILE.INC.
 *
 * Return: the percentile.
 */
double bench_percentile(const double *sorted, size_t n, double p)
{
	double rank, frac;
	size_t lo;

	if (!n)
		return 0;
	if (p <= 0)
		return sorted[0];
	if (p >= 100)
		return sorted[n - 1];
	rank = p / 100.0 * (double)(n - 1);
	lo = (size_t)rank;
	frac = rank - (double)lo;
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

/**
 * bench_stats_compute() - summarise samples
 * @v: samples; sorted in place
 * @n: how many
 * @st: filled in (all zero for n == 0)
 */
void bench_stats_compute(double *v, size_t n, struct bench_stats *st)
{
	double sum = 0, sq = 0;
	size_t i;

	*st = (struct bench_stats){ .n = n };
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	st->mean = sum / (double)n;
	for (i = 0; i < n; i++)
		sq += (v[i] - st->mean) * (v[i] - st->mean);
	st->std = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	st->min = v[0];
	st->max = v[n - 1];
	st->median = bench_percentile(v, n, 50);
	st->p99 = bench_percentile(v, n, 99);
}

/**
 * bench_verdict_of() - compare a figure with its baseline (lower is better)
 * @base: the baseline's median, > 0
 * @cur: this run's median
 * @pct: set to the change in percent (positive: slower)
 *
 * Return: BENCH_FAIL when more than BENCH_FAIL_PCT slower, BENCH_WARN when
 * more than BENCH_WARN_PCT slower, BENCH_NEW when @base is not usable,
 * else BENCH_SAME (faster is never a regression).
 */
enum bench_verdict bench_verdict_of(double base, double cur, double *pct)
{
	double d;

	if (!(base > 0) || !isfinite(base) || !isfinite(cur)) {
		*pct = 0;
		return BENCH_NEW;
	}
	d = (cur - base) / base * 100.0;
	*pct = d;
	if (d > BENCH_FAIL_PCT)
		return BENCH_FAIL;
	if (d > BENCH_WARN_PCT)
		return BENCH_WARN;
	return BENCH_SAME;
}

const char *bench_unit_name(enum bench_unit u)
{
	return u == BENCH_INSN ? "insn" : "ns";
}
