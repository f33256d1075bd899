// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Peer tools that come as a server and a client (ucx_perftest, perftest's
 * ib_write_bw): the net suite's rows run both and read the client's
 * report.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/*
 * One client run, its stdout and stderr read together: the value @parse
 * finds, or -1 with the last other line in @why (perftest's "Couldn't
 * connect" retries so stay out of the bench's own output).
 */
static double bench_tool_client(char *const argv[],
				int (*parse)(const char *line, double *val),
				char *why, size_t whylen)
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
		dup2(pfd[1], 2);
		close(pfd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!parse(line, &got)) {
			v = got;
		} else if (line[strspn(line, " \t\r\n")]) {
			line[strcspn(line, "\r\n")] = 0;
			snprintf(why, whylen, "%s said \"%s\"", argv[0], line);
		}
	}
	if (f)
		fclose(f);
	else
		close(pfd[0]);
	if (cli > 0)
		waitpid(cli, NULL, 0);
	return v;
}

double bench_tool_pair(char *const server[], char *const client[],
		       int (*parse)(const char *line, double *val),
		       char *why, size_t whylen)
{
	struct timespec nap = { 0, 100000000 };
	double v = -1;
	pid_t srv;
	int i, st;

	snprintf(why, whylen, "%s printed nothing", client[0]);
	srv = fork();
	if (srv < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (!srv) {
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(127);
		execv(server[0], server);
		_exit(127);
	}
	for (i = 0; i < 20 && v < 0; i++) {
		if (waitpid(srv, &st, WNOHANG) == srv) {
			snprintf(why + strlen(why), whylen - strlen(why),
				 "; the server exited first (%s %d)",
				 WIFEXITED(st) ? "status" : "signal",
				 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			return -1;
		}
		nanosleep(&nap, NULL);
		v = bench_tool_client(client, parse, why, whylen);
	}
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
	if (v < 0)
		snprintf(why + strlen(why), whylen - strlen(why), " (%d client runs)", i);
	return v;
}
