// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring commands on /dev/tensorio: every command gives through
 * IORING_OP_URING_CMD what it gives through ioctl() (a table of success
 * and failure cases, run on several ring setups), the reserved bytes of
 * the command area are checked, and debugfs counts the commands. The
 * asynchronous waits: tio_uring_wait_test.c.
 */
#include <time.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"
#include "tio_uring_file.h"

union tio_payload {
	struct tio_info info;
	struct tio_buf_alloc alloc;
	struct tio_buf_pin pin;
	struct tio_handle_op hop;
	struct tio_buf_info binfo;
	struct tio_buf_desc desc;
	struct tio_buf_export exp;
	struct tio_buf_import imp;
	struct tio_buf_attach att;
	struct tio_buf_wait bwait;
	struct tio_stream_create sc;
	struct tio_fence_emit emit;
	struct tio_fence_signal sig;
	struct tio_fence_wait wait;
	struct tio_fence_export fexp;
	struct tio_fence_import fimp;
	struct tio_submit submit;
	__u64 raw[TIO_CMD_PAYLOAD / 8];
};

/* What one case needs besides the file: fds to close, a vector. */
struct tio_env {
	int fd;
	int extra_fd;
	__u32 buf;	/* handles made by mk_buf() and mk_point() */
	__u32 stream;
	struct tio_cmd cmds[2];
};

static char pin_area[2 * 4096] __attribute__((aligned(4096)));

static __u64 abs_deadline;

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Setup steps through ioctl(); their failures show up in both forms. */
static void mk_buf(struct tio_env *e)
{
	struct tio_buf_alloc a = { .size = 4096 };

	if (!ioctl(e->fd, TIO_IOC_BUF_ALLOC, &a))
		e->buf = a.handle;
}

static void mk_point(struct tio_env *e)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit emit = { 0 };

	if (!ioctl(e->fd, TIO_IOC_STREAM_CREATE, &sc))
		e->stream = sc.handle;
	emit.stream = e->stream;
	ioctl(e->fd, TIO_IOC_FENCE_EMIT, &emit);	/* seqno 1 */
}

static void mk_signal(struct tio_env *e, int error)
{
	struct tio_fence_signal sig = { .stream = e->stream, .seqno = 1,
					.error = error };

	ioctl(e->fd, TIO_IOC_FENCE_SIGNAL, &sig);
}

static void mk_busy_buf(struct tio_env *e)
{
	struct tio_buf_attach att = { .flags = TIO_RESV_F_WRITE, .seqno = 1 };

	mk_buf(e);
	mk_point(e);
	att.handle = e->buf;
	att.stream = e->stream;
	ioctl(e->fd, TIO_IOC_BUF_ATTACH_FENCE, &att);
}

#define SETUP(name) static void name(struct tio_env *e, union tio_payload *p)

