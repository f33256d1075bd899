// SPDX-License-Identifier: GPL-2.0
/*
 * The driver's coverage: each thread traces the PCs it runs in the module
 * (KCOV_TRACE_PC; only tensorio.ko is built with KCOV_INSTRUMENT, so the
 * trace holds nothing else, but PCs are still filtered to the module's
 * sections, read from /sys/module/tensorio/sections). After each input
 * the traces become libFuzzer's extra counters, hashed edges (previous
 * and current PC), and every PC seen is remembered for the line report.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/kcov.h>

#include "kfuzz.h"

#define NCOUNTERS	(1 << 14)
#define MAX_SECTIONS	8

/* libFuzzer reads these after each input (and clears them before). */
__attribute__((section("__libfuzzer_extra_counters")))
static uint8_t counters[NCOUNTERS];

bool g_kcov;

static struct section {
	char name[48];
	uint64_t start, size;
	uint8_t *seen;		/* a bit per byte offset: a PC returned there */
} sections[MAX_SECTIONS];
static unsigned int nsections;
static uint64_t npcs;		/* distinct PCs seen */

/* A trace of @words entries for the calling thread; returns the fd. */
int kcov_open(uint64_t **area, unsigned long words)
{
	int fd = open("/sys/kernel/debug/kcov", O_RDWR | O_CLOEXEC);
	void *m;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, KCOV_INIT_TRACE, words))
		goto err;
	m = mmap(NULL, words * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto err;
	if (ioctl(fd, KCOV_ENABLE, KCOV_TRACE_PC)) {
		munmap(m, words * sizeof(uint64_t));
		goto err;
	}
	*area = m;
	__atomic_store_n(&(*area)[0], 0, __ATOMIC_RELAXED);
	return fd;
err:
	close(fd);
	return -errno;
}

void kcov_reset(uint64_t *area)
{
	if (area)
		__atomic_store_n(&area[0], 0, __ATOMIC_RELAXED);
}

/*
 * @path lists the module's code sections, "NAME SIZE" per line (from the
 * .ko, by the host); their load addresses come from sysfs.
 */
void kcov_sections_init(const char *path)
{
	FILE *f = fopen(path, "r");
	char name[48], sys[128];
	uint64_t size;

	if (!f) {
		fprintf(stderr, "# fuzz: no section list %s: %s\n", path, strerror(errno));
		return;
	}
	while (nsections < MAX_SECTIONS && fscanf(f, "%47s %" SCNx64, name, &size) == 2) {
		struct section *s = &sections[nsections];
		FILE *a;

		snprintf(sys, sizeof(sys), "/sys/module/tensorio/sections/%s", name);
		a = fopen(sys, "r");
		if (!a)
			continue;
		if (fscanf(a, "%" SCNx64, &s->start) == 1 && s->start) {
			snprintf(s->name, sizeof(s->name), "%s", name);
			s->size = size;
			s->seen = calloc(size / 8 + 1, 1);
			if (s->seen)
				nsections++;
		}
		fclose(a);
	}
	fclose(f);
	g_kcov = nsections > 0;
}

static struct section *section_of(uint64_t pc)
{
	unsigned int i;

	for (i = 0; i < nsections; i++)
		if (pc - sections[i].start < sections[i].size)
			return &sections[i];
	return NULL;
}

/* One thread's trace of this input into the counters. */
void kcov_collect(const uint64_t *area)
{
	uint64_t n, i;
	uint32_t prev = 0;

	if (!area)
		return;
	n = __atomic_load_n(&area[0], __ATOMIC_RELAXED);
	for (i = 1; i <= n; i++) {
		uint64_t pc = area[i], off;
		struct section *s = section_of(pc);
		uint32_t cur;
		uint8_t *c;

		if (!s)
			continue;
		off = pc - s->start;
		if (!(s->seen[off / 8] & (1 << (off % 8)))) {
			s->seen[off / 8] |= 1 << (off % 8);
			npcs++;
		}
		cur = (uint32_t)(pc * 0x9e3779b97f4a7c15ULL >> 48);
		c = &counters[(cur ^ prev) % NCOUNTERS];
		if (*c != 255)
			(*c)++;
		prev = cur >> 1;
	}
}

uint64_t kcov_pcs(void)
{
	return npcs;
}

/* Every PC seen, "SECTION OFFSET" per line (return addresses). */
void kcov_report(const char *path)
{
	FILE *f = fopen(path, "w");
	unsigned int i;
	uint64_t off;

	if (!f)
		return;
	for (i = 0; i < nsections; i++)
		for (off = 0; off < sections[i].size; off++)
			if (sections[i].seen[off / 8] & (1 << (off % 8)))
				fprintf(f, "%s %" PRIx64 "\n", sections[i].name, off);
	fclose(f);
}
