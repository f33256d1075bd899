// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Peer tools that come as a server and a client (ucx_perftest, perftest's
 * ib_write_bw): the net suite's rows run both and read the client's
 * report.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* One client run: the value @parse finds in its output, or -1. */
static double bench_tool_client(char *const argv[],
				int (*parse)(const char *line, double *val))
{
	char line[512];
	double v = -1, got;
	int pfd[2];
	pid_t cli;
	FILE *f;

	if (pipe(pfd))
		return -1;
	cli = fork();
	if (!cli) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	while (f && fgets(line, sizeof(line), f))
		if (!parse(line, &got))
			v = got;
	if (f)
		fclose(f);
	else
		close(pfd[0]);
	if (cli > 0)
		waitpid(cli, NULL, 0);
	return v;
}

double bench_tool_pair(char *const server[], char *const client[],
		       int (*parse)(const char *line, double *val))
{
	struct timespec nap = { 0, 100000000 };
	double v = -1;
	pid_t srv;
	int i;

	srv = fork();
	if (srv < 0)
		return -1;
	if (!srv) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execv(server[0], server);
		_exit(127);
	}
	for (i = 0; i < 20 && v < 0 && waitpid(srv, NULL, WNOHANG) == 0; i++) {
		nanosleep(&nap, NULL);
		v = bench_tool_client(client, parse);
	}
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
	return v;
}