SETUP(s_info) { }
SETUP(s_info_flags) { p->info.flags = 1; }
SETUP(s_alloc) { p->alloc.size = 4096; }
SETUP(s_alloc_zero) { p->alloc.size = 0; }
SETUP(s_alloc_flags) { p->alloc.size = 4096; p->alloc.flags = 0x80; }
SETUP(s_alloc_desc_fault) { p->alloc.size = 4096; p->alloc.desc_ptr = 16; }
SETUP(s_pin)
{
	p->pin.addr = (uintptr_t)pin_area;
	p->pin.size = 4096;
}
SETUP(s_pin_unaligned)
{
	p->pin.addr = (uintptr_t)pin_area + 1;
	p->pin.size = 4096;
}
SETUP(s_free) { mk_buf(e); p->hop.handle = e->buf; }
SETUP(s_free_bad) { p->hop.handle = 99; }
SETUP(s_binfo) { mk_buf(e); p->binfo.handle = e->buf; }
SETUP(s_binfo_bad) { p->binfo.handle = 0; }
SETUP(s_desc_clear) { mk_buf(e); p->desc.handle = e->buf; p->desc.flags = TIO_DESC_CLEAR; }
SETUP(s_desc_flags) { mk_buf(e); p->desc.handle = e->buf; p->desc.flags = 0x80; }
SETUP(s_export) { mk_buf(e); p->exp.handle = e->buf; p->exp.flags = TIO_EXPORT_F_CLOEXEC; }
SETUP(s_export_bad) { p->exp.handle = 5; }
SETUP(s_import_badfd) { p->imp.fd = -1; }
SETUP(s_import_null)
{
	e->extra_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	p->imp.fd = e->extra_fd;
}
SETUP(s_attach)
{
	mk_buf(e);
	mk_point(e);
	p->att = (struct tio_buf_attach){ .handle = e->buf, .stream = e->stream, .seqno = 1 };
}
SETUP(s_attach_bad) { mk_buf(e); p->att = (struct tio_buf_attach){ .handle = e->buf, .stream = 9, .seqno = 1 }; }
SETUP(s_bwait_idle) { mk_buf(e); p->bwait.handle = e->buf; p->bwait.timeout_ns = -1; }
SETUP(s_bwait_poll) { mk_busy_buf(e); p->bwait.handle = e->buf; }
SETUP(s_bwait_timeout)
{
	mk_busy_buf(e);
	p->bwait.handle = e->buf;
	p->bwait.timeout_ns = 1000000;
}
SETUP(s_bwait_error)
{
	mk_busy_buf(e);
	mk_signal(e, -EIO);
	p->bwait.handle = e->buf;
	p->bwait.timeout_ns = -1;
}
SETUP(s_bwait_bad) { p->bwait.handle = 7; p->bwait.timeout_ns = -1; }
SETUP(s_bwait_pad) { mk_buf(e); p->bwait.handle = e->buf; p->bwait.pad = 1; }
SETUP(s_screate) { }
SETUP(s_screate_flags) { p->sc.flags = 1; }
SETUP(s_sdestroy) { mk_point(e); p->hop.handle = e->stream; }
SETUP(s_sdestroy_bad) { p->hop.handle = 3; }
SETUP(s_emit) { mk_point(e); p->emit.stream = e->stream; }
SETUP(s_emit_bad) { p->emit.stream = 2; }
SETUP(s_signal) { mk_point(e); p->sig = (struct tio_fence_signal){ .stream = e->stream, .seqno = 1 }; }
SETUP(s_signal_unemitted) { mk_point(e); p->sig = (struct tio_fence_signal){ .stream = e->stream, .seqno = 5 }; }
SETUP(s_signal_pad) { mk_point(e); p->sig = (struct tio_fence_signal){ .stream = e->stream, .seqno = 1, .pad = 1 }; }
SETUP(s_wait_done)
{
	mk_point(e);
	mk_signal(e, 0);
	p->wait = (struct tio_fence_wait){ .stream = e->stream, .seqno = 1, .timeout_ns = -1 };
}
SETUP(s_wait_error)
{
	mk_point(e);
	mk_signal(e, -EIO);
	p->wait = (struct tio_fence_wait){ .stream = e->stream, .seqno = 1, .timeout_ns = -1 };
}
SETUP(s_wait_poll) { mk_point(e); p->wait = (struct tio_fence_wait){ .stream = e->stream, .seqno = 1 }; }
SETUP(s_wait_timeout)
{
	mk_point(e);
	p->wait = (struct tio_fence_wait){ .stream = e->stream, .seqno = 1, .timeout_ns = 1000000 };
}
SETUP(s_wait_abs_past)
{
	mk_point(e);
	p->wait = (struct tio_fence_wait){
		.stream = e->stream, .seqno = 1, .flags = TIO_WAIT_F_ABSOLUTE, .timeout_ns = 1,
	};
}
SETUP(s_wait_abs_soon)
{
	mk_point(e);
	p->wait = (struct tio_fence_wait){
		.stream = e->stream, .seqno = 1, .flags = TIO_WAIT_F_ABSOLUTE,
		.timeout_ns = abs_deadline,
	};
}
SETUP(s_wait_flags) { mk_point(e); p->wait = (struct tio_fence_wait){ .stream = e->stream, .seqno = 1, .flags = 0x40 }; }
SETUP(s_wait_unemitted) { mk_point(e); p->wait = (struct tio_fence_wait){ .stream = e->stream, .seqno = 3, .timeout_ns = -1 }; }
SETUP(s_wait_bad) { p->wait = (struct tio_fence_wait){ .stream = 4, .seqno = 1, .timeout_ns = -1 }; }
SETUP(s_fexport) { mk_point(e); p->fexp = (struct tio_fence_export){ .stream = e->stream, .seqno = 1 }; }
SETUP(s_fexport_bad) { p->fexp = (struct tio_fence_export){ .stream = 9, .seqno = 1 }; }
SETUP(s_fimport)
{
	struct tio_fence_export fexp = { .seqno = 1,
					 .flags = TIO_EXPORT_F_CLOEXEC };

	mk_point(e);
	fexp.stream = e->stream;
	if (!ioctl(e->fd, TIO_IOC_FENCE_EXPORT, &fexp))
		e->extra_fd = fexp.fd;
	p->fimp = (struct tio_fence_import){ .stream = e->stream, .fd = e->extra_fd };
}
SETUP(s_fimport_badfd) { mk_point(e); p->fimp = (struct tio_fence_import){ .stream = e->stream, .fd = -1 }; }
SETUP(s_submit)
{
	e->cmds[0].op = TIO_IOC_INFO;
	e->cmds[1].op = TIO_IOC_BUF_INFO;	/* no such handle */
	p->submit.cmds_ptr = (uintptr_t)e->cmds;
	p->submit.count = 2;
	p->submit.flags = TIO_SUBMIT_F_CONTINUE;
}
SETUP(s_submit_zero) { p->submit.cmds_ptr = (uintptr_t)e->cmds; }
SETUP(s_submit_fault) { p->submit.cmds_ptr = 8; p->submit.count = 1; }

