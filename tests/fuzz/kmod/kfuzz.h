/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tio_fuzz: the driver fuzzer, libFuzzer driven by the driver's own KCOV
 * coverage. One input is a short program: 32-byte instructions, each run
 * by one of three threads (or by a forked child), over up to four open
 * files of /dev/tensorio. See docs/fuzzing.md.
 */
#ifndef KFUZZ_H
#define KFUZZ_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <liburing.h>
#include <linux/tensorio.h>

#define PAGE		4096UL
#define INSN		32		/* bytes per instruction */
#define INSN_HDR	4		/* who, kind, op, count; then the tape */
#define MAX_INSNS	64
#define NTHREADS	3
#define MAXF		4		/* open files of the device */
#define NBUFS		24		/* handles remembered per file */
#define NSTREAMS	12
#define NSTALE		16
#define NFDS		64		/* fds the program got */
#define NJUNK		24
#define NMAPS		8
#define NKIDS		4
#define MAX_OPS		32
/* Per thread: a scratch area for payloads and SUBMIT vectors, a pin area. */
#define SCRATCH		(192 * 1024UL)
#define PINAREA		(64 * 1024UL)
#define PER_THREAD	(SCRATCH + PINAREA + PAGE)	/* + a PROT_NONE guard */
#define NWAITSLOTS	32
#define MAX_SUBMIT	1024
#define REC_OFF		8192		/* SUBMIT records' descriptors */
#define VEC_OFF		32768		/* SUBMIT vectors */
#define WAIT_OFF	(128 * 1024)	/* parked waits' payloads, 1 KiB each */

/* Choices come from the instruction's bytes, then from a generator
 * seeded by them: mutating a byte changes one decision.
 */
struct tape {
	const uint8_t *p;
	unsigned int n, i;
	uint64_t prng;
};

uint64_t t_next(struct tape *t);
uint64_t t_rnd(struct tape *t, uint64_t n);
static inline bool t_one_in(struct tape *t, unsigned int n)
{
	return t_rnd(t, n) == 0;
}
void t_init(struct tape *t, const uint8_t *p, unsigned int n);

/* One command of the driver's (kmod/tio_cmds.h). */
struct op {
	unsigned int cmd;
	const char *name;
	uint32_t flags;		/* TIO_COMMAND_* of lib/include/tensorio/batch.h */
};
extern struct op g_ops[MAX_OPS];
extern unsigned int g_nops;

/* What a program created in one file. */
struct pool {
	uint32_t bufs[NBUFS];
	int nbufs;
	uint32_t streams[NSTREAMS];
	uint64_t seq[NSTREAMS];
	uint32_t bound_ms[NSTREAMS];	/* the fence bound in force */
	int nstreams;
	uint32_t stale[NSTALE];
	unsigned int nstale;
};

struct devfile {
	int fd;			/* -1: closed */
	struct pool pool;
	struct pool base;	/* what stays from one program to the next */
	bool have_base;
	struct tio_ring_hdr *ring;	/* mapped, once set up */
	size_t ringlen;
	pthread_mutex_t *ringlock;	/* process-shared (children enter too) */
};

enum tfd_kind { TFD_DMABUF = 1, TFD_SYNC_FILE, TFD_OTHER };

struct tfd {
	int fd;
	int kind;
	uint64_t deadline;	/* ns: a sync_file's point must signal by then */
};

/* The state one input's program runs on, shared by its threads. */
struct world {
	pthread_mutex_t lock;
	struct devfile f[MAXF];
	struct tfd fds[NFDS];
	int nfds;
	struct { void *addr; size_t len; } maps[NMAPS];
	pid_t kids[NKIDS];
	int nkids;
	uint64_t resv_deadline;	/* ns: the last visible dma_resv point's */
	bool closed_mid;	/* the program closed one of the device's files */
	int fd_high;		/* the highest fd the program was told about */
	/* process-wide, set up once */
	int junk[NJUNK];
	int njunk;
	int swtl;		/* sw_sync timeline or -1 */
	char *rw, *rw_end, *ro, *hole, *filemap;
	uint64_t max_buf;
	uint32_t module_bound_ms;
	bool in_child;
};

/* A pending io_uring command: where its payload is, for the harvest. */
struct pend {
	uint64_t tag;
	void *payload;
	unsigned int cmd;
	int fi;
};

struct worker {
	int id;
	pthread_t tid;
	struct world *w;
	struct tape t;
	struct io_uring ring;
	bool ring_ok, sqe128;
	unsigned int inflight;
	uint64_t tag;
	struct pend pend[64];
	char *scratch, *scratch_ro, *pin, *guard;
	unsigned int wslot;
	timer_t kick;
	bool kick_ok;
	bool kicked;		/* this instruction armed the interrupt */
	int probe_tl;		/* sw_sync timeline of park_probe(), or -1 */
	uint32_t probe_seq;	/* its value */
	_Atomic uint64_t busy_since;	/* ns, for the watchdog */
	/* the program slice this thread runs */
	const uint8_t *items[MAX_INSNS];
	unsigned int nsub[MAX_INSNS];
	unsigned int nitems;
	/* KCOV */
	int kcov_fd;
	uint64_t *kcov_area;
};

