// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A save's temporary file and how it takes the destination's place.
 *
 * The file is created unnamed in the destination's directory (O_TMPFILE),
 * so that a crash while it is written leaves nothing: the kernel frees an
 * inode no name points at. Once durable it gets the destination's name
 * with linkat(); linkat() never replaces a name, so over an existing file
 * it gets a temporary name first and rename() puts it in place. That name
 * lives for two system calls; a crash between them leaves it behind.
 *
 * Where O_TMPFILE is missing (some network and FUSE file systems) the
 * file is named from the start, ".NAME.tio-XXXXXXXXXXXX.tmp", and renamed
 * over the destination.
 *
 * Either way the writer holds an exclusive flock() on its file from before
 * the file has a name until it has the destination's, and every save
 * into a directory first removes the temporaries there whose lock it can
 * take: a flock() belongs to the open file, so the kernel drops it when
 * the writer's last descriptor closes, which its death does. A free lock
 * therefore means a dead writer, whatever the pid namespace or reboot. A
 * named temporary is created and locked under a shared flock() of the
 * directory, which the cleaner takes exclusively, so that it never sees
 * one between creation and lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file/save_internal.h"

#define SV_TAG ".tio-"
#define SV_SUFFIX ".tmp"
#define SV_RAND 12		/* hex digits */
#define SV_ALIGN 4096u

/* ".BASE.tio-XXXXXXXXXXXX.tmp", BASE cut to fit NAME_MAX. */
static void sv_tmp_name(const char *base, char *out, size_t len)
{
	unsigned char r[SV_RAND / 2];
	char hex[SV_RAND + 1];
	unsigned int i;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		uint64_t seed;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
		for (i = 0; i < sizeof(r); i++)
			r[i] = (unsigned char)(seed >> (8 * i));
	}
	for (i = 0; i < sizeof(r); i++)
		snprintf(hex + 2 * i, 3, "%02x", r[i]);
	snprintf(out, len, ".%.*s" SV_TAG "%s" SV_SUFFIX,
		 NAME_MAX - (int)(1 + strlen(SV_TAG) + SV_RAND + strlen(SV_SUFFIX)), base, hex);
}

/* Whether @name is one of our temporaries. */
static int sv_is_tmp(const char *name)
{
	size_t n = strlen(name), tail = strlen(SV_TAG) + SV_RAND + strlen(SV_SUFFIX);
	const char *t;
	size_t i;

	if (name[0] != '.' || n < 1 + tail || strcmp(name + n - strlen(SV_SUFFIX), SV_SUFFIX))
		return 0;
	t = name + n - tail;
	if (strncmp(t, SV_TAG, strlen(SV_TAG)))
		return 0;
	for (i = strlen(SV_TAG); i < strlen(SV_TAG) + SV_RAND; i++)
		if (!strchr("0123456789abcdef", t[i]))
			return 0;
	return 1;
}

/* flock(), waited for through interruptions (see sv_fallocate()). */
static int sv_flock(int fd, int op)
{
	int r;

	do
		r = flock(fd, op);
	while (r && errno == EINTR);
	return r;
}

/* Remove the temporaries of dead writers (their lock is free). */
static void sv_clean(int dirfd)
{
	struct dirent *de;
	DIR *d;
	int dup;

	if (sv_flock(dirfd, LOCK_EX))
		return;		/* no flock here: nothing can be known dead */
	dup = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d && dup >= 0)
		close(dup);
	while (d && (de = readdir(d))) {
		struct stat sb;
		int fd;

		if (!sv_is_tmp(de->d_name))
			continue;
		fd = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!fstat(fd, &sb) && S_ISREG(sb.st_mode) && !sv_flock(fd, LOCK_EX | LOCK_NB))
			unlinkat(dirfd, de->d_name, 0);
		close(fd);
	}
	if (d)
		closedir(d);
	sv_flock(dirfd, LOCK_UN);
}