/* Fields that legitimately differ between two files. */
static void mask(unsigned long cmd, union tio_payload *p)
{
	if (cmd == TIO_IOC_INFO)
		p->info.pinned = 0;	/* module-wide, other files' too */
	if (cmd == TIO_IOC_STREAM_CREATE)
		p->sc.context = 0;
	if (cmd == TIO_IOC_BUF_EXPORT && p->exp.fd >= 0) {
		close(p->exp.fd);
		p->exp.fd = 1000;
	}
	if (cmd == TIO_IOC_FENCE_EXPORT && p->fexp.fd >= 0) {
		close(p->fexp.fd);
		p->fexp.fd = 1000;
	}
}

struct eq_case {
	const char *name;
	unsigned long cmd;
	void (*setup)(struct tio_env *e, union tio_payload *p);
	bool null_payload;
};

#define CASE(c, fn) { #c "/" #fn, TIO_IOC_##c, fn, false }

static const struct eq_case cases[] = {
	CASE(INFO, s_info),
	CASE(INFO, s_info_flags),
	{ "INFO/null", TIO_IOC_INFO, s_info, true },
	CASE(BUF_ALLOC, s_alloc),
	CASE(BUF_ALLOC, s_alloc_zero),
	CASE(BUF_ALLOC, s_alloc_flags),
	CASE(BUF_ALLOC, s_alloc_desc_fault),
	CASE(BUF_PIN_USER, s_pin),
	CASE(BUF_PIN_USER, s_pin_unaligned),
	CASE(BUF_FREE, s_free),
	CASE(BUF_FREE, s_free_bad),
	CASE(BUF_INFO, s_binfo),
	CASE(BUF_INFO, s_binfo_bad),
	CASE(BUF_SET_DESC, s_desc_clear),
	CASE(BUF_SET_DESC, s_desc_flags),
	CASE(BUF_EXPORT, s_export),
	CASE(BUF_EXPORT, s_export_bad),
	CASE(BUF_IMPORT, s_import_badfd),
	CASE(BUF_IMPORT, s_import_null),
	CASE(BUF_ATTACH_FENCE, s_attach),
	CASE(BUF_ATTACH_FENCE, s_attach_bad),
	CASE(BUF_WAIT, s_bwait_idle),
	CASE(BUF_WAIT, s_bwait_poll),
	CASE(BUF_WAIT, s_bwait_timeout),
	CASE(BUF_WAIT, s_bwait_error),
	CASE(BUF_WAIT, s_bwait_bad),
	CASE(BUF_WAIT, s_bwait_pad),
	CASE(STREAM_CREATE, s_screate),
	CASE(STREAM_CREATE, s_screate_flags),
	CASE(STREAM_DESTROY, s_sdestroy),
	CASE(STREAM_DESTROY, s_sdestroy_bad),
	CASE(FENCE_EMIT, s_emit),
	CASE(FENCE_EMIT, s_emit_bad),
	CASE(FENCE_SIGNAL, s_signal),
	CASE(FENCE_SIGNAL, s_signal_unemitted),
	CASE(FENCE_SIGNAL, s_signal_pad),
	CASE(FENCE_WAIT, s_wait_done),
	CASE(FENCE_WAIT, s_wait_error),
	CASE(FENCE_WAIT, s_wait_poll),
	CASE(FENCE_WAIT, s_wait_timeout),
	CASE(FENCE_WAIT, s_wait_abs_past),
	CASE(FENCE_WAIT, s_wait_abs_soon),
	CASE(FENCE_WAIT, s_wait_flags),
	CASE(FENCE_WAIT, s_wait_unemitted),
	CASE(FENCE_WAIT, s_wait_bad),
	CASE(FENCE_EXPORT, s_fexport),
	CASE(FENCE_EXPORT, s_fexport_bad),
	CASE(FENCE_IMPORT, s_fimport),
	CASE(FENCE_IMPORT, s_fimport_badfd),
	CASE(SUBMIT, s_submit),
	CASE(SUBMIT, s_submit_zero),
	CASE(SUBMIT, s_submit_fault),
	/* Numbers outside the table. */
	{ "unused-nr", _IOWR(TIO_IOC_MAGIC, 0x7f, struct tio_info), s_info, false },
	{ "wrong-size", _IOWR(TIO_IOC_MAGIC, 0x00, struct tio_buf_alloc), s_info, false },
	{ "wrong-dir", _IOR(TIO_IOC_MAGIC, 0x00, struct tio_info), s_info, false },
	{ "other-magic", _IOWR('x', 0x00, struct tio_info), s_info, false },
};

