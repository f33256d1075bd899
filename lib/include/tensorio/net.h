/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tensors across processes and machines over UCX (docs/net.md): workers
 * and endpoints, registered tensorio buffers, packed remote keys,
 * one-sided put/get whose completion signals a point on a tensorio
 * stream, and tensor descriptors sent with their remote keys.
 *
 * Functions return 0 or -1 with an error raised (tio_error_*) that names
 * the transport and the peer; tio_errno() gives its errno.
 *
 * Layer: net (libtensorio-net, lib/net/)
 */
#ifndef TENSORIO_NET_H
#define TENSORIO_NET_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/buffer.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tio_net_worker tio_net_worker_t;
typedef struct tio_net_ep tio_net_ep_t;
typedef struct tio_net_mem tio_net_mem_t;
typedef struct tio_net_rkey tio_net_rkey_t;

/**
 * tio_net_worker_create() - a UCX context and worker with a progress thread
 * @out: the worker
 *
 * Transports are UCX's choice (``UCX_TLS``, ``UCX_NET_DEVICES``). Endpoint
 * closes, and transfers without a stream, over shared memory wait at most
 * ``TIO_NET_CLOSE_TIMEOUT_MS`` (default 10000; a value outside
 * 1..3600000 fails with -EINVAL).
 *
 * Return: 0 or -1 (error raised).
 */
TIO_API int tio_net_worker_create(tio_net_worker_t **out);

/**
 * tio_net_worker_destroy() - stop the progress thread and free the worker
 * @w: the worker, or NULL; its endpoints, registrations and keys must be
 *     gone already
 *
 * Buffers of tio_net_mem_alloc() memory still referenced keep the UCX
 * context (not the worker) until the last of them is gone.
 */
TIO_API void tio_net_worker_destroy(tio_net_worker_t *w);

/**
 * tio_net_worker_address() - the worker's address, for a peer's connect
 * @w: the worker
 * @addr: out, malloc'd bytes (free() them)
 * @len: out, their length
 *
 * Return: 0 or -1 (error raised).
 */
TIO_API int tio_net_worker_address(tio_net_worker_t *w, void **addr, size_t *len);

/**
 * tio_net_connect() - an endpoint to a peer worker
 * @w: the local worker
 * @addr: the peer's tio_net_worker_address() bytes
 * @len: their length
 * @peer: a name for the peer in error messages (copied), or NULL
 * @out: the endpoint
 *
 * Return: 0 or -1 (error raised).
 */
TIO_API int tio_net_connect(tio_net_worker_t *w, const void *addr, size_t len,
			    const char *peer, tio_net_ep_t **out);

/**
 * tio_net_ep_close() - flush and close an endpoint, then free it
 * @ep: the endpoint, or NULL
 *
 * Where UCX watches the peer (TCP, verbs: keepalive), a dead peer fails
 * the flush. Where it does not (shared memory), the flush waits at most
 * the worker's close timeout (TIO_NET_CLOSE_TIMEOUT_MS when the worker was
 * created, default 10 s). Then, or when the endpoint had failed, it is
 * closed by force and transfers still in flight on it complete with
 * -ECANCELED.
 *
 * Return: 0, or -1 (error raised naming the peer; -ETIMEDOUT when the
 * flush timed out) when the flush failed; @ep is freed either way.
 */
TIO_API int tio_net_ep_close(tio_net_ep_t *ep);

/**
 * tio_net_ep_transports() - the transports UCX chose for an endpoint
 * @ep: the endpoint
 *
 * Return: e.g. "tcp/lo" or "sysv/memory,cma/memory"; valid while @ep lives.
 */
TIO_API const char *tio_net_ep_transports(tio_net_ep_t *ep);

/**
 * tio_net_mem_register() - register a buffer's mapping (ucp_mem_map)
 * @w: the worker
 * @buf: the buffer; the registration holds a reference
 * @out: the registration
 *
 * Return: 0 or -1 (error raised).
 */
TIO_API int tio_net_mem_register(tio_net_worker_t *w, tio_buffer_t *buf,
				 tio_net_mem_t **out);

/**
 * tio_net_mem_alloc() - a buffer in memory UCX allocates, registered
 * @w: the worker
 * @size: bytes, rounded up to whole pages
 * @out: the registration; tio_net_mem_buffer() is its buffer
 *
 * UCX's shared-memory transports reach memory they allocated with one
 * copy by the initiator; memory they only registered (tio_net_mem_register)
 * by messages the target copies in. The buffer (zeroed, tio_buffer_pin()
 * of UCX's memory) may outlive the registration and the worker: UCX's
 * memory stays mapped until tio_net_mem_deregister() and the last
 * reference to the buffer (and to every Tensor view of it) are both gone,
 * whichever comes last.
 *
 * Return: 0 or -1 (error raised: EINVAL for size 0, ENOMEM, ...).
 */
TIO_API int tio_net_mem_alloc(tio_net_worker_t *w, size_t size, tio_net_mem_t **out);

/**
 * tio_net_mem_buffer() - the buffer of a registration
 * @m: the registration
 *
 * Return: the buffer, borrowed (valid while @m lives; tio_object_incref()
 * to keep it longer, see tio_net_mem_alloc()); NULL without UCX.
 */
TIO_API tio_buffer_t *tio_net_mem_buffer(tio_net_mem_t *m);

