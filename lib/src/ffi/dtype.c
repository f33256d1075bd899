// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * dtype text: parse and print.
 */
#include <stdio.h>

#include "ffi/ffi_internal.h"

/* Names that carry their own bits. */
static const struct {
	const char *name;
	uint8_t code, bits;
} fixed[] = {
	{ "bool", TIO_DL_BOOL, 8 },
	{ "handle", TIO_DL_OPAQUE_HANDLE, 64 },
	{ "float8_e3m4", TIO_DL_FLOAT8_E3M4, 8 },
	{ "float8_e4m3", TIO_DL_FLOAT8_E4M3, 8 },
	{ "float8_e4m3b11fnuz", TIO_DL_FLOAT8_E4M3B11FNUZ, 8 },
	{ "float8_e4m3fn", TIO_DL_FLOAT8_E4M3FN, 8 },
	{ "float8_e4m3fnuz", TIO_DL_FLOAT8_E4M3FNUZ, 8 },
	{ "float8_e5m2", TIO_DL_FLOAT8_E5M2, 8 },
	{ "float8_e5m2fnuz", TIO_DL_FLOAT8_E5M2FNUZ, 8 },
	{ "float8_e8m0fnu", TIO_DL_FLOAT8_E8M0FNU, 8 },
	{ "float6_e2m3fn", TIO_DL_FLOAT6_E2M3FN, 6 },
	{ "float6_e3m2fn", TIO_DL_FLOAT6_E3M2FN, 6 },
	{ "float4_e2m1fn", TIO_DL_FLOAT4_E2M1FN, 4 },
};

/* Names followed by their bits. */
static const struct {
	const char *name;
	uint8_t code;
} sized[] = {
	{ "int", TIO_DL_INT },
	{ "uint", TIO_DL_UINT },
	{ "float", TIO_DL_FLOAT },
	{ "bfloat", TIO_DL_BFLOAT },
	{ "complex", TIO_DL_COMPLEX },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A decimal in [1, max] spanning exactly [s, s + n). */
static int parse_uint(const char *s, size_t n, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (!n || n > 6 || s[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < 1 || v > max)
		return -1;
	*out = v;
	return 0;
}

static int bits_ok(uint8_t code, unsigned long bits)
{
	switch (code) {
	case TIO_DL_INT:
	case TIO_DL_UINT:
		return bits == 1 || bits == 4 || bits == 8 || bits == 16 || bits == 32 ||
		       bits == 64;
	case TIO_DL_FLOAT:
		return bits == 16 || bits == 32 || bits == 64;
	case TIO_DL_BFLOAT:
		return bits == 16;
	case TIO_DL_COMPLEX:
		return bits == 64 || bits == 128;
	default:
		return 0;
	}
}

/* Parses [s, s + n) as a dtype without lanes. Return: 0 or -1. */
static int parse_base(const char *s, size_t n, DLDataType *out)
{
	unsigned long bits;
	size_t i, l;

	for (i = 0; i < NELEM(fixed); i++) {
		if (strlen(fixed[i].name) == n && !memcmp(fixed[i].name, s, n)) {
			out->code = fixed[i].code;
			out->bits = fixed[i].bits;
			return 0;
		}
	}
	for (i = 0; i < NELEM(sized); i++) {
		l = strlen(sized[i].name);
		if (n > l && !memcmp(sized[i].name, s, l) &&
		    !parse_uint(s + l, n - l, 255, &bits) && bits_ok(sized[i].code, bits)) {
			out->code = sized[i].code;
			out->bits = (uint8_t)bits;
			return 0;
		}
	}
	return -1;
}

int tio_dtype_parse(const char *s, DLDataType *out)
{
	unsigned long lanes;
	const char *x;
	size_t n;

	if (!s || !out)
		return tio_error_raise("ValueError", "NULL dtype text");
	n = strlen(s);
	/* "BASExLANES"; the x may also belong to the base ("complex64"). */
	x = strrchr(s, 'x');
	if (x && !parse_uint(x + 1, (size_t)(s + n - x - 1), 65535, &lanes) &&
	    !parse_base(s, (size_t)(x - s), out)) {
		out->lanes = (uint16_t)lanes;
		return 0;
	}
	if (!parse_base(s, n, out)) {
		out->lanes = 1;
		return 0;
	}
	return tio_error_raise("ValueError", "'%s' is not a dtype", s);
}

int tio_dtype_print(DLDataType dt, char *buf, size_t len)
{
	const char *name = NULL;
	char tmp[TIO_DTYPE_STR_MAX];
	size_t i;
	int n;

	if (!dt.lanes)
		return tio_error_raise("ValueError", "dtype with 0 lanes");
	for (i = 0; i < NELEM(fixed); i++)
		if (fixed[i].code == dt.code && fixed[i].bits == dt.bits)
			name = fixed[i].name;
	if (name) {
		n = snprintf(tmp, sizeof(tmp), "%s", name);
	} else {
		for (i = 0; i < NELEM(sized); i++)
			if (sized[i].code == dt.code && bits_ok(dt.code, dt.bits))
				name = sized[i].name;
		if (!name)
			return tio_error_raise("ValueError", "dtype code %u with %u bits is unknown",
					       dt.code, dt.bits);
		n = snprintf(tmp, sizeof(tmp), "%s%u", name, dt.bits);
	}
	if (dt.lanes > 1)
		n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "x%u", dt.lanes);
	if (!buf || (size_t)n >= len)
		return tio_error_raise("ValueError", "dtype text needs %d bytes, %zu given",
				       n + 1, len);
	memcpy(buf, tmp, (size_t)n + 1);
	return n;
}
