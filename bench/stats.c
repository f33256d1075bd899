// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics of per-operation costs, and the baseline verdict. Pure
 * functions, unit-tested by tests/bench/test_bench_stats.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* xorshift64*: a fixed-seed generator, so that a comparison is repeatable. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static double resampled_median(const double *v, size_t n, double *tmp, uint64_t *rng)
{
	size_t i;

	for (i = 0; i < n; i++)
		tmp[i] = v[rng_next(rng) % n];
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	return bench_percentile(tmp, n, 50);
}

/**
 * bench_compare() - is this run slower than the baseline, beyond noise?
 * @base: the baseline's per-repeat samples
 * @nb: how many
 * @cur: this run's per-repeat samples
 * @nc: how many
 * @drift: the machine's own change (NULL: none): every @cur sample is
 *	   divided by @drift->scale first, and @drift->noise is taken off
 *	   the lower end of the interval before judging it
 * @cmp: filled in: the change of the medians in percent and its 95 %
 *	 bootstrap confidence interval
 *
 * The change is that of the medians. Its confidence interval comes from
 * BENCH_BOOTSTRAP resamples of both sample sets (with replacement, fixed
 * seed), as Criterion does. The verdict goes by the interval's lower end,
 * the change the samples show with 95 % confidence, less the machine's
 * own variation within the runs (@drift->noise): it warns above
 * BENCH_WARN_PCT and fails above BENCH_FAIL_PCT; a larger median change
 * that resampling the runs' own dispersion reproduces is noise (@cmp->noise
 * set). With fewer than BENCH_MIN_SAMPLES samples on
 * either side nothing can be told from noise: the verdict is BENCH_SAME,
 * with @cmp->too_few set.
 *
 * Return: the verdict (BENCH_NEW when there is nothing to compare).
 */
enum bench_verdict bench_compare(const double *base, size_t nb, const double *cur,
				 size_t nc, const struct bench_drift *drift,
				 struct bench_cmp *cmp)
{
	double *sb, *sc, *tmp, *d, mb, mc, lo;
	uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);
	enum bench_verdict v = BENCH_NEW;
	size_t i, nt = nb > nc ? nb : nc;
	double scale = drift ? drift->scale : 1;
	double noise = drift && drift->noise > 0 ? drift->noise : 0;

	memset(cmp, 0, sizeof(*cmp));
	if (!nb || !nc)
		return BENCH_NEW;
	sb = malloc(nb * sizeof(*sb));
	sc = malloc(nc * sizeof(*sc));
	tmp = malloc(nt * sizeof(*tmp));
	d = malloc(BENCH_BOOTSTRAP * sizeof(*d));
	if (!sb || !sc || !tmp || !d)
		goto out;
	memcpy(sb, base, nb * sizeof(*sb));
	if (!(scale > 0) || !isfinite(scale))
		scale = 1;
	for (i = 0; i < nc; i++)
		sc[i] = cur[i] / scale;
	qsort(sb, nb, sizeof(*sb), cmp_double);
	qsort(sc, nc, sizeof(*sc), cmp_double);
	mb = bench_percentile(sb, nb, 50);
	mc = bench_percentile(sc, nc, 50);
	v = bench_verdict_of(mb, mc, &cmp->pct);
	if (v == BENCH_NEW)
		goto out;
	cmp->lo = cmp->hi = cmp->pct;
	if (nb < BENCH_MIN_SAMPLES || nc < BENCH_MIN_SAMPLES) {
		cmp->too_few = 1;
		v = BENCH_SAME;
		goto out;
	}
	for (i = 0; i < BENCH_BOOTSTRAP; i++) {
		double b = resampled_median(sb, nb, tmp, &rng);
		double c = resampled_median(sc, nc, tmp, &rng);

		d[i] = b > 0 ? (c - b) / b * 100.0 : 0;
	}
	qsort(d, BENCH_BOOTSTRAP, sizeof(*d), cmp_double);
	cmp->lo = bench_percentile(d, BENCH_BOOTSTRAP, 2.5);
	cmp->hi = bench_percentile(d, BENCH_BOOTSTRAP, 97.5);
	/* Judged by the interval's lower end: at least this much slower. */
	v = bench_verdict_of(100, 100 + cmp->lo - noise, &lo);
	cmp->noise = v < bench_verdict_of(mb, mc, &lo);
out:
	free(sb);
	free(sc);
	free(tmp);
	free(d);
	return v;
}

/**
 * bench_t975() - the 97.5th percentile of Student's t distribution
 * @df: degrees of freedom (Welch's are fractional), >= 1
 *
 * Tabled for whole degrees of freedom up to 30, rounding @df down (the
 * wider interval); beyond, 1.96 + 2.4 / df, within 0.005 of the true value.
 *
 * Return: the quantile (12.706 for @df below 1).
 */
double bench_t975(double df)
{
	static const double t[] = {
		12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
		2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
		2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
		2.048, 2.045, 2.042,
	};

	if (!(df >= 1))
		return t[0];
	if (df <= 30)
		return t[(size_t)df - 1];
	return 1.96 + 2.4 / df;
}

/* Mean and sample variance of the logs of @v (all > 0). */
static void log_moments(const double *v, size_t n, double scale, double *mean,
			double *var)
{
	double s = 0, q = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += log(v[i] / scale);
	*mean = s / (double)n;
	for (i = 0; i < n; i++)
		q += (log(v[i] / scale) - *mean) * (log(v[i] / scale) - *mean);
	*var = n > 1 ? q / (double)(n - 1) : 0;
}

