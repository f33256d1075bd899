// SPDX-License-Identifier: GPL-2.0
/*
 * Running one instruction: its kind (ioctl, uring_cmd, SUBMIT, ring
 * records, mmap, another fd's operation, a file operation, fork, time),
 * its file and its command come from the header bytes; everything else
 * from its tape. Waits by ioctl block for a few ms at most unless the
 * instruction arms an interrupt (a periodic SIGUSR1 to its thread).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "kfuzz.h"
#include "tio_peers.h"

#define R(n)	t_rnd(&k->t, (n))
#define ONE(n)	t_one_in(&k->t, (n))

enum kind { K_IOCTL, K_URING, K_SUBMIT, K_RING, K_MMAP, K_FD, K_FILE, K_FORK, K_TIME };

/* Header byte 1 picks the kind, weighted by these shares of 256. */
static const struct { uint8_t kind, share; } kinds[] = {
	{ K_IOCTL, 72 }, { K_URING, 64 }, { K_SUBMIT, 30 }, { K_RING, 20 },
	{ K_MMAP, 18 }, { K_FD, 24 }, { K_FILE, 8 }, { K_FORK, 1 }, { K_TIME, 19 },
};

static int kind_of(uint8_t b)
{
	unsigned int i, acc = 0;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		acc += kinds[i].share;
		if (b < acc)
			return kinds[i].kind;
	}
	return K_TIME;
}

/* Instructions a group (SUBMIT, ring records, a child) takes after it. */
unsigned int group_size(const uint8_t *insn)
{
	switch (kind_of(insn[1])) {
	case K_SUBMIT: case K_RING: case K_FORK:
		return 1 + insn[3] % 8;
	default:
		return 0;
	}
}

/* The file an instruction acts on: its own, or any still open. */
static int pick_file(struct worker *k, const uint8_t *insn)
{
	int fi = (insn[0] >> 2) & 3, i;

	for (i = 0; i < MAXF; i++)
		if (file_fd(k, fi + i) >= 0)
			return (fi + i) % MAXF;
	return -1;
}

/* Bytes of its payload a successful command wrote back. */
unsigned int out_len(unsigned int cmd)
{
	unsigned int i = op_index(cmd), ks;

	if (i >= g_nops || !(_IOC_DIR(cmd) & _IOC_DIR(g_ops[i].cmd) & _IOC_READ))
		return 0;
	ks = _IOC_SIZE(g_ops[i].cmd);
	return _IOC_SIZE(cmd) < ks ? _IOC_SIZE(cmd) : ks;
}

/*
 * Where a command wrote its payload, if into our scratch, with at least
 * @len bytes before the guard page: a payload that straddles it was not
 * written, and one a call of a short size got through may end just before
 * it (harvest() reads the handle, 4 bytes, whatever the size).
 */
void *scratch_ptr(struct worker *k, uint64_t uptr, size_t len)
{
	char *p = (char *)(uintptr_t)uptr;

	return p >= k->scratch && p < k->guard && len <= (size_t)(k->guard - p) ? p : NULL;
}

static void kick_arm(struct worker *k, bool on, unsigned int us)
{
	struct itimerspec its = { 0 };

	if (!k->kick_ok)
		return;
	if (on) {
		its.it_value.tv_nsec = 20000 + us * 1000L;
		its.it_interval = its.it_value;
	}
	timer_settime(k->kick, 0, &its, NULL);
}

/* An ioctl on file @fi, watched by the watchdog, its result checked. */
int dev_ioctl(struct worker *k, int fi, unsigned int cmd, uint64_t uptr)
{
	int ret;

	k->busy_since = now_ns();
	ret = ioctl(file_fd(k, fi), cmd, (void *)(uintptr_t)uptr);
	if (ret < 0)
		ret = -errno;
	k->busy_since = 0;
	check_result(k, "ioctl", cmd, ret);
	return ret;
}

static void do_ioctl(struct worker *k, unsigned int opi, int fi, bool kicked)
{
	uint8_t p[TIO_CMD_PAYLOAD];
	unsigned int cmd = pick_cmd(k, opi);
	uint64_t uptr;
	void *at;
	int ret;

	gen_payload(k, opi, fi, p, !kicked, 0);
	if (ONE(6))
		mutate(k, p, _IOC_SIZE(g_ops[opi].cmd) ?: 1);
	uptr = pick_uptr(k, p, sizeof(p), 0);
	ret = dev_ioctl(k, fi, cmd, uptr);
	at = scratch_ptr(k, uptr, sizeof(uint32_t));
	if (ret >= 0 && at)
		harvest(k, fi, cmd, at, out_len(cmd));
}

