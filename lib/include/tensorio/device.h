/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DLDevice to and from text: "cpu", "cuda:1", "rocm:0", "cuda_host", ...
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_DEVICE_H
#define TENSORIO_DEVICE_H

#include <stddef.h>

#include <tensorio/dlpack.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Room enough for any device's text and its NUL. */
#define TIO_DEVICE_STR_MAX 32

/**
 * tio_device_parse() - parse a device
 * @s: "NAME" or "NAME:ID", NAME one of cpu, cuda, cuda_host, opencl,
 *	vulkan, metal, vpi, rocm, rocm_host, ext_dev, cuda_managed, oneapi,
 *	webgpu, hexagon, maia, trn; ID a decimal in [0, INT32_MAX] (default 0)
 * @out: the device
 *
 * Return: 0, or -1 with a ValueError raised for malformed text.
 */
TIO_API int tio_device_parse(const char *s, DLDevice *out);

/**
 * tio_device_print() - the text of a device, "NAME:ID"
 * @dev: the device
 * @buf: where the text goes, NUL-terminated
 * @len: room in @buf (TIO_DEVICE_STR_MAX is always enough)
 *
 * Return: the text's length, or -1 with a ValueError raised.
 */
TIO_API int tio_device_print(DLDevice dev, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_DEVICE_H */
