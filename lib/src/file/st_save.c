// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Saving safetensors: the tensors checked, split into shards as the
 * transformers convention splits a state dict (in the caller's order: a
 * tensor that does not fit in the current shard starts the next one; one
 * larger than the limit gets a shard of its own), each file laid out as
 * the safetensors library lays it out, and written by the save engine
 * (save_engine.c); the index of a sharded checkpoint.
 *
 * The layout, from the safetensors library's serializer: tensors sorted by
 * dtype, largest alignment first (the order of its Dtype enum), then by
 * name (bytes); the header is compact JSON, "__metadata__" first, each
 * entry {"dtype","shape","data_offsets"} in that order, strings escaped as
 * serde_json escapes them (json-c without slash escaping does the same),
 * padded with spaces to a multiple of 8; offsets contiguous from 0. Every
 * tensor is then aligned to its element size in a file mapped at a page.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include <tensorio/error.h>
#include <tensorio/tensor.h>

#include "file/save_internal.h"
#include "file/st_internal.h"

/* The safetensors library's header limit (MAX_HEADER_SIZE). */
#define SV_MAX_HEADER 100000000ULL

/* Its Dtype enum, in increasing alignment. */
static const char *const sv_rank[] = {
	"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
	"F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
	"C64", "F64", "I64", "U64",
};

/* One tensor to save. */
struct sv_in {
	const char *name;
	const char *dtype;
	int rank;
	int shard;
	const DLTensor *t;
	uint64_t bytes;
	int gpu;
};

static int sv_device(const char *path, const char *name, const DLTensor *t, DLDevice *gpu,
		     int *on_gpu)
{
	DLDevice d = t->device;

	*on_gpu = 0;
	switch ((int)d.device_type) {
	case 0:		/* a zeroed DLTensor: host memory, as before devices counted */
	case kDLCPU: case kDLCUDAHost: case kDLCUDAManaged: case kDLROCMHost:
		return 0;
	case kDLCUDA: case kDLROCM:
		break;
	default:
		return tio_raise_errno(EINVAL, "%s: tensor %s is on device type %d: neither "
				       "host memory nor a CUDA or ROCm device", path, name,
				       (int)d.device_type);
	}
	if (gpu->device_type && (gpu->device_type != d.device_type ||
				 gpu->device_id != d.device_id))
		return tio_raise_errno(EINVAL, "%s: tensor %s is on device %d:%d, another on "
				       "%d:%d; one save takes the tensors of one GPU", path,
				       name, (int)d.device_type, d.device_id,
				       (int)gpu->device_type, gpu->device_id);
	*gpu = d;
	*on_gpu = 1;
	return 0;
}

/* What the format needs of one tensor, checked. */
static int sv_check(const char *path, const char *name, const DLTensor *t, DLDevice *gpu,
		    struct sv_in *in)
{
	uint64_t numel = 1;
	size_t k;
	int d;

	if (!name || !t)
		return tio_raise_errno(EINVAL, "%s: a NULL tensor name or tensor", path);
	if (!strcmp(name, "__metadata__"))
		return tio_raise_errno(EINVAL, "%s: tensor name \"__metadata__\" is reserved "
				       "for the metadata", path);
	if (!tio_st_utf8(name, strlen(name)))
		return tio_raise_errno(EINVAL, "%s: a tensor name is not valid UTF-8", path);
	in->name = name;
	in->t = t;
	in->dtype = t->dtype.lanes == 1 ? tio_st_dtype_name(t->dtype.code, t->dtype.bits) : NULL;
	if (!in->dtype)
		return tio_raise_errno(EINVAL, "%s: tensor %s: safetensors has no dtype for "
				       "code %u, %u bits, %u lanes", path, name, t->dtype.code,
				       t->dtype.bits, t->dtype.lanes);
	for (k = 0; k < sizeof(sv_rank) / sizeof(sv_rank[0]); k++)
		if (!strcmp(sv_rank[k], in->dtype))
			in->rank = (int)k;
	if (t->ndim < 0 || t->ndim > 64 || (t->ndim && !t->shape))
		return tio_raise_errno(EINVAL, "%s: tensor %s: bad shape", path, name);
	for (d = 0; d < t->ndim; d++)
		if (t->shape[d] < 0 || __builtin_mul_overflow(numel, (uint64_t)t->shape[d], &numel))
			return tio_raise_errno(EINVAL, "%s: tensor %s: bad shape", path, name);
	if (__builtin_mul_overflow(numel, (uint64_t)t->dtype.bits / 8, &in->bytes))
		return tio_raise_errno(EINVAL, "%s: tensor %s: too large", path, name);
	if (!tio_tensor_is_contiguous(t))
		return tio_raise_errno(EINVAL, "%s: tensor %s is not contiguous", path, name);
	if (in->bytes && !t->data)
		return tio_raise_errno(EINVAL, "%s: tensor %s has no data", path, name);
	return sv_device(path, name, t, gpu, &in->gpu);
}

