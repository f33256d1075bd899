// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The benchmark harness's own arithmetic: statistics of known samples, and
 * the baseline policy (> 5 % slower warns, > 10 % slower fails) through a
 * saved JSON baseline read back with json-c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bench.h"

#include "kselftest_harness.h"

#define NEAR(a, b)	(fabs((a) - (b)) < 1e-9)

TEST(stats_odd_count)
{
	double v[] = { 5, 1, 4, 2, 3 };
	struct bench_stats st;

	bench_stats_compute(v, 5, &st);
	EXPECT_EQ(5, st.n);
	EXPECT_TRUE(NEAR(st.min, 1));
	EXPECT_TRUE(NEAR(st.max, 5));
	EXPECT_TRUE(NEAR(st.median, 3));
	EXPECT_TRUE(NEAR(st.mean, 3));
	/* sample std of 1..5: sqrt(10 / 4) */
	EXPECT_TRUE(NEAR(st.std, sqrt(2.5)));
	/* rank 0.99 * 4 = 3.96: 4 + 0.96 * (5 - 4) */
	EXPECT_TRUE(NEAR(st.p99, 4.96));
	/* sorted in place */
	EXPECT_TRUE(NEAR(v[0], 1) && NEAR(v[4], 5));
}

TEST(stats_even_count_median_is_mean_of_middle)
{
	double v[] = { 10, 40, 20, 30 };
	struct bench_stats st;

	bench_stats_compute(v, 4, &st);
	EXPECT_TRUE(NEAR(st.median, 25));
	EXPECT_TRUE(NEAR(st.mean, 25));
}

TEST(stats_p99_of_1_to_100)
{
	double v[100];
	struct bench_stats st;
	int i;

	for (i = 0; i < 100; i++)
		v[99 - i] = i + 1;
	bench_stats_compute(v, 100, &st);
	/* rank 0.99 * 99 = 98.01: 99 + 0.01 */
	EXPECT_TRUE(NEAR(st.p99, 99.01));
	EXPECT_TRUE(NEAR(st.median, 50.5));
	EXPECT_TRUE(NEAR(bench_percentile(v, 100, 0), 1));
	EXPECT_TRUE(NEAR(bench_percentile(v, 100, 100), 100));
}

TEST(stats_one_and_zero_samples)
{
	double v[] = { 7 };
	struct bench_stats st;

	bench_stats_compute(v, 1, &st);
	EXPECT_TRUE(NEAR(st.min, 7) && NEAR(st.median, 7) && NEAR(st.p99, 7));
	EXPECT_TRUE(NEAR(st.std, 0));
	bench_stats_compute(NULL, 0, &st);
	EXPECT_EQ(0, st.n);
	EXPECT_TRUE(NEAR(st.median, 0));
}

TEST(verdict_thresholds)
{
	double pct;

	EXPECT_EQ(BENCH_FAIL, bench_verdict_of(100, 112, &pct));
	EXPECT_TRUE(NEAR(pct, 12));
	EXPECT_EQ(BENCH_SAME, bench_verdict_of(100, 104, &pct));
	EXPECT_EQ(BENCH_WARN, bench_verdict_of(100, 107, &pct));
	EXPECT_EQ(BENCH_WARN, bench_verdict_of(100, 110, &pct));
	EXPECT_EQ(BENCH_SAME, bench_verdict_of(100, 105, &pct));
	/* faster is never a regression */
	EXPECT_EQ(BENCH_SAME, bench_verdict_of(100, 50, &pct));
	EXPECT_EQ(BENCH_NEW, bench_verdict_of(0, 50, &pct));
}

#define NS 9

/* A case whose NS samples jitter by +-0.4 % around @median. */
static void fake(struct bench_result *r, const char *name, double median,
		 double *sample)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->suite = "overhead";
	r->name = (char *)name;
	r->status = BENCH_OK;
	r->unit = BENCH_INSN;
	r->iters = 1;
	r->ops_per_iter = 1;
	for (i = 0; i < NS; i++)
		sample[i] = median * (1 + 0.001 * ((double)i - 4));
	r->st = (struct bench_stats){ .n = NS, .min = sample[0], .median = median,
				       .mean = median, .p99 = sample[NS - 1],
				       .max = sample[NS - 1] };
	r->samples = sample;
}

