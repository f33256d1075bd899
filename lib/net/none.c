// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtensorio-net built without UCX: every call fails with EOPNOTSUPP
 * and says so (lib/net/Makefile picks this file then).
 */
#include <errno.h>

#include <tensorio/context.h>
#include <tensorio/net.h>


static int tio_net_none(void)
{
	return tio_raise_errno(EOPNOTSUPP, "net: libtensorio-net was built without UCX (libucx-dev)");
}

int tio_net_worker_create(tio_net_worker_t **out)
{
	(void)out;
	return tio_net_none();
}

void tio_net_worker_destroy(tio_net_worker_t *w)
{
	(void)w;
}

int tio_net_worker_address(tio_net_worker_t *w, void **addr, size_t *len)
{
	(void)w, (void)addr, (void)len;
	return tio_net_none();
}

int tio_net_connect(tio_net_worker_t *w, const void *addr, size_t len,
		    const char *peer, tio_net_ep_t **out)
{
	(void)w, (void)addr, (void)len, (void)peer, (void)out;
	return tio_net_none();
}

int tio_net_ep_close(tio_net_ep_t *ep)
{
	(void)ep;
	return 0;
}

const char *tio_net_ep_transports(tio_net_ep_t *ep)
{
	(void)ep;
	return "none";
}

int tio_net_mem_register(tio_net_worker_t *w, tio_buffer_t *buf, tio_net_mem_t **out)
{
	(void)w, (void)buf, (void)out;
	return tio_net_none();
}

int tio_net_mem_alloc(tio_net_worker_t *w, size_t size, tio_net_mem_t **out)
{
	(void)w, (void)size, (void)out;
	return tio_net_none();
}

tio_buffer_t *tio_net_mem_buffer(tio_net_mem_t *m)
{
	(void)m;
	return NULL;
}

void tio_net_mem_deregister(tio_net_mem_t *m)
{
	(void)m;
}

int tio_net_rkey_pack(tio_net_mem_t *m, void **blob, size_t *len)
{
	(void)m, (void)blob, (void)len;
	return tio_net_none();
}

int tio_net_rkey_unpack(tio_net_ep_t *ep, const void *blob, size_t len,
			tio_net_rkey_t **out)
{
	(void)ep, (void)blob, (void)len, (void)out;
	return tio_net_none();
}

uint64_t tio_net_rkey_size(const tio_net_rkey_t *rk)
{
	(void)rk;
	return 0;
}

void tio_net_rkey_destroy(tio_net_rkey_t *rk)
{
	(void)rk;
}

int tio_net_put(tio_net_ep_t *ep, tio_net_mem_t *local, uint64_t local_off,
		tio_net_rkey_t *remote, uint64_t remote_off, uint64_t len,
		tio_stream_t *s, uint64_t *seqno)
{
	(void)ep, (void)local, (void)local_off, (void)remote, (void)remote_off;
	(void)len, (void)s, (void)seqno;
	return tio_net_none();
}

int tio_net_get(tio_net_ep_t *ep, tio_net_mem_t *local, uint64_t local_off,
		tio_net_rkey_t *remote, uint64_t remote_off, uint64_t len,
		tio_stream_t *s, uint64_t *seqno)
{
	(void)ep, (void)local, (void)local_off, (void)remote, (void)remote_off;
	(void)len, (void)s, (void)seqno;
	return tio_net_none();
}

int tio_net_send_desc(tio_net_ep_t *ep, tio_net_mem_t *m,
		      const struct tio_desc *desc, uint64_t tag, int64_t timeout_ns)
{
	(void)ep, (void)m, (void)desc, (void)tag, (void)timeout_ns;
	return tio_net_none();
}

int tio_net_recv_desc(tio_net_ep_t *ep, uint64_t tag, int64_t timeout_ns,
		      struct tio_desc *desc, tio_net_rkey_t **out)
{
	(void)ep, (void)tag, (void)timeout_ns, (void)desc, (void)out;
	return tio_net_none();
}
