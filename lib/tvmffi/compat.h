/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the sources of libtensorio-tvmffi: the TVM FFI declarations,
 * libtensorio's API, and the checks that the two describe the same bytes.
 */
#ifndef TIO_TVMFFI_COMPAT_H
#define TIO_TVMFFI_COMPAT_H

#include <stddef.h>
#include <string.h>

#include <tensorio/ffi.h>

#include "tvmffi_abi.h"

#define SAME_OFFSET(a, fa, b, fb) \
	_Static_assert(offsetof(a, fa) == offsetof(b, fb), #a "." #fa " matches")

_Static_assert(sizeof(TVMFFIAny) == sizeof(tio_any_t), "Any");
_Static_assert(sizeof(TVMFFIObject) == sizeof(tio_object_t), "object header");
_Static_assert(sizeof(TVMFFIByteArray) == sizeof(tio_byte_array_t), "byte array");
_Static_assert(sizeof(TVMFFIObject) + sizeof(TVMFFIErrorCell) == sizeof(tio_error_obj_t),
	       "Error object");
SAME_OFFSET(TVMFFIErrorCell, cause_chain, tio_error_cell_t, cause_chain);
SAME_OFFSET(TVMFFIErrorCell, extra_context, tio_error_cell_t, extra_context);
_Static_assert((int)kTVMFFIStaticObjectEnd == (int)TIO_TYPE_STATIC_OBJECT_END, "static types");
_Static_assert((int)kTVMFFIVisitInterrupt == (int)TIO_TYPE_VISIT_INTERRUPT, "type indices");

/* A NUL-terminated copy of a byte array, on the stack when short. */
struct cname {
	char *s;
	char buf[128];
};

int tvmffi__cname(struct cname *c, const TVMFFIByteArray *b);

/* TVM FFI's TVMFFITypeInfo.type_key_hash of a key. */
uint64_t tvmffi__key_hash(const char *key, size_t len);

static inline void tvmffi__cname_free(struct cname *c)
{
	if (c->s != c->buf)
		free(c->s);
}

#endif /* TIO_TVMFFI_COMPAT_H */