FIXTURE(baseline)
{
	char path[64];
	struct bench_header h;
	struct bench_result base[2];
	double s[2][NS];
};

FIXTURE_SETUP(baseline)
{
	int fd;

	strcpy(self->path, "/tmp/tio-bench-test-XXXXXX.json");
	fd = mkstemps(self->path, 5);
	ASSERT_LE(0, fd);
	close(fd);
	memset(&self->h, 0, sizeof(self->h));
	fake(&self->base[0], "info/ioctl", 1000, self->s[0]);
	fake(&self->base[1], "info/uring/b64", 400, self->s[1]);
	ASSERT_EQ(0, bench_write_json(self->path, &self->h, self->base, 2));
}

FIXTURE_TEARDOWN(baseline)
{
	unlink(self->path);
}

TEST_F(baseline, regression_of_12_percent_fails)
{
	struct bench_result cur[2];
	double s[2][NS];

	fake(&cur[0], "info/ioctl", 1120, s[0]);
	fake(&cur[1], "info/uring/b64", 400, s[1]);
	EXPECT_EQ(BENCH_FAIL, bench_baseline_compare(self->path, NULL, cur, 2, NULL));
}

TEST_F(baseline, regression_of_4_percent_passes)
{
	struct bench_result cur[2];
	double s[2][NS];

	fake(&cur[0], "info/ioctl", 1040, s[0]);
	fake(&cur[1], "info/uring/b64", 416, s[1]);
	EXPECT_EQ(BENCH_SAME, bench_baseline_compare(self->path, NULL, cur, 2, NULL));
}

TEST_F(baseline, regression_of_7_percent_warns)
{
	struct bench_result cur[1];
	double s[1][NS];

	fake(&cur[0], "info/uring/b64", 428, s[0]);
	EXPECT_EQ(BENCH_WARN, bench_baseline_compare(self->path, NULL, cur, 1, NULL));
}

TEST_F(baseline, other_unit_or_new_case_is_not_compared)
{
	struct bench_result cur[2];
	double s[2][NS];

	fake(&cur[0], "info/ioctl", 5000, s[0]);
	cur[0].unit = BENCH_NS;
	fake(&cur[1], "info/brand-new", 1, s[1]);
	EXPECT_EQ(BENCH_SAME, bench_baseline_compare(self->path, NULL, cur, 2, NULL));
}

/* --fast: 3 samples a side cannot tell a change from noise. */
TEST_F(baseline, too_few_samples_never_warn_or_fail)
{
	struct bench_result cur[1];
	double s[1][NS];

	fake(&cur[0], "info/ioctl", 1250, s[0]);
	cur[0].st.n = 3;
	EXPECT_EQ(BENCH_SAME, bench_baseline_compare(self->path, NULL, cur, 1, NULL));
}

TEST(compare_noise_is_not_a_change)
{
	/* One distribution, two draws: medians 1.0 and 1.5 (+50 %). */
	double base[] = { 1.0, 1.5, 1.0, 1.5, 1.0, 1.5, 1.0, 1.5, 1.0 };
	double cur[] = { 1.5, 1.0, 1.5, 1.0, 1.5, 1.0, 1.5, 1.0, 1.5 };
	struct bench_cmp c;

	EXPECT_EQ(BENCH_SAME, bench_compare(base, 9, cur, 9, NULL, &c));
	EXPECT_TRUE(NEAR(c.pct, 50));
	EXPECT_TRUE(c.lo <= 0);
	EXPECT_TRUE(c.noise);
	EXPECT_FALSE(c.too_few);
}

