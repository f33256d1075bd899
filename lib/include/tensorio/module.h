/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Modules: shared objects exporting FFI functions as symbols named
 * __tvm_ffi_<name> with the safe-call signature (called with self NULL),
 * and the process-wide system library that statically linked code
 * registers into.
 *
 * A module may export `const uint32_t __tvm_ffi__tio_abi_version`
 * (TIO_EXPORT_ABI_VERSION() does it): when present and not equal to the
 * library's TIO_ABI_VERSION the module is refused, before any of its code
 * runs. As TVM FFI's loader: any function symbol with the prefix is a
 * function, "__tvm_ffi__hidden" being the function "_hidden", except the
 * metadata and doc getters (__tvm_ffi__metadata_*, __tvm_ffi__doc_*);
 * `void *__tvm_ffi__library_ctx` is set to the module after loading; and
 * `__tvm_ffi__library_bin` describes a tree of imported modules (the
 * library itself as "_lib", others rebuilt by the global function
 * "ffi.Module.load_from_bytes.<kind>"), whose root is what the load returns.
 * A module is unloaded (dlclose) when the last reference to it goes;
 * every Function got from it holds one.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_MODULE_H
#define TENSORIO_MODULE_H

#include <stdint.h>

#include <tensorio/any.h>
#include <tensorio/function.h>
#include <tensorio/object.h>
#include <tensorio/version.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIO_MODULE_SYMBOL_PREFIX "__tvm_ffi_"
#define TIO_MODULE_ABI_SYMBOL "__tvm_ffi__tio_abi_version"

#ifdef __cplusplus
#define TIO_EXTERN_C extern "C"
#else
#define TIO_EXTERN_C
#endif

/**
 * TIO_EXPORT_FUNC() - export @impl, a tio_safe_call_t, as __tvm_ffi_<name>
 * @name: the function's name (an identifier)
 * @impl: the implementation
 */
#define TIO_EXPORT_FUNC(name, impl)						\
	TIO_EXTERN_C __attribute__((visibility("default")))			\
	int __tvm_ffi_##name(void *self, const tio_any_t *args,		\
			     int32_t nargs, tio_any_t *ret);			\
	TIO_EXTERN_C __attribute__((visibility("default")))			\
	int __tvm_ffi_##name(void *self, const tio_any_t *args,		\
			     int32_t nargs, tio_any_t *ret)			\
	{									\
		return (impl)(self, args, nargs, ret);				\
	}

/** TIO_EXPORT_ABI_VERSION() - export the ABI version this module was built for */
#define TIO_EXPORT_ABI_VERSION()						\
	TIO_EXTERN_C __attribute__((visibility("default")))			\
	const uint32_t __tvm_ffi__tio_abi_version = TIO_ABI_VERSION

/**
 * TIO_SYSTEM_LIB_FUNC() - register @impl into the system library under
 * @name when the program (or the shared object holding it) starts
 * @name: the function's name (an identifier)
 * @impl: the implementation
 */