FIXTURE(ring) {
	struct io_uring ring;
};

FIXTURE_VARIANT(ring) {
	unsigned int flags;
	bool fixed;
};

FIXTURE_VARIANT_ADD(ring, plain) { .flags = 0, .fixed = false };
FIXTURE_VARIANT_ADD(ring, defer_taskrun) {
	.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	.fixed = false,
};
FIXTURE_VARIANT_ADD(ring, sqpoll) { .flags = IORING_SETUP_SQPOLL, .fixed = false };
FIXTURE_VARIANT_ADD(ring, fixed_file) { .flags = 0, .fixed = true };
FIXTURE_VARIANT_ADD(ring, sqpoll_fixed_file) { .flags = IORING_SETUP_SQPOLL, .fixed = true };

FIXTURE_SETUP(ring)
{
	int ret = io_uring_queue_init(16, &self->ring, variant->flags);

	if (ret == -EINVAL || ret == -EPERM || ret == -ENOSYS)
		SKIP(return, "ring flags %#x: %s", variant->flags, strerror(-ret));
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(ring)
{
	io_uring_queue_exit(&self->ring);
}

static int run_case(struct __test_metadata *_metadata, struct io_uring *ring,
		    bool fixed, const struct eq_case *c, bool uring,
		    union tio_payload *p)
{
	struct tio_env e = { .extra_fd = -1 };
	void *arg;
	int ret;

	e.fd = uring ? ring_open(_metadata, ring, fixed) : open(TIO_DEV, O_RDWR | O_CLOEXEC);
	if (e.fd < 0)
		return TIO_RING_ERR;
	memset(p, 0, sizeof(*p));
	c->setup(&e, p);
	arg = c->null_payload ? NULL : p;
	if (uring)
		ret = tio_uring_run(ring, fixed ? 0 : e.fd, fixed, c->cmd, arg);
	else
		ret = tio_ioc(e.fd, c->cmd, arg);
	mask(c->cmd, p);
	if (e.extra_fd >= 0)
		close(e.extra_fd);
	if (uring)
		ring_close(ring, e.fd, fixed);
	else
		close(e.fd);
	return ret;
}

TEST_F(ring, ioctl_equivalence)
{
	unsigned int i, failed = 0;

	abs_deadline = now_ns() + 2000000;	/* the same in both forms */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct eq_case *c = &cases[i];
		union tio_payload pi, pu;
		int ri, ru;

		ri = run_case(_metadata, &self->ring, variant->fixed, c, false, &pi);
		ru = run_case(_metadata, &self->ring, variant->fixed, c, true, &pu);
		ASSERT_NE(TIO_RING_ERR, ri) {
			TH_LOG("%s", c->name);
		}
		ASSERT_NE(TIO_RING_ERR, ru) {
			TH_LOG("%s", c->name);
		}
		if (ri != ru || memcmp(&pi, &pu, sizeof(pi))) {
			failed++;
			TH_LOG("%s: ioctl %d (%s), uring_cmd %d (%s)%s", c->name,
			       ri, strerror(-ri), ru, strerror(-ru),
			       memcmp(&pi, &pu, sizeof(pi)) ? ", payloads differ" : "");
		}
	}
	EXPECT_EQ(0, failed);
}