TEST(compare_a_real_shift_fails_with_its_interval)
{
	double base[] = { 10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 10.0 };
	double cur[] = { 12.0, 12.1, 11.9, 12.0, 12.2, 11.8, 12.0 };
	struct bench_cmp c, c2;

	EXPECT_EQ(BENCH_FAIL, bench_compare(base, 7, cur, 7, NULL, &c));
	EXPECT_TRUE(NEAR(c.pct, 20));
	EXPECT_TRUE(c.lo > 10 && c.hi < 30);
	/* Repeatable: the resampling has a fixed seed. */
	bench_compare(base, 7, cur, 7, NULL, &c2);
	EXPECT_TRUE(NEAR(c.lo, c2.lo) && NEAR(c.hi, c2.hi));
	/* Faster is never a regression. */
	EXPECT_EQ(BENCH_SAME, bench_compare(cur, 7, base, 7, NULL, &c));
}

TEST_F(baseline, saved_run_loads_back)
{
	struct bench_result *r = NULL;
	struct bench_header h;
	size_t n = 0;

	ASSERT_EQ(0, bench_load_json(self->path, &h, &r, &n));
	ASSERT_EQ(2, n);
	EXPECT_STREQ("overhead", r[1].suite);
	EXPECT_STREQ("info/uring/b64", r[1].name);
	EXPECT_EQ(BENCH_OK, r[1].status);
	EXPECT_EQ(BENCH_INSN, r[1].unit);
	EXPECT_TRUE(NEAR(r[1].st.median, 400));
	ASSERT_EQ(NS, r[1].st.n);
	EXPECT_TRUE(NEAR(r[1].samples[4], 400));
	bench_results_free(r, n);
}

TEST(baseline_missing_or_garbage_file_is_an_error)
{
	char path[] = "/tmp/tio-bench-test-XXXXXX";
	struct bench_result cur[1], *r = NULL;
	struct bench_header h;
	size_t n = 0;
	double s[1][NS];
	FILE *f;
	int fd;

	fake(&cur[0], "info/ioctl", 1, s[0]);
	EXPECT_GT(0, bench_baseline_compare("/nonexistent/x.json", NULL, cur, 1, NULL));
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	f = fdopen(fd, "w");
	ASSERT_NE(NULL, f);
	fputs("{\"results\": 3}", f);
	fclose(f);
	EXPECT_EQ(-EINVAL, bench_baseline_compare(path, NULL, cur, 1, NULL));
	EXPECT_EQ(-EINVAL, bench_load_json(path, &h, &r, &n));
	EXPECT_EQ(NULL, r);
	unlink(path);
}

TEST(baseline_names_and_paths)
{
	char buf[256];

	unsetenv("TIO_BENCH_BASELINES");
	ASSERT_EQ(0, bench_baseline_path("main", buf, sizeof(buf)));
	EXPECT_STREQ("bench/baselines/main.json", buf);
	ASSERT_EQ(0, bench_baseline_path("/tmp/x.json", buf, sizeof(buf)));
	EXPECT_STREQ("/tmp/x.json", buf);
	EXPECT_EQ(-ENAMETOOLONG, bench_baseline_path("main", buf, 8));
}

/*
 * Machine drift: synthetic runs with a reference loop, compared through a
 * saved baseline. No timing is taken; every figure is made up here.
 */
#define DN 12

/* @n samples around @median, spread +-@jit (fraction) in a fixed pattern. */
static void spread(double *v, size_t n, double median, double jit, size_t rot)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = median * (1 + jit * ((double)((i + rot) % n) /
					    (double)(n - 1) * 2 - 1));
}

struct drift_run {
	struct bench_header h;
	struct bench_result r[3];
	double s[3][DN], ref[DN], pm[3][3];
};

/*
 * As if every case ran in 3 processes: process medians around the case's
 * median, spread by half its sample jitter, in an order set by @rot.
 */
static void drift_procs(struct drift_run *d, size_t rot)
{
	static const double jit[] = { 0.02, 0.02, 0.2 };
	int i, k;

	d->h.procs = 3;
	for (i = 0; i < 3; i++) {
		for (k = 0; k < 3; k++)
			d->pm[i][k] = d->r[i].st.median *
				      (1 + jit[i] / 2 * ((double)((k + rot) % 3) - 1));
		d->r[i].pmed = d->pm[i];
		d->r[i].np = 3;
	}
}

