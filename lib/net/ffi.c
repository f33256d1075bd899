// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The net layer as FFI globals, tio.net.*, registered by
 * tio_net_register_globals() (once per process, not at load: a program
 * that only links the library sees no extra globals, as with
 * tio_device_register_globals()). Workers, endpoints, registrations and
 * remote keys travel as objects (tio.net.Worker, ...) that hold a
 * reference to what they depend on, so that releasing them in any order
 * is safe: a key keeps its endpoint, an endpoint and a registration keep
 * their worker.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorio/any.h>
#include <tensorio/buffer.h>
#include <tensorio/container.h>
#include <tensorio/context.h>
#include <tensorio/dtype.h>
#include <tensorio/error.h>
#include <tensorio/function.h>
#include <tensorio/net.h>
#include <tensorio/object.h>
#include <tensorio/stream.h>
#include <tensorio/string.h>
#include <tensorio/type.h>

enum { NET_WORKER, NET_EP, NET_MEM, NET_RKEY, NET_BUFFER, NET_STREAM, NET_NTYPES };

static const char *const net_type_keys[NET_NTYPES] = {
	"tio.net.Worker", "tio.net.Endpoint", "tio.net.Memory", "tio.net.RemoteKey",
	"tio.Buffer", "tio.Stream",
};

/* Set once under pthread_once, read-only after. */
static int32_t net_types[NET_NTYPES];

struct net_obj {
	tio_object_t header;
	void *p;		/* the tio_net_* handle */
	tio_object_t *parent;	/* worker (ep, mem) or endpoint (rkey) */
	struct tio_desc desc;	/* rkey from tio.net.recv_desc */
};

/* Finalizers may run while an error is raised: keep it. */
static void net_keep_error(void (*fn)(void *), void *p)
{
	tio_object_t *saved = tio_error_move_from_raised();

	fn(p);
	tio_error_clear();
	if (saved) {
		tio_error_set_raised(saved);
		tio_object_decref(saved);
	}
}

static void net_worker_destroy(void *p)
{
	tio_net_worker_destroy(p);
}

static void net_ep_close(void *p)
{
	tio_net_ep_close(p);
}

static void net_mem_deregister(void *p)
{
	tio_net_mem_deregister(p);
}

static void net_rkey_destroy(void *p)
{
	tio_net_rkey_destroy(p);
}

static void (*const net_release[NET_RKEY + 1])(void *) = {
	net_worker_destroy, net_ep_close, net_mem_deregister, net_rkey_destroy,
};

#define NET_FINALIZE(kind)						\
static void net_finalize_##kind(void *self)				\
{									\
	struct net_obj *o = self;					\
									\
	net_keep_error(net_release[kind], o->p);			\
	tio_object_decref(o->parent);					\
}
NET_FINALIZE(NET_WORKER)
NET_FINALIZE(NET_EP)
NET_FINALIZE(NET_MEM)
NET_FINALIZE(NET_RKEY)

static void (*const net_finalize[NET_RKEY + 1])(void *) = {
	net_finalize_NET_WORKER, net_finalize_NET_EP, net_finalize_NET_MEM,
	net_finalize_NET_RKEY,
};

/* Wrap @p (released on failure) as a new object of @kind holding @parent. */
static int net_wrap(int kind, void *p, tio_object_t *parent, tio_any_t *ret)
{
	struct net_obj *o = tio_object_alloc(sizeof(*o), net_types[kind], net_finalize[kind]);

	if (!o) {
		net_keep_error(net_release[kind], p);
		return -1;
	}
	o->p = p;
	if (parent)
		tio_object_incref(parent);
	o->parent = parent;
	*ret = tio_any_object(&o->header);
	return 0;
}

/* Argument @i as an object of @kind: 0, or -1 naming the function. */
static int net_arg(const char *fn, const tio_any_t *args, int32_t i, int kind,
		   struct net_obj **out)
{
	tio_object_t *o;

	if (tio_any_to_object(&args[i], net_types[kind], &o))
		return tio_raise_errno(EINVAL, "%s: argument %d must be a %s", fn, i,
				       net_type_keys[kind]);
	*out = (struct net_obj *)o;
	return 0;
}

static int net_int(const char *fn, const tio_any_t *args, int32_t i, int64_t *out)
{
	if (tio_any_to_int(&args[i], out))
		return tio_raise_errno(EINVAL, "%s: argument %d must be an int", fn, i);
	return 0;
}

static int net_nargs(const char *fn, int32_t nargs, int32_t want, const char *sig)
{
	if (nargs != want)
		return tio_raise_errno(EINVAL, "%s takes %d arguments (%s), not %d", fn,
				       want, sig, nargs);
	return 0;
}

