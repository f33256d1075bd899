// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Registrations of tensorio buffers (ucp_mem_map of their mapping) and
 * remote keys: packed with the address and size they cover, unpacked for
 * one endpoint.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_internal.h"

#define TIO_NET_RKEY_MAGIC 0x59454b52u	/* "RKEY" */

/* A packed key: this header, then UCX's packed rkey. */
struct tio_net_rkey_hdr {
	uint32_t magic;
	uint32_t len;		/* bytes of UCX key that follow */
	uint64_t addr;
	uint64_t size;
};

int tio_net_mem_register(tio_net_worker_t *w, tio_buffer_t *buf, tio_net_mem_t **out)
{
	ucp_mem_map_params_t p = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
			      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
	};
	tio_net_mem_t *m;
	ucs_status_t st;

	p.address = tio_buffer_data(buf);
	p.length = tio_buffer_size(buf);
	if (!p.address)
		return -1;	/* raised by tio_buffer_data() */
	m = calloc(1, sizeof(*m));
	if (!m)
		return tio_raise_errno(ENOMEM, "net: no memory for a registration");
	pthread_mutex_lock(&w->lock);
	st = ucp_mem_map(w->ctx, &p, &m->memh);
	if (st == UCS_OK)
		w->mems++;
	pthread_mutex_unlock(&w->lock);
	if (st != UCS_OK) {
		free(m);
		return tio_raise_errno(-tio_net_errno(st),
				       "net: registering buffer %u (%zu bytes): %s",
				       tio_buffer_handle(buf), p.length,
				       ucs_status_string(st));
	}
	tio_object_incref((tio_object_t *)buf);
	m->w = w;
	m->buf = buf;
	m->addr = p.address;
	m->size = p.length;
	m->refs = 1;
	*out = m;
	return 0;
}

/*
 * Drop one hold on @m: its handle's (tio_net_mem_deregister) or, for UCX's
 * memory, its buffer's (the buffer was freed). The last unmaps, and frees
 * a worker destroyed meanwhile once nothing is mapped in its context.
 */
static void tio_net_mem_put(tio_net_mem_t *m)
{
	tio_net_worker_t *w = m->w;
	bool free_worker;

	pthread_mutex_lock(&w->lock);
	if (--m->refs) {
		pthread_mutex_unlock(&w->lock);
		return;
	}
	ucp_mem_unmap(w->ctx, m->memh);
	free_worker = !--w->mems && w->destroyed;
	pthread_mutex_unlock(&w->lock);
	free(m);
	if (free_worker)
		tio_net_worker_free(w);
}

/* tio_buffer_pin_owned()'s release: the buffer of UCX's memory is gone. */
static void tio_net_mem_release(void *arg)
{
	tio_net_mem_put(arg);
}

/*
 * UCX's shared-memory transports (sysv, posix) address only memory they
 * allocated themselves: the peer attaches the segment named in the remote
 * key, and a put or get is one copy by the initiator. Memory they merely
 * register (a tensorio buffer's mapping) is reached by active messages
 * that the target copies in. So let UCX allocate (as ucx_perftest does)
 * and make a buffer of that memory.
 */
int tio_net_mem_alloc(tio_net_worker_t *w, size_t size, tio_net_mem_t **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	ucp_mem_map_params_t p = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
			      UCP_MEM_MAP_PARAM_FIELD_LENGTH |
			      UCP_MEM_MAP_PARAM_FIELD_FLAGS,
		.address = NULL,
		.flags = UCP_MEM_MAP_ALLOCATE,
	};
	ucp_mem_attr_t a = {
		.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH,
	};
	tio_net_mem_t *m;
	ucs_status_t st;

	if (!size || size > SIZE_MAX - page)
		return tio_raise_errno(EINVAL, "net: allocating %zu bytes: bad size", size);
	p.length = (size + page - 1) & ~(page - 1);
	m = calloc(1, sizeof(*m));
	if (!m)
		return tio_raise_errno(ENOMEM, "net: no memory for a registration");
	pthread_mutex_lock(&w->lock);
	st = ucp_mem_map(w->ctx, &p, &m->memh);
	if (st == UCS_OK) {
		st = ucp_mem_query(m->memh, &a);
		if (st != UCS_OK)
			ucp_mem_unmap(w->ctx, m->memh);
	}
	pthread_mutex_unlock(&w->lock);
	if (st != UCS_OK) {
		free(m);
		return tio_raise_errno(-tio_net_errno(st), "net: allocating %zu bytes: %s",
				       p.length, ucs_status_string(st));
	}
	if ((uintptr_t)a.address % page || a.length < p.length) {
		errno = EINVAL;	/* UCX gave memory a buffer cannot be */
		goto err_unmap;
	}
	memset(a.address, 0, p.length);
	m->w = w;
	m->addr = a.address;
	m->size = p.length;
	m->allocated = true;
	m->refs = 2;	/* the handle, the buffer (until its last reference) */
	if (tio_buffer_pin_owned(a.address, p.length, 0, tio_net_mem_release, m, &m->buf))
		goto err_unmap;
	pthread_mutex_lock(&w->lock);
	w->mems++;
	pthread_mutex_unlock(&w->lock);
	*out = m;
	return 0;

