// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "gpu", the peer's load rows: the safetensors library itself
 * (safetensors.torch.load_file(path, device="cuda:0")) loading the file
 * of the load rows, $TIO_BENCH_ST_FILE, GB/s of file bytes:
 *   load/peer/safetensors-cold   dropped from the page cache first
 *   load/peer/safetensors-warm   the file in the page cache
 * One Python process per row (bench/python/st_gpu_peer.py --serve, under
 * $TIO_BENCH_PYTHON, default python3) imports torch and brings the GPU
 * up before timing; each operation is one load it times itself, between
 * torch.cuda.synchronize() calls, and reports. The rows skip, with the
 * reason, without the file, Python, torch, safetensors or a GPU torch
 * sees; bench/gpu-load.sh and make gpu-check set the file.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#ifndef TIO_BENCH_ST_PEER
#define TIO_BENCH_ST_PEER "bench/python/st_gpu_peer.py"
#endif

enum pkind { P_COLD, P_WARM };

struct pstate {
	pid_t pid;
	FILE *to, *from;
};

static void peer_teardown(struct bench_run *run)
{
	struct pstate *s = run->state;

	if (!s)
		return;
	if (s->to)
		fclose(s->to);		/* EOF: the server returns */
	if (s->from)
		fclose(s->from);
	if (s->pid > 0 && waitpid(s->pid, NULL, WNOHANG) == 0) {
		sleep(1);
		if (waitpid(s->pid, NULL, WNOHANG) == 0) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
		}
	}
	free(s);
	run->state = NULL;
}

/* One line from the server, without its newline; NULL at its end. */
static char *peer_line(struct pstate *s, char *buf, size_t len)
{
	if (!fgets(buf, (int)len, s->from))
		return NULL;
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

static int peer_start(struct bench_run *run, struct pstate *s, const char *file)
{
	const char *py = getenv("TIO_BENCH_PYTHON");
	const char *script = getenv("TIO_BENCH_ST_PEER");
	int in[2], out[2];

	if (!py || !*py)
		py = "python3";
	if (!script || !*script)
		script = TIO_BENCH_ST_PEER;
	if (pipe(in))
		return bench_fail(run, errno, "pipe");
	if (pipe(out)) {
		close(in[0]);
		close(in[1]);
		return bench_fail(run, errno, "pipe");
	}
	s->pid = fork();
	if (!s->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execlp(py, py, script, "--serve", file, (char *)NULL);
		printf("skip cannot run %s: %s\n", py, strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->to = fdopen(in[1], "w");
	s->from = fdopen(out[0], "r");
	if (s->pid < 0 || !s->to || !s->from) {
		if (!s->to)
			close(in[1]);
		if (!s->from)
			close(out[0]);
		return bench_fail(run, EIO, "starting %s %s", py, script);
	}
	return 0;
}

/* An operation moves the file's bytes. */
static void peer_bytes(struct bench_run *run)
{
	const char *file = getenv("TIO_BENCH_ST_FILE");
	FILE *f = file ? fopen(file, "rb") : NULL;
	long size = -1;

	if (f) {
		if (!fseek(f, 0, SEEK_END))
			size = ftell(f);
		fclose(f);
	}
	if (size > 0)
		run->bytes = (uint64_t)size;
}

static int peer_setup(struct bench_run *run)
{
	const char *file = getenv("TIO_BENCH_ST_FILE");
	struct pstate *s;
	char line[256];
	int err;

	if (!file || !*file || access(file, R_OK))
		return bench_skip(run, "no TIO_BENCH_ST_FILE to load (bench/gpu-load.sh sets one)");
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	err = peer_start(run, s, file);
	if (!err && !peer_line(s, line, sizeof(line)))
		err = bench_skip(run, "the peer said nothing (python3 and bench/python?)");
	else if (!err && !strncmp(line, "skip ", 5))
		err = bench_skip(run, "safetensors peer: %s", line + 5);
	else if (!err && strcmp(line, "ready"))
		err = bench_fail(run, EPROTO, "safetensors peer: %s", line);
	if (err) {
		peer_teardown(run);
		return err;
	}
	peer_bytes(run);
	return 0;
}

static int peer_run(struct bench_run *run, uint64_t n)
{
	struct pstate *s = run->state;
	double total = 0, secs;
	char line[256];
	uint64_t i;

	for (i = 0; i < n; i++) {
		fprintf(s->to, "%s\n", run->c->arg == P_COLD ? "cold" : "warm");
		fflush(s->to);
		if (!peer_line(s, line, sizeof(line)))
			return bench_fail(run, EPIPE, "the safetensors peer went away");
		if (sscanf(line, "%lf", &secs) != 1)
			return bench_fail(run, EPROTO, "safetensors peer: %s", line);
		total += secs * 1e9;
	}
	run->manual_ns = total;
	return 0;
}

#define PEER(n, k, what) {						\
	.suite = "gpu", .name = n, .size = "large", .note = what,	\
	.setup = peer_setup, .run = peer_run, .teardown = peer_teardown, \
	.arg = k }

static struct bench_case cases[] = {
	PEER("load/peer/safetensors-cold", P_COLD,
	     "safetensors.torch.load_file(device=cuda:0), cold (the peer)"),
	PEER("load/peer/safetensors-warm", P_WARM,
	     "safetensors.torch.load_file(device=cuda:0), page cache warm (the peer)"),
};

static void __attribute__((constructor)) peer_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
