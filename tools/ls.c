// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl ls: every open file's buffers and streams, from debugfs
 * tensorio/files/PID.N/objects ("HANDLE TYPE details" lines).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tioctl.h"

static void print_json_details(const char *details)
{
	char word[128];
	const char *sep = "";
	int n;

	/* "kind size=4096 exported dtype=2:32:1": words, some key=value. */
	while (sscanf(details, "%127s%n", word, &n) == 1) {
		char *eq = strchr(word, '=');

		if (eq) {
			*eq = 0;
			printf("%s\"%s\": \"%s\"", sep, word, eq + 1);
		} else {
			printf("%s\"%s\": true", sep, word);
		}
		sep = ", ";
		details += n;
	}
}

static int list_file(const char *file, int json, const char **sep)
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
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%lu %15s %n", &handle, type, &n) < 2)
			continue;
		if (json) {
			printf("%s{\"file\": \"%s\", \"handle\": %lu, \"type\": \"%s\", ",
			       *sep, file, handle, type);
			print_json_details(line + n);
			printf("}");
			*sep = ", ";
		} else {
			printf("%-14s %6lu %-7s %s\n", file, handle, type, line + n);
		}
	}
	fclose(f);
	return 0;
}

/**
 * cmd_ls() - tioctl ls
 * @o: global options
 * @argc: arguments after "ls"
 * @argv: (none accepted)
 *
 * Return: an exit code.
 */
int cmd_ls(const struct tioctl_opts *o, int argc, char **argv)
{
	const char *sep = "";
	struct dirent *de;
	DIR *d;
	int ret = 0;

	(void)argv;
	if (argc) {
		fprintf(stderr, "tioctl: ls takes no arguments\n");
		return EXIT_UNUSABLE;
	}
	d = opendir(TIO_DEBUGFS "/files");
	if (!d) {
		tioctl_err(TIO_DEBUGFS "/files", errno);
		return EXIT_UNUSABLE;
	}
	if (o->json)
		printf("[");
	else
		printf("%-14s %6s %-7s %s\n", "file", "handle", "type", "details");
	while (!ret && (de = readdir(d)))
		if (de->d_name[0] != '.')
			ret = list_file(de->d_name, o->json, &sep);
	closedir(d);
	if (o->json)
		printf("]\n");
	if (ret) {
		tioctl_err(TIO_DEBUGFS "/files", -ret);
		return EXIT_FAILED;
	}
	return EXIT_OK;
}
