// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Whether locked memory of a size can be had, and which limit says no.
 *
 * The user backend asks before it grows a memfd or locks pages: locking
 * more than the machine has gets the process OOM-killed instead of an
 * error. Both backends ask again when a command failed with ENOMEM (the
 * driver charges RLIMIT_MEMLOCK too, but answers with the errno only), so
 * that every such error names the limit it hit.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <linux/capability.h>

#include "dev/dev_internal.h"

/* CAP_IPC_LOCK lifts RLIMIT_MEMLOCK (root has it). */
static int mem_lock_unlimited(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return 0;
	return !!(d[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32)));
}

/* A "Name:   N kB" field of a /proc file, in bytes; 0 when absent. */
static uint64_t mem_proc_kb(const char *file, const char *name)
{
	char line[128];
	size_t n = strlen(name);
	unsigned long long kb = 0;
	FILE *f = fopen(file, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':') {
			sscanf(line + n + 1, "%llu", &kb);
			break;
		}
	fclose(f);
	return (uint64_t)kb << 10;
}

uint64_t tio_mem_locked(void)
{
	return mem_proc_kb("/proc/self/status", "VmLck");
}

uint64_t tio_mem_total(void)
{
	struct sysinfo si;

	if (sysinfo(&si))
		return UINT64_MAX;
	return (uint64_t)si.totalram * si.mem_unit;
}

int tio_mem_check(uint64_t size, uint64_t locked, char *why, size_t len)
{
	struct rlimit rl;
	struct sysinfo si;
	uint64_t avail;

	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (size > rl.rlim_cur || locked > rl.rlim_cur - size) && !mem_lock_unlimited()) {
		snprintf(why, len, "%llu bytes more locked memory would pass RLIMIT_MEMLOCK "
			 "(%llu bytes, %llu locked; see ulimit -l)", (unsigned long long)size,
			 (unsigned long long)rl.rlim_cur, (unsigned long long)locked);
		return ENOMEM;
	}
	/* Free memory is a cheap lower bound; MemAvailable counts the cache too. */
	if (sysinfo(&si) || size <= ((uint64_t)si.freeram + si.bufferram) * si.mem_unit)
		return 0;
	avail = mem_proc_kb("/proc/meminfo", "MemAvailable");
	if (!avail || size <= avail)
		return 0;
	snprintf(why, len, "%llu bytes is more than the memory available (MemAvailable "
		 "%llu bytes of %llu)", (unsigned long long)size, (unsigned long long)avail,
		 (unsigned long long)si.totalram * si.mem_unit);
	return ENOMEM;
}
