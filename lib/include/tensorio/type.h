/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The type registry and reflection.
 *
 * Types are registered by key ("tio.Buffer") with a parent (single
 * inheritance); static types have fixed indices (TIO_TYPE_OBJECT ...
 * TIO_TYPE_MODULE), registered types get indices from
 * TIO_TYPE_DYN_OBJECT_BEGIN. Each type records its ancestors by depth, so
 * is-instance is O(1). Types carry reflection: fields (name, offset, size,
 * getter/setter, writable flag, doc), methods (functions taking self), a
 * "__ffi_init__" constructor, and per-type metadata (key -> value).
 *
 * Registration is thread-safe. Type infos live until the process exits;
 * the arrays they point to are only ever replaced, never freed while the
 * process runs, so readers take no lock. Every info struct starts with its
 * size, so that it can grow without breaking callers: set struct_size to
 * sizeof() of the struct you were compiled with.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_TYPE_H
#define TENSORIO_TYPE_H

#include <stdint.h>

#include <tensorio/any.h>
#include <tensorio/function.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Field flags. */
#define TIO_FIELD_WRITABLE (1u << 0)

/* Method flags. */
#define TIO_METHOD_STATIC (1u << 0)	/* no self argument */

/* The constructor method's name: static, returns the new object. */
#define TIO_INIT_METHOD "__ffi_init__"

/* Field accessors: @field is the field's address inside the object. */
typedef int (*tio_field_getter_t)(void *field, tio_any_t *out);
typedef int (*tio_field_setter_t)(void *field, const tio_any_t *value);

/**
 * struct tio_field_info - a reflected field
 * @struct_size: sizeof(struct tio_field_info) as the caller knows it
 * @flags: TIO_FIELD_*
 * @name: the field's name
 * @doc: documentation, or NULL
 * @offset: its byte offset in the object
 * @size: its size in bytes
 * @field_type_index: what it holds: TIO_TYPE_INT (int64, int32, int16 or
 *	int8 by @size), TIO_TYPE_BOOL (1 byte), TIO_TYPE_FLOAT (double or float
 *	by @size), TIO_TYPE_DATA_TYPE, TIO_TYPE_DEVICE, an object type (a
 *	tio_object_t * the object owns; NULL is None), or TIO_TYPE_ANY (a
 *	tio_any_t the object owns)
 * @getter: reads the field, or NULL for the default getter of
 *	@field_type_index (out is owned)
 * @setter: writes it, or NULL for the default setter
 */
typedef struct tio_field_info {
	uint32_t struct_size;
	uint32_t flags;
	const char *name;
	const char *doc;
	int64_t offset;
	int64_t size;
	int32_t field_type_index;
	tio_field_getter_t getter;
	tio_field_setter_t setter;
} tio_field_info_t;

/**
 * struct tio_method_info - a reflected method
 * @struct_size: sizeof(struct tio_method_info) as the caller knows it
 * @flags: TIO_METHOD_*
 * @name: the method's name
 * @doc: documentation, or NULL
 * @call: the implementation; instance methods get self as args[0]
 * @self: the context passed to @call
 * @func: the method as a Function (set by the registry; lives as long as
 *	the process)
 */
typedef struct tio_method_info {
	uint32_t struct_size;
	uint32_t flags;
	const char *name;
	const char *doc;
	tio_safe_call_t call;
	void *self;
	tio_object_t *func;
} tio_method_info_t;

/**
 * struct tio_type_info - a registered type
 * @struct_size: sizeof(struct tio_type_info) of the library
 * @type_index: its index
 * @type_depth: number of ancestors (0 for TIO_TYPE_OBJECT and the values an
 *	Any holds in place, TIO_TYPE_NONE to TIO_TYPE_SMALL_BYTES)
 * @type_key: its key
 * @ancestors: ancestors[d] is the ancestor's index at depth d (d < depth)
 * @parent_index: its parent's index (-1 for those roots)
 * @num_fields: number of fields declared by this type (not inherited)
 * @fields: the fields
 * @num_methods: number of methods declared by this type
 * @methods: the methods
 * @doc: documentation, or NULL
 */
typedef struct tio_type_info {
	uint32_t struct_size;
	int32_t type_index;
	int32_t type_depth;
	int32_t parent_index;
	const char *type_key;
	const int32_t *ancestors;
	int32_t num_fields;
	int32_t num_methods;
	const tio_field_info_t *fields;
	const tio_method_info_t *methods;
	const char *doc;
} tio_type_info_t;

/**
 * tio_type_register() - register a type, or find it if already registered
 * @type_key: its unique key
 * @parent_index: its parent type (TIO_TYPE_OBJECT for a direct child)
 * @out_index: its type index
 *
 * Registering an existing key with the same parent returns its index.
 *
 * Return: 0, or -1 with an error raised (ValueError for an unknown parent
 * or one that is not an object type, a key registered with another parent,
 * or a full table).
 */
TIO_API int tio_type_register(const char *type_key, int32_t parent_index,
			      int32_t *out_index);

/**
 * tio_type_register_static() - register a type at a static index of the
 * caller's choice, or find it if already registered there
 * @type_key: its unique key
 * @parent_index: its parent type (TIO_TYPE_OBJECT for a direct child)
 * @type_index: the index, from TIO_TYPE_STATIC_OBJECT_BEGIN up to but not
 *	including TIO_TYPE_DYN_OBJECT_BEGIN, free or already this type's
 * @out_index: set to @type_index
 *
 * For runtimes whose types have fixed indices (TVM FFI's static objects).
 *
 * Return: 0, or -1 with a ValueError raised (index out of that range or
 * taken by another type, the key registered elsewhere or with another
 * parent, unknown parent or one that is not an object type).
 */