/* ---- io_uring ---- */

static void pend_add(struct worker *k, uint64_t tag, void *payload,
		     unsigned int cmd, int fi)
{
	unsigned int i;

	for (i = 0; i < sizeof(k->pend) / sizeof(k->pend[0]); i++) {
		if (k->pend[i].tag)
			continue;
		k->pend[i] = (struct pend){ tag, payload, cmd, fi };
		return;
	}
}

static void complete(struct worker *k, uint64_t tag, int res)
{
	unsigned int i;

	for (i = 0; i < sizeof(k->pend) / sizeof(k->pend[0]); i++) {
		struct pend *p = &k->pend[i];

		if (p->tag != tag)
			continue;
		check_result(k, "CQE", p->cmd, res);
		if (res >= 0 && p->payload)
			harvest(k, p->fi, p->cmd, p->payload, out_len(p->cmd));
		p->tag = 0;
		return;
	}
	check_result(k, "CQE", 0, res);
}

void reap(struct worker *k, bool wait)
{
	struct __kernel_timespec ts = { .tv_nsec = 2000000 };
	struct io_uring_cqe *cqe;

	if (!k->ring_ok)
		return;
	if (wait && k->inflight)
		io_uring_wait_cqe_timeout(&k->ring, &cqe, &ts);
	while (io_uring_peek_cqe(&k->ring, &cqe) == 0) {
		uint64_t tag = cqe->user_data;
		int res = cqe->res;

		io_uring_cqe_seen(&k->ring, cqe);
		if (k->inflight)
			k->inflight--;
		complete(k, tag, res);
	}
}

/* Every CQE, until @until (ns): the files are closed, waits cancelled. */
void drain(struct worker *k, uint64_t until)
{
	while (k->ring_ok && k->inflight && now_ns() < until) {
		struct __kernel_timespec ts = { .tv_nsec = 50000000 };
		struct io_uring_cqe *cqe;

		io_uring_wait_cqe_timeout(&k->ring, &cqe, &ts);
		reap(k, false);
	}
	if (k->ring_ok && k->inflight && k->w->closed_mid) {
		/*
		 * A wait issued beside the program's close of its file may
		 * park after that close's ->flush, on a file no descriptor
		 * names, for a point only that file could signal: it waits
		 * as a blocking ioctl would. The ring's teardown cancels it;
		 * the counters oracle sees one the driver leaves parked.
		 */
		worker_ring_renew(k);
		return;
	}
	if (k->ring_ok && k->inflight)
		oracle_fail("uring", "%u uring_cmd CQEs missing 5 s after the files closed",
			    k->inflight);
}

static struct io_uring_sqe *get_sqe(struct worker *k)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&k->ring);

	if (!sqe) {
		io_uring_submit(&k->ring);
		reap(k, true);
		sqe = io_uring_get_sqe(&k->ring);
	}
	return sqe;
}

static long sleeps(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nvcsw;
}

static int submit(struct worker *k)
{
	long s0 = sleeps();
	uint64_t t0 = now_ns();
	int ret;

	k->busy_since = t0;
	ret = io_uring_submit(&k->ring);
	k->busy_since = 0;
	check_submit_time(k, t0, sleeps() - s0);
	return ret;
}

/* Submit the prepared SQE and wait for its CQE (reaping others meanwhile). */
static int wait_tag(struct worker *k, uint64_t tag)
{
	struct io_uring_cqe *cqe;
	int ret;

	if (submit(k) != 1)
		return -EAGAIN;
	k->inflight++;
	for (;;) {
		struct __kernel_timespec ts = { .tv_sec = 1 };

		ret = io_uring_wait_cqe_timeout(&k->ring, &cqe, &ts);
		if (ret == -EINTR || ret == -ETIME)
			continue;	/* io-wq records are bounded: it comes */
		if (ret < 0)
			return ret;
		k->inflight--;
		if (cqe->user_data == tag) {
			ret = cqe->res;
			io_uring_cqe_seen(&k->ring, cqe);
			return ret;
		}
		complete(k, cqe->user_data, cqe->res);
		io_uring_cqe_seen(&k->ring, cqe);
	}
}

