/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DLPack, as installed, completed to the DLPack 1.x ABI where the installed
 * header is older (Debian 12 ships 0.6): the versioned managed tensor, its
 * flags, and the data type codes and device types added since 0.6. Only
 * what the installed header lacks is declared here.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_DLPACK_H
#define TENSORIO_DLPACK_H

#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DLPACK_MAJOR_VERSION
/* DLPack < 1.0: declare the 1.x versioned ABI ourselves. */
#define TIO_DLPACK_DECLARES_VERSIONED 1

typedef struct {
	uint32_t major;
	uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (UINT64_C(1) << 2)

typedef struct DLManagedTensorVersioned {
	DLPackVersion version;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensorVersioned *self);
	uint64_t flags;
	DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif

/* The DLPack major version our versioned import/export speaks. */
#define TIO_DLPACK_MAJOR 1
#define TIO_DLPACK_MINOR 1

/* Data type codes (DLDataTypeCode), all of DLPack 1.x, under our names. */
enum {
	TIO_DL_INT = 0,
	TIO_DL_UINT = 1,
	TIO_DL_FLOAT = 2,
	TIO_DL_OPAQUE_HANDLE = 3,
	TIO_DL_BFLOAT = 4,
	TIO_DL_COMPLEX = 5,
	TIO_DL_BOOL = 6,
	TIO_DL_FLOAT8_E3M4 = 7,
	TIO_DL_FLOAT8_E4M3 = 8,
	TIO_DL_FLOAT8_E4M3B11FNUZ = 9,
	TIO_DL_FLOAT8_E4M3FN = 10,
	TIO_DL_FLOAT8_E4M3FNUZ = 11,
	TIO_DL_FLOAT8_E5M2 = 12,
	TIO_DL_FLOAT8_E5M2FNUZ = 13,
	TIO_DL_FLOAT8_E8M0FNU = 14,
	TIO_DL_FLOAT6_E2M3FN = 15,
	TIO_DL_FLOAT6_E3M2FN = 16,
	TIO_DL_FLOAT4_E2M1FN = 17,
};

/* Device types (DLDeviceType), all of DLPack 1.x, under our names. */
enum {
	TIO_DL_CPU = 1,
	TIO_DL_CUDA = 2,
	TIO_DL_CUDA_HOST = 3,
	TIO_DL_OPENCL = 4,
	TIO_DL_VULKAN = 7,
	TIO_DL_METAL = 8,
	TIO_DL_VPI = 9,
	TIO_DL_ROCM = 10,
	TIO_DL_ROCM_HOST = 11,
	TIO_DL_EXT_DEV = 12,
	TIO_DL_CUDA_MANAGED = 13,
	TIO_DL_ONEAPI = 14,
	TIO_DL_WEBGPU = 15,
	TIO_DL_HEXAGON = 16,
	TIO_DL_MAIA = 17,
	TIO_DL_TRN = 18,
};

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_DLPACK_H */
