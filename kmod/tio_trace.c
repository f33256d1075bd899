// SPDX-License-Identifier: GPL-2.0
/*
 * Instantiates the tensorio tracepoints declared in tio_trace.h.
 */
#define CREATE_TRACE_POINTS
#include "tio_trace.h"