TIO_API int tio_type_register_static(const char *type_key, int32_t parent_index,
				     int32_t type_index, int32_t *out_index);

/**
 * tio_type_key_to_index() - look a type up by key
 * @type_key: the key
 * @out_index: its index
 *
 * The values an Any holds in place have entries under TVM FFI's keys
 * ("None", "int", "bool", "float", "void*", "DataType", "Device",
 * "DLTensor*", "const char*", "TVMFFIByteArray*", "ObjectRValueRef",
 * "ffi.SmallStr", "ffi.SmallBytes"; indices 0 to 12).
 *
 * Return: 0, or -1 with a KeyError raised.
 */
TIO_API int tio_type_key_to_index(const char *type_key, int32_t *out_index);

/**
 * tio_type_info() - look a type up by index
 * @type_index: the index
 *
 * Return: its info (valid for the process' lifetime), or NULL.
 */
TIO_API const tio_type_info_t *tio_type_info(int32_t type_index);

/**
 * tio_type_is_subtype() - whether @type_index is @base_index or derives from it
 * @type_index: the type tested
 * @base_index: the base
 *
 * O(1): one look at @type_index's ancestors table.
 *
 * Return: 1 or 0.
 */
TIO_API int tio_type_is_subtype(int32_t type_index, int32_t base_index);

/**
 * tio_object_is_instance() - whether @obj's type is @type_index or derives from it
 * @obj: the object
 * @type_index: the type
 *
 * Return: 1 when @obj is an instance of @type_index, else 0.
 */
static inline int tio_object_is_instance(const tio_object_t *obj, int32_t type_index)
{
	return obj->type_index == type_index ||
	       tio_type_is_subtype(obj->type_index, type_index);
}

/**
 * tio_type_register_field() - add a field to a type
 * @type_index: the type
 * @info: the field (copied; @info->struct_size must be set)
 *
 * Return: 0, or -1 with an error raised (unknown type, duplicate name,
 * bad size for the field's kind, ...).
 */
TIO_API int tio_type_register_field(int32_t type_index, const tio_field_info_t *info);

/**
 * tio_type_register_method() - add a method to a type
 * @type_index: the type
 * @info: the method (copied; its func member is ignored)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_type_register_method(int32_t type_index, const tio_method_info_t *info);

/**
 * tio_type_find_field() - a field of a type or of its ancestors, by name
 * @type_index: the type
 * @name: the field's name
 *
 * Return: the field, or NULL.
 */
TIO_API const tio_field_info_t *tio_type_find_field(int32_t type_index, const char *name);

/**
 * tio_type_find_method() - a method of a type or of its ancestors, by name
 * @type_index: the type
 * @name: the method's name
 *
 * Return: the method, or NULL.
 */
TIO_API const tio_method_info_t *tio_type_find_method(int32_t type_index, const char *name);

/**
 * tio_type_set_metadata() - set a metadata entry of a type
 * @type_index: the type
 * @key: the entry's key
 * @value: its value (copied as by tio_any_copy(); an object value is held
 *	by the registry for the rest of the process)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_type_set_metadata(int32_t type_index, const char *key,
				  const tio_any_t *value);

/**
 * tio_type_get_metadata() - get a metadata entry of a type (not inherited)
 * @type_index: the type
 * @key: the entry's key
 * @out: an owned copy of the value
 *
 * Return: 0, or -1 with a KeyError raised when not set.
 */
TIO_API int tio_type_get_metadata(int32_t type_index, const char *key, tio_any_t *out);

/**
 * tio_type_set_doc() - set a type's documentation
 * @type_index: the type
 * @doc: the text (copied)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_type_set_doc(int32_t type_index, const char *doc);

/**
 * tio_object_get_field() - read a reflected field
 * @obj: the object
 * @name: the field's name
 * @out: its value (owned)
 *
 * Return: 0, or -1 with an error raised (AttributeError when no such field).
 */
TIO_API int tio_object_get_field(tio_object_t *obj, const char *name, tio_any_t *out);

/**
 * tio_object_set_field() - write a reflected field
 * @obj: the object
 * @name: the field's name
 * @value: the value (a view; the object keeps its own copy)
 *
 * Return: 0, or -1 with an error raised (AttributeError when no such field
 * or when it is not writable, TypeError for a value of the wrong kind).
 */
TIO_API int tio_object_set_field(tio_object_t *obj, const char *name,
				 const tio_any_t *value);

/**
 * tio_object_call_method() - call a reflected method with @obj as self
 * @obj: the object
 * @name: the method's name
 * @args: the other arguments (views)
 * @nargs: their number (at most 63)
 * @ret: the result (set to None first; owned by the caller)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_object_call_method(tio_object_t *obj, const char *name,
				   const tio_any_t *args, int32_t nargs, tio_any_t *ret);

/**
 * tio_type_create() - construct an instance through the type's __ffi_init__
 * @type_index: the type
 * @args: the constructor's arguments (views)
 * @nargs: their number
 * @ret: the new object (owned by the caller)
 *
 * Return: 0, or -1 with an error raised (TypeError when the type has no
 * __ffi_init__ or it returns something that is not an instance).
 */
TIO_API int tio_type_create(int32_t type_index, const tio_any_t *args,
			    int32_t nargs, tio_any_t *ret);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_TYPE_H */
