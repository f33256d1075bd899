// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl ls: every open file's buffers and streams, from debugfs
 * tensorio/files/PID.N/objects ("HANDLE TYPE details" lines).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tioctl.h"

/* "2:32:1" (the driver's code:bits:lanes) as a name, or NULL. */
static struct json_object *dtype_of(const char *text)
{
	unsigned int code, bits, lanes;
	int n;

	if (sscanf(text, "%u:%u:%u%n", &code, &bits, &lanes, &n) != 3 || text[n])
		return NULL;
	return tioctl_json_dtype(code, bits, lanes);
}

/* "2x3" or "4,1": extents as an array. */
static struct json_object *extents_of(const char *text)
{
	struct json_object *a = json_object_new_array();
	char *end;

	while (a && *text) {
		json_object_array_add(a, json_object_new_int64(strtoll(text, &end, 10)));
		if (end == text)
			break;
		text = *end ? end + 1 : end;
	}
	return a;
}

/*
 * "alloc size=4096 exported dtype=2:32:1 shape=2x3": a buffer's first word
 * is its kind, other bare words are flags, key=value pairs are numbers,
 * except the dtype (its name) and the extents (arrays).
 */
static void add_details(struct json_object *obj, const char *type, char *details,
			int json)
{
	char word[128], *save = NULL, *tok;
	int first = 1;

	for (tok = strtok_r(details, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		struct json_object *v = NULL;

		snprintf(word, sizeof(word), "%s", tok);
		if (eq)
			word[eq - tok] = 0;
		if (eq && !strcmp(word, "dtype"))
			v = dtype_of(eq + 1);
		if (!json) {
			if (v)
				printf(" dtype=%s", json_object_get_string(v));
			else
				printf(" %s", tok);
			json_object_put(v);
			continue;
		}
		if (!eq)
			v = (first && !strcmp(type, "buffer")) ?
			    json_object_new_string(tok) : json_object_new_boolean(1);
		else if (!v && (!strcmp(word, "shape") || !strcmp(word, "strides")))
			v = extents_of(eq + 1);
		else if (!v)
			v = tioctl_json_value(eq + 1);
		json_object_object_add(obj, (!eq && first && !strcmp(type, "buffer")) ?
				       "kind" : word, v);
		first = 0;
	}
}

static int list_file(const char *file, struct json_object *arr)
{
	char path[512], line[512], type[16];
	unsigned long handle;
	int n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/files/%s/objects", TIO_DEBUGFS, file);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;	/* closed meanwhile */
	while (fgets(line, sizeof(line), f)) {
		struct json_object *obj = NULL;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%lu %15s %n", &handle, type, &n) < 2)
			continue;
		if (arr) {
			obj = json_object_new_object();
			json_object_object_add(obj, "file", json_object_new_string(file));
			json_object_object_add(obj, "handle", json_object_new_int64(handle));
			json_object_object_add(obj, "type", json_object_new_string(type));
			json_object_array_add(arr, obj);
		} else {
			printf("%-14s %6lu %-7s", file, handle, type);
		}
		add_details(obj, type, line + n, !!arr);
		if (!arr)
			printf("\n");
	}
	fclose(f);
	return 0;
}

static const struct option ls_opts[] = { TIOCTL_COMMON_OPTS, { NULL, 0, NULL, 0 } };

/**
 * cmd_ls() - tioctl ls
 * @o: global options
 * @argc: argument count, argv[0] being "ls"
 * @argv: (no operands accepted)
 *
 * Return: an exit code.
 */
int cmd_ls(struct tioctl_opts *o, int argc, char **argv)
{
	struct json_object *arr = NULL;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	if (tioctl_getopt(o, argc, argv, ls_opts) != -1 ||
	    tioctl_operands(argc, argv, 0, 0) < 0)
		return EXIT_UNUSABLE;
	d = opendir(TIO_DEBUGFS "/files");
	if (!d) {
		tioctl_err(TIO_DEBUGFS "/files", errno);
		return EXIT_UNUSABLE;
	}
	if (o->json)
		arr = json_object_new_array();
	else
		printf("%-14s %6s %-7s %s\n", "file", "handle", "type", "details");
	while (!ret && (de = readdir(d)))
		if (de->d_name[0] != '.')
			ret = list_file(de->d_name, arr);
	closedir(d);
	if (ret) {
		json_object_put(arr);
		tioctl_err(TIO_DEBUGFS "/files", -ret);
		return EXIT_FAILED;
	}
	return o->json ? tioctl_json_print(arr) : EXIT_OK;
}
