// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl: the operator's command line tool for /dev/tensorio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tioctl.h"

static const struct {
	const char *name;
	int (*fn)(const struct tioctl_opts *o, int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "info", cmd_info, "driver and uapi version, features, limits, parameters" },
	{ "stat", cmd_stat, "object and per-command counters from debugfs" },
	{ "ls", cmd_ls, "every open file's buffers and streams (debugfs)" },
	{ "alloc", cmd_alloc, "SIZE [--dtype T [--shape AxB]]: allocate, touch, describe, free" },
	{ "export", cmd_export, "SIZE [--dtype T [--shape AxB]] [--hold]: a dma-buf fd" },
	{ "import", cmd_import, "FD|PID:FD: import a dma-buf and describe it" },
	{ "signal", cmd_signal, "[--error E] [--hold]: a sync_file, signalled when stdin ends" },
	{ "wait", cmd_wait, "FD|PID:FD [--timeout MS]: wait for a sync_file" },
	{ "load-safetensors", cmd_safetensors, "FILE: load into one pinned buffer, list tensors" },
};

static void usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "usage: tioctl [--json] [--watch N [--count M]] COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-17s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\nexit status: 0 ok, 1 the command failed, 2 no usable device or bad usage\n");
}

/* A positive integer option value, or -1. */
static int parse_count(const char *s)
{
	char *end;
	long v;

	if (!s)
		return -1;
	v = strtol(s, &end, 10);
	return (*s && !*end && v > 0 && v < 1000000) ? (int)v : -1;
}

int main(int argc, char **argv)
{
	struct tioctl_opts o = { 0 };
	unsigned int c;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--json")) {
			o.json = 1;
		} else if (!strcmp(argv[i], "--watch") || !strcmp(argv[i], "--count")) {
			int v = parse_count(argv[i + 1]);

			if (v < 0) {
				fprintf(stderr, "tioctl: %s needs a positive number\n", argv[i]);
				return EXIT_UNUSABLE;
			}
			*(argv[i][2] == 'w' ? &o.watch : &o.count) = v;
			i++;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return EXIT_OK;
		} else {
			fprintf(stderr, "tioctl: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return EXIT_UNUSABLE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_UNUSABLE;
	}
	for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		if (!strcmp(argv[i], cmds[c].name))
			return cmds[c].fn(&o, argc - i - 1, argv + i + 1);
	fprintf(stderr, "tioctl: unknown command '%s'\n", argv[i]);
	usage(stderr);
	return EXIT_UNUSABLE;
}
