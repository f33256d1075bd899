// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl: the operator's command line tool for /dev/tensorio.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/tensorio.h>
#include <tensorio/version.h>

#include "tioctl.h"

static const struct {
	const char *name;
	int (*fn)(struct tioctl_opts *o, int argc, char **argv);
	const char *args;
	const char *help;
} cmds[] = {
	{ "info", cmd_info, "", "driver and uapi version, features, limits, parameters" },
	{ "commands", cmd_commands, "", "the driver commands the library knows (its command table)" },
	{ "stat", cmd_stat, "", "object and per-command counters from debugfs" },
	{ "ls", cmd_ls, "", "every open file's buffers and streams (debugfs)" },
	{ "alloc", cmd_alloc, "SIZE [--dtype T [--shape AxB]]", "allocate, touch, describe, free" },
	{ "export", cmd_export, "SIZE [--dtype T [--shape AxB]] [--hold]", "a dma-buf fd" },
	{ "import", cmd_import, "FD|PID:FD", "import a dma-buf and describe it" },
	{ "signal", cmd_signal, "[--error E] [--hold]", "a sync_file, signalled when stdin ends" },
	{ "wait", cmd_wait, "FD|PID:FD [--timeout MS]", "wait for a sync_file" },
	{ "load-safetensors", cmd_safetensors, "FILE [--hold]",
	  "load into one pinned buffer, list tensors" },
	{ "reshard", cmd_reshard, "SRC DST [--max-shard-size SIZE]",
	  "load a checkpoint, save it durably as one file or as shards" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "usage: tioctl [--json] [--watch N [--count M]] COMMAND [ARGS] [--json]\n"
		   "       tioctl --version | --help\n\ncommands:\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %s%s%s\n      %s\n", cmds[i].name, *cmds[i].args ? " " : "",
			cmds[i].args, cmds[i].help);
	fprintf(f, "\nexit status: 0 ok, 1 the command failed, "
		   "2 no usable device or backend for it, or bad usage\n");
}

/**
 * tioctl_bad_usage() - say what is wrong with a command line, and how
 * @cmd: the subcommand, or NULL
 * @fmt: printf format of the fault
 *
 * Return: EXIT_UNUSABLE, for the caller to return.
 */
int tioctl_bad_usage(const char *cmd, const char *fmt, ...)
{
	unsigned int i;
	va_list ap;

	fputs("tioctl: ", stderr);
	if (cmd)
		fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (i = 0; cmd && i < NCMDS; i++)
		if (!strcmp(cmds[i].name, cmd))
			fprintf(stderr, "usage: tioctl %s%s%s\n", cmd,
				*cmds[i].args ? " " : "", cmds[i].args);
	return EXIT_UNUSABLE;
}

/**
 * tioctl_getopt() - getopt_long over a subcommand's arguments
 * @o: global options; --json here sets o->json as before the subcommand
 * @argc: argument count, argv[0] being the subcommand
 * @argv: the arguments
 * @longopts: the subcommand's options, TIOCTL_COMMON_OPTS among them
 *
 * Return: the next option, -1 at the end (optind indexes the first
 * operand), '?' for an unknown option or a missing value (reported).
 */
int tioctl_getopt(struct tioctl_opts *o, int argc, char **argv,
		  const struct option *longopts)
{
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) == TIOCTL_OPT_JSON)
		o->json = 1;
	return c;
}

/**
 * tioctl_operands() - check the number of operands left after the options
 * @argc: argument count, argv[0] being the subcommand
 * @argv: the arguments
 * @min: fewest operands
 * @max: most operands
 *
 * Return: the index of the first operand, or -1 after printing the usage.
 */
int tioctl_operands(int argc, char **argv, int min, int max)
{
	int n = argc - optind;

	if (n < min) {
		tioctl_bad_usage(argv[0], "missing operand");
		return -1;
	}
	if (n > max) {
		tioctl_bad_usage(argv[0], "unexpected '%s'", argv[optind + max]);
		return -1;
	}
	return optind;
}

static void version(void)
{
	printf("tioctl %u.%u.%u (libtensorio %u.%u.%u, uapi %u.%u)\n",
	       TIO_VERSION_MAJOR, TIO_VERSION_MINOR, TIO_VERSION_PATCH,
	       tio_version() >> 16, (tio_version() >> 8) & 0xff, tio_version() & 0xff,
	       TIO_UAPI_VERSION >> 16, TIO_UAPI_VERSION & 0xffff);
}

/* A positive integer option value, or -1. */
static int parse_count(const char *s)
{
	char *end;
	long v;

	v = strtol(s, &end, 10);
	return (*s && !*end && v > 0 && v < 1000000) ? (int)v : -1;
}

static const struct option global_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "watch", required_argument, NULL, 'w' },
	{ "count", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

int main(int argc, char **argv)
{
	struct tioctl_opts o = { 0 };
	unsigned int i;
	int c;

	/* "+": options end at the subcommand, which parses its own. */
	while ((c = getopt_long(argc, argv, "+hV", global_opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o.json = 1;
			break;
		case 'w':
		case 'c':
			if (parse_count(optarg) < 0)
				return tioctl_bad_usage(NULL, "--%s needs a positive number, not '%s'",
							c == 'w' ? "watch" : "count", optarg);
			*(c == 'w' ? &o.watch : &o.count) = parse_count(optarg);
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			version();
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_UNUSABLE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_UNUSABLE;
	}
	for (i = 0; i < NCMDS; i++) {
		if (strcmp(argv[optind], cmds[i].name))
			continue;
		argc -= optind;
		argv += optind;
		optind = 0;	/* a fresh getopt for the subcommand */
		return cmds[i].fn(&o, argc, argv);
	}
	fprintf(stderr, "tioctl: unknown command '%s'\n", argv[optind]);
	usage(stderr);
	return EXIT_UNUSABLE;
}
