# SPDX-License-Identifier: LGPL-2.1-or-later
# The build settings every Makefile shares: lib, lib/net, lib/tvmffi,
# tests/lib, tests/fault, tests/stress, tests/net, tools, examples, bench,
# python. Set top before including; a Makefile that wants another
# optimisation than -O2 -g sets CFLAGS ?= before it, one that links
# against another build of libtensorio sets LIBO.
#   SAN=1    the AddressSanitizer + UBSan variant
#   TSAN=1   the ThreadSanitizer variant
SAN ?=
TSAN ?=
VERSION := 0.1.0
CFLAGS ?= -O2 -g

# Where this variant of libtensorio (and of its tests) is built.
VARIANT := $(if $(SAN),-san)$(if $(TSAN),-tsan)
LIBO ?= $(top)/build/lib$(VARIANT)
# libtensorio's sources: one folder per layer (docs/library.md).
LIB_LAYERS := ffi dev dev/backend file gpu
# The kselftest harness (Debian's linux-source, extracted by make deps).
KSFT := $(top)/build/ksrc/tools/testing/selftests

# Warnings: every program's; the libraries' stricter set; the tests' (the
# kselftest harness macros compare mixed signedness and ignore parameters).
WARN := -Wall -Wextra -Werror
LIB_WARN := $(WARN) -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wvla -Wformat=2
TEST_WARN := $(WARN) -Wno-unused-parameter -Wno-sign-compare

# The libraries: C11, position independent, only TIO_API symbols exported.
LIB_CFLAGS := -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden $(LIB_WARN) \
	-I$(top)/lib/include

# The variant's sanitizers, for CFLAGS and LDFLAGS. gcc's TSan does not
# model atomic_thread_fence (the refcounts' acquire fence): -Wno-tsan; a
# missed fence would show as a report, never hide one.
SAN_CFLAGS :=
SAN_LDFLAGS :=
ifneq ($(TSAN),)
SAN_CFLAGS += -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan
SAN_LDFLAGS += -fsanitize=thread
endif
ifneq ($(SAN),)
SAN_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
SAN_LDFLAGS += -fsanitize=address,undefined
endif

# Programs built beside the libraries (tio-bench, its unit tests) compile
# as executables: the libraries' language, warnings and sanitizers, without
# -fPIC and hidden visibility (tio-bench's malloc counter interposes for
# every shared object, and its thread-local counter stays local-exec).
PROG_CFLAGS := $(filter-out -fPIC -fvisibility=hidden,$(CFLAGS) $(LIB_CFLAGS) $(SAN_CFLAGS))
