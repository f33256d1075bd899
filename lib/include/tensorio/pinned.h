/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pinned-memory cache: pinned buffers (tio.Buffer, pinned user
 * memory) that go back to a cache when their last reference is dropped
 * and are handed out again for a later allocation of the same size class,
 * so that a repeated allocation costs microseconds instead of populating
 * and locking fresh memory.
 *
 * Size classes: powers of two up to 1 MiB (one page at least), then 32
 * classes per doubling (at most about 3% over the request: a large load
 * pins little it does not use). A cached buffer is
 * reused only once every fence attached to it has signalled (stream-ordered
 * reuse): a buffer released while a GPU or another driver still reads it is
 * skipped until then. Cached memory stays pinned and charged to
 * RLIMIT_MEMLOCK; when a new allocation cannot be pinned the cache is
 * trimmed and the allocation tried once more.
 *
 * On by default; TIO_PINNED_CACHE=0 in the environment turns it off (every
 * release then frees). The limit defaults to a quarter of physical memory,
 * TIO_PINNED_CACHE_LIMIT=<bytes> or tio_pinned_set_limit() changes it.
 * Thread-safe.
 *
 * Layer: dev (lib/src/dev/)
 */
#ifndef TENSORIO_PINNED_H
#define TENSORIO_PINNED_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/buffer.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tio_pinned_stats - what the cache did and holds
 * @hits: allocations served from the cache
 * @misses: allocations that pinned new memory
 * @bytes_cached: bytes held by the cache, free for reuse
 * @bytes_in_use: bytes of cache buffers handed out and not yet released
 * @buffers_cached: buffers held by the cache
 * @limit: the most @bytes_cached may reach
 * @enabled: 0 when TIO_PINNED_CACHE=0
 */
struct tio_pinned_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t bytes_cached;
	uint64_t bytes_in_use;
	uint64_t buffers_cached;
	uint64_t limit;
	int enabled;
};

/**
 * tio_pinned_alloc() - a pinned buffer from the cache
 * @size: bytes (rounded up to the size class)
 * @out: the buffer (one reference, the caller's); its memory is NOT
 *	zeroed: it may hold what a former user wrote. Releasing the last
 *	reference gives it back to the cache.
 *
 * Return: 0, or -1 with an error raised (EINVAL for size 0, ENOMEM when
 * the memory or RLIMIT_MEMLOCK is spent, E2BIG above the backend's
 * largest buffer).
 */
TIO_API int tio_pinned_alloc(size_t size, tio_buffer_t **out);

/**
 * tio_pinned_stats() - the cache's statistics
 * @st: filled in
 */
TIO_API void tio_pinned_stats(struct tio_pinned_stats *st);

/**
 * tio_pinned_stats_of() - another process's cache statistics
 * @pid: the process (its own pid works too)
 * @st: filled in (zeroed on failure)
 *
 * A process publishes its cache's counters, from its first use of the
 * cache on, in a shared page (a memfd named "tio-pinned-stats"); this
 * reads them through /proc/@pid/map_files, which needs CAP_SYS_ADMIN.
 * tioctl stat shows them per open file.
 *
 * Return: 0, or -1 with an OSError raised: ENOENT when @pid has not used
 * the cache, ESRCH when there is no such process, EPERM without the
 * capability, EPROTO when @pid's libtensorio publishes another layout;
 * EINVAL (ValueError) for a @pid below 1.
 */
TIO_API int tio_pinned_stats_of(int pid, struct tio_pinned_stats *st);

/**
 * tio_pinned_set_limit() - the most bytes the cache may hold
 * @bytes: the limit; cached buffers above it are freed now
 */
TIO_API void tio_pinned_set_limit(uint64_t bytes);

/**
 * tio_pinned_trim() - free every cached buffer (those in use stay)
 */
TIO_API void tio_pinned_trim(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_PINNED_H */