/* Three cases (one of 1.2 ns that jitters by 20 %), times @f, case @slow
 * times @sf more; the reference loop times @rf. @rot reorders samples. */
static void drift_run(struct drift_run *d, double f, int slow, double sf,
		      double rf, size_t rot)
{
	static const char *const names[] = { "a/ioctl", "b/uring", "c/tiny" };
	static const double med[] = { 1000, 400, 1.2 }, jit[] = { 0.02, 0.02, 0.2 };
	int i;

	memset(d, 0, sizeof(*d));
	d->h.unit = BENCH_NS;
	d->h.fast = 1;
	d->h.repeats = DN;
	d->h.sample_target = BENCH_FAST_SAMPLE;
	d->h.ref_iters = BENCH_REF_ITERS;
	spread(d->ref, DN, 1.3 * rf, 0.01, rot);
	d->h.ref = d->ref;
	d->h.ref_n = DN;
	for (i = 0; i < 3; i++) {
		struct bench_result *r = &d->r[i];
		double m = med[i] * f * (i == slow ? sf : 1), tmp[DN];

		spread(d->s[i], DN, m, jit[i], rot);
		r->suite = "overhead";
		r->name = (char *)names[i];
		r->status = BENCH_OK;
		r->unit = BENCH_NS;
		r->iters = 1;
		r->ops_per_iter = 1;
		r->samples = d->s[i];
		memcpy(tmp, d->s[i], sizeof(tmp));
		bench_stats_compute(tmp, DN, &r->st);
	}
}

/* Compare @cur with @base saved as JSON; the report lines into @out. */
static int drift_compare(struct drift_run *base, struct drift_run *cur,
			 int with_ref, char **out)
{
	char path[] = "/tmp/tio-bench-drift-XXXXXX.json";
	size_t len;
	FILE *f;
	int fd, v;

	fd = mkstemps(path, 5);
	if (fd < 0)
		return -100;
	close(fd);
	if (bench_write_json(path, &base->h, base->r, 3)) {
		unlink(path);
		return -101;
	}
	f = open_memstream(out, &len);
	if (!f) {
		unlink(path);
		return -102;
	}
	v = bench_baseline_compare(path, with_ref ? &cur->h : NULL, cur->r, 3, f);
	fclose(f);
	unlink(path);
	return v;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay++;
	}
	return n;
}

/*
 * The three policies hold for one process a side (samples judged) and for
 * 3 processes a side (process medians judged): PROCS runs each both ways.
 */
#define PROCS(p)	for (p = 0; p < 2; p++)

/* Both runs as if in 3 processes when @p (after drift_run()). */
static void maybe_procs(struct drift_run *base, struct drift_run *cur, int p,
			size_t rot)
{
	if (!p)
		return;
	drift_procs(base, 0);
	drift_procs(cur, rot);
}

TEST(drift_identical_distributions_compare_clean)
{
	struct drift_run base, cur;
	char *out = NULL;
	int p;

	PROCS(p) {
		drift_run(&base, 1, -1, 1, 1, 0);
		drift_run(&cur, 1, -1, 1, 1, 5);	/* same values, another order */
		maybe_procs(&base, &cur, p, 1);
		EXPECT_EQ(BENCH_SAME, drift_compare(&base, &cur, 1, &out));
		ASSERT_NE(NULL, out);
		EXPECT_EQ(0, count(out, "WARN ") + count(out, "FAIL "));
		EXPECT_NE(NULL, strstr(out, "3 same or faster, 0 warnings, 0 failures"));
		EXPECT_NE(NULL, strstr(out, "scale 1.000"));
		EXPECT_EQ(NULL, strstr(out, "too few"));
		EXPECT_EQ(p ? 3 : 0, count(out, "over 3 and 3 processes"));
		EXPECT_EQ(NULL, strstr(out, "within one process"));
		free(out);
	}
}

