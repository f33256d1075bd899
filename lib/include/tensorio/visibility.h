/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Symbol visibility: the library builds with -fvisibility=hidden and exports
 * only what is marked TIO_API and listed in libtensorio.map.
 */
#ifndef TENSORIO_VISIBILITY_H
#define TENSORIO_VISIBILITY_H

#if defined(__GNUC__)
#define TIO_API __attribute__((visibility("default")))
#else
#define TIO_API
#endif

#endif /* TENSORIO_VISIBILITY_H */