/* The named temporary, created and locked under the directory's shared lock. */
static int sv_tmp_named(struct sv_tmp *t)
{
	char name[NAME_MAX + 1];
	int i, locked = !sv_flock(t->dirfd, LOCK_SH);

	for (i = 0; i < 100; i++) {
		sv_tmp_name(t->base, name, sizeof(name));
		t->fd = openat(t->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (t->fd >= 0 || errno != EEXIST)
			break;
	}
	if (t->fd >= 0) {
		sv_flock(t->fd, LOCK_EX);
		t->named = strdup(name);
	}
	if (locked)
		sv_flock(t->dirfd, LOCK_UN);
	if (t->fd < 0)
		return tio_raise_file_errno(errno, "creating a file next to %s", t->dest);
	if (!t->named)
		return tio_raise_errno(ENOMEM, "%s", t->dest);
	return 0;
}

/* Whether the file system takes O_DIRECT for @t->fd, and its alignment. */
static void sv_tmp_direct(struct sv_tmp *t)
{
	int fl = fcntl(t->fd, F_GETFL);

	t->align = SV_ALIGN;
#ifdef STATX_DIOALIGN
	{
		struct statx sx;

		if (!statx(t->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) &&
		    (sx.stx_mask & STATX_DIOALIGN)) {
			if (!sx.stx_dio_offset_align)
				return;		/* no direct I/O here */
			if (sx.stx_dio_offset_align > t->align)
				t->align = sx.stx_dio_offset_align;
			if (sx.stx_dio_mem_align > t->align)
				t->align = sx.stx_dio_mem_align;
		}
	}
#endif
	t->direct = fl >= 0 && !fcntl(t->fd, F_SETFL, fl | O_DIRECT);
}

int sv_tmp_open(struct sv_tmp *t, const char *dest, unsigned int flags)
{
	const char *slash = strrchr(dest, '/');
	char proc[64];
	char *dir;

	memset(t, 0, sizeof(*t));
	t->fd = t->dirfd = t->old = -1;
	t->dest = dest;
	t->base = slash ? slash + 1 : dest;
	if (!*t->base || !strcmp(t->base, ".") || !strcmp(t->base, ".."))
		return tio_raise_errno(EINVAL, "saving to %s: not a file name", dest);
	if (asprintf(&dir, "%.*s", slash ? (int)(slash - dest) + 1 : 1, slash ? dest : ".") < 0)
		return tio_raise_errno(ENOMEM, "%s", dest);
	t->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (t->dirfd < 0)
		return tio_raise_file_errno(errno, "opening the directory of %s", dest);
	sv_clean(t->dirfd);
	errno = EOPNOTSUPP;
	if (!(flags & TIO_SAVE_NAMED_TEMP))
		t->fd = openat(t->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", t->fd);
	if (t->fd >= 0 && access(proc, F_OK)) {
		close(t->fd);	/* no /proc: linkat() could not name it */
		t->fd = -1;
		errno = EOPNOTSUPP;
	}
	if (t->fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return tio_raise_file_errno(errno, "creating a file next to %s", dest);
	if (t->fd < 0 && sv_tmp_named(t))
		return -1;
	if (!t->named)
		sv_flock(t->fd, LOCK_EX);	/* before linkat() can give it a name */
	if (!(flags & TIO_SAVE_NO_DIRECT))
		sv_tmp_direct(t);
	return 0;
}

static int sv_raise_write(struct sv_tmp *t, int err)
{
	return tio_raise_file_errno(err, "writing %s%s", t->dest,
				    err == EFBIG ? " (the file size limit, ulimit -f)" : "");
}

/*
 * fallocate() on tmpfs gives up with EINTR whenever signal_pending() holds,
 * and io_uring's task work (a completion of the driver's uring_cmd, say)
 * makes it hold without any signal: the call is retried, as is any call
 * here that a file system may interrupt.
 */
static int sv_fallocate(int fd, off_t len)
{
	int r;

	do
		r = fallocate(fd, 0, 0, len);
	while (r && errno == EINTR);
	return r;
}

/*
 * Make room for @size bytes (rounded up to the alignment for O_DIRECT):
 * the blocks reserved, so that ENOSPC comes before any write, and a size
 * set, so that no write extends the file (ext4 runs extending direct
 * writes one at a time).
 */
int sv_tmp_reserve(struct sv_tmp *t, uint64_t size, unsigned int flags)
{
	uint64_t a = t->direct ? (size + t->align - 1) / t->align * t->align : size;

	if (!a)
		return 0;
	if (!(flags & TIO_SAVE_NO_PREALLOC) && !sv_fallocate(t->fd, (off_t)a))
		return 0;
	if (!(flags & TIO_SAVE_NO_PREALLOC) && errno != EOPNOTSUPP)
		return sv_raise_write(t, errno);
	return tio_file_ftruncate(t->fd, (off_t)a) ? sv_raise_write(t, errno) : 0;
}

/* Cut the file to @size and make its data durable. */
int sv_tmp_sync(struct sv_tmp *t, uint64_t size)
{
	struct stat sb;

	if (fstat(t->fd, &sb))
		return sv_raise_write(t, errno);
	if ((uint64_t)sb.st_size != size && tio_file_ftruncate(t->fd, (off_t)size))
		return sv_raise_write(t, errno);
	while (fdatasync(t->fd))
		if (errno != EINTR)
			return sv_raise_write(t, errno);
	return 0;
}

/*
 * Give the file the destination's name. The file it replaces is held
 * open (O_PATH) until sv_tmp_let_go(): freeing its blocks (and, on a
 * file system mounted with discard, discarding them) then happens in a
 * later journal commit instead of the directory's fsync the save waits
 * for (250 ms for 2 GiB on this ext4).
 */
int sv_tmp_link(struct sv_tmp *t)
{
	char proc[64], name[NAME_MAX + 1];
	int i;

	t->old = openat(t->dirfd, t->base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (t->named) {
		if (renameat(t->dirfd, t->named, t->dirfd, t->base))
			return tio_raise_file_errno(errno, "renaming %s to %s", t->named, t->dest);
		free(t->named);
		t->named = NULL;
		return 0;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", t->fd);
	if (!linkat(AT_FDCWD, proc, t->dirfd, t->base, AT_SYMLINK_FOLLOW))
		return 0;
	if (errno != EEXIST)
		return tio_raise_file_errno(errno, "linking %s", t->dest);
	for (i = 0; i < 100; i++) {
		sv_tmp_name(t->base, name, sizeof(name));
		if (!linkat(AT_FDCWD, proc, t->dirfd, name, AT_SYMLINK_FOLLOW))
			break;
		if (errno != EEXIST)
			return tio_raise_file_errno(errno, "linking next to %s", t->dest);
	}
	if (renameat(t->dirfd, name, t->dirfd, t->base)) {
		int err = errno;

		unlinkat(t->dirfd, name, 0);
		return tio_raise_file_errno(err, "renaming over %s", t->dest);
	}
	return 0;
}

int sv_tmp_sync_dir(struct sv_tmp *t)
{
	/* Some file systems cannot fsync a directory: their rename is durable. */
	if (fsync(t->dirfd) && errno != EINVAL && errno != EROFS)
		return tio_raise_file_errno(errno, "syncing the directory of %s", t->dest);
	return 0;
}

void sv_tmp_let_go(struct sv_tmp *t)
{
	if (t->old >= 0)
		close(t->old);
	t->old = -1;
}

/* Close; a named temporary not linked in place is removed. */
void sv_tmp_close(struct sv_tmp *t)
{
	sv_tmp_let_go(t);
	if (t->named)
		unlinkat(t->dirfd, t->named, 0);
	free(t->named);
	t->named = NULL;
	if (t->fd >= 0)
		close(t->fd);
	if (t->dirfd >= 0)
		close(t->dirfd);
	t->fd = t->dirfd = -1;
}

/* A small file (an index), written buffered, durably and atomically. */
int sv_write_text(const char *path, const char *text, uint64_t len)
{
	struct sv_tmp t;
	uint64_t done = 0;
	int ret = -1;

	if (sv_tmp_open(&t, path, TIO_SAVE_NO_DIRECT))
		goto out;
	while (done < len) {
		ssize_t w = pwrite(t.fd, text + done, len - done, (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			sv_raise_write(&t, w ? errno : EIO);
			goto out;
		}
		done += (uint64_t)w;
	}
	if (!sv_tmp_sync(&t, len) && !sv_tmp_link(&t) && !sv_tmp_sync_dir(&t))
		ret = 0;
out:
	sv_tmp_close(&t);
	return ret;
}