err_unmap:
	pthread_mutex_lock(&w->lock);
	ucp_mem_unmap(w->ctx, m->memh);
	pthread_mutex_unlock(&w->lock);
	free(m);
	if (!tio_error_peek_raised())
		tio_raise_errno(EINVAL, "net: UCX allocated %zu bytes at %p: not whole pages",
				(size_t)a.length, a.address);
	return -1;
}

tio_buffer_t *tio_net_mem_buffer(tio_net_mem_t *m)
{
	return m->buf;
}

void tio_net_mem_deregister(tio_net_mem_t *m)
{
	tio_buffer_t *buf;

	if (!m)
		return;
	buf = m->buf;
	if (m->allocated) {
		/* The memory stays mapped while the buffer has references. */
		tio_buffer_decref(buf);
		tio_net_mem_put(m);
	} else {
		tio_net_mem_put(m);	/* unmapped before the buffer may go */
		tio_buffer_decref(buf);
	}
}

int tio_net_rkey_pack(tio_net_mem_t *m, void **blob, size_t *len)
{
	struct tio_net_rkey_hdr h = {
		.magic = TIO_NET_RKEY_MAGIC,
		.addr = (uintptr_t)m->addr,
		.size = m->size,
	};
	void *rk;
	size_t n;
	ucs_status_t st;
	char *p;

	pthread_mutex_lock(&m->w->lock);
	st = ucp_rkey_pack(m->w->ctx, m->memh, &rk, &n);
	pthread_mutex_unlock(&m->w->lock);
	if (st != UCS_OK)
		return tio_raise_errno(-tio_net_errno(st), "net: packing a remote key: %s",
				       ucs_status_string(st));
	p = malloc(sizeof(h) + n);
	if (p) {
		h.len = (uint32_t)n;
		memcpy(p, &h, sizeof(h));
		memcpy(p + sizeof(h), rk, n);
	}
	ucp_rkey_buffer_release(rk);
	if (!p)
		return tio_raise_errno(ENOMEM, "net: no memory for a remote key");
	*blob = p;
	*len = sizeof(h) + n;
	return 0;
}

int tio_net_rkey_unpack(tio_net_ep_t *ep, const void *blob, size_t len,
			tio_net_rkey_t **out)
{
	struct tio_net_rkey_hdr h;
	tio_net_rkey_t *rk;
	ucs_status_t st;

	if (len < sizeof(h))
		return tio_net_raise(ep, EINVAL, "net: a remote key of %zu bytes is too short", len);
	memcpy(&h, blob, sizeof(h));
	if (h.magic != TIO_NET_RKEY_MAGIC || h.len != len - sizeof(h))
		return tio_net_raise(ep, EINVAL, "net: not a tensorio remote key");
	rk = calloc(1, sizeof(*rk));
	if (!rk)
		return tio_raise_errno(ENOMEM, "net: no memory for a remote key");
	pthread_mutex_lock(&ep->w->lock);
	st = ucp_ep_rkey_unpack(ep->ep, (const char *)blob + sizeof(h), &rk->rkey);
	pthread_mutex_unlock(&ep->w->lock);
	if (st != UCS_OK) {
		free(rk);
		return tio_net_raise(ep, -tio_net_errno(st), "net: unpacking a remote key: %s",
				     ucs_status_string(st));
	}
	rk->ep = ep;
	rk->addr = h.addr;
	rk->size = h.size;
	*out = rk;
	return 0;
}

uint64_t tio_net_rkey_size(const tio_net_rkey_t *rk)
{
	return rk->size;
}

void tio_net_rkey_destroy(tio_net_rkey_t *rk)
{
	if (!rk)
		return;
	pthread_mutex_lock(&rk->ep->w->lock);
	ucp_rkey_destroy(rk->rkey);
	pthread_mutex_unlock(&rk->ep->w->lock);
	free(rk);
}
