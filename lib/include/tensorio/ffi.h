/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The FFI object/function system of libtensorio, all of it. See docs/ffi.md.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_FFI_H
#define TENSORIO_FFI_H

#include <tensorio/version.h>
#include <tensorio/dlpack.h>
#include <tensorio/object.h>
#include <tensorio/any.h>
#include <tensorio/error.h>
#include <tensorio/function.h>
#include <tensorio/string.h>
#include <tensorio/type.h>
#include <tensorio/dtype.h>
#include <tensorio/device.h>
#include <tensorio/container.h>
#include <tensorio/tensor.h>
#include <tensorio/module.h>

#endif /* TENSORIO_FFI_H */
