/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tioctl: shared helpers of the subcommands.
 */
#ifndef TIOCTL_H
#define TIOCTL_H

#include <stdio.h>

#define TIO_DEV		"/dev/tensorio"
#define TIO_DEBUGFS	"/sys/kernel/debug/tensorio"
#define TIO_PARAMS	"/sys/module/tensorio/parameters"

/* Exit codes, documented in tioctl(8). */
#define EXIT_OK		0
#define EXIT_FAILED	1	/* the command ran and failed */
#define EXIT_UNUSABLE	2	/* no device, no permission, bad usage */

struct tioctl_opts {
	int json;
	int watch;	/* seconds between refreshes, 0: once */
	int count;	/* refreshes with --watch, 0: until interrupted */
};

int tioctl_open_dev(void);
void tioctl_err(const char *what, int err);
/* Print a "key value" file as a table or JSON members; -errno on failure. */
int tioctl_print_kv(const char *path, int json, const char *indent);

int cmd_info(const struct tioctl_opts *o, int argc, char **argv);
int cmd_stat(const struct tioctl_opts *o, int argc, char **argv);

#endif /* TIOCTL_H */
