// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: dtype and device strings. Parse any text; what parses
 * must print, and the printed text must parse back to the same value.
 * Built twice: -DFUZZ_DEVICE selects the device parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tensorio/device.h>
#include <tensorio/dtype.h>
#include <tensorio/error.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), buf[256];

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
#ifdef FUZZ_DEVICE
	DLDevice d, d2;

	if (!tio_device_parse(s, &d) && tio_device_print(d, buf, sizeof(buf)) >= 0) {
		if (tio_device_parse(buf, &d2) || d2.device_type != d.device_type ||
		    d2.device_id != d.device_id)
			abort();
	}
#else
	DLDataType t, t2;

	if (!tio_dtype_parse(s, &t) && tio_dtype_print(t, buf, sizeof(buf)) >= 0) {
		if (tio_dtype_parse(buf, &t2) || t2.code != t.code || t2.bits != t.bits ||
		    t2.lanes != t.lanes)
			abort();
	}
#endif
	tio_error_clear();
	free(s);
	return 0;
}
