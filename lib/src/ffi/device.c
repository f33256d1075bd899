// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Device text: parse and print.
 */
#include <stdio.h>

#include "ffi/ffi_internal.h"

static const char *const names[] = {
	[TIO_DL_CPU] = "cpu",
	[TIO_DL_CUDA] = "cuda",
	[TIO_DL_CUDA_HOST] = "cuda_host",
	[TIO_DL_OPENCL] = "opencl",
	[TIO_DL_VULKAN] = "vulkan",
	[TIO_DL_METAL] = "metal",
	[TIO_DL_VPI] = "vpi",
	[TIO_DL_ROCM] = "rocm",
	[TIO_DL_ROCM_HOST] = "rocm_host",
	[TIO_DL_EXT_DEV] = "ext_dev",
	[TIO_DL_CUDA_MANAGED] = "cuda_managed",
	[TIO_DL_ONEAPI] = "oneapi",
	[TIO_DL_WEBGPU] = "webgpu",
	[TIO_DL_HEXAGON] = "hexagon",
	[TIO_DL_MAIA] = "maia",
	[TIO_DL_TRN] = "trn",
};

#define NNAMES ((int)(sizeof(names) / sizeof(names[0])))

int tio_device_parse(const char *s, DLDevice *out)
{
	const char *colon;
	long long id = 0;
	size_t n, i;
	int t;

	if (!s || !out)
		return tio_error_raise("ValueError", "NULL device text");
	colon = strchr(s, ':');
	n = colon ? (size_t)(colon - s) : strlen(s);
	if (colon) {
		const char *p = colon + 1;

		if (!*p || strlen(p) > 10)
			goto bad;
		for (i = 0; p[i]; i++) {
			if (p[i] < '0' || p[i] > '9')
				goto bad;
			id = id * 10 + (p[i] - '0');
		}
		if (id > INT32_MAX || (p[0] == '0' && p[1]))
			goto bad;
	}
	for (t = 0; t < NNAMES; t++) {
		if (names[t] && strlen(names[t]) == n && !memcmp(names[t], s, n)) {
			out->device_type = (DLDeviceType)t;
			out->device_id = (int)id;
			return 0;
		}
	}
bad:
	return tio_error_raise("ValueError", "'%s' is not a device", s);
}

int tio_device_print(DLDevice dev, char *buf, size_t len)
{
	int t = (int)dev.device_type, n;

	if (t < 0 || t >= NNAMES || !names[t])
		return tio_error_raise("ValueError", "device type %d is unknown", t);
	if (dev.device_id < 0)
		return tio_error_raise("ValueError", "device id %d is negative", dev.device_id);
	n = snprintf(buf, buf ? len : 0, "%s:%d", names[t], dev.device_id);
	if (!buf || (size_t)n >= len)
		return tio_error_raise("ValueError", "device text needs %d bytes, %zu given",
				       n + 1, len);
	return n;
}
