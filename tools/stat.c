// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl stat: the driver's debugfs counters, module-wide, per open file
 * (with its process' pinned and locked memory, where the library's pinned
 * cache shows too, and that cache's counters) and per command; --watch N
 * refreshes every N seconds.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorio/error.h>
#include <tensorio/pinned.h>

#include "tioctl.h"

/* The commands file: a header row of column names, then one row each. */
static int print_commands(struct json_object *arr)
{
	char line[256], cols[8][32], vals[8][32];
	int ncols = 0, n, i;
	FILE *f = fopen(TIO_DEBUGFS "/commands", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char (*dst)[32] = ncols ? vals : cols;
		struct json_object *row;

		n = sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s",
			   dst[0], dst[1], dst[2], dst[3], dst[4], dst[5],
			   dst[6], dst[7]);
		if (n <= 0)
			continue;
		if (!ncols) {
			ncols = n;
			if (!arr)
				printf("\n%-18s %12s %10s %16s %12s\n", cols[0],
				       ncols > 1 ? cols[1] : "", ncols > 2 ? cols[2] : "",
				       ncols > 3 ? cols[3] : "", ncols > 4 ? cols[4] : "");
			continue;
		}
		if (!arr) {
			fputs(line, stdout);
			continue;
		}
		row = json_object_new_object();
		json_object_object_add(row, cols[0], json_object_new_string(vals[0]));
		for (i = 1; i < n && i < ncols; i++)
			json_object_object_add(row, cols[i], tioctl_json_value(vals[i]));
		json_object_array_add(arr, row);
	}
	fclose(f);
	return 0;
}

/* A "Name:  N kB" field of /proc/PID/status, in bytes (0 when absent). */
static unsigned long long status_kb(const char *path, const char *name)
{
	unsigned long long kb = 0;
	size_t n = strlen(name);
	char line[128];
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':' &&
		    sscanf(line + n + 1, "%llu", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

/*
 * The memory the file's process holds pinned (the driver charges buffers
 * and pinned user memory, the library's pinned cache included, to its
 * pinned_vm) and locked: /proc/PID/status VmPin and VmLck, process-wide.
 */
/*
 * The process's pinned-memory cache, as the library publishes it: null
 * (text "-") when the process has not used the cache or it cannot be read.
 */
static void print_pinned_cache(int pid, struct json_object *file)
{
	static const char *const name[] = {
		"hits", "misses", "bytes_cached", "bytes_in_use", "buffers_cached", "limit",
	};
	struct tio_pinned_stats st;
	struct json_object *pc;
	uint64_t v[6];
	size_t i;

	if (tio_pinned_stats_of(pid, &st)) {
		tio_error_clear();
		if (file)
			json_object_object_add(file, "pinned_cache", NULL);
		else
			printf("  %-26s -\n", "pinned_cache");
		return;
	}
	v[0] = st.hits;
	v[1] = st.misses;
	v[2] = st.bytes_cached;
	v[3] = st.bytes_in_use;
	v[4] = st.buffers_cached;
	v[5] = st.limit;
	pc = file ? json_object_new_object() : NULL;
	for (i = 0; i < 6; i++) {
		if (pc)
			json_object_object_add(pc, name[i], json_object_new_uint64(v[i]));
		else
			printf("  pinned_cache_%-*s %llu\n", 26 - 13, name[i],
			       (unsigned long long)v[i]);
	}
	if (pc) {
		json_object_object_add(pc, "enabled", json_object_new_boolean(st.enabled));
		json_object_object_add(file, "pinned_cache", pc);
	} else if (!st.enabled) {
		printf("  %-26s off (TIO_PINNED_CACHE=0)\n", "pinned_cache");
	}
}

static void print_pinned(const char *stats, struct json_object *file)
{
	char line[128], path[64];
	unsigned long long pin, lck;
	FILE *f = fopen(stats, "re");
	int pid = 0;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && sscanf(line, "pid %d", &pid) != 1)
		;
	fclose(f);
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	pin = status_kb(path, "VmPin");
	lck = status_kb(path, "VmLck");
	if (file) {
		json_object_object_add(file, "pinned_vm_bytes", json_object_new_uint64(pin));
		json_object_object_add(file, "locked_vm_bytes", json_object_new_uint64(lck));
	} else {
		printf("  %-20s %llu\n  %-20s %llu\n", "pinned_vm_bytes", pin,
		       "locked_vm_bytes", lck);
	}
	print_pinned_cache(pid, file);
}

static int print_files(struct json_object *arr)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(TIO_DEBUGFS "/files");

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct json_object *file = NULL;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/files/%s/stats", TIO_DEBUGFS, de->d_name);
		if (arr) {
			file = json_object_new_object();
			json_object_object_add(file, "file", json_object_new_string(de->d_name));
			json_object_array_add(arr, file);
		} else {
			printf("\nfile %s\n", de->d_name);
		}
		/* Closed meanwhile: no stats. */
		if (!tioctl_read_kv(path, file, "  "))
			print_pinned(path, file);
	}
	closedir(d);
	return 0;
}

/* JSON: nothing reaches stdout unless every part was read. */
static int print_once(int json)
{
	struct json_object *j = NULL, *global = NULL, *files = NULL, *cmds = NULL;
	int ret;

	if (json) {
		j = json_object_new_object();
		global = json_object_new_object();
		files = json_object_new_array();
		cmds = json_object_new_array();
		json_object_object_add(j, "global", global);
		json_object_object_add(j, "files", files);
		json_object_object_add(j, "commands", cmds);
	}
	ret = tioctl_read_kv(TIO_DEBUGFS "/stats", global, "");
	if (ret) {
		json_object_put(j);
		tioctl_err(TIO_DEBUGFS "/stats", -ret);
		return EXIT_UNUSABLE;
	}
	ret = print_files(files);
	if (!ret)
		ret = print_commands(cmds);
	if (ret) {
		json_object_put(j);
		tioctl_err(TIO_DEBUGFS, -ret);
		return EXIT_FAILED;
	}
	return json ? tioctl_json_print(j) : EXIT_OK;
}

static const struct option stat_opts[] = {
	TIOCTL_COMMON_OPTS,
	{ "watch", required_argument, NULL, 'w' },
	{ "count", required_argument, NULL, 'c' },
	{ NULL, 0, NULL, 0 }
};

/**
 * cmd_stat() - tioctl stat [--watch N [--count M]]
 * @o: global options (json, watch, count)
 * @argc: argument count, argv[0] being "stat"
 * @argv: the arguments (no operands accepted)
 *
 * Return: an exit code.
 */
int cmd_stat(struct tioctl_opts *o, int argc, char **argv)
{
	char *end;
	long v;
	int c, i, ret;

	while ((c = tioctl_getopt(o, argc, argv, stat_opts)) != -1) {
		if (c == '?')
			return EXIT_UNUSABLE;
		v = strtol(optarg, &end, 10);
		if (!*optarg || *end || v <= 0 || v >= 1000000)
			return tioctl_bad_usage("stat", "--%s needs a positive number, not '%s'",
						c == 'w' ? "watch" : "count", optarg);
		*(c == 'w' ? &o->watch : &o->count) = (int)v;
	}
	if (tioctl_operands(argc, argv, 0, 0) < 0)
		return EXIT_UNUSABLE;
	for (i = 0;; i++) {
		if (o->watch && !o->json && isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		ret = print_once(o->json);
		fflush(stdout);
		if (ret || !o->watch || (o->count && i + 1 >= o->count))
			return ret;
		sleep(o->watch);
	}
}
