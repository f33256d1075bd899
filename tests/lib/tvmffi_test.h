/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the TVM FFI compatibility tests (test_tvmffi*.c): the
 * fixtures built the TVM way, byte arrays, the Error cell, and callbacks
 * in both calling conventions.
 */
#ifndef TIO_TVMFFI_TEST_H
#define TIO_TVMFFI_TEST_H

#include <string.h>

#include "ffi_test.h"
#include "tvmffi_abi.h"

#define FIX_TVM FIXTURE_DIR "/fixture_tvm.so"
#define FIX_BIN(n) FIXTURE_DIR "/fixture_tvm_bin" #n ".so"

static inline TVMFFIByteArray ba(const char *s)
{
	TVMFFIByteArray b = { s, strlen(s) };

	return b;
}

static inline const TVMFFIErrorCell *cell_of(void *err)
{
	return (const TVMFFIErrorCell *)((TVMFFIObject *)err + 1);
}

/* A tio_ callback: its int argument plus the int @self points to. */
static inline int add_self(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	*ret = tio_any_int(args[0].v_int64 + *(int *)self);
	return 0;
}

/* Returns the self it was called with. */
static inline int echo_self(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	ret->type_index = kTVMFFIOpaquePtr;
	ret->zero_padding = 0;
	ret->v_ptr = self;
	return 0;
}

#endif /* TIO_TVMFFI_TEST_H */
