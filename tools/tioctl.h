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

/* lib_util.c: subcommands that go through libtensorio */
struct tio_tensor_desc;
int tioctl_lib_err(const char *what);
int tioctl_parse_size(const char *s, unsigned long long *out);
int tioctl_parse_desc(const char *dtype, const char *shape, struct tio_tensor_desc *desc);
int tioctl_get_fd(const char *spec);
void tioctl_hold(void);

int cmd_info(const struct tioctl_opts *o, int argc, char **argv);
int cmd_stat(const struct tioctl_opts *o, int argc, char **argv);
int cmd_ls(const struct tioctl_opts *o, int argc, char **argv);
int cmd_alloc(const struct tioctl_opts *o, int argc, char **argv);
int cmd_export(const struct tioctl_opts *o, int argc, char **argv);
int cmd_import(const struct tioctl_opts *o, int argc, char **argv);
int cmd_signal(const struct tioctl_opts *o, int argc, char **argv);
int cmd_wait(const struct tioctl_opts *o, int argc, char **argv);
int cmd_safetensors(const struct tioctl_opts *o, int argc, char **argv);

#endif /* TIOCTL_H */
