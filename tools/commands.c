// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl commands: the driver commands the library knows, listed from its
 * one command table (tio_command_info()), so a command added there shows
 * here with no change to tioctl.
 */
#include <stdio.h>

#include <linux/tensorio.h>
#include <tensorio/batch.h>

#include "tioctl.h"

static const struct option commands_opts[] = { TIOCTL_COMMON_OPTS, { NULL, 0, NULL, 0 } };

static struct json_object *command_json(const struct tio_command_info *c)
{
	struct json_object *j = json_object_new_object();

	if (!j)
		return NULL;
	json_object_object_add(j, "name", json_object_new_string(c->name));
	json_object_object_add(j, "nr", json_object_new_int((int)_IOC_NR(c->op)));
	json_object_object_add(j, "op", json_object_new_uint64(c->op));
	json_object_object_add(j, "payload_size", json_object_new_int((int)c->payload_size));
	json_object_object_add(j, "waits", json_object_new_boolean(c->flags & TIO_COMMAND_WAITS));
	json_object_object_add(j, "writes_back",
			       json_object_new_boolean(c->flags & TIO_COMMAND_WRITES_BACK));
	json_object_object_add(j, "global", c->global ? json_object_new_string(c->global) : NULL);
	json_object_object_add(j, "nargs", json_object_new_int(c->nargs));
	json_object_object_add(j, "nargs_max", json_object_new_int(c->nargs_max));
	return j;
}

/**
 * cmd_commands() - tioctl commands
 * @o: global options
 * @argc: argument count, argv[0] being "commands"
 * @argv: (no operands accepted)
 *
 * Return: an exit code.
 */
int cmd_commands(struct tioctl_opts *o, int argc, char **argv)
{
	struct json_object *arr = NULL, *row;
	struct tio_command_info c;
	int32_t i, n = tio_command_count();

	if (tioctl_getopt(o, argc, argv, commands_opts) != -1 ||
	    tioctl_operands(argc, argv, 0, 0) < 0)
		return EXIT_UNUSABLE;
	if (o->json && !(arr = json_object_new_array()))
		return tioctl_json_print(NULL);
	if (!arr)
		printf("%-18s %4s %5s %-12s %s\n", "COMMAND", "NR", "SIZE", "FLAGS", "FFI GLOBAL");
	for (i = 0; i < n; i++) {
		if (tio_command_info(i, &c)) {
			json_object_put(arr);
			return tioctl_lib_err("tio_command_info");
		}
		if (!arr) {
			printf("%-18s 0x%02x %5u %-12s %s\n", c.name, _IOC_NR(c.op), c.payload_size,
			       c.flags & TIO_COMMAND_WAITS ? "waits" :
			       c.flags & TIO_COMMAND_WRITES_BACK ? "writes-back" : "-",
			       c.global ? c.global : "-");
			continue;
		}
		row = command_json(&c);
		if (!row) {
			json_object_put(arr);
			return tioctl_json_print(NULL);
		}
		json_object_array_add(arr, row);
	}
	return arr ? tioctl_json_print(arr) : EXIT_OK;
}