/**
 * bench_compare_procs() - is this run slower, beyond process-to-process noise?
 * @base: the baseline's process medians (one per process the case ran in)
 * @nb: how many, >= 2
 * @cur: this run's process medians
 * @nc: how many, >= 2
 * @drift: as for bench_compare(): @cur is divided by @drift->scale first
 *	   and @drift->noise is taken off before judging
 * @cmp: filled in: @pct the change of the process medians' geometric
 *	 mean, @lo..@hi its 95 % interval, @gap how far this run's lowest
 *	 process median lies above the baseline's highest
 *
 * A case may run at one speed in one process and another in the next
 * (where the process's stack, heap and pages fell): samples within one
 * process cannot show that, process medians do. Each process is one
 * observation. The interval is Welch's t interval for the difference of
 * the mean log process medians (unequal spreads; with 3 a side a spread
 * of a few percent already widens it by a factor 3-4). The verdict is the
 * milder of two: the interval's lower end, and @gap (every process of
 * this run beyond the baseline's whole range), each less @drift->noise,
 * above BENCH_WARN_PCT warns, above BENCH_FAIL_PCT fails. One process in
 * another mode on either side therefore keeps a case clean; a case slower
 * in every process, by more than the processes spread, fails.
 *
 * Return: the verdict (BENCH_NEW when there is nothing to compare).
 */
enum bench_verdict bench_compare_procs(const double *base, size_t nb,
				       const double *cur, size_t nc,
				       const struct bench_drift *drift,
				       struct bench_cmp *cmp)
{
	double scale = drift && drift->scale > 0 && isfinite(drift->scale) ?
		       drift->scale : 1;
	double noise = drift && drift->noise > 0 ? drift->noise : 0;
	double mb, vb, mc, vc, se, df, w, maxb = 0, minc = INFINITY, x;
	enum bench_verdict v, vr;
	size_t i;

	memset(cmp, 0, sizeof(*cmp));
	cmp->procs = 1;
	if (nb < 2 || nc < 2)
		return BENCH_NEW;
	for (i = 0; i < nb; i++) {
		if (!(base[i] > 0) || !isfinite(base[i]))
			return BENCH_NEW;
		if (base[i] > maxb)
			maxb = base[i];
	}
	for (i = 0; i < nc; i++) {
		if (!(cur[i] > 0) || !isfinite(cur[i]))
			return BENCH_NEW;
		if (cur[i] / scale < minc)
			minc = cur[i] / scale;
	}
	log_moments(base, nb, 1, &mb, &vb);
	log_moments(cur, nc, scale, &mc, &vc);
	cmp->pct = (exp(mc - mb) - 1) * 100;
	cmp->gap = (minc / maxb - 1) * 100;
	se = sqrt(vb / (double)nb + vc / (double)nc);
	w = 0;
	if (se > 0) {
		/* Welch-Satterthwaite degrees of freedom. */
		df = se * se * se * se /
		     (vb * vb / ((double)nb * nb * (nb - 1)) +
		      vc * vc / ((double)nc * nc * (nc - 1)));
		w = bench_t975(df) * se;
	}
	cmp->lo = (exp(mc - mb - w) - 1) * 100;
	cmp->hi = (exp(mc - mb + w) - 1) * 100;
	v = bench_verdict_of(100, 100 + cmp->lo - noise, &x);
	vr = bench_verdict_of(100, 100 + cmp->gap - noise, &x);
	if (vr < v)
		v = vr;
	cmp->noise = v < bench_verdict_of(100, 100 + cmp->pct, &x);
	return v;
}

/**
 * bench_ref_scale() - how much slower the machine ran now than for a baseline
 * @base: the baseline run's reference samples
 * @nb: how many
 * @cur: this run's reference samples
 * @nc: how many
 *
 * The ratio of the medians of the two runs' reference workload (a fixed
 * loop, BENCH_REF_ITERS iterations): 3 when the same work took three
 * times as long now.
 *
 * Return: the ratio, or 0 when either run has no usable reference.
 */
double bench_ref_scale(const double *base, size_t nb, const double *cur, size_t nc)
{
	double *v, mb, mc;
	size_t n = nb > nc ? nb : nc;

	if (!nb || !nc)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return 0;
	memcpy(v, base, nb * sizeof(*v));
	qsort(v, nb, sizeof(*v), cmp_double);
	mb = bench_percentile(v, nb, 50);
	memcpy(v, cur, nc * sizeof(*v));
	qsort(v, nc, sizeof(*v), cmp_double);
	mc = bench_percentile(v, nc, 50);
	free(v);
	if (!(mb > 0) || !(mc > 0) || !isfinite(mb) || !isfinite(mc))
		return 0;
	return mc / mb;
}

/**
 * bench_ref_noise() - how much the machine's speed varied within a run
 * @v: the run's reference samples
 * @n: how many
 *
 * Return: their interquartile range in percent of their median; 0 for
 * fewer than 4 samples.
 */
double bench_ref_noise(const double *v, size_t n)
{
	double *s, r = 0, med;

	if (n < 4)
		return 0;
	s = malloc(n * sizeof(*s));
	if (!s)
		return 0;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	med = bench_percentile(s, n, 50);
	if (med > 0)
		r = (bench_percentile(s, n, 75) - bench_percentile(s, n, 25)) /
		    med * 100.0;
	free(s);
	return r;
}

const char *bench_unit_name(enum bench_unit u)
{
	return u == BENCH_INSN ? "insn" : "ns";
}