TEST(drift_uniform_3x_slowdown_with_the_reference_is_clean)
{
	struct drift_run base, cur;
	char *out = NULL;
	int p;

	PROCS(p) {
		drift_run(&base, 1, -1, 1, 1, 0);
		drift_run(&cur, 3, -1, 1, 3, 3);
		maybe_procs(&base, &cur, p, 2);
		EXPECT_EQ(BENCH_SAME, drift_compare(&base, &cur, 1, &out));
		ASSERT_NE(NULL, out);
		EXPECT_EQ(0, count(out, "WARN ") + count(out, "FAIL "));
		EXPECT_NE(NULL, strstr(out, "scale 3.000: this run's figures are divided by it"));
		EXPECT_NE(NULL, strstr(out, "/ scale 3.000 = "));
		EXPECT_EQ(p ? 3 : 0, count(out, "over 3 and 3 processes"));
		free(out);
		/* Without this run's reference nothing is scaled: all three fail. */
		EXPECT_EQ(BENCH_FAIL, drift_compare(&base, &cur, 0, &out));
		ASSERT_NE(NULL, out);
		EXPECT_EQ(3, count(out, "FAIL "));
		EXPECT_NE(NULL, strstr(out, "missing in the current run: figures not scaled"));
		free(out);
	}
}

TEST(drift_one_case_30_percent_slower_fails_alone)
{
	struct drift_run base, cur;
	char *out = NULL;
	int p;

	PROCS(p) {
		drift_run(&base, 1, -1, 1, 1, 0);
		drift_run(&cur, 1, 1, 1.3, 1, 2);
		maybe_procs(&base, &cur, p, 1);
		EXPECT_EQ(BENCH_FAIL, drift_compare(&base, &cur, 1, &out));
		ASSERT_NE(NULL, out);
		EXPECT_EQ(1, count(out, "FAIL "));
		EXPECT_NE(NULL, strstr(out, "FAIL overhead/b/uring: 400 -> 520 ns/op"));
		EXPECT_NE(NULL, strstr(out, "2 same or faster, 0 warnings, 1 failures"));
		EXPECT_EQ(p ? 3 : 0, count(out, "over 3 and 3 processes"));
		free(out);
		/* ... and still fails when the whole machine is also 3x slower. */
		drift_run(&cur, 3, 1, 1.3, 3, 2);
		maybe_procs(&base, &cur, p, 2);
		EXPECT_EQ(BENCH_FAIL, drift_compare(&base, &cur, 1, &out));
		ASSERT_NE(NULL, out);
		EXPECT_EQ(1, count(out, "FAIL "));
		EXPECT_NE(NULL, strstr(out, "FAIL overhead/b/uring: "));
		free(out);
	}
}

/* A baseline without process medians (tio-bench/1) is judged on its samples. */
TEST(procs_against_an_old_baseline_fall_back_and_say_so)
{
	struct drift_run base, cur;
	char *out = NULL;

	drift_run(&base, 1, -1, 1, 1, 0);
	drift_run(&cur, 1, 1, 1.3, 1, 2);
	drift_procs(&cur, 0);
	EXPECT_EQ(BENCH_FAIL, drift_compare(&base, &cur, 1, &out));
	ASSERT_NE(NULL, out);
	EXPECT_EQ(1, count(out, "FAIL "));
	EXPECT_EQ(0, count(out, "processes, 95%"));
	EXPECT_NE(NULL, strstr(out, "3 cases judged on their samples within one process"));
	free(out);
}

/* A case at 1.52 ns in some processes and 1.8-2.2 in others (measured). */
TEST(procs_one_process_in_another_mode_is_clean)
{
	double base[] = { 1.52, 1.53, 1.52 }, cur[] = { 1.52, 1.84, 2.15 };
	double base2[] = { 1.52, 1.81, 1.53 }, cur2[] = { 1.84, 2.15, 1.52 };
	struct bench_cmp c;

	EXPECT_EQ(BENCH_SAME, bench_compare_procs(base, 3, cur, 3, NULL, &c));
	EXPECT_TRUE(c.procs);
	EXPECT_TRUE(c.pct > 10);
	EXPECT_TRUE(c.gap < 0);
	EXPECT_TRUE(c.noise);
	EXPECT_EQ(BENCH_SAME, bench_compare_procs(base2, 3, cur2, 3, NULL, &c));
	/* Within one process, pooled samples like these would fail. */
	EXPECT_EQ(BENCH_NEW, bench_compare_procs(base, 1, cur, 3, NULL, &c));
}

