// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Endpoints: connecting to a peer worker's address, closing, and naming
 * the transports and the peer in every error.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

int tio_net_raise(tio_net_ep_t *ep, int err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tio_raise_errno(err, "%s (peer %s, transport %s)", msg,
			       ep->peer, ep->transports);
}

/* Append "tl/dev" to @out unless there already. */
static void tio_net_add_tl(char *out, size_t size, const char *tl, size_t n)
{
	size_t len = strlen(out);
	const char *p;

	for (p = out; *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, tl, n) && (p[n] == ',' || !p[n]))
			return;
	if (len + n + 2 > size)
		return;
	if (len)
		out[len++] = ',';
	memcpy(out + len, tl, n);
	out[len + n] = 0;
}

/*
 * UCX 1.13 has no query for an endpoint's transports: read them off
 * ucp_ep_print_info()'s lane lines ("lane[0]:  3:tcp/lo.0 md[1] ...").
 */
static void tio_net_ep_find_tls(tio_net_ep_t *ep)
{
	char *text = NULL, *line, *save = NULL;
	size_t size = 0;
	FILE *f;

	snprintf(ep->transports, sizeof(ep->transports), "unknown");
	f = open_memstream(&text, &size);
	if (!f)
		return;
	ucp_ep_print_info(ep->ep, f);
	fclose(f);
	ep->transports[0] = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = strstr(line, "lane[");
		size_t n;

		if (!p || !(p = strstr(p, "]:")))
			continue;
		p += 2;
		p += strspn(p, " ");
		p += strspn(p, "0123456789");
		if (*p != ':')
			continue;
		p++;
		n = strcspn(p, ". \t");
		if (n)
			tio_net_add_tl(ep->transports, sizeof(ep->transports), p, n);
	}
	free(text);
	if (!ep->transports[0])
		snprintf(ep->transports, sizeof(ep->transports), "unknown");
}

/* UCX found the endpoint broken (peer gone, timeout). Lock held. */
static void tio_net_ep_err(void *arg, ucp_ep_h uep, ucs_status_t st)
{
	tio_net_ep_t *ep = arg;

	(void)uep;
	ep->failed = tio_net_errno(st);
	if (!ep->failed)
		ep->failed = -EIO;
}

int tio_net_connect(tio_net_worker_t *w, const void *addr, size_t len,
		    const char *peer, tio_net_ep_t **out)
{
	ucp_ep_params_t p = {
		.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
			      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
			      UCP_EP_PARAM_FIELD_ERR_HANDLER,
		.address = addr,
		.err_mode = UCP_ERR_HANDLING_MODE_PEER,
	};
	tio_net_ep_t *ep;
	ucs_status_t st;

	(void)len;	/* a UCP address carries its own length */
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return tio_raise_errno(ENOMEM, "net: no memory for an endpoint");
	ep->w = w;
	ep->peer = strdup(peer ? peer : "unnamed");
	if (!ep->peer) {
		free(ep);
		return tio_raise_errno(ENOMEM, "net: no memory for an endpoint");
	}
	snprintf(ep->transports, sizeof(ep->transports), "none yet");
	p.err_handler.cb = tio_net_ep_err;
	p.err_handler.arg = ep;
	pthread_mutex_lock(&w->lock);
	st = ucp_ep_create(w->worker, &p, &ep->ep);
	if (st == UCS_ERR_UNREACHABLE) {
		/*
		 * UCX 1.13's shared-memory transports have no peer failure
		 * handling: connect without (a dead peer then goes unnoticed).
		 */
		p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
		st = ucp_ep_create(w->worker, &p, &ep->ep);
	}
	if (st == UCS_OK) {
		ep->peer_checked = p.err_mode == UCP_ERR_HANDLING_MODE_PEER;
		tio_net_ep_find_tls(ep);
		w->eps++;
	}
	pthread_mutex_unlock(&w->lock);
	if (st != UCS_OK) {
		tio_net_raise(ep, -tio_net_errno(st), "net: connecting: %s",
			      ucs_status_string(st));
		free(ep->peer);
		free(ep);
		return -1;
	}
	*out = ep;
	return 0;
}

