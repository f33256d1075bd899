// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A module built with the library's export macros (headers only; it does
 * not link against libtensorio).
 */
#include <tensorio/module.h>

static int triple(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	(void)self;
	if (nargs != 1 || args[0].type_index != TIO_TYPE_INT)
		return -1;
	*ret = tio_any_int(3 * args[0].v_int64);
	return 0;
}

TIO_EXPORT_ABI_VERSION();
TIO_EXPORT_FUNC(triple, triple)
