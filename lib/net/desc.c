// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tensor descriptors sent with the remote key of their memory, as one
 * tagged message, so that a peer can read or write the tensor.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

#define TIO_NET_DESC_MAGIC 0x43534544u	/* "DESC" */
#define TIO_NET_DESC_MAX 65536		/* a message's bytes, key included */

struct tio_net_desc_msg {
	uint32_t magic;
	uint32_t keylen;
	struct tio_desc desc;
};

/* Wait for @op; on timeout cancel its request and wait for that. Lock held. */
static int tio_net_wait_or_cancel(tio_net_worker_t *w, struct tio_net_op *op,
				  int64_t timeout_ns)
{
	int ret = tio_net_op_wait(w, op, timeout_ns);

	if (ret != -ETIMEDOUT || op->done)
		return ret;
	ucp_request_cancel(w->worker, op->req);
	tio_net_op_wait(w, op, -1);
	return -ETIMEDOUT;
}

int tio_net_send_desc(tio_net_ep_t *ep, tio_net_mem_t *m,
		      const struct tio_desc *desc, uint64_t tag, int64_t timeout_ns)
{
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = tio_net_req_cb,
	};
	struct tio_net_desc_msg h = { .magic = TIO_NET_DESC_MAGIC };
	tio_net_worker_t *w = ep->w;
	struct tio_net_op *op;
	ucs_status_ptr_t req;
	size_t keylen;
	void *key;
	char *msg;
	int ret;

	if (tio_desc_check(desc, m->size))
		return -1;
	if (tio_net_rkey_pack(m, &key, &keylen))
		return -1;
	if (keylen > TIO_NET_DESC_MAX - sizeof(h)) {
		free(key);
		return tio_net_raise(ep, EMSGSIZE, "net: a %zu-byte remote key is too large",
				     keylen);
	}
	msg = malloc(sizeof(h) + keylen);
	op = tio_net_op_new(ep, "send_desc");
	if (!msg || !op) {
		free(key);
		free(msg);
		free(op);
		return tio_raise_errno(ENOMEM, "net: no memory for a descriptor message");
	}
	h.keylen = (uint32_t)keylen;
	h.desc = *desc;
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), key, keylen);
	free(key);
	rp.user_data = op;
	pthread_mutex_lock(&w->lock);
	req = ucp_tag_send_nbx(ep->ep, msg, sizeof(h) + keylen, tag, &rp);
	tio_net_op_track(w, op, req);
	ret = tio_net_wait_or_cancel(w, op, timeout_ns);
	free(op);
	if (ret && ret != -ETIMEDOUT && ep->failed)
		ret = ep->failed;
	pthread_mutex_unlock(&w->lock);
	free(msg);
	if (ret)
		return tio_net_raise(ep, ret, "net: sending a tensor descriptor (tag %llu)",
				     (unsigned long long)tag);
	return 0;
}

static void tio_net_recv_cb(void *req, ucs_status_t st, const ucp_tag_recv_info_t *info,
			    void *user)
{
	struct tio_net_op *op = user;

	if (st == UCS_OK)
		op->length = info->length;
	tio_net_req_cb(req, st, user);
}

int tio_net_recv_desc(tio_net_ep_t *ep, uint64_t tag, int64_t timeout_ns,
		      struct tio_desc *desc, tio_net_rkey_t **out)
{
	ucp_tag_recv_info_t info = { 0 };
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FIELD_RECV_INFO,
		.cb.recv = tio_net_recv_cb,
		.recv_info.tag_info = &info,
	};
	struct tio_net_desc_msg h;
	tio_net_worker_t *w = ep->w;
	ucp_tag_message_h probed;
	struct tio_net_op *op;
	ucs_status_ptr_t req;
	tio_net_rkey_t *rk;
	size_t len;
	char *msg;
	int ret;

	msg = malloc(TIO_NET_DESC_MAX);
	op = tio_net_op_new(ep, "recv_desc");
	if (!msg || !op) {
		free(msg);
		free(op);
		return tio_raise_errno(ENOMEM, "net: no memory for a descriptor message");
	}
	rp.user_data = op;
	pthread_mutex_lock(&w->lock);
	/*
	 * A message that has already arrived is taken by probe, which reports
	 * its length; UCX 1.13 may complete such a receive at once without
	 * filling recv_info (a 0-byte length). Nothing arrives between the
	 * probe and the receive: only progress, under this lock, delivers.
	 */
	probed = ucp_tag_probe_nb(w->worker, tag, UINT64_MAX, 1, &info);
	if (probed) {
		rp.op_attr_mask &= ~UCP_OP_ATTR_FIELD_RECV_INFO;
		op->length = info.length;
		req = ucp_tag_msg_recv_nbx(w->worker, msg, TIO_NET_DESC_MAX, probed, &rp);
	} else {
		req = ucp_tag_recv_nbx(w->worker, msg, TIO_NET_DESC_MAX, tag, UINT64_MAX,
				       &rp);
		if (!UCS_PTR_IS_PTR(req))
			op->length = info.length;
	}
	tio_net_op_track(w, op, req);
	ret = tio_net_wait_or_cancel(w, op, timeout_ns);
	len = op->length;
	free(op);
	pthread_mutex_unlock(&w->lock);
	if (ret) {
		free(msg);
		return tio_net_raise(ep, ret, "net: receiving a tensor descriptor (tag %llu)",
				     (unsigned long long)tag);
	}
	memcpy(&h, msg, len < sizeof(h) ? len : sizeof(h));
	if (len < sizeof(h) || h.magic != TIO_NET_DESC_MAGIC || h.keylen != len - sizeof(h)) {
		free(msg);
		return tio_net_raise(ep, EINVAL,
				     "net: a %zu-byte message with tag %llu is not a tensor descriptor",
				     len, (unsigned long long)tag);
	}
	ret = tio_net_rkey_unpack(ep, msg + sizeof(h), h.keylen, &rk);
	free(msg);
	if (ret)
		return -1;
	if (tio_desc_check(&h.desc, rk->size)) {
		tio_net_rkey_destroy(rk);
		return -1;
	}
	*desc = h.desc;
	*out = rk;
	return 0;
}