static int sv_by_name(const void *a, const void *b)
{
	return strcmp((*(const struct sv_in *const *)a)->name,
		      (*(const struct sv_in *const *)b)->name);
}

/* The library's order: dtype alignment, largest first, then name. */
static int sv_by_layout(const void *a, const void *b)
{
	const struct sv_in *x = *(const struct sv_in *const *)a;
	const struct sv_in *y = *(const struct sv_in *const *)b;

	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Check every tensor; a name given twice is refused before anything is written. */
static int sv_inputs(const char *path, const char *const *names,
		     const DLTensor *const *tensors, int64_t n, struct sv_job *j,
		     struct sv_in *in, struct sv_in **by)
{
	int64_t i;

	for (i = 0; i < n; i++) {
		if (sv_check(path, names[i], tensors[i], &j->gpu, &in[i]))
			return -1;
		by[i] = &in[i];
	}
	qsort(by, (size_t)n, sizeof(*by), sv_by_name);
	for (i = 1; i < n; i++)
		if (!strcmp(by[i - 1]->name, by[i]->name))
			return tio_raise_errno(EINVAL, "%s: tensor name \"%s\" given twice", path,
					       by[i]->name);
	return 0;
}

static void sv_close_shard(struct sv_in *in, int64_t from, int64_t to, int id)
{
	for (; from < to; from++)
		if (in[from].shard < 0)
			in[from].shard = id;
}

/*
 * Shards as huggingface_hub's split_state_dict_into_shards numbers them: in
 * the caller's order, a tensor that would take the current shard over
 * @max closes it, one larger than @max is a shard of its own at once.
 * Their number.
 */
static int sv_split(struct sv_in *in, int64_t n, uint64_t max)
{
	int64_t i, start = 0;
	uint64_t cur = 0;
	int next = 0, open = 0;

	for (i = 0; i < n; i++) {
		if (max && in[i].bytes > max) {
			in[i].shard = next++;
			continue;
		}
		if (max && open && cur + in[i].bytes > max) {
			sv_close_shard(in, start, i, next++);
			open = 0;
			cur = 0;
		}
		if (!open)
			start = i;
		open = 1;
		in[i].shard = -1;
		cur += in[i].bytes;
	}
	if (open)
		sv_close_shard(in, start, n, next++);
	return next ? next : 1;
}

static json_object *sv_entry(const struct sv_in *in, uint64_t off)
{
	json_object *e = json_object_new_object(), *shape = json_object_new_array();
	json_object *offs = json_object_new_array();
	int d;

	if (!e || !shape || !offs) {
		json_object_put(e);
		json_object_put(shape);
		json_object_put(offs);
		return NULL;
	}
	for (d = 0; d < in->t->ndim; d++)
		json_object_array_add(shape, json_object_new_int64(in->t->shape[d]));
	json_object_array_add(offs, json_object_new_int64((int64_t)off));
	json_object_array_add(offs, json_object_new_int64((int64_t)(off + in->bytes)));
	json_object_object_add(e, "dtype", json_object_new_string(in->dtype));
	json_object_object_add(e, "shape", shape);
	json_object_object_add(e, "data_offsets", offs);
	return e;
}

/* The header (length, JSON, spaces) and segments of @f from its sorted tensors. */
static int sv_layout(struct sv_file *f, struct sv_in **t, int64_t n,
		     const struct tio_save_opts *o)
{
	json_object *root = json_object_new_object(), *m;
	uint64_t off = 0, len, pad;
	const char *text;
	int64_t i;
	int k, ret = -1;

	if (!root)
		return tio_raise_errno(ENOMEM, "%s", f->path);
	if (o->nmeta) {
		m = sv_meta_json(f->path, o->meta, o->nmeta);
		if (!m)
			goto out;
		json_object_object_add(root, "__metadata__", m);
	}
	f->seg = calloc((size_t)n + 1, sizeof(*f->seg));
	if (!f->seg)
		goto nomem;
	for (i = 0; i < n; i++) {
		json_object *e = sv_entry(t[i], off);

		if (!e)
			goto nomem;
		json_object_object_add(root, t[i]->name, e);
		off += t[i]->bytes;
	}
	f->tensor_bytes = off;
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(text);
	pad = (8 - len % 8) % 8;
	if (len + pad > SV_MAX_HEADER) {
		tio_raise_errno(E2BIG, "%s: a header of %llu bytes, above the format's %llu",
				f->path, (unsigned long long)(len + pad), SV_MAX_HEADER);
		goto out;
	}
	f->hdr_len = 8 + len + pad;
	f->hdr = malloc(f->hdr_len);
	if (!f->hdr)
		goto nomem;
	for (k = 0; k < 8; k++)
		f->hdr[k] = (char)((len + pad) >> (8 * k));
	memcpy(f->hdr + 8, text, len);
	memset(f->hdr + 8 + len, ' ', pad);
	f->seg[f->nseg++] = (struct sv_seg){ 0, f->hdr_len, f->hdr, 0 };
	for (i = 0, off = f->hdr_len; i < n; off += t[i]->bytes, i++) {
		const DLTensor *d = t[i]->t;
		uintptr_t p = (uintptr_t)d->data + d->byte_offset;

		if (!t[i]->bytes)
			continue;
		f->seg[f->nseg++] = (struct sv_seg){ off, t[i]->bytes,
						     t[i]->gpu ? NULL : (const char *)p,
						     t[i]->gpu ? (uint64_t)p : 0 };
	}
	f->size = off;
	ret = 0;
	goto out;
nomem:
	tio_raise_errno(ENOMEM, "%s", f->path);
out:
	json_object_put(root);
	return ret;
}

/* NAME-00001-of-0000N.safetensors for @path NAME.safetensors. */
static char *sv_shard_path(const char *path, int i, int n)
{
	size_t len = strlen(path), sfx = strlen(".safetensors");
	char *p;

	if (len > sfx && !strcmp(path + len - sfx, ".safetensors"))
		len -= sfx;
	if (asprintf(&p, "%.*s-%05d-of-%05d.safetensors", (int)len, path, i + 1, n) < 0)
		return NULL;
	return p;
}

/* The files: paths, layouts, temporaries opened and their blocks reserved. */
static int sv_files(struct sv_job *j, const char *path, struct sv_in *in, struct sv_in **by,
		    int64_t n, int nf, const struct tio_save_opts *o)
{
	int64_t i, k;
	int s;

	j->f = calloc((size_t)nf, sizeof(*j->f));
	if (!j->f)
		return tio_raise_errno(ENOMEM, "%s", path);
	for (s = 0; s < nf; s++) {
		j->f[s].tmp.fd = j->f[s].tmp.dirfd = -1;
		j->f[s].path = nf > 1 ? sv_shard_path(path, s, nf) : strdup(path);
		j->nf++;
		if (!j->f[s].path)
			return tio_raise_errno(ENOMEM, "%s", path);
	}
	for (s = 0; s < nf; s++) {
		for (i = k = 0; i < n; i++)
			if (in[i].shard == s)
				by[k++] = &in[i];
		qsort(by, (size_t)k, sizeof(*by), sv_by_layout);
		if (sv_layout(&j->f[s], by, k, o))
			return -1;
		j->total += j->f[s].size;
	}
	for (s = 0; s < nf; s++) {
		struct sv_file *f = &j->f[s];

		if (sv_tmp_open(&f->tmp, f->path, o->flags) ||
		    sv_tmp_reserve(&f->tmp, f->size, o->flags))
			return -1;
	}
	return 0;
}

int sv_plan(struct sv_job *j, const char *path, const char *const *names,
	    const DLTensor *const *tensors, int64_t n, const struct tio_save_opts *o)
{
	struct sv_in *in = NULL, **by = NULL;
	struct sv_ix *ix = NULL;
	int nf, ret = -1;
	int64_t i;

	if (!path || n < 0 || (n && (!names || !tensors)) || o->nmeta < 0 || (o->nmeta && !o->meta))
		return tio_raise_errno(EINVAL, "saving safetensors: NULL or negative argument");
	in = calloc((size_t)n + 1, sizeof(*in));
	by = calloc((size_t)n + 1, sizeof(*by));
	if (!in || !by) {
		tio_raise_errno(ENOMEM, "%s", path);
		goto out;
	}
	j->flags = o->flags;
	j->qd = o->queue_depth;
	j->chunk = o->chunk_size;
	j->progress = o->progress;
	j->progress_arg = o->progress_arg;
	j->user_gs = o->gpu_stream;
	if (sv_inputs(path, names, tensors, n, j, in, by))
		goto out;
	nf = sv_split(in, n, o->max_shard_size);
	if (nf > 99999) {
		tio_raise_errno(EINVAL, "%s: %d shards, above the convention's 99999", path, nf);
		goto out;
	}
	if (sv_files(j, path, in, by, n, nf, o))
		goto out;
	if (nf > 1) {
		ix = calloc((size_t)n + 1, sizeof(*ix));
		if (!ix || asprintf(&j->index, "%s.index.json", path) < 0) {
			j->index = NULL;
			tio_raise_errno(ENOMEM, "%s", path);
			goto out;
		}
		for (i = 0; i < n; i++)
			ix[i] = (struct sv_ix){ in[i].name, j->f[in[i].shard].path, in[i].bytes };
		j->index_text = sv_index_text(path, ix, n, o->meta, o->nmeta);
		if (!j->index_text)
			goto out;
	}
	ret = 0;
out:
	free(ix);
	free(by);
	free(in);
	return ret;
}

int sv_opts(const struct tio_save_opts *in, struct tio_save_opts *o)
{
	size_t size = in && in->size ? in->size : sizeof(*o), i;

	memset(o, 0, sizeof(*o));
	if (!in)
		return 0;
	if (size < sizeof(*o))
		return tio_raise_errno(EINVAL, "tio_save_opts: size %zu below %zu", size,
				       sizeof(*o));
	for (i = sizeof(*o); i < size; i++)	/* fields of a later library: unset */
		if (((const unsigned char *)in)[i])
			return tio_raise_errno(EINVAL, "tio_save_opts: size %zu with fields "
					       "this library does not know", size);
	memcpy(o, in, sizeof(*o));
	if (o->flags & ~(TIO_SAVE_NO_COPY | TIO_SAVE_NO_DIRECT | TIO_SAVE_NO_PREALLOC |
			 TIO_SAVE_NAMED_TEMP))
		return tio_raise_errno(EINVAL, "tio_save_opts: unknown flags 0x%x", o->flags);
	return 0;
}

/*
 * SIGXFSZ (ulimit -f) is blocked while the calling thread writes or sizes
 * a file, so that an oversized save fails with EFBIG instead of killing
 * the process; a signal it raised is taken back.
 */
void sv_xfsz_hold(struct sv_xfsz *x)
{
	sigset_t pending;

	sigemptyset(&x->set);
	sigaddset(&x->set, SIGXFSZ);
	sigpending(&pending);
	x->had = sigismember(&pending, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &x->set, &x->old);
}

void sv_xfsz_restore(struct sv_xfsz *x)
{
	struct timespec zero = { 0, 0 };
	sigset_t pending;

	sigpending(&pending);
	if (!x->had && sigismember(&pending, SIGXFSZ))
		sigtimedwait(&x->set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &x->old, NULL);
}

static void sv_results(struct sv_job *j, struct tio_save_opts *opts)
{
	if (opts) {
		opts->used_direct = __atomic_load_n(&j->used_direct, __ATOMIC_RELAXED);
		opts->shards = j->nf;
	}
}

int tio_safetensors_save_opts(const char *path, const char *const *names,
			      const DLTensor *const *tensors, int64_t n,
			      struct tio_save_opts *opts)
{
	struct tio_save_opts o;
	struct sv_xfsz x;
	struct sv_job j;
	int ret;

	if (sv_opts(opts, &o))
		return -1;
	sv_job_init(&j);
	sv_xfsz_hold(&x);
	ret = sv_plan(&j, path, names, tensors, n, &o);
	if (!ret)
		ret = sv_producer_mark(&j);
	if (!ret)
		ret = sv_run(&j);
	if (!ret)
		ret = sv_publish(&j);
	sv_let_go(&j);
	sv_xfsz_restore(&x);
	sv_results(&j, opts);
	sv_job_fini(&j);
	if (!ret)
		tio_set_errno(0);
	return ret;
}

int tio_safetensors_save_ex(const char *path, const char *const *names,
			    const DLTensor *const *tensors, int64_t n,
			    const char *const *meta, int64_t nmeta)
{
	struct tio_save_opts o;

	memset(&o, 0, sizeof(o));
	o.meta = meta;
	o.nmeta = nmeta;
	return tio_safetensors_save_opts(path, names, tensors, n, &o);
}

int tio_safetensors_save(const char *path, const char *const *names,
			 const DLTensor *const *tensors, int64_t n)
{
	return tio_safetensors_save_ex(path, names, tensors, n, NULL, 0);
}