TEST(procs_slower_in_every_process_fails_with_its_interval)
{
	double base[] = { 10.0, 10.1, 9.9 }, cur[] = { 13.0, 13.1, 12.9 };
	double warn[] = { 10.8, 10.9, 10.7 };
	struct bench_drift busy = { .scale = 1, .noise = 30 };
	struct bench_cmp c;

	EXPECT_EQ(BENCH_FAIL, bench_compare_procs(base, 3, cur, 3, NULL, &c));
	EXPECT_TRUE(fabs(c.pct - 30) < 0.1);
	EXPECT_TRUE(c.lo > 10 && c.hi < 50 && c.lo < c.pct && c.hi > c.pct);
	EXPECT_TRUE(c.gap > 25);
	EXPECT_EQ(BENCH_WARN, bench_compare_procs(base, 3, warn, 3, NULL, &c));
	/* Faster is never a regression; machine noise is taken off. */
	EXPECT_EQ(BENCH_SAME, bench_compare_procs(cur, 3, base, 3, NULL, &c));
	EXPECT_EQ(BENCH_SAME, bench_compare_procs(base, 3, cur, 3, &busy, &c));
}

/* Welch's interval alone would fail this; one process each side overlaps. */
TEST(procs_range_keeps_a_shared_mode_clean)
{
	double base[] = { 10, 10, 10, 10, 10, 10, 10, 12 };
	double cur[] = { 13.5, 13.5, 13.5, 13.5, 13.5, 13.5, 13.5, 11 };
	struct bench_cmp c;

	EXPECT_EQ(BENCH_SAME, bench_compare_procs(base, 8, cur, 8, NULL, &c));
	EXPECT_TRUE(c.lo > BENCH_FAIL_PCT);
	EXPECT_TRUE(c.gap < 0);
}

TEST(t975_table)
{
	EXPECT_TRUE(NEAR(bench_t975(1), 12.706));
	EXPECT_TRUE(NEAR(bench_t975(2.9), 4.303));
	EXPECT_TRUE(NEAR(bench_t975(30), 2.042));
	EXPECT_TRUE(fabs(bench_t975(120) - 1.980) < 0.005);
	EXPECT_TRUE(NEAR(bench_t975(0.5), 12.706));
}

TEST(drift_too_few_samples_are_reported_not_judged)
{
	struct drift_run base, cur;
	char *out = NULL;

	drift_run(&base, 1, -1, 1, 1, 0);
	drift_run(&cur, 1, 0, 1.5, 1, 0);
	cur.r[0].st.n = BENCH_MIN_SAMPLES - 1;
	EXPECT_EQ(BENCH_SAME, drift_compare(&base, &cur, 1, &out));
	ASSERT_NE(NULL, out);
	EXPECT_NE(NULL, strstr(out, "ok   overhead/a/ioctl: 1000 -> "));
	EXPECT_NE(NULL, strstr(out, "12 and 4 samples: too few to tell from noise"));
	free(out);
}

