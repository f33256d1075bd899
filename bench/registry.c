// SPDX-License-Identifier: LGPL-2.1-or-later
/* The case registry, filled by constructors before main() runs. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

static struct bench_case *head, **tail = &head;

/**
 * bench_register() - add a case at the end of the registry
 * @c: the case; must stay valid for the life of the program
 *
 * Only called from constructors, before any thread exists.
 */
void bench_register(struct bench_case *c)
{
	c->next = NULL;
	*tail = c;
	tail = &c->next;
}

struct bench_case *bench_cases(void)
{
	return head;
}

int bench_skip(struct bench_run *run, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(run->why, sizeof(run->why), fmt, ap);
	va_end(ap);
	return BENCH_SKIP;
}

int bench_fail(struct bench_run *run, int err, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(run->why, sizeof(run->why), fmt, ap);
	va_end(ap);
	len = strlen(run->why);
	if (err && len < sizeof(run->why))
		snprintf(run->why + len, sizeof(run->why) - len, ": %s",
			 strerror(err > 0 ? err : -err));
	return err > 0 ? -err : (err ? err : -1);
}