static int fn_worker(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_net_worker_t *w;

	(void)self, (void)args;
	if (net_nargs("tio.net.worker", nargs, 0, "none") || tio_net_worker_create(&w))
		return -1;
	return net_wrap(NET_WORKER, w, NULL, ret);
}

static int fn_address(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *w = NULL;
	size_t len;
	void *a;
	int r;

	(void)self;
	if (net_nargs("tio.net.address", nargs, 1, "Worker") ||
	    net_arg("tio.net.address", args, 0, NET_WORKER, &w) ||
	    tio_net_worker_address(w->p, &a, &len))
		return -1;
	r = tio_bytes_new(a, len, ret);
	free(a);
	return r;
}

static int fn_connect(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	static const char fn[] = "tio.net.connect";
	const char *peer = NULL;
	struct net_obj *w = NULL;
	tio_net_ep_t *ep;
	const void *a;
	size_t len;

	(void)self;
	if (net_nargs(fn, nargs, 3, "Worker, bytes address, str peer or None") ||
	    net_arg(fn, args, 0, NET_WORKER, &w))
		return -1;
	if (tio_any_to_bytes(&args[1], &a, &len))
		return tio_raise_errno(EINVAL, "%s: argument 1 must be bytes (a worker address)", fn);
	if (args[2].type_index != TIO_TYPE_NONE && tio_any_to_str(&args[2], &peer, NULL))
		return tio_raise_errno(EINVAL, "%s: argument 2 must be a str or None", fn);
	if (tio_net_connect(w->p, a, len, peer, &ep))
		return -1;
	return net_wrap(NET_EP, ep, &w->header, ret);
}

static int fn_transports(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *ep = NULL;

	(void)self;
	if (net_nargs("tio.net.transports", nargs, 1, "Endpoint") ||
	    net_arg("tio.net.transports", args, 0, NET_EP, &ep))
		return -1;
	return tio_str_from_cstr(tio_net_ep_transports(ep->p), ret);
}

static int fn_register(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *w = NULL;
	tio_object_t *b;
	tio_net_mem_t *m;

	(void)self;
	if (net_nargs("tio.net.register", nargs, 2, "Worker, Buffer") ||
	    net_arg("tio.net.register", args, 0, NET_WORKER, &w))
		return -1;
	if (tio_any_to_object(&args[1], net_types[NET_BUFFER], &b))
		return tio_raise_errno(EINVAL, "tio.net.register: argument 1 must be a tio.Buffer");
	if (tio_net_mem_register(w->p, (tio_buffer_t *)b, &m))
		return -1;
	return net_wrap(NET_MEM, m, &w->header, ret);
}

/* (Worker, int size): memory UCX allocates, registered (tio_net_mem_alloc). */
static int fn_alloc(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	static const char fn[] = "tio.net.alloc";
	struct net_obj *w = NULL;
	tio_net_mem_t *m;
	int64_t size;

	(void)self;
	if (net_nargs(fn, nargs, 2, "Worker, int size") ||
	    net_arg(fn, args, 0, NET_WORKER, &w) || net_int(fn, args, 1, &size))
		return -1;
	if (size <= 0)
		return tio_raise_errno(EINVAL, "%s: size %lld must be positive", fn,
				       (long long)size);
	if (tio_net_mem_alloc(w->p, (size_t)size, &m))
		return -1;
	return net_wrap(NET_MEM, m, &w->header, ret);
}

/* (Memory): its tio.Buffer, which may outlive it (tio_net_mem_alloc). */
static int fn_buffer(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *m = NULL;
	tio_buffer_t *b;

	(void)self;
	if (net_nargs("tio.net.buffer", nargs, 1, "Memory") ||
	    net_arg("tio.net.buffer", args, 0, NET_MEM, &m))
		return -1;
	b = tio_net_mem_buffer(m->p);
	tio_object_incref((tio_object_t *)b);
	*ret = tio_any_object((tio_object_t *)b);
	return 0;
}

static int fn_rkey_pack(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *m = NULL;
	size_t len;
	void *blob;
	int r;

	(void)self;
	if (net_nargs("tio.net.rkey_pack", nargs, 1, "Memory") ||
	    net_arg("tio.net.rkey_pack", args, 0, NET_MEM, &m) ||
	    tio_net_rkey_pack(m->p, &blob, &len))
		return -1;
	r = tio_bytes_new(blob, len, ret);
	free(blob);
	return r;
}

static int fn_rkey_unpack(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *ep = NULL;
	tio_net_rkey_t *rk;
	const void *blob;
	size_t len;

	(void)self;
	if (net_nargs("tio.net.rkey_unpack", nargs, 2, "Endpoint, bytes") ||
	    net_arg("tio.net.rkey_unpack", args, 0, NET_EP, &ep))
		return -1;
	if (tio_any_to_bytes(&args[1], &blob, &len))
		return tio_raise_errno(EINVAL, "tio.net.rkey_unpack: argument 1 must be bytes");
	if (tio_net_rkey_unpack(ep->p, blob, len, &rk))
		return -1;
	return net_wrap(NET_RKEY, rk, &ep->header, ret);
}

