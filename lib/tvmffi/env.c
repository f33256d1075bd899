// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TVM FFI environment entry points: the calling thread's current stream
 * per device, the DLPack tensor allocator (thread's, else global), one-time
 * handle initialisation, function lookup for code inside a module, the
 * interpreter's C API (signal checks) and system library symbols.
 */
#include <pthread.h>
#include <stdlib.h>

#include "compat.h"

struct stream_slot {
	int32_t device_type, device_id;
	TVMFFIStreamHandle stream;
};

/* The thread's streams, freed with the thread. */
struct streams {
	struct stream_slot *slot;
	size_t n, cap;
};

static __thread struct streams *tls_streams;
static __thread DLPackManagedTensorAllocator tls_allocator;
static DLPackManagedTensorAllocator global_allocator;	/* atomic */
static pthread_key_t streams_key;
static pthread_once_t streams_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;

static void streams_free(void *p)
{
	struct streams *s = p;

	free(s->slot);
	free(s);
}

static void streams_key_init(void)
{
	if (pthread_key_create(&streams_key, streams_free))
		abort();
}

static struct stream_slot *find(int32_t type, int32_t id)
{
	struct streams *s = tls_streams;
	size_t i;

	for (i = 0; s && i < s->n; i++)
		if (s->slot[i].device_type == type && s->slot[i].device_id == id)
			return &s->slot[i];
	return NULL;
}

static struct stream_slot *add(int32_t type, int32_t id)
{
	struct streams *s = tls_streams;
	struct stream_slot *grown;

	if (!s) {
		pthread_once(&streams_once, streams_key_init);
		s = calloc(1, sizeof(*s));
		if (!s || pthread_setspecific(streams_key, s)) {
			free(s);
			return NULL;
		}
		tls_streams = s;
	}
	if (s->n == s->cap) {
		grown = realloc(s->slot, (s->cap ? 2 * s->cap : 4) * sizeof(*grown));
		if (!grown)
			return NULL;
		s->slot = grown;
		s->cap = s->cap ? 2 * s->cap : 4;
	}
	s->slot[s->n] = (struct stream_slot){ type, id, NULL };
	return &s->slot[s->n++];
}

int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id, TVMFFIStreamHandle stream,
		       TVMFFIStreamHandle *opt_out_original_stream)
{
	struct stream_slot *e;

	if (device_type < 0 || device_id < 0)
		return tio_error_raise("ValueError", "device %d:%d is invalid", device_type,
				       device_id);
	e = find(device_type, device_id);
	if (!e && !(e = add(device_type, device_id)))
		return tio_error_raise("MemoryError", "out of memory");
	if (opt_out_original_stream)
		*opt_out_original_stream = e->stream;
	e->stream = stream;
	return 0;
}

TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type, int32_t device_id)
{
	struct stream_slot *e = find(device_type, device_id);

	return e ? e->stream : NULL;
}

int TVMFFIEnvSetDLPackManagedTensorAllocator(DLPackManagedTensorAllocator allocator,
					     int write_to_global_context,
					     DLPackManagedTensorAllocator *opt_out_original_allocator)
{
	if (opt_out_original_allocator)
		*opt_out_original_allocator = tls_allocator;
	tls_allocator = allocator;
	if (write_to_global_context)
		__atomic_store_n(&global_allocator, allocator, __ATOMIC_RELEASE);
	return 0;
}

DLPackManagedTensorAllocator TVMFFIEnvGetDLPackManagedTensorAllocator(void)
{
	if (tls_allocator)
		return tls_allocator;
	return __atomic_load_n(&global_allocator, __ATOMIC_ACQUIRE);
}

static void set_error(void *error_ctx, const char *kind, const char *message)
{
	(void)error_ctx;
	tio_error_raise(kind ? kind : "RuntimeError", "%s", message ? message : "");
}

int TVMFFIEnvTensorAlloc(DLTensor *prototype, TVMFFIObjectHandle *out)
{
	DLPackManagedTensorAllocator alloc = TVMFFIEnvGetDLPackManagedTensorAllocator();
	DLManagedTensorVersioned *mt = NULL;

	if (!prototype || !out)
		return tio_error_raise("ValueError", "NULL prototype or output");
	if (!alloc)
		return tio_error_raise("RuntimeError", "no DLPack tensor allocator is set");
	if (alloc(prototype, &mt, NULL, set_error))
		return tio_error_peek_raised() ? -1 :
		       tio_error_raise("RuntimeError", "the DLPack allocator failed");
	if (tio_tensor_from_dlpack_versioned(mt, 0, 0, (tio_object_t **)out)) {
		if (mt && mt->deleter)
			mt->deleter(mt);
		return -1;
	}
	return 0;
}

/* The surrounding interpreter's C API, as registered (atomic). */
static int (*env_check_signals)(void);
static void *(*env_gil_ensure)(void);
static void (*env_gil_release)(void *);