/* One uring command with its payload at @uptr, waited for. */
int uring_wait_one(struct worker *k, int fi, unsigned int cmd, uint64_t uptr)
{
	struct io_uring_sqe *sqe = get_sqe(k);
	int ret;

	if (!sqe)
		return -EBUSY;
	tio_prep_cmd(sqe, file_fd(k, fi), cmd, (void *)(uintptr_t)uptr);
	sqe->user_data = ++k->tag;
	ret = wait_tag(k, sqe->user_data);
	check_result(k, "CQE", cmd, ret);
	return ret;
}

static bool makes_fds(unsigned int cmd)
{
	switch (canon_cmd(cmd)) {
	case TIO_IOC_BUF_EXPORT: case TIO_IOC_FENCE_EXPORT:
	case TIO_IOC_SUBMIT: case TIO_IOC_RING_ENTER:
		return true;
	}
	return false;
}

/*
 * A BUF_WAIT that can only park: the buffer's dma_resv gets a write fence
 * of this thread's own sw_sync timeline, signalled only once the submit
 * has returned, and the wait a timeout of 1 s, twice the submit oracle's
 * bound. A driver that parks returns from io_uring_submit() at once; one
 * that waits at the non-blocking issue sleeps there until the timeout (the
 * fuzzer's other waits are too short for the bound: their fences expire
 * by the stream's deadline, 10 ms in the VM). Returns the dma-buf fd to
 * close once the fence is signalled (park_probe_end()), or -1.
 */
static int park_probe(struct worker *k, int fi, struct tio_buf_wait *a)
{
	struct tio_buf_export x = { .handle = a->handle, .flags = TIO_EXPORT_F_CLOEXEC };
	struct dma_buf_import_sync_file in = { .flags = DMA_BUF_SYNC_WRITE };
	int ret;

	if (k->probe_tl < 0 || k->w->in_child)
		return -1;
	k->busy_since = now_ns();
	ret = ioctl(file_fd(k, fi), TIO_IOC_BUF_EXPORT, &x);
	k->busy_since = 0;
	check_result(k, "ioctl", TIO_IOC_BUF_EXPORT, ret < 0 ? -errno : ret);
	if (ret < 0)
		return -1;
	in.fd = tio_sw_sync_fence(k->probe_tl, k->probe_seq + 1);
	if (in.fd < 0 || ioctl(x.fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &in)) {
		if (in.fd >= 0)
			close(in.fd);
		close(x.fd);
		return -1;
	}
	close(in.fd);
	a->flags = 0;
	a->timeout_ns = 1000000000;
	return x.fd;
}

static void park_probe_end(struct worker *k, int dmabuf)
{
	if (dmabuf < 0)
		return;
	tio_sw_sync_inc(k->probe_tl, 1);
	k->probe_seq++;
	close(dmabuf);
}

/*
 * A uring command: the pointer form, the payload inline in a 128-byte
 * SQE, or IOSQE_ASYNC. Waits park (their CQE comes later, their payload
 * in a slot of its own); commands that may create fds are waited for, so
 * that the fds are known before the next instruction.
 */