/* The machine varied within the run: a change no larger is not judged. */
TEST(drift_noise_of_the_reference_is_taken_off)
{
	double base[] = { 10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 10.0 };
	double cur[] = { 12.0, 12.1, 11.9, 12.0, 12.2, 11.8, 12.0 };
	struct bench_drift quiet = { .scale = 1, .noise = 1 };
	struct bench_drift busy = { .scale = 1, .noise = 30 };
	double ref[] = { 1, 1, 1.5, 2, 1, 1, 2, 1.5 };
	struct bench_cmp c;

	EXPECT_EQ(BENCH_FAIL, bench_compare(base, 7, cur, 7, &quiet, &c));
	EXPECT_EQ(BENCH_SAME, bench_compare(base, 7, cur, 7, &busy, &c));
	EXPECT_TRUE(c.noise);
	/* sorted 1 1 1 1 1.5 1.5 2 2: p25 (rank 1.75) 1, p75 (rank 5.25)
	 * 1.625, median 1.25: 0.625 / 1.25 */
	EXPECT_TRUE(NEAR(bench_ref_noise(ref, 8), 50));
	EXPECT_TRUE(NEAR(bench_ref_noise(ref, 3), 0));
	EXPECT_TRUE(NEAR(bench_ref_scale(ref, 8, ref, 8), 1));
	EXPECT_TRUE(NEAR(bench_ref_scale(ref, 0, ref, 8), 0));
}

TEST(json_header_records_fast_repeats_samples_and_reference)
{
	char path[] = "/tmp/tio-bench-hdr-XXXXXX.json";
	struct json_object *root, *hdr, *ref, *v;
	struct bench_result *r = NULL;
	struct drift_run run;
	struct bench_header h;
	size_t n = 0;
	int fd;

	drift_run(&run, 1, -1, 1, 1, 0);
	drift_procs(&run, 0);
	fd = mkstemps(path, 5);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, bench_write_json(path, &run.h, run.r, 3));
	root = json_object_from_file(path);
	ASSERT_NE(NULL, root);
	ASSERT_TRUE(json_object_object_get_ex(root, "header", &hdr));
	ASSERT_TRUE(json_object_object_get_ex(hdr, "fast", &v));
	EXPECT_TRUE(json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v));
	ASSERT_TRUE(json_object_object_get_ex(hdr, "repeats", &v));
	EXPECT_EQ(DN, json_object_get_int(v));
	ASSERT_TRUE(json_object_object_get_ex(hdr, "procs", &v));
	EXPECT_EQ(3, json_object_get_int(v));
	ASSERT_TRUE(json_object_object_get_ex(hdr, "min_samples", &v));
	EXPECT_EQ(BENCH_MIN_SAMPLES, json_object_get_int(v));
	ASSERT_TRUE(json_object_object_get_ex(hdr, "sample_target", &v));
	EXPECT_TRUE(NEAR(json_object_get_double(v), BENCH_FAST_SAMPLE));
	ASSERT_TRUE(json_object_object_get_ex(hdr, "reference", &ref));
	ASSERT_TRUE(json_object_object_get_ex(ref, "iters", &v));
	EXPECT_EQ(BENCH_REF_ITERS, json_object_get_int64(v));
	ASSERT_TRUE(json_object_object_get_ex(ref, "n", &v));
	EXPECT_EQ(DN, json_object_get_int(v));
	ASSERT_TRUE(json_object_object_get_ex(ref, "median", &v));
	EXPECT_TRUE(fabs(json_object_get_double(v) - 1.3) < 1e-6);
	ASSERT_TRUE(json_object_object_get_ex(ref, "samples", &v));
	EXPECT_EQ(DN, json_object_array_length(v));
	json_object_put(root);
	/* ... and read back. */
	ASSERT_EQ(0, bench_load_json(path, &h, &r, &n));
	EXPECT_EQ(1, h.fast);
	EXPECT_EQ(DN, h.repeats);
	EXPECT_EQ(BENCH_REF_ITERS, h.ref_iters);
	ASSERT_EQ(DN, h.ref_n);
	EXPECT_TRUE(NEAR(h.ref[0], run.ref[0]));
	EXPECT_EQ(3, h.procs);
	ASSERT_EQ(3, n);
	ASSERT_EQ(3, r[2].np);
	EXPECT_TRUE(fabs(r[2].pmed[0] / run.pm[2][0] - 1) < 1e-5);
	EXPECT_TRUE(fabs(r[2].pmed[2] / run.pm[2][2] - 1) < 1e-5);
	bench_results_free(r, n);
	bench_header_free(&h);
	EXPECT_EQ(NULL, h.ref);
	unlink(path);
}

TEST_HARNESS_MAIN
