/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtensorio version and ABI version.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_VERSION_H
#define TENSORIO_VERSION_H

#include <stdint.h>

#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIO_VERSION_MAJOR 0
#define TIO_VERSION_MINOR 1
#define TIO_VERSION_PATCH 0
#define TIO_VERSION ((TIO_VERSION_MAJOR << 16) | (TIO_VERSION_MINOR << 8) | TIO_VERSION_PATCH)

/*
 * The ABI version: bumped on any incompatible change of a public layout or
 * calling convention. It is the soname's number.
 */
#define TIO_ABI_VERSION 0

/**
 * tio_version() - the library's version, as TIO_VERSION encodes it
 *
 * Return: (major << 16) | (minor << 8) | patch of the loaded library, which
 * may differ from the TIO_VERSION a caller was compiled against.
 */
TIO_API uint32_t tio_version(void);

/**
 * tio_abi_version() - the loaded library's TIO_ABI_VERSION
 *
 * Return: the ABI version; callers built against another one must not use
 * the library.
 */
TIO_API uint32_t tio_abi_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_VERSION_H */