static void do_uring(struct worker *k, unsigned int opi, int fi)
{
	unsigned int cmd = pick_cmd(k, opi), variant = R(8);
	unsigned int kc = canon_cmd(cmd);
	bool waitop = kc == TIO_IOC_FENCE_WAIT || kc == TIO_IOC_BUF_WAIT;
	bool async = variant == 2, inl = variant < 2 && k->sqe128;
	struct io_uring_sqe *sqe;
	uint8_t p[TIO_CMD_PAYLOAD];
	size_t off = 0;
	uint64_t uptr, tag;
	int ret, probe = -1;
	void *at;

	if (waitop || async)
		off = WAIT_OFF + (k->wslot++ % NWAITSLOTS) * 1024;
	gen_payload(k, opi, fi, p, async || inl || kc == TIO_IOC_SUBMIT, off);
	if (ONE(8) && !waitop)
		mutate(k, p, _IOC_SIZE(g_ops[opi].cmd) ?: 1);
	if (kc == TIO_IOC_BUF_WAIT && cmd == TIO_IOC_BUF_WAIT && !async && !inl && ONE(4))
		probe = park_probe(k, fi, (struct tio_buf_wait *)p);
	uptr = pick_uptr(k, p, sizeof(p), off);
	sqe = get_sqe(k);
	if (!sqe) {
		park_probe_end(k, probe);
		return;
	}
	tio_prep_cmd(sqe, file_fd(k, fi), cmd, (void *)(uintptr_t)uptr);
	if (inl) {
		/* The payload inline; waits bounded (they block io-wq). */
		struct tio_uring_inline *in = (struct tio_uring_inline *)sqe->cmd;

		bound_wait(k, cmd, p);
		memcpy(in->payload, p, sizeof(in->payload));
		in->flags = TIO_URING_F_INLINE;
		if (!ONE(3)) {
			in->result_ptr = 0;
			uptr = 0;	/* nothing to harvest */
		}
	}
	if (ONE(32))
		((uint64_t *)sqe->cmd)[1] = t_next(&k->t);
	if (async)
		sqe->flags |= IOSQE_ASYNC;
	tag = sqe->user_data = ++k->tag;
	at = scratch_ptr(k, uptr, sizeof(uint32_t));
	if (!waitop && (!async || makes_fds(cmd))) {
		ret = wait_tag(k, tag);
		check_result(k, "CQE", cmd, ret);
		if (ret >= 0 && at)
			harvest(k, fi, cmd, at, out_len(cmd));
		return;
	}
	if (submit(k) == 1) {
		k->inflight++;
		pend_add(k, tag, waitop ? NULL : at, cmd, fi);
	}
	park_probe_end(k, probe);
	reap(k, k->inflight > 48);
}

/* ---- time ---- */

static void do_time(struct worker *k)
{
	switch (R(4)) {
	case 0:
		usleep(R(3000));	/* timers, expiries and io-wq run */
		break;
	case 1:
		reap(k, true);
		break;
	default:
		sched_yield();
		break;
	}
}

/* ---- fork ---- */

/* A child: the next @nsub instructions, on the inherited files, then exit. */
static void do_fork(struct worker *k, const uint8_t *insn, unsigned int nsub)
{
	struct world *w = k->w;
	pid_t pid;

	if (w->in_child || w->nkids >= NKIDS)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		kid_main(k, insn, nsub);	/* does not return */
	if (pid > 0)
		w->kids[w->nkids++] = pid;
}

/* ---- one instruction ---- */

static void exec_kind(struct worker *k, const uint8_t *insn, unsigned int nsub,
		      int kind);

void exec_item(struct worker *k, const uint8_t *insn, unsigned int nsub)
{
	int kind = kind_of(insn[1]);
	uint64_t t0 = now_ns();

	exec_kind(k, insn, nsub, kind);
	prof_add(kind, t0, now_ns());
}

static void exec_kind(struct worker *k, const uint8_t *insn, unsigned int nsub,
		      int kind)
{
	int fi;
	bool kicked = insn[0] & 0x10;
	unsigned int opi = g_nops ? insn[2] % g_nops : 0;

	t_init(&k->t, insn + INSN_HDR, INSN - INSN_HDR);
	fi = pick_file(k, insn);
	if (kind == K_FORK) {
		do_fork(k, insn, nsub);
		return;
	}
	if (kind == K_FILE || fi < 0) {
		do_fileop(k, fi < 0 ? (insn[0] >> 2) & 3 : fi);
		return;
	}
	k->kicked = kicked && k->kick_ok;
	if (k->kicked)
		kick_arm(k, true, R(2000));
	switch (kind) {
	case K_IOCTL:
		if (canon_cmd(g_ops[opi].cmd) == TIO_IOC_RING_ENTER)
			do_ring(k, fi, NULL, 0);
		else
			do_ioctl(k, opi, fi, k->kicked);
		break;
	case K_URING:
		if (!k->ring_ok)
			do_ioctl(k, opi, fi, k->kicked);
		else if (canon_cmd(g_ops[opi].cmd) == TIO_IOC_RING_ENTER)
			do_ring(k, fi, NULL, 0);
		else
			do_uring(k, opi, fi);
		break;
	case K_SUBMIT:
		do_submit(k, fi, insn + INSN, nsub);
		break;
	case K_RING:
		do_ring(k, fi, insn + INSN, nsub);
		break;
	case K_MMAP:
		do_mmap(k, fi);
		break;
	case K_FD:
		do_fdop(k, fi);
		break;
	default:
		do_time(k);
		break;
	}
	if (k->kicked)
		kick_arm(k, false, 0);
	k->kicked = false;
}
