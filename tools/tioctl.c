// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl: the operator's command line tool for /dev/tensorio.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/tensorio.h>

#define TIO_DEV "/dev/tensorio"

static const char *const feature_names[] = {
	"buffers", "pin-user", "dmabuf", "streams", "sync-file", "dma-resv",
	"uring-cmd", "submit", "async-wait",
};

static int open_dev(void)
{
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		int err = errno;

		if (err == ENOENT)
			fprintf(stderr, "tioctl: %s: no such device (is tensorio loaded? try 'modprobe tensorio')\n",
				TIO_DEV);
		else if (err == EACCES || err == EPERM)
			fprintf(stderr, "tioctl: %s: permission denied (join the device's group)\n",
				TIO_DEV);
		else
			fprintf(stderr, "tioctl: %s: %s\n", TIO_DEV, strerror(err));
	}
	return fd;
}

static void print_features(unsigned long long f, int json)
{
	const char *sep = "";
	unsigned int i;

	for (i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++) {
		if (!(f & (1ULL << i)))
			continue;
		printf(json ? "%s\"%s\"" : "%s%s", sep, feature_names[i]);
		sep = json ? ", " : " ";
	}
}

static int cmd_info(int json)
{
	struct tio_info info = { 0 };
	int fd = open_dev();

	if (fd < 0)
		return 2;
	if (ioctl(fd, TIO_IOC_INFO, &info)) {
		fprintf(stderr, "tioctl: INFO: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	if (json) {
		printf("{\"uapi_version\": \"%u.%u\", \"features\": [",
		       info.version >> 16, info.version & 0xffff);
		print_features(info.features, 1);
		printf("], \"max_buf_size\": %llu, \"max_pinned\": %llu, \"pinned\": %llu, \"max_submit\": %u}\n",
		       (unsigned long long)info.max_buf_size,
		       (unsigned long long)info.max_pinned,
		       (unsigned long long)info.pinned, info.max_submit);
		return 0;
	}
	printf("%-14s %u.%u\n", "uapi version", info.version >> 16, info.version & 0xffff);
	printf("%-14s %#llx (", "features", (unsigned long long)info.features);
	print_features(info.features, 0);
	printf(")\n");
	printf("%-14s %llu\n", "max_buf_size", (unsigned long long)info.max_buf_size);
	printf("%-14s %llu\n", "max_pinned", (unsigned long long)info.max_pinned);
	printf("%-14s %llu\n", "pinned", (unsigned long long)info.pinned);
	printf("%-14s %u\n", "max_submit", info.max_submit);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tioctl [--json] info\n"
		   "exit status: 0 ok, 1 the command failed, 2 no device or bad usage\n");
}

int main(int argc, char **argv)
{
	int json = 0, i = 1;

	if (i < argc && !strcmp(argv[i], "--json")) {
		json = 1;
		i++;
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[i], "info"))
		return cmd_info(json);
	if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "tioctl: unknown command '%s'\n", argv[i]);
	usage(stderr);
	return 2;
}
