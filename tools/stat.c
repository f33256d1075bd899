// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl stat: the driver's debugfs counters, module-wide, per open file
 * and per command; --watch N refreshes every N seconds.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tioctl.h"

/* The commands file: a header row of column names, then one row each. */
static int print_commands(int json)
{
	char line[256], cols[8][32], vals[8][32];
	const char *sep = "";
	int ncols = 0, n, i;
	FILE *f = fopen(TIO_DEBUGFS "/commands", "re");

	if (!f)
		return -errno;
	if (json)
		printf(", \"commands\": [");
	while (fgets(line, sizeof(line), f)) {
		char (*dst)[32] = ncols ? vals : cols;

		n = sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s",
			   dst[0], dst[1], dst[2], dst[3], dst[4], dst[5],
			   dst[6], dst[7]);
		if (n <= 0)
			continue;
		if (!ncols) {
			ncols = n;
			if (!json)
				printf("\n%-18s %12s %10s %16s %12s\n", cols[0],
				       ncols > 1 ? cols[1] : "", ncols > 2 ? cols[2] : "",
				       ncols > 3 ? cols[3] : "", ncols > 4 ? cols[4] : "");
			continue;
		}
		if (!json) {
			fputs(line, stdout);
			continue;
		}
		printf("%s{\"%s\": \"%s\"", sep, cols[0], vals[0]);
		for (i = 1; i < n && i < ncols; i++)
			printf(", \"%s\": %s", cols[i], vals[i]);
		printf("}");
		sep = ", ";
	}
	if (json)
		printf("]");
	fclose(f);
	return 0;
}

static int print_files(int json)
{
	char path[512];
	const char *sep = "";
	struct dirent *de;
	DIR *d = opendir(TIO_DEBUGFS "/files");

	if (!d)
		return -errno;
	if (json)
		printf(", \"files\": [");
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/files/%s/stats", TIO_DEBUGFS, de->d_name);
		if (json) {
			printf("%s{\"file\": \"%s\"", sep, de->d_name);
			sep = ", ";
			tioctl_print_kv(path, 1, "");
			printf("}");
		} else {
			printf("\nfile %s\n", de->d_name);
			tioctl_print_kv(path, 0, "  ");
		}
	}
	closedir(d);
	if (json)
		printf("]");
	return 0;
}

static int print_once(int json)
{
	int ret;

	if (json)
		printf("{\"global\": {");
	ret = tioctl_print_kv(TIO_DEBUGFS "/stats", json, json ? "  " : "");
	if (ret) {
		if (json)
			printf("}}\n");
		tioctl_err(TIO_DEBUGFS "/stats", -ret);
		return EXIT_UNUSABLE;
	}
	if (json)
		printf("}");
	ret = print_files(json);
	if (!ret)
		ret = print_commands(json);
	if (json)
		printf("}\n");
	if (ret) {
		tioctl_err(TIO_DEBUGFS, -ret);
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

/**
 * cmd_stat() - tioctl stat [--watch N [--count M]]
 * @o: global options (json, watch, count)
 * @argc: arguments after "stat"
 * @argv: (none accepted)
 *
 * Return: an exit code.
 */
int cmd_stat(const struct tioctl_opts *o, int argc, char **argv)
{
	int i, ret;

	(void)argv;
	if (argc) {
		fprintf(stderr, "tioctl: stat takes no arguments (see --watch)\n");
		return EXIT_UNUSABLE;
	}
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