const char *tio_net_ep_transports(tio_net_ep_t *ep)
{
	return ep->transports;
}

/* Issue a close of @ep with @flags; wait for it up to @timeout_ns. Lock held. */
static int tio_net_ep_close_req(tio_net_ep_t *ep, struct tio_net_op *op,
				uint32_t flags, int64_t timeout_ns)
{
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = tio_net_req_cb,
		.user_data = op,
	};

	if (flags) {
		rp.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
		rp.flags = flags;
	}
	tio_net_op_track(ep->w, op, ucp_ep_close_nbx(ep->ep, &rp));
	return tio_net_op_wait(ep->w, op, timeout_ns);
}

/*
 * Flush, then close. Where UCX watches the peer (TCP, verbs: keepalive),
 * a dead peer fails the flush and the endpoint, which is then closed by
 * force. Where it does not (UCX 1.13's shared memory), a dead peer never
 * answers: that flush is bounded by the worker's close timeout, then
 * cancelled and the endpoint closed by force. Forcing a watched endpoint
 * early is avoided: with a put in flight UCX 1.13 can then abort in
 * ucp_cleanup().
 */
int tio_net_ep_close(tio_net_ep_t *ep)
{
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = tio_net_req_cb,
	};
	tio_net_worker_t *w;
	struct tio_net_op *op, *fl;
	ucs_status_ptr_t req;
	bool timed_out = false;
	int64_t t;
	int ret = 0, err;

	if (!ep)
		return 0;
	w = ep->w;
	t = w->close_timeout_ns;
	op = tio_net_op_new(ep, "close");
	fl = tio_net_op_new(ep, "flush");
	pthread_mutex_lock(&w->lock);
	if (!op || !fl) {
		ret = -ENOMEM;
		rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
		rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
		req = ucp_ep_close_nbx(ep->ep, &rp);
		if (UCS_PTR_IS_PTR(req)) {
			while (ucp_request_check_status(req) == UCS_INPROGRESS)
				ucp_worker_progress(w->worker);
			ucp_request_free(req);
		}
		free(op);
		free(fl);
		goto out;
	}
	if (!ep->failed) {
		rp.user_data = fl;
		tio_net_op_track(w, fl, ucp_ep_flush_nbx(ep->ep, &rp));
		ret = tio_net_op_wait(w, fl, ep->peer_checked ? -1 : t);
		timed_out = !fl->done;
	}
	if (ep->failed || ret) {
		/* A broken endpoint or a peer that does not answer: by force. */
		if (!fl->done && fl->req)
			ucp_request_cancel(w->worker, fl->req);
		err = tio_net_ep_close_req(ep, op, UCP_EP_CLOSE_FLAG_FORCE, t);
		if (!fl->done)
			tio_net_op_wait(w, fl, t);
		tio_net_ep_cancel_ops(w, ep);
		if (!ret)
			ret = ep->failed ? ep->failed : err;
	} else {
		ret = tio_net_ep_close_req(ep, op, 0, t);
		if (!op->done) {
			/* The peer went away between flush and close. */
			ucp_request_cancel(w->worker, op->req);
			tio_net_op_wait(w, op, t);
		}
	}
	if (!op->done || !fl->done)
		tio_net_ep_cancel_ops(w, ep);
	tio_net_op_orphan(w, op);
	tio_net_op_orphan(w, fl);
out:
	w->eps--;
	pthread_mutex_unlock(&w->lock);
	if (timed_out)
		tio_net_raise(ep, ETIMEDOUT,
			      "net: closing the endpoint: the flush timed out after %lld ms, closed by force",
			      (long long)(t / 1000000));
	else if (ret && ret != -ENOMEM)
		tio_net_raise(ep, ret, "net: closing the endpoint%s%s",
			      ep->why[0] ? ": it failed before: " : "", ep->why);
	free(ep->peer);
	free(ep);
	return ret ? -1 : 0;
}
