// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library links, reports the version it was built as, and exports
 * nothing but its documented symbols.
 */
#include <stdio.h>
#include <string.h>

#include <tensorio/version.h>

#include "kselftest_harness.h"

TEST(version_matches_header)
{
	EXPECT_EQ(TIO_VERSION, tio_version());
	EXPECT_EQ(TIO_ABI_VERSION, tio_abi_version());
	EXPECT_EQ(TIO_VERSION_MAJOR, tio_version() >> 16);
}

TEST_HARNESS_MAIN