static int fn_rkey_size(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *rk = NULL;

	(void)self;
	if (net_nargs("tio.net.rkey_size", nargs, 1, "RemoteKey") ||
	    net_arg("tio.net.rkey_size", args, 0, NET_RKEY, &rk))
		return -1;
	*ret = tio_any_int((int64_t)tio_net_rkey_size(rk->p));
	return 0;
}

/* put and get: (Endpoint, Memory, local_off, RemoteKey, remote_off, len, Stream|None). */
static int net_rma(bool put, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	const char *fn = put ? "tio.net.put" : "tio.net.get";
	int64_t loff, roff, len;
	struct net_obj *ep = NULL, *m = NULL, *rk = NULL;
	tio_object_t *s = NULL;
	uint64_t seq = 0;
	int r;

	if (net_nargs(fn, nargs, 7, "Endpoint, Memory, int local_off, RemoteKey, "
		      "int remote_off, int len, Stream or None") ||
	    net_arg(fn, args, 0, NET_EP, &ep) || net_arg(fn, args, 1, NET_MEM, &m) ||
	    net_int(fn, args, 2, &loff) || net_arg(fn, args, 3, NET_RKEY, &rk) ||
	    net_int(fn, args, 4, &roff) || net_int(fn, args, 5, &len))
		return -1;
	if (args[6].type_index != TIO_TYPE_NONE &&
	    tio_any_to_object(&args[6], net_types[NET_STREAM], &s))
		return tio_raise_errno(EINVAL, "%s: argument 6 must be a tio.Stream or None", fn);
	if (loff < 0 || roff < 0 || len < 0)
		return tio_raise_errno(EINVAL, "%s: negative offset or length (%lld, %lld, %lld)",
				       fn, (long long)loff, (long long)roff, (long long)len);
	r = (put ? tio_net_put : tio_net_get)(ep->p, m->p, (uint64_t)loff, rk->p,
					      (uint64_t)roff, (uint64_t)len,
					      (tio_stream_t *)s, &seq);
	if (r)
		return -1;
	*ret = tio_any_int((int64_t)seq);
	return 0;
}

static int fn_put(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	(void)self;
	return net_rma(true, args, nargs, ret);
}

static int fn_get(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	(void)self;
	return net_rma(false, args, nargs, ret);
}

/* A DataType, or its name ("float32"): 0 or -1 (raised). */
static int net_dtype(const char *fn, const tio_any_t *a, DLDataType *out)
{
	const char *name;

	if (!tio_any_to_dtype(a, out))
		return 0;
	if (tio_any_to_str(a, &name, NULL))
		return tio_raise_errno(EINVAL, "%s: argument 2 must be a DataType or its name", fn);
	if (tio_dtype_parse(name, out))
		return tio_raise_errno(EINVAL, "%s: no dtype named '%s'", fn, name);
	return 0;
}

/* A Shape, or an Array of ints: the dimensions into @dims. */
static int net_shape(const char *fn, const tio_any_t *a, int64_t *dims, int *ndim)
{
	tio_object_t *o;
	int64_t i, n;

	if (a->type_index == TIO_TYPE_SHAPE) {
		o = a->v_obj;
		n = (int64_t)tio_shape_ndim(o);
		if (n > TIO_MAX_NDIM)
			goto big;
		memcpy(dims, tio_shape_data(o), (size_t)n * sizeof(*dims));
	} else if (a->type_index == TIO_TYPE_ARRAY) {
		o = a->v_obj;
		n = tio_array_size(o);
		if (n > TIO_MAX_NDIM)
			goto big;
		for (i = 0; i < n; i++)
			if (tio_any_to_int(tio_array_at(o, i), &dims[i]))
				return tio_raise_errno(EINVAL, "%s: dimension %lld is not an int",
						       fn, (long long)i);
	} else {
		return tio_raise_errno(EINVAL, "%s: argument 3 must be a Shape or a list of ints",
				       fn);
	}
	*ndim = (int)n;
	return 0;
big:
	return tio_raise_errno(EINVAL, "%s: %lld dimensions, at most %d", fn, (long long)n,
			       TIO_MAX_NDIM);
}