TEST(uring_cmd_area_checked)
{
	struct tio_info info = { 0 };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	sqe = io_uring_get_sqe(&ring);
	ASSERT_NE(NULL, sqe);
	tio_prep_cmd(sqe, fd, false, TIO_IOC_INFO, &info);
	sqe->__pad2[0] = 1;	/* the second 8 bytes of sqe->cmd: reserved */
	ASSERT_LE(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(-EINVAL, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	EXPECT_EQ(0, info.version);
	EXPECT_EQ(0, tio_uring_run(&ring, fd, false, TIO_IOC_INFO, &info));
	EXPECT_EQ(TIO_UAPI_VERSION, info.version);
	EXPECT_TRUE(info.features & TIO_FEAT_URING_CMD);
	EXPECT_TRUE(info.features & TIO_FEAT_SUBMIT);
	EXPECT_TRUE(info.features & TIO_FEAT_ASYNC_WAIT);
	io_uring_queue_exit(&ring);
	close(fd);
}

TEST(debugfs_counters)
{
	char line[256];
	bool seen = false;
	FILE *f;
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	struct tio_info info = { .flags = 1 };

	ASSERT_LE(0, fd);
	ASSERT_EQ(-EINVAL, tio_ioc(fd, TIO_IOC_INFO, &info));
	EXPECT_LE(1, tio_dbg_stat("files"));
	f = fopen("/sys/kernel/debug/tensorio/commands", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long calls, errors;

		if (sscanf(line, "INFO %llu %llu", &calls, &errors) == 2) {
			EXPECT_LE(1, calls);
			EXPECT_LE(1, errors);
			seen = true;
		}
	}
	fclose(f);
	EXPECT_TRUE(seen);
	close(fd);
}


/*
 * Last: every file of the tests above is released once io_uring's
 * asynchronous ring teardown is done (registered files, SQPOLL threads),
 * so nothing leaked and the module can unload.
 */
TEST(zz_all_files_released)
{
	all_files_released(_metadata);
}

TEST_HARNESS_MAIN