/**
 * tio_net_mem_deregister() - drop a registration and its buffer reference
 * @m: the registration, or NULL; no transfer may be using it
 */
TIO_API void tio_net_mem_deregister(tio_net_mem_t *m);

/**
 * tio_net_rkey_pack() - a registration's remote key, address and size
 * @m: the registration
 * @blob: out, malloc'd bytes for the peer's tio_net_rkey_unpack()
 * @len: out, their length
 *
 * Return: 0 or -1 (error raised).
 */
TIO_API int tio_net_rkey_pack(tio_net_mem_t *m, void **blob, size_t *len);

/**
 * tio_net_rkey_unpack() - a peer's packed key, usable on one endpoint
 * @ep: the endpoint to the key's owner
 * @blob: tio_net_rkey_pack() bytes
 * @len: their length
 * @out: the key
 *
 * Return: 0 or -1 (-EINVAL for bytes that are not a key).
 */
TIO_API int tio_net_rkey_unpack(tio_net_ep_t *ep, const void *blob, size_t len,
				tio_net_rkey_t **out);

/**
 * tio_net_rkey_size() - bytes of remote memory a key covers
 * @rk: the key
 *
 * Return: the size.
 */
TIO_API uint64_t tio_net_rkey_size(const tio_net_rkey_t *rk);

/**
 * tio_net_rkey_destroy() - free an unpacked key
 * @rk: the key, or NULL
 */
TIO_API void tio_net_rkey_destroy(tio_net_rkey_t *rk);

/**
 * tio_net_put() - write local bytes into remote memory
 * @ep: the endpoint
 * @local: the registration of the source buffer
 * @local_off: byte offset in it
 * @remote: the destination's key
 * @remote_off: byte offset in the remote memory
 * @len: bytes
 * @s: a stream whose new point signals when the bytes are in the remote
 *     memory (with a negative errno if the transfer failed); NULL to wait
 * @seqno: out, the point (with @s), or NULL
 *
 * Points on one stream signal in issue order: a transfer's point signals
 * once it and every earlier transfer of the same worker completed. Use a
 * stream with one worker only.
 *
 * Without @s the call waits; where UCX does not watch the peer (shared
 * memory) at most the worker's close timeout (TIO_NET_CLOSE_TIMEOUT_MS),
 * then the endpoint is failed (later transfers fail at once; close it,
 * then deregister) and the call fails with -ETIMEDOUT naming the peer.
 *
 * Return: 0 or -1 (error raised: bad ranges -EINVAL, -ETIMEDOUT, transfer
 * errors).
 */
TIO_API int tio_net_put(tio_net_ep_t *ep, tio_net_mem_t *local, uint64_t local_off,
			tio_net_rkey_t *remote, uint64_t remote_off, uint64_t len,
			tio_stream_t *s, uint64_t *seqno);

/**
 * tio_net_get() - read remote bytes into local memory
 * @ep: the endpoint
 * @local: the registration of the destination buffer
 * @local_off: byte offset in it
 * @remote: the source's key
 * @remote_off: byte offset in the remote memory
 * @len: bytes
 * @s: as for tio_net_put(): the point signals when the bytes are local
 * @seqno: out, the point, or NULL
 *
 * Without @s the wait is bounded as for tio_net_put().
 *
 * Return: 0 or -1 (error raised; -ETIMEDOUT).
 */
TIO_API int tio_net_get(tio_net_ep_t *ep, tio_net_mem_t *local, uint64_t local_off,
			tio_net_rkey_t *remote, uint64_t remote_off, uint64_t len,
			tio_stream_t *s, uint64_t *seqno);

/**
 * tio_net_send_desc() - send a tensor descriptor with a remote key
 * @ep: the endpoint
 * @m: the registration the tensor lives in
 * @desc: its descriptor (checked against the buffer's size)
 * @tag: message tag the peer receives with
 * @timeout_ns: bound on the send, < 0 for none
 *
 * Return: 0 or -1 (error raised; -ETIMEDOUT).
 */
TIO_API int tio_net_send_desc(tio_net_ep_t *ep, tio_net_mem_t *m,
			      const struct tio_desc *desc, uint64_t tag,
			      int64_t timeout_ns);

/**
 * tio_net_recv_desc() - receive a descriptor and its key from a peer
 * @ep: the endpoint to the sender (the key is unpacked for it)
 * @tag: the tag it was sent with
 * @timeout_ns: bound on the wait, < 0 for none
 * @desc: out, the descriptor
 * @out: out, the key of the memory it describes
 *
 * Return: 0 or -1 (error raised; -ETIMEDOUT, -EINVAL for a bad message).
 */
TIO_API int tio_net_recv_desc(tio_net_ep_t *ep, uint64_t tag, int64_t timeout_ns,
			      struct tio_desc *desc, tio_net_rkey_t **out);

/**
 * tio_net_register_globals() - register the tio.net.* global functions
 *
 * The operations above as FFI globals (docs/net.md lists them), with
 * workers, endpoints, registrations and remote keys as objects
 * (``tio.net.Worker``, ``tio.net.Endpoint``, ``tio.net.Memory``,
 * ``tio.net.RemoteKey``) released with their last reference. Done once
 * per process; later calls report the first one's result. Not done when
 * the library loads, so that a program that links it sees no extra
 * globals until it asks.
 *
 * Return: 0, or -1 with an error raised naming what failed.
 */
TIO_API int tio_net_register_globals(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_NET_H */