/* (Endpoint, Memory, dtype, shape, int tag, int timeout_ns): a dense tensor at 0. */
static int fn_send_desc(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	static const char fn[] = "tio.net.send_desc";
	struct net_obj *ep = NULL, *m = NULL;
	int64_t tag, timeout, dims[TIO_MAX_NDIM];
	struct tio_desc d;
	DLDataType dt;
	int ndim = 0;

	(void)self, (void)ret;
	if (net_nargs(fn, nargs, 6, "Endpoint, Memory, dtype, shape, int tag, "
		      "int timeout_ns") ||
	    net_arg(fn, args, 0, NET_EP, &ep) || net_arg(fn, args, 1, NET_MEM, &m) ||
	    net_dtype(fn, &args[2], &dt) || net_shape(fn, &args[3], dims, &ndim) ||
	    net_int(fn, args, 4, &tag) || net_int(fn, args, 5, &timeout) ||
	    tio_desc_init(&d, dt, ndim, dims))
		return -1;
	return tio_net_send_desc(ep->p, m->p, &d, (uint64_t)tag, timeout);
}

/* (Endpoint, int tag, int timeout_ns) -> RemoteKey carrying the descriptor. */
static int fn_recv_desc(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	static const char fn[] = "tio.net.recv_desc";
	struct net_obj *ep = NULL, *o;
	int64_t tag, timeout;
	tio_net_rkey_t *rk;
	struct tio_desc d;

	(void)self;
	if (net_nargs(fn, nargs, 3, "Endpoint, int tag, int timeout_ns") ||
	    net_arg(fn, args, 0, NET_EP, &ep) || net_int(fn, args, 1, &tag) ||
	    net_int(fn, args, 2, &timeout) ||
	    tio_net_recv_desc(ep->p, (uint64_t)tag, timeout, &d, &rk) ||
	    net_wrap(NET_RKEY, rk, &ep->header, ret))
		return -1;
	o = (struct net_obj *)ret->v_obj;
	o->desc = d;
	return 0;
}

/* The descriptor a key came with: its DataType, Shape, byte offset. */
static int fn_rkey_dtype(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *rk = NULL;
	DLDataType dt;

	(void)self;
	if (net_nargs("tio.net.rkey_dtype", nargs, 1, "RemoteKey") ||
	    net_arg("tio.net.rkey_dtype", args, 0, NET_RKEY, &rk))
		return -1;
	dt.code = rk->desc.code;
	dt.bits = rk->desc.bits;
	dt.lanes = rk->desc.lanes;
	*ret = tio_any_dtype(dt);
	return 0;
}

static int fn_rkey_shape(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct net_obj *rk = NULL;
	tio_object_t *s;

	(void)self;
	if (net_nargs("tio.net.rkey_shape", nargs, 1, "RemoteKey") ||
	    net_arg("tio.net.rkey_shape", args, 0, NET_RKEY, &rk) ||
	    tio_shape_new(rk->desc.shape, rk->desc.ndim, &s))
		return -1;
	*ret = tio_any_object(s);
	return 0;
}

static const struct {
	const char *name;
	tio_safe_call_t call;
} net_fns[] = {
	{ "tio.net.worker", fn_worker },
	{ "tio.net.address", fn_address },
	{ "tio.net.connect", fn_connect },
	{ "tio.net.transports", fn_transports },
	{ "tio.net.register", fn_register },
	{ "tio.net.alloc", fn_alloc },
	{ "tio.net.buffer", fn_buffer },
	{ "tio.net.rkey_pack", fn_rkey_pack },
	{ "tio.net.rkey_unpack", fn_rkey_unpack },
	{ "tio.net.rkey_size", fn_rkey_size },
	{ "tio.net.rkey_dtype", fn_rkey_dtype },
	{ "tio.net.rkey_shape", fn_rkey_shape },
	{ "tio.net.put", fn_put },
	{ "tio.net.get", fn_get },
	{ "tio.net.send_desc", fn_send_desc },
	{ "tio.net.recv_desc", fn_recv_desc },
};

static pthread_once_t net_globals_once = PTHREAD_ONCE_INIT;
static char net_globals_error[256];	/* written once, under the once */

static void net_globals_init(void)
{
	tio_object_t *e;
	size_t i;

	for (i = 0; i < NET_NTYPES; i++)
		if (tio_type_register(net_type_keys[i], TIO_TYPE_OBJECT, &net_types[i]))
			goto fail;
	for (i = 0; i < sizeof(net_fns) / sizeof(net_fns[0]); i++)
		if (tio_func_register_global(net_fns[i].name, net_fns[i].call, NULL, 1))
			goto fail;
	return;
fail:
	e = tio_error_move_from_raised();
	snprintf(net_globals_error, sizeof(net_globals_error), "%s",
		 e ? tio_error_message(e) : "unknown error");
	tio_object_decref(e);
}

/* Documented in <tensorio/net.h>. */
int tio_net_register_globals(void)
{
	pthread_once(&net_globals_once, net_globals_init);
	if (net_globals_error[0])
		return tio_raise_errno(ENOMEM, "net: registering the tio.net.* globals: %s",
				       net_globals_error);
	return 0;
}
