// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Saves that fail, or die, leave the old file and nothing else: ENOSPC on
 * a small tmpfs (at the start, and with the blocks not reserved, in the
 * middle), the file size limit (SIGXFSZ blocked or ignored), a read-only
 * directory and one the process may not write (refused before anything
 * is staged), SIGKILL at random moments (unnamed and named temporaries),
 * and the temporaries of dead writers removed by the next save while a
 * live writer's stay. Mounts are made in a mount namespace of the test's
 * own process, as root; elsewhere those tests skip.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "save_test.h"

SAVE_FIXTURE(sf)

/* @n uint8 tensors of @bytes each, every byte @val: a checkpoint "version". */
static int save_version(const char *path, int n, int64_t bytes, int val, unsigned int flags,
			int async)
{
	DLTensor t[4];
	int64_t sh[4];
	const DLTensor *tv[4];
	const char *nv[4] = { "w0", "w1", "w2", "w3" };
	struct tio_save_opts o;
	tio_save_t *h;
	int i, ret;

	for (i = 0; i < n; i++) {
		sv_u8(&t[i], &sh[i], bytes, 0);
		memset(t[i].data, val, (size_t)bytes);
		tv[i] = &t[i];
	}
	memset(&o, 0, sizeof(o));
	o.flags = flags;
	if (async) {
		ret = tio_safetensors_save_async(path, nv, tv, n, &o, &h);
		if (!ret) {
			ret = tio_save_wait(h, -1);
			tio_save_free(h);
		}
	} else {
		ret = tio_safetensors_save_opts(path, nv, tv, n, &o);
	}
	for (i = 0; i < n; i++)
		free(t[i].data);
	return ret;
}

/* The version a file holds (every byte of every tensor the same), or -1. */
static int version_of(const char *path)
{
	tio_safetensors_t *st;
	int64_t i, k;
	int v = -2;

	if (tio_safetensors_load(path, &st)) {
		tio_error_clear();
		return -1;
	}
	for (i = 0; i < tio_safetensors_count(st) && v != -1; i++) {
		tio_object_t *t;
		DLTensor *dl;

		if (tio_safetensors_tensor(st, tio_safetensors_name(st, i), &t)) {
			v = -1;
			break;
		}
		dl = tio_tensor_dl(t);
		for (k = 0; k < dl->shape[0] && v != -1; k++) {
			int b = ((unsigned char *)dl->data)[dl->byte_offset + k];

			v = v == -2 || v == b ? b : -1;
		}
		tio_object_decref(t);
	}
	tio_safetensors_free(st);
	return v;
}

/*
 * Fork with a context of the child's own: the parent's cache emptied
 * first (its handles are the parent's file's), the child's context closed
 * so that its first call opens another.
 */
static pid_t fork_clean(void)
{
	pid_t pid;

	tio_pinned_trim();
	pid = fork();
	if (!pid)
		tio_shutdown();
	return pid;
}

/* A mount namespace of this process, mounts private: 0, or why not. */
static const char *own_mounts(void)
{
	if (geteuid())
		return "not root";
	if (unshare(CLONE_NEWNS) || mount("none", "/", "none", MS_PRIVATE | MS_REC, NULL))
		return "no mount namespace";
	return NULL;
}

TEST_F(sf, enospc_keeps_the_old_file_and_leaves_nothing)
{
	static const unsigned int flags[3] = { 0, TIO_SAVE_NO_PREALLOC, TIO_SAVE_NAMED_TEMP };
	const char *why = own_mounts();
	struct stat a, b;
	int i, strays;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, mount("tmpfs", self->dir, "tmpfs", 0, "size=2m"));
	ASSERT_OK(save_version(self->path, 1, 100000, 1, 0, 0));
	ASSERT_EQ(0, stat(self->path, &a));
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(-1, save_version(self->path, 2, 3 << 20, 2, flags[i % 3], i / 3));
		ASSERT_DEV_MSG(ENOSPC, "model.safetensors");
		ASSERT_EQ(0, stat(self->path, &b));
		EXPECT_EQ(a.st_ino, b.st_ino);
		EXPECT_EQ(1, version_of(self->path));
		EXPECT_EQ(1, sv_count(self->dir, &strays)) TH_LOG("flags %x", flags[i % 3]);
	}
	/* The space is all back: a save that fits still works. */
	ASSERT_OK(save_version(self->path, 1, 1 << 20, 3, 0, 0));
	EXPECT_EQ(3, version_of(self->path));
	ASSERT_EQ(0, umount(self->dir));
}

static void *save_thread(void *arg)
{
	return (void *)(intptr_t)save_version(arg, 2, 1 << 20, 2, 0, 0);
}

TEST_F(sf, file_size_limit_gives_efbig)
{
	struct rlimit rl = { 1 << 20, 1 << 20 };
	struct stat a, b;
	pthread_t th;
	void *ret;
	int strays, i;

	ASSERT_OK(save_version(self->path, 1, 1000, 1, 0, 0));
	ASSERT_EQ(0, stat(self->path, &a));
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &rl));
	for (i = 0; i < 4; i++) {
		/* SIGXFSZ at its default (blocked by the save), then ignored. */
		signal(SIGXFSZ, i < 2 ? SIG_DFL : SIG_IGN);
		ASSERT_EQ(-1, save_version(self->path, 2, 1 << 20, 2, i & 1 ? TIO_SAVE_NO_PREALLOC : 0,
					   i & 1));
		ASSERT_DEV_MSG(EFBIG, "ulimit -f");
		ASSERT_EQ(0, stat(self->path, &b));
		EXPECT_EQ(a.st_ino, b.st_ino);
		EXPECT_EQ(1, sv_count(self->dir, &strays));
	}
	/* From a thread of the caller's, whose mask the save handles too. */
	signal(SIGXFSZ, SIG_DFL);
	ASSERT_EQ(0, pthread_create(&th, NULL, save_thread, self->path));
	ASSERT_EQ(0, pthread_join(th, &ret));
	EXPECT_EQ(-1, (int)(intptr_t)ret);
	EXPECT_EQ(1, version_of(self->path));
}