#define TIO_SYSTEM_LIB_FUNC(name, impl)						\
	__attribute__((constructor)) static void tio_syslib_reg_##name(void)	\
	{									\
		tio_system_lib_register(#name, (impl));				\
	}

/**
 * tio_module_load() - load a shared object as a module
 * @path: the file (as dlopen() takes it)
 * @out: the Module (owned)
 *
 * Return: 0, or -1 with an error raised (OSError when it cannot be opened,
 * ImportError for an incompatible ABI version).
 */
TIO_API int tio_module_load(const char *path, tio_object_t **out);

/**
 * tio_module_get_function() - a module's function by name
 * @mod: the Module
 * @name: the name, without the __tvm_ffi_ prefix
 * @out: the Function (owned; keeps the module loaded), or NULL when absent
 *
 * Looks in the module, then in its imports, depth first.
 *
 *
 * Return: 0 (found or not), or -1 with an error raised.
 */
TIO_API int tio_module_get_function(tio_object_t *mod, const char *name,
				    tio_object_t **out);

/**
 * tio_module_imports() - the modules a module imports
 * @mod: the Module
 * @out: an Array of Modules, in import order (owned)
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_module_imports(tio_object_t *mod, tio_any_t *out);

/**
 * tio_module_lookup_from_imports() - a function for code inside a module
 * @mod: the Module (a library's __tvm_ffi__library_ctx)
 * @name: the name
 * @out: the Function, borrowed: cached by @mod, valid as long as @mod
 *
 * Searches @mod's imports (depth first), then the global registry, as TVM
 * FFI's TVMFFIEnvModLookupFromImports does; the result is cached per module.
 * Return: 0, or -1 with an error raised (RuntimeError when nothing has that
 * name).
 */
TIO_API int tio_module_lookup_from_imports(tio_object_t *mod, const char *name,
					   tio_object_t **out);

/**
 * tio_module_implements_function() - whether a module or its imports
 * have a function
 * @mod: the Module
 * @name: the name, without prefix
 *
 * Return: 1 or 0.
 */
TIO_API int tio_module_implements_function(tio_object_t *mod, const char *name);

/**
 * tio_module_list_functions() - the names of a module's functions
 * @mod: the Module
 * @out: an Array of Strings, sorted (owned)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_module_list_functions(tio_object_t *mod, tio_any_t *out);

/**
 * tio_module_system_lib() - the process-wide system library
 * @out: the Module (a reference, owned; the module itself lives as long as
 *	the process)
 *
 * The same as tio_module_system_lib_prefixed() with prefix "".
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_module_system_lib(tio_object_t **out);

/**
 * tio_module_system_lib_prefixed() - the system library of a symbol prefix
 * @prefix: the prefix ("" for the system library)
 * @out: the Module (a reference, owned; made on first use and kept for the
 *	process, so every call with @prefix gives the same one)
 *
 * As TVM FFI's ffi.SystemLib(prefix): its function NAME is the symbol
 * registered as __tvm_ffi_<prefix><NAME>, else as __tvm_ffi_<NAME>. When
 * it is made, each context symbol (tio_module_register_context_symbol())
 * NAME registered as <prefix>NAME, else as NAME, is set to its value, and
 * then a registered <prefix>__tvm_ffi__library_ctx to the Module.
 *
 * Return: 0, or -1 with an error raised (ValueError for NULL arguments).
 */
TIO_API int tio_module_system_lib_prefixed(const char *prefix, tio_object_t **out);

/**
 * tio_system_lib_register() - add a function to the system libraries
 * @name: its name (copied)
 * @call: its implementation, called with self NULL
 *
 * Registers the symbol __tvm_ffi_<name> (tio_system_lib_register_symbol()):
 * a name registered before is replaced, as in TVM FFI.
 *
 * Return: 0, or -1 with an error raised (ValueError for a NULL or empty
 * argument, a name over 245 bytes, or _library_ctx / _library_bin).
 */
TIO_API int tio_system_lib_register(const char *name, tio_safe_call_t call);

/**
 * tio_system_lib_register_symbol() - register a symbol of the system
 * libraries, as TVM FFI's TVMFFIEnvModRegisterSystemLibSymbol
 * @symbol: __tvm_ffi_<NAME> for a function (a tio_safe_call_t),
 *	<prefix>__tvm_ffi__library_ctx for a void * to be set to the system
 *	library of that prefix (at once if it exists, else when it is made),
 *	or any other name for a void * that a context symbol of that name
 *	sets when a system library is made
 * @ptr: its address
 *
 * A symbol registered again takes the new address (TVM FFI's override).
 * Modules that call this from their constructors are built with TVM FFI's
 * system-library option.
 *
 * Return: 0, or -1 with an error raised (ValueError for a NULL argument or
 * an empty name, ImportError for __tvm_ffi__library_bin: embedded module
 * trees are not taken here).
 */
TIO_API int tio_system_lib_register_symbol(const char *symbol, void *ptr);

/**
 * tio_module_register_context_symbol() - have every module loaded from now
 * on see a value in a variable of its own
 * @name: the variable's symbol name (copied), a void * in the module
 * @value: what tio_module_load() stores there, before the module's
 *	__tvm_ffi__library_ctx
 *
 * TVM FFI's context symbols (TVMFFIEnvModRegisterContextSymbol): a module
 * reaches what its environment provides without linking against it. A
 * name registered again takes the new value; modules without the symbol
 * are left alone. A system library made from now on has the variable
 * registered as <prefix><name>, else as <name>
 * (tio_system_lib_register_symbol()), set the same way.
 *
 * Return: 0, or -1 with an error raised (ValueError for no name).
 */
TIO_API int tio_module_register_context_symbol(const char *name, void *value);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_MODULE_H */
