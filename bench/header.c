// SPDX-License-Identifier: LGPL-2.1-or-later
/* The run header: the machine, kernel, backend, build and clock of a run. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

#ifndef BENCH_COMMIT
#define BENCH_COMMIT "unknown"
#endif

/* Is the guest clock counting instructions? tests/vm/run.sh -i says so. */
int bench_icount_mode(void)
{
	char buf[4096];
	FILE *f = fopen("/proc/cmdline", "r");
	int yes = 0;

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		yes = strstr(buf, "tio.icount=1") != NULL;
	fclose(f);
	return yes;
}

void bench_make_header(struct bench_header *h, enum bench_unit unit)
{
	char line[512], model[256] = "unknown cpu";
	const char *env;
	struct utsname u;
	time_t t = time(NULL);
	struct tm tm;
	FILE *f;
	int fd;

	memset(h, 0, sizeof(*h));
	h->unit = unit;
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && p) {
			snprintf(model, sizeof(model), "%s", p + 2);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	uname(&u);
	snprintf(h->machine, sizeof(h->machine), "%s, %s, %ld cpus", u.nodename,
		 model, sysconf(_SC_NPROCESSORS_ONLN));
	snprintf(h->cpu, sizeof(h->cpu), "%s", model);
	h->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(h->kernel, sizeof(h->kernel), "%s %s %s", u.sysname, u.release,
		 u.machine);
	env = getenv("TIO_BACKEND");
	fd = open("/dev/tensorio", O_RDWR | O_CLOEXEC);
	if (env && *env)
		snprintf(h->backend, sizeof(h->backend), "%s (TIO_BACKEND)", env);
	else
		snprintf(h->backend, sizeof(h->backend), "%s", fd >= 0 ?
			 "kernel (/dev/tensorio)" : "user (no /dev/tensorio)");
	if (fd >= 0)
		close(fd);
#ifdef __clang__
	snprintf(h->compiler, sizeof(h->compiler), "clang %s", __clang_version__);
#else
	snprintf(h->compiler, sizeof(h->compiler), "gcc %s", __VERSION__);
#endif
	env = getenv("TIO_COMMIT");
	snprintf(h->commit, sizeof(h->commit), "%s", env && *env ? env : BENCH_COMMIT);
	gmtime_r(&t, &tm);
	strftime(h->date, sizeof(h->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (unit == BENCH_INSN)
		snprintf(h->mode, sizeof(h->mode), "QEMU TCG -icount shift=0 "
			 "(1 clock ns = 1 guest instruction)");
	else if (bench_icount_mode())
		snprintf(h->mode, sizeof(h->mode), "icount guest, forced ns");
	else
		snprintf(h->mode, sizeof(h->mode), "%s", bench_clock_run() ?
			 "wall clock less run-queue wait" : "wall clock");
}