TEST_F(sf, read_only_directory_refused_before_staging)
{
	const char *why = own_mounts();
	struct tio_pinned_stats before, after;
	pid_t pid;
	int st;

	ASSERT_OK(save_version(self->path, 1, 1000, 1, 0, 0));
	/* Not root: the directory, root's and 0755, is not ours to write. */
	ASSERT_EQ(0, chmod(self->dir, 0755));
	pid = fork_clean();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(3);
		if (!save_version(self->path, 1, 4 << 20, 2, 0, 0))
			_exit(1);
		_exit(tio_errno() == EACCES ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	if (WEXITSTATUS(st) == 3)
		TH_LOG("cannot become nobody: that part skipped");
	else
		EXPECT_EQ(0, WEXITSTATUS(st));
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, mount(self->dir, self->dir, "none", MS_BIND, NULL));
	ASSERT_EQ(0, mount("none", self->dir, "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL));
	tio_pinned_stats(&before);
	ASSERT_EQ(-1, save_version(self->path, 1, 4 << 20, 2, 0, 1));
	ASSERT_DEV_MSG(EROFS, "creating a file next to");
	ASSERT_EQ(-1, save_version(self->path, 1, 4 << 20, 2, 0, 0));
	ASSERT_DEV_MSG(EROFS, "model.safetensors");
	tio_pinned_stats(&after);
	EXPECT_EQ(before.misses, after.misses);		/* nothing staged */
	EXPECT_EQ(before.hits, after.hits);
	EXPECT_EQ(1, version_of(self->path));
	ASSERT_EQ(0, umount(self->dir));
}

/* Kill savers at random moments: the file is always the old or the new one. */
static void kill_loop(struct __test_metadata *_metadata, const char *dir, const char *path,
		      unsigned int flags, int rounds)
{
	int last = 1, round, strays, stray_seen = 0, n;

	ASSERT_OK(save_version(path, 2, 4 << 20, last, flags, 0));
	for (round = 2; round < rounds + 2; round++) {
		pid_t pid = fork_clean();
		int v, st;

		ASSERT_LE(0, pid);
		if (!pid)
			_exit(save_version(path, 2, 4 << 20, round, flags, round & 1) ? 1 : 0);
		usleep((useconds_t)(rand() % 40000));
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		v = version_of(path);
		EXPECT_TRUE(v == last || v == round) TH_LOG("round %d: version %d", round, v);
		if (v == round)
			last = round;
		n = sv_count(dir, &strays);
		/* Only between linkat() and rename() can a name be left... */
		EXPECT_LE(strays, 1);
		EXPECT_EQ(1 + strays, n);
		stray_seen += strays;
	}
	/* ... and the next save removes it. */
	ASSERT_OK(save_version(path, 1, 1000, 0, flags, 0));
	EXPECT_EQ(1, sv_count(dir, &strays));
	TH_LOG("%d rounds, %d left a stray that the next save removed", rounds, stray_seen);
}

TEST_F(sf, sigkill_at_random_moments)
{
	srand((unsigned int)time(NULL));
	kill_loop(_metadata, self->dir, self->path, 0, 20);
	kill_loop(_metadata, self->dir, self->path, TIO_SAVE_NAMED_TEMP, 20);
}

TEST_F(sf, dead_writers_temporaries_are_removed)
{
	static const char *const dead[] = { ".model.safetensors.tio-0123456789ab.tmp",
					    ".other.tio-ffffffffffff.tmp" };
	static const char *const kept[] = { ".model.safetensors.tio-01234.tmp", "notes.txt",
					    ".x.tio-0123456789ab.tmpx" };
	char p[256], live[256];
	int fds[2], i, strays, fd;
	pid_t pid;
	char c;

	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", self->dir, dead[i]);
		fd = open(p, O_CREAT | O_WRONLY, 0644);
		ASSERT_LE(0, fd);
		close(fd);
	}
	for (i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", self->dir, kept[i]);
		fd = open(p, O_CREAT | O_WRONLY, 0644);
		ASSERT_LE(0, fd);
		close(fd);
	}
	/* A live writer's: locked by another process. */
	snprintf(live, sizeof(live), "%s/.model.safetensors.tio-aaaaaaaaaaaa.tmp", self->dir);
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		fd = open(live, O_CREAT | O_RDWR, 0644);
		if (fd < 0 || flock(fd, LOCK_EX) || write(fds[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();	/* until killed */
	}
	close(fds[1]);
	ASSERT_EQ(1, read(fds[0], &c, 1));
	ASSERT_OK(save_version(self->path, 1, 1000, 1, 0, 0));
	EXPECT_EQ(0, access(live, F_OK));	/* its writer lives */
	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", self->dir, dead[i]);
		EXPECT_NE(0, access(p, F_OK)) TH_LOG("%s stayed", dead[i]);
	}
	EXPECT_EQ(5, sv_count(self->dir, &strays));	/* model, 3 kept, live */
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	close(fds[0]);
	ASSERT_OK(save_version(self->path, 1, 1000, 2, TIO_SAVE_NAMED_TEMP, 0));
	EXPECT_NE(0, access(live, F_OK));
	EXPECT_EQ(4, sv_count(self->dir, &strays));
}

TEST_HARNESS_MAIN
