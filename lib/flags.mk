# SPDX-License-Identifier: LGPL-2.1-or-later
# What the libraries built beside libtensorio (lib/tvmffi, lib/net) share:
# the build directory and the compiler flags, SAN=1 / TSAN=1 as in
# lib/Makefile. Set top before including.
SAN ?=
TSAN ?=
O ?= $(top)/build/lib$(if $(SAN),-san)$(if $(TSAN),-tsan)
VERSION := 0.1.0

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wvla -Wformat=2
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden $(WARN) -I$(top)/lib/include
ifneq ($(TSAN),)
CFLAGS += -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan
LDFLAGS += -fsanitize=thread
endif
ifneq ($(SAN),)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
# Programs built beside the libraries (tio-bench, its unit tests) compile
# as executables: the same language, warnings and sanitizers, without
# -fPIC and hidden visibility (tio-bench's malloc counter interposes for
# every shared object, and its thread-local counter stays local-exec).
PROG_CFLAGS = $(filter-out -fPIC -fvisibility=hidden,$(CFLAGS))
