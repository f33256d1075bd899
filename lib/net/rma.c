// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One-sided transfers: put (then an endpoint flush, so that completion
 * means the bytes are in the remote memory) and get, completing either
 * synchronously or by signalling a new point on a tensorio stream.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "net_internal.h"

static bool tio_net_range_bad(uint64_t off, uint64_t len, uint64_t size)
{
	return off > size || len > size - off;
}

static int tio_net_rma(bool put, tio_net_ep_t *ep, tio_net_mem_t *local,
		       uint64_t local_off, tio_net_rkey_t *remote, uint64_t remote_off,
		       uint64_t len, tio_stream_t *s, uint64_t *seqno)
{
	const char *what = put ? "put" : "get";
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = tio_net_req_cb,
	};
	ucp_request_param_t rp_data = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = tio_net_free_cb,
	};
	tio_net_worker_t *w = ep->w;
	struct tio_net_op *op;
	ucs_status_ptr_t req;
	void *laddr;
	uint64_t raddr, sq = 0;
	int64_t t;
	int ret;

	if (remote->ep != ep)
		return tio_net_raise(ep, EINVAL, "net %s: the remote key belongs to another endpoint",
				     what);
	if (local->w != w)
		return tio_net_raise(ep, EINVAL, "net %s: the registration belongs to another worker",
				     what);
	if (tio_net_range_bad(local_off, len, local->size))
		return tio_net_raise(ep, EINVAL,
				     "net %s: local range %llu+%llu exceeds the %llu-byte buffer",
				     what, (unsigned long long)local_off,
				     (unsigned long long)len, (unsigned long long)local->size);
	if (tio_net_range_bad(remote_off, len, remote->size))
		return tio_net_raise(ep, EINVAL,
				     "net %s: remote range %llu+%llu exceeds the %llu-byte memory",
				     what, (unsigned long long)remote_off,
				     (unsigned long long)len, (unsigned long long)remote->size);
	op = tio_net_op_new(ep, what);
	if (!op)
		return -1;
	laddr = (char *)local->addr + local_off;
	raddr = remote->addr + remote_off;
	rp.user_data = op;
	rp_data.user_data = w;
	pthread_mutex_lock(&w->lock);
	if (ep->failed) {
		ret = ep->failed;
		pthread_mutex_unlock(&w->lock);
		free(op);
		return tio_net_raise(ep, ret, "net %s of %llu bytes: the endpoint failed%s%s",
				     what, (unsigned long long)len, ep->why[0] ? ": " : "",
				     ep->why);
	}
	if (s) {
		if (tio_fence_emit(s, &op->seqno)) {
			pthread_mutex_unlock(&w->lock);
			free(op);
			return -1;
		}
		tio_object_incref((tio_object_t *)s);
		op->stream = s;
		/* Where UCX does not watch the peer, the same bound as below. */
		if (!ep->peer_checked)
			op->deadline = tio_net_now() + w->close_timeout_ns;
		sq = op->seqno;	/* op is freed once signalled */
		tio_net_op_start(w, op);
	}
	if (put) {
		req = ucp_put_nbx(ep->ep, laddr, len, raddr, remote->rkey, &rp_data);
		if (UCS_PTR_IS_ERR(req)) {
			tio_net_op_track(w, op, req);
			goto issued;
		}
		if (req) {
			w->inflight++;
			tio_net_kick(w);
		}
		req = ucp_ep_flush_nbx(ep->ep, &rp);
	} else {
		req = ucp_get_nbx(ep->ep, laddr, len, raddr, remote->rkey, &rp);
	}
	tio_net_op_track(w, op, req);
issued:
	if (s) {
		pthread_mutex_unlock(&w->lock);
		if (seqno)
			*seqno = sq;
		return 0;
	}
	/* Where UCX watches the peer its keepalive bounds the wait. */
	t = ep->peer_checked ? -1 : w->close_timeout_ns;
	ret = tio_net_op_wait(w, op, t);
	if (ret == -ETIMEDOUT && !op->done) {
		/*
		 * A peer UCX does not watch (shared memory) did not answer:
		 * give up, and fail the endpoint so that nothing else waits
		 * for it and its close goes by force. UCX keeps the request
		 * until then; the op stays with the worker as long.
		 */
		ucp_request_cancel(w->worker, op->req);
		if (!ep->failed) {
			ep->failed = -ETIMEDOUT;
			snprintf(ep->why, sizeof(ep->why),
				 "a %s got no answer after %lld ms (TIO_NET_CLOSE_TIMEOUT_MS)",
				 what, (long long)(t / 1000000));
		}
		tio_net_op_orphan(w, op);
		pthread_mutex_unlock(&w->lock);
		return tio_net_raise(ep, ETIMEDOUT,
				     "net %s of %llu bytes: no answer after %lld ms (TIO_NET_CLOSE_TIMEOUT_MS), the endpoint failed",
				     what, (unsigned long long)len, (long long)(t / 1000000));
	}
	free(op);
	if (ret && ep->failed)
		ret = ep->failed;
	pthread_mutex_unlock(&w->lock);
	if (ret)
		return tio_net_raise(ep, ret, "net %s of %llu bytes failed", what,
				     (unsigned long long)len);
	return 0;
}

int tio_net_put(tio_net_ep_t *ep, tio_net_mem_t *local, uint64_t local_off,
		tio_net_rkey_t *remote, uint64_t remote_off, uint64_t len,
		tio_stream_t *s, uint64_t *seqno)
{
	return tio_net_rma(true, ep, local, local_off, remote, remote_off, len, s, seqno);
}

int tio_net_get(tio_net_ep_t *ep, tio_net_mem_t *local, uint64_t local_off,
		tio_net_rkey_t *remote, uint64_t remote_off, uint64_t len,
		tio_stream_t *s, uint64_t *seqno)
{
	return tio_net_rma(false, ep, local, local_off, remote, remote_off, len, s, seqno);
}
