// SPDX-License-Identifier: GPL-2.0
/*
 * Guest smoke test for make check: every driver benchmark once, briefly
 * (--fast), as TAP. Installed into build/kselftest by bench/Makefile so the
 * kselftest VM boot runs it next to tio-bench; timings are not asserted,
 * only that each case runs or says why it is skipped. A program, not a
 * script, so that the VM runner's ldd pass over the directory works.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char *argv[] = { "tio-bench", "--fast", "--tap", "--suite", "overhead,memory,sync,cmd",
			 NULL };

	execv("./tio-bench", argv);
	perror("tio_bench_test: ./tio-bench");
	return 1;
}
