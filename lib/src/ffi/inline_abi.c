// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The exported copies of the TIO_INLINE functions (visibility.h): the
 * reference counting and error accessors a binding without the headers
 * calls by name. C callers keep the inline versions.
 */
#define TIO_EXPORT_INLINES
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#include <tensorio/any.h>
#include <tensorio/error.h>
#include <tensorio/object.h>
