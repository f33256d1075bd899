/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The TVM FFI C ABI, declared here from its public description (apache/
 * tvm-ffi 0.1.14, include/tvm/ffi/c_api.h and extra/c_env_api.h): the
 * layouts, type indices and entry points that compiled modules and
 * language bindings use. Written for this project, C only; it stands in
 * for the TVM FFI header when building the compatibility library and the
 * fixture modules that test it, and has no tensorio type in it.
 */
#ifndef TIO_TVMFFI_ABI_H
#define TIO_TVMFFI_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/dlpack.h>	/* DLPack 1.x: DLTensor, DLManagedTensorVersioned */

#ifdef __cplusplus
extern "C" {
#endif

#define TVM_FFI_VERSION_MAJOR 0
#define TVM_FFI_VERSION_MINOR 1
#define TVM_FFI_VERSION_PATCH 14

#define TVM_FFI_DLL __attribute__((visibility("default")))

typedef struct {
	uint32_t major, minor, patch;
} TVMFFIVersion;

/* Type indices. */
enum {
	kTVMFFIAny = -1,
	kTVMFFINone = 0,
	kTVMFFIInt = 1,
	kTVMFFIBool = 2,
	kTVMFFIFloat = 3,
	kTVMFFIOpaquePtr = 4,
	kTVMFFIDataType = 5,
	kTVMFFIDevice = 6,
	kTVMFFIDLTensorPtr = 7,
	kTVMFFIRawStr = 8,
	kTVMFFIByteArrayPtr = 9,
	kTVMFFIObjectRValueRef = 10,
	kTVMFFISmallStr = 11,
	kTVMFFISmallBytes = 12,
	kTVMFFIStaticObjectBegin = 64,
	kTVMFFIObject = 64,
	kTVMFFIStr = 65,
	kTVMFFIBytes = 66,
	kTVMFFIError = 67,
	kTVMFFIFunction = 68,
	kTVMFFIShape = 69,
	kTVMFFITensor = 70,
	kTVMFFIArray = 71,
	kTVMFFIMap = 72,
	kTVMFFIModule = 73,
	kTVMFFIOpaquePyObject = 74,
	kTVMFFIList = 75,
	kTVMFFIDict = 76,
	kTVMFFIVisitInterrupt = 77,
	kTVMFFIStaticObjectEnd = 78,
	kTVMFFIDynObjectBegin = 128,
};

/* Deleter flags. */
enum {
	kTVMFFIObjectDeleterFlagBitMaskStrong = 1,
	kTVMFFIObjectDeleterFlagBitMaskWeak = 2,
	kTVMFFIObjectDeleterFlagBitMaskBoth = 3,
};

enum {
	kTVMFFIBacktraceUpdateModeReplace = 0,
	kTVMFFIBacktraceUpdateModeAppend = 1,
};

typedef void *TVMFFIObjectHandle;

/* The 24-byte object header: strong count low 32 bits, weak high 32. */
typedef struct {
	uint64_t combined_ref_count;
	int32_t type_index;
	uint32_t padding;
	union {
		void (*deleter)(void *self, int flags);
		int64_t ensure_align;
	};
} TVMFFIObject;

/* The 16-byte value. */
typedef struct {
	int32_t type_index;
	union {
		uint32_t zero_padding;
		uint32_t small_str_len;
	};
	union {
		int64_t v_int64;
		double v_float64;
		void *v_ptr;
		const char *v_c_str;
		TVMFFIObject *v_obj;
		DLDataType v_dtype;
		DLDevice v_device;
		char v_bytes[8];
		uint64_t v_uint64;
	};
} TVMFFIAny;

typedef struct {
	const char *data;
	size_t size;
} TVMFFIByteArray;

/* Cells: what follows the header of each static object. */
typedef struct {
	const int64_t *data;
	size_t size;
} TVMFFIShapeCell;

typedef struct {
	void *data;
	int64_t size;
	int64_t capacity;
	void (*data_deleter)(void *data);
} TVMFFISeqCell;

typedef struct {
	TVMFFIByteArray kind;
	TVMFFIByteArray message;
	TVMFFIByteArray backtrace;
	void (*update_backtrace)(TVMFFIObjectHandle self, const TVMFFIByteArray *backtrace,
				 int32_t update_mode);
	TVMFFIObjectHandle cause_chain;
	TVMFFIObjectHandle extra_context;
} TVMFFIErrorCell;

typedef int (*TVMFFISafeCallType)(void *handle, const TVMFFIAny *args, int32_t num_args,
				  TVMFFIAny *result);

typedef struct {
	TVMFFISafeCallType safe_call;
	void *cpp_call;
} TVMFFIFunctionCell;

typedef struct {
	void *handle;
} TVMFFIOpaqueObjectCell;

/* Reflection. */
typedef int (*TVMFFIFieldGetter)(void *field, TVMFFIAny *result);
typedef int (*TVMFFIFieldSetter)(void *field, const TVMFFIAny *value);
typedef int (*TVMFFIObjectCreator)(TVMFFIObjectHandle *result);

enum {
	kTVMFFIFieldFlagBitMaskWritable = 1 << 0,
	kTVMFFIFieldFlagBitMaskHasDefault = 1 << 1,
	kTVMFFIFieldFlagBitMaskIsStaticMethod = 1 << 2,
	kTVMFFIFieldFlagBitSetterIsFunctionObj = 1 << 11,
};

typedef struct {
	TVMFFIByteArray name;
	TVMFFIByteArray doc;
	TVMFFIByteArray metadata;
	int64_t flags;
	int64_t size;
	int64_t alignment;
	int64_t offset;
	TVMFFIFieldGetter getter;
	void *setter;
	TVMFFIAny default_value_or_factory;
	int32_t field_static_type_index;
} TVMFFIFieldInfo;

typedef struct {
	TVMFFIByteArray name;
	TVMFFIByteArray doc;
	TVMFFIByteArray metadata;
	int64_t flags;
	TVMFFIAny method;
} TVMFFIMethodInfo;

typedef struct {
	TVMFFIByteArray doc;
	TVMFFIObjectCreator creator;
	int32_t total_size;
	int32_t structural_eq_hash_kind;
} TVMFFITypeMetadata;

typedef struct TVMFFITypeInfo {
	int32_t type_index;
	int32_t type_depth;
	TVMFFIByteArray type_key;
	const struct TVMFFITypeInfo **type_ancestors;
	uint64_t type_key_hash;
	int32_t num_fields;
	int32_t num_methods;
	const TVMFFIFieldInfo *fields;
	const TVMFFIMethodInfo *methods;
	const TVMFFITypeMetadata *metadata;
} TVMFFITypeInfo;

typedef void *TVMFFIStreamHandle;

typedef int (*DLPackManagedTensorAllocator)(DLTensor *prototype, DLManagedTensorVersioned **out,
					    void *error_ctx,
					    void (*set_error)(void *error_ctx, const char *kind,
							      const char *message));

/* Entry points (c_api.h). */
/* One column of type attributes: data[type_index - begin_index]. */
typedef struct {
	const TVMFFIAny *data;
	int32_t size;
	int32_t begin_index;
} TVMFFITypeAttrColumn;

TVM_FFI_DLL void TVMFFIGetVersion(TVMFFIVersion *out_version);
TVM_FFI_DLL int TVMFFIObjectIncRef(TVMFFIObjectHandle obj);
TVM_FFI_DLL int TVMFFIObjectDecRef(TVMFFIObjectHandle obj);
TVM_FFI_DLL int TVMFFIObjectCreateOpaque(void *handle, int32_t type_index,
					 void (*deleter)(void *handle), TVMFFIObjectHandle *out);

/*
 * Object storage: the header before an object body that a custom
 * allocator returns, and the process-wide allocator (c_api.h,
 * "ObjectAllocHeader and CustomAllocator").
 */
typedef struct {
	void (*delete_space)(void *ptr);	/* ptr: the object body */
} TVMFFIObjectAllocHeader;

typedef struct {
	void *(*allocate)(size_t size, size_t alignment, int32_t type_index, void *context);
	void *context;
} TVMFFICustomAllocator;

TVM_FFI_DLL TVMFFICustomAllocator *TVMFFIGetCustomAllocator(void);
TVM_FFI_DLL int TVMFFISetCustomAllocator(TVMFFICustomAllocator *allocator);
TVM_FFI_DLL int TVMFFITypeKeyToIndex(const TVMFFIByteArray *type_key, int32_t *out_tindex);
TVM_FFI_DLL int TVMFFIFunctionCreate(void *self, TVMFFISafeCallType safe_call,
				     void (*deleter)(void *self), TVMFFIObjectHandle *out);
TVM_FFI_DLL int TVMFFIFunctionGetGlobal(const TVMFFIByteArray *name, TVMFFIObjectHandle *out);
TVM_FFI_DLL int TVMFFIAnyViewToOwnedAny(const TVMFFIAny *any_view, TVMFFIAny *out);
TVM_FFI_DLL int TVMFFIFunctionCall(TVMFFIObjectHandle func, TVMFFIAny *args, int32_t num_args,
				   TVMFFIAny *result);
TVM_FFI_DLL void TVMFFIErrorMoveFromRaised(TVMFFIObjectHandle *result);
TVM_FFI_DLL void TVMFFIErrorSetRaised(TVMFFIObjectHandle error);
TVM_FFI_DLL void TVMFFIErrorSetRaisedFromCStr(const char *kind, const char *message);
TVM_FFI_DLL void TVMFFIErrorSetRaisedFromCStrParts(const char *kind, const char **message_parts,
						   int32_t num_parts);
TVM_FFI_DLL int TVMFFIErrorCreate(const TVMFFIByteArray *kind, const TVMFFIByteArray *message,
				  const TVMFFIByteArray *backtrace, TVMFFIObjectHandle *out);
TVM_FFI_DLL int TVMFFIErrorCreateWithCauseAndExtraContext(
	const TVMFFIByteArray *kind, const TVMFFIByteArray *message,
	const TVMFFIByteArray *backtrace, TVMFFIObjectHandle cause_chain,
	TVMFFIObjectHandle extra_context, TVMFFIObjectHandle *out);
TVM_FFI_DLL int TVMFFITensorFromDLPack(DLManagedTensor *from, int32_t require_alignment,
				       int32_t require_contiguous, TVMFFIObjectHandle *out);
TVM_FFI_DLL int TVMFFITensorToDLPack(TVMFFIObjectHandle from, DLManagedTensor **out);
TVM_FFI_DLL int TVMFFITensorFromDLPackVersioned(DLManagedTensorVersioned *from,
						int32_t require_alignment,
						int32_t require_contiguous,
						TVMFFIObjectHandle *out);
TVM_FFI_DLL int TVMFFITensorToDLPackVersioned(TVMFFIObjectHandle from,
					      DLManagedTensorVersioned **out);
TVM_FFI_DLL int TVMFFIStringFromByteArray(const TVMFFIByteArray *input, TVMFFIAny *out);
TVM_FFI_DLL int TVMFFIBytesFromByteArray(const TVMFFIByteArray *input, TVMFFIAny *out);
TVM_FFI_DLL int TVMFFIDataTypeFromString(const TVMFFIByteArray *str, DLDataType *out);
TVM_FFI_DLL int TVMFFIDataTypeToString(const DLDataType *dtype, TVMFFIAny *out);
TVM_FFI_DLL int TVMFFIFunctionSetGlobal(const TVMFFIByteArray *name, TVMFFIObjectHandle f,
					int allow_override);
TVM_FFI_DLL const TVMFFIByteArray *TVMFFIBacktrace(const char *filename, int lineno,
						   const char *func, int cross_ffi_boundary);
TVM_FFI_DLL int TVMFFIFunctionSetGlobalFromMethodInfo(const TVMFFIMethodInfo *method_info,
						      int allow_override);
TVM_FFI_DLL int TVMFFITensorCreateUnsafeView(TVMFFIObjectHandle source, const DLTensor *prototype,
					     TVMFFIObjectHandle *out);
TVM_FFI_DLL int32_t TVMFFITypeGetOrAllocIndex(const TVMFFIByteArray *type_key,
					      int32_t static_type_index, int32_t type_depth,
					      int32_t num_child_slots,
					      int32_t child_slots_can_overflow,
					      int32_t parent_type_index);
TVM_FFI_DLL const TVMFFITypeInfo *TVMFFIGetTypeInfo(int32_t type_index);
TVM_FFI_DLL int TVMFFITypeRegisterField(int32_t type_index, const TVMFFIFieldInfo *info);
TVM_FFI_DLL int TVMFFITypeRegisterMethod(int32_t type_index, const TVMFFIMethodInfo *info);
TVM_FFI_DLL int TVMFFITypeRegisterMetadata(int32_t type_index,
					   const TVMFFITypeMetadata *metadata);
TVM_FFI_DLL int TVMFFITypeRegisterAttr(int32_t type_index, const TVMFFIByteArray *attr_name,
				       const TVMFFIAny *attr_value);
TVM_FFI_DLL const TVMFFITypeAttrColumn *TVMFFIGetTypeAttrColumn(const TVMFFIByteArray *attr_name);
TVM_FFI_DLL int TVMFFIHandleInitOnce(void **handle_addr, int (*init_func)(void **result));
TVM_FFI_DLL int TVMFFIHandleDeinitOnce(void **handle_addr, int (*deinit_func)(void *handle));

/* Entry points (extra/c_env_api.h). */
TVM_FFI_DLL int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id,
				   TVMFFIStreamHandle stream,
				   TVMFFIStreamHandle *opt_out_original_stream);
TVM_FFI_DLL TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type, int32_t device_id);
TVM_FFI_DLL int TVMFFIEnvSetDLPackManagedTensorAllocator(
	DLPackManagedTensorAllocator allocator, int write_to_global_context,
	DLPackManagedTensorAllocator *opt_out_original_allocator);
TVM_FFI_DLL DLPackManagedTensorAllocator TVMFFIEnvGetDLPackManagedTensorAllocator(void);
TVM_FFI_DLL int TVMFFIEnvTensorAlloc(DLTensor *prototype, TVMFFIObjectHandle *out);
TVM_FFI_DLL int TVMFFIEnvCheckSignals(void);
TVM_FFI_DLL int TVMFFIEnvRegisterCAPI(const char *name, void *symbol);
TVM_FFI_DLL int TVMFFIEnvModRegisterSystemLibSymbol(const char *name, void *ptr);
TVM_FFI_DLL int TVMFFIEnvModRegisterContextSymbol(const char *name, void *symbol);
TVM_FFI_DLL int TVMFFIEnvModLookupFromImports(TVMFFIObjectHandle library_ctx,
					      const char *func_name, TVMFFIObjectHandle *out);

#ifdef __cplusplus
}
#endif

#endif /* TIO_TVMFFI_ABI_H */