/* Where the time goes (TIO_FUZZ_PROFILE=1 prints it at exit). */
enum prof {
	P_IOCTL, P_URING, P_SUBMIT, P_RING, P_MMAP, P_FD, P_FILE, P_FORK, P_TIME,
	P_OPEN, P_KIDS, P_FENCES, P_CLOSE, P_DRAIN, P_AFTER, P_KCOV, P_CHECK,
	P_PROG, P_GAP, P_FDS, P_N
};
extern _Atomic uint64_t g_prof[P_N][2];
static inline void prof_add(int i, uint64_t t0, uint64_t t1)
{
	g_prof[i][0] += t1 - t0;
	g_prof[i][1]++;
}

#define KID_WORDS	(1UL << 14)
#define SIGKICK		(SIGRTMIN + 2)

/* Memory the program's processes share: ring locks, children's traces. */
struct shared {
	pthread_mutex_t ringlock[MAXF];
	_Atomic int knobs_dirty;
	uint64_t kid_pcs[NKIDS][KID_WORDS];
};

extern struct world W;
extern struct worker workers[NTHREADS];
extern struct shared *S;
extern unsigned int g_check_every;
extern char g_artifacts[256];

/* prog.c: running programs */
void worker_init(struct worker *k);
void worker_ring_renew(struct worker *k);
void start_threads(void);
void prog_run(const uint8_t *data, size_t size);
void prog_finish(void);

/* main.c: module parameters and debugfs switches; the coverage file */
void cover_dump(void);
void set_knob(struct worker *k);
void restore_knobs(void);

/* gen.c: payloads */
uint32_t pick_handle(struct worker *k, int fi, int stream);
uint64_t pick_seqno(struct worker *k, int fi, uint32_t stream);
int pick_fd(struct worker *k);
uint64_t pick_uptr(struct worker *k, const void *src, size_t len, size_t off);
unsigned int pick_cmd(struct worker *k, unsigned int opi);
void gen_payload(struct worker *k, unsigned int opi, int fi, void *p,
		 bool bounded, size_t off);
void mutate(struct worker *k, void *p, size_t len);
void bound_wait(struct worker *k, unsigned int cmd, void *p);
unsigned int canon_cmd(unsigned int cmd);
unsigned int op_index(unsigned int cmd);
bool gen_knows(unsigned int cmd);

/* pool.c: what programs created */
void harvest(struct worker *k, int fi, unsigned int cmd, const void *p,
	     unsigned int len);
void track_fd(struct world *w, int fd, int kind, uint64_t deadline);
void close_tracked(struct world *w, int fd);
int file_fd(struct worker *k, int fi);
uint64_t now_ns(void);

/* exec.c: the instructions */
void exec_item(struct worker *k, const uint8_t *insn, unsigned int nsub);
void reap(struct worker *k, bool wait);
void drain(struct worker *k, uint64_t until);
void kid_main(struct worker *k, const uint8_t *insn, unsigned int nsub);
int uring_wait_one(struct worker *k, int fi, unsigned int cmd, uint64_t uptr);
int dev_ioctl(struct worker *k, int fi, unsigned int cmd, uint64_t uptr);
void *scratch_ptr(struct worker *k, uint64_t uptr, size_t len);

/* forms.c: records, rings, mappings and the other fds */
void do_submit(struct worker *k, int fi, const uint8_t *recs, unsigned int n);
void harvest_records(struct worker *k, int fi, const struct tio_cmd *v,
		     unsigned int n, const char *form);
void do_ring(struct worker *k, int fi, const uint8_t *recs, unsigned int n);
void do_mmap(struct worker *k, int fi);
void do_fdop(struct worker *k, int fi);
void do_fileop(struct worker *k, int fi);

/* oracle.c */
void oracle_fail(const char *oracle, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
void check_result(struct worker *k, const char *form, unsigned int cmd, int res);
void check_submit_time(struct worker *k, uint64_t t0, long slept);
void oracle_init(struct world *w);
void oracle_rebase(void);
void oracle_selftest(void);
void oracle_fences(struct world *w);
void oracle_after(struct world *w);
void counters_snapshot(char *out, size_t len);
bool counters_settle(const char *want, char *out, size_t len);
extern int g_fd_base;
extern bool g_trace;	/* TIO_FUZZ_TRACE: every result on stderr */
extern bool g_shared;	/* TIO_FUZZ_SHARED: another fuzzer runs beside */
extern uint64_t g_submit_bound_ns, g_fence_slack_ns;

/* kcov.c */
int kcov_open(uint64_t **area, unsigned long words);
void kcov_reset(uint64_t *area);
void kcov_collect(const uint64_t *area);
void kcov_sections_init(const char *path);
void kcov_report(const char *path);
uint64_t kcov_pcs(void);
extern bool g_kcov;

#endif /* KFUZZ_H */
