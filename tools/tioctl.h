/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tioctl: shared helpers of the subcommands.
 */
#ifndef TIOCTL_H
#define TIOCTL_H

#include <getopt.h>
#include <stdio.h>

#include <json-c/json.h>

#define TIO_DEV		"/dev/tensorio"
#define TIO_DEBUGFS	"/sys/kernel/debug/tensorio"
#define TIO_PARAMS	"/sys/module/tensorio/parameters"

/* Exit codes, exactly as tioctl(8) lists them. */
#define EXIT_OK		0
#define EXIT_FAILED	1	/* the command ran and failed */
#define EXIT_UNUSABLE	2	/* no usable device or backend for it, or bad usage */

struct tioctl_opts {
	int json;
	int watch;	/* seconds between refreshes, 0: once */
	int count;	/* refreshes with --watch, 0: until interrupted */
};

/*
 * Every subcommand parses its own options with getopt_long; these are
 * accepted by each, after the subcommand as before it.
 */
#define TIOCTL_OPT_JSON	0x100
#define TIOCTL_COMMON_OPTS { "json", no_argument, NULL, TIOCTL_OPT_JSON }

int tioctl_getopt(struct tioctl_opts *o, int argc, char **argv,
		  const struct option *longopts);
int tioctl_operands(int argc, char **argv, int min, int max);
int tioctl_bad_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

int tioctl_open_dev(void);
void tioctl_err(const char *what, int err);
/* A "key value" file's pairs added to @obj, or printed as a table; -errno. */
int tioctl_read_kv(const char *path, struct json_object *obj, const char *indent);
struct json_object *tioctl_json_value(const char *text);
int tioctl_json_print(struct json_object *j);
struct json_object *tioctl_json_dtype(unsigned int code, unsigned int bits,
				      unsigned int lanes);
struct json_object *tioctl_json_shape(int ndim, const long long *shape);
void tioctl_print_dtype(unsigned int code, unsigned int bits, unsigned int lanes);

/* lib_util.c: subcommands that go through libtensorio */
struct tio_desc;
int tioctl_lib_ready(void);
int tioctl_lib_operand(int argc, char **argv, int *idx);
int tioctl_lib_err(const char *what);
int tioctl_parse_size(const char *s, unsigned long long *out);
int tioctl_parse_desc(const char *dtype, const char *shape, struct tio_desc *desc);
int tioctl_get_fd(const char *spec);
void tioctl_hold(void);

int cmd_info(struct tioctl_opts *o, int argc, char **argv);
int cmd_commands(struct tioctl_opts *o, int argc, char **argv);
int cmd_stat(struct tioctl_opts *o, int argc, char **argv);
int cmd_ls(struct tioctl_opts *o, int argc, char **argv);
int cmd_alloc(struct tioctl_opts *o, int argc, char **argv);
int cmd_export(struct tioctl_opts *o, int argc, char **argv);
int cmd_import(struct tioctl_opts *o, int argc, char **argv);
int cmd_signal(struct tioctl_opts *o, int argc, char **argv);
int cmd_wait(struct tioctl_opts *o, int argc, char **argv);
int cmd_safetensors(struct tioctl_opts *o, int argc, char **argv);
int cmd_reshard(struct tioctl_opts *o, int argc, char **argv);

#endif /* TIOCTL_H */
