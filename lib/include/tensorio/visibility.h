/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Symbol visibility: the library builds with -fvisibility=hidden and exports
 * only what is marked TIO_API and listed in libtensorio.map.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_VISIBILITY_H
#define TENSORIO_VISIBILITY_H

#if defined(__GNUC__)
#define TIO_API __attribute__((visibility("default")))
#else
#define TIO_API
#endif

/*
 * TIO_INLINE: a hot-path function that C callers get inline from the
 * header, and that the library also exports under the same name, for
 * bindings that cannot use a header (ctypes, cffi's ABI mode, Julia's
 * ccall). lib/src/ffi/inline_abi.c defines TIO_EXPORT_INLINES to emit them.
 */
#ifdef TIO_EXPORT_INLINES
#define TIO_INLINE TIO_API
#else
#define TIO_INLINE static inline
#endif

#endif /* TENSORIO_VISIBILITY_H */