/* As TVM FFI: the three Python C API functions it knows, nothing else. */
int TVMFFIEnvRegisterCAPI(const char *name, void *symbol)
{
	if (!name)
		return tio_error_raise("ValueError", "NULL name");
	if (!strcmp(name, "PyErr_CheckSignals"))
		__atomic_store_n(&env_check_signals, (int (*)(void))symbol, __ATOMIC_RELEASE);
	else if (!strcmp(name, "PyGILState_Ensure"))
		__atomic_store_n(&env_gil_ensure, (void *(*)(void))symbol, __ATOMIC_RELEASE);
	else if (!strcmp(name, "PyGILState_Release"))
		__atomic_store_n(&env_gil_release, (void (*)(void *))symbol, __ATOMIC_RELEASE);
	else
		return tio_error_raise("ValueError", "Unknown env API %s", name);
	return 0;
}

/*
 * Without a registered PyErr_CheckSignals there is no interpreter to ask:
 * 0. With one, it runs holding the GIL; when it fails, -1 with nothing
 * raised here, as in TVM FFI: the error is the interpreter's.
 */
int TVMFFIEnvCheckSignals(void)
{
	int (*check)(void) = __atomic_load_n(&env_check_signals, __ATOMIC_ACQUIRE);
	void *(*ensure)(void) = __atomic_load_n(&env_gil_ensure, __ATOMIC_ACQUIRE);
	void (*release)(void *) = __atomic_load_n(&env_gil_release, __ATOMIC_ACQUIRE);
	void *gil;
	int r;

	if (!check)
		return 0;
	if (!ensure || !release)
		return tio_error_raise("RuntimeError",
				       "PyErr_CheckSignals needs PyGILState_Ensure and PyGILState_Release registered too");
	gil = ensure();
	r = check();
	if (gil)
		release(gil);
	return r ? -1 : 0;
}

int TVMFFIEnvModRegisterContextSymbol(const char *name, void *symbol)
{
	return tio_module_register_context_symbol(name, symbol);
}

/*
 * TVM FFI's system library symbols (tio_system_lib_register_symbol()):
 * "__tvm_ffi_NAME" a function, a later one replacing an earlier as in TVM
 * FFI; "PREFIX__tvm_ffi__library_ctx" a void * set to the system library
 * of PREFIX; any other name a void * a context symbol may set.
 */
int TVMFFIEnvModRegisterSystemLibSymbol(const char *name, void *ptr)
{
	return tio_system_lib_register_symbol(name, ptr);
}

/* TVM FFI's global ffi.SystemLib([prefix]): the system library of a prefix. */
static int system_lib_global(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	char prefix[256];
	const char *s = "";
	size_t n = 0;
	tio_object_t *m;

	(void)self;
	if (nargs > 1)
		return tio_error_raise("TypeError", "ffi.SystemLib takes at most 1 argument, got %d",
				       nargs);
	if (nargs == 1 && tio_any_to_str(&args[0], &s, &n))
		return -1;
	if (n >= sizeof(prefix) || memchr(s, 0, n))
		return tio_error_raise("ValueError", "ffi.SystemLib: bad prefix (%zu bytes)", n);
	memcpy(prefix, s, n);
	prefix[n] = 0;
	if (tio_module_system_lib_prefixed(prefix, &m))
		return -1;
	*ret = tio_any_object(m);
	return 0;
}

__attribute__((constructor)) static void env_init(void)
{
	/* Only fails for want of memory; the global is then simply absent. */
	if (tio_func_register_global("ffi.SystemLib", system_lib_global, NULL, 0))
		tio_error_clear();
}

int TVMFFIEnvModLookupFromImports(TVMFFIObjectHandle library_ctx, const char *func_name,
				  TVMFFIObjectHandle *out)
{
	return tio_module_lookup_from_imports(library_ctx, func_name, (tio_object_t **)out);
}

int TVMFFIHandleInitOnce(void **handle_addr, int (*init_func)(void **result))
{
	void *h = NULL;
	int r = 0;

	if (!handle_addr || !init_func)
		return tio_error_raise("ValueError", "NULL handle or function");
	if (__atomic_load_n(handle_addr, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&once_lock);
	if (!*handle_addr) {
		r = init_func(&h);
		if (!r)
			__atomic_store_n(handle_addr, h, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&once_lock);
	return r;
}

int TVMFFIHandleDeinitOnce(void **handle_addr, int (*deinit_func)(void *handle))
{
	int r = 0;

	if (!handle_addr || !deinit_func)
		return tio_error_raise("ValueError", "NULL handle or function");
	pthread_mutex_lock(&once_lock);
	if (*handle_addr) {
		r = deinit_func(*handle_addr);
		if (!r)
			__atomic_store_n(handle_addr, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&once_lock);
	return r;
}
