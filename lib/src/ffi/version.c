// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Library version queries.
 */
#include <tensorio/version.h>

uint32_t tio_version(void)
{
	return TIO_VERSION;
}

uint32_t tio_abi_version(void)
{
	return TIO_ABI_VERSION;
}
