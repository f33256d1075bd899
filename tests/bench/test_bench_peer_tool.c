// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench_tool_pair(), with /bin/sh standing in for a peer tool's server
 * and client: the client's value is read from its stdout or stderr, its
 * chatter is kept out of the bench's output, and a failure says why (the
 * client's last line, a server that exited first).
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

#include "kselftest_harness.h"

static int parse_result(const char *line, double *v)
{
	return sscanf(line, "result %lf", v) == 1 ? 0 : -1;
}

#define SH(script) { "/bin/sh", "-c", script, NULL }

TEST(pair_reads_the_client_value_past_its_chatter)
{
	char *srv[] = SH("exec sleep 5");
	char *cli[] = SH("echo \"Couldn't connect\" >&2; echo 'result 36.5'");
	char why[256];

	EXPECT_EQ(36.5, bench_tool_pair(srv, cli, parse_result, why, sizeof(why)));
}

TEST(pair_says_what_the_client_said)
{
	char *srv[] = SH("exec sleep 5");
	char *cli[] = SH("echo 'Failed to modify QP to RTR' >&2");
	char why[256];

	EXPECT_EQ(-1, bench_tool_pair(srv, cli, parse_result, why, sizeof(why)));
	TH_LOG("%s", why);
	EXPECT_NE(NULL, strstr(why, "said \"Failed to modify QP to RTR\""));
	EXPECT_NE(NULL, strstr(why, "(20 client runs)"));
}

TEST(pair_says_the_server_exited_first)
{
	char *srv[] = SH("echo 'Unable to bind' >&2; exit 3");
	char *cli[] = SH("sleep 0.3; echo 'Couldn'\\''t connect' >&2");
	char why[256];

	EXPECT_EQ(-1, bench_tool_pair(srv, cli, parse_result, why, sizeof(why)));
	TH_LOG("%s", why);
	EXPECT_NE(NULL, strstr(why, "the server exited first (status 3)"));
}

TEST_HARNESS_MAIN
