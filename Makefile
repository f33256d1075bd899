# SPDX-License-Identifier: GPL-2.0
#
# tensorio: kernel driver, library, tools, benchmarks and tests.
#
#   make              library, tools, benchmarks and test programs (host)
#   make modules      kmod/tensorio.ko against KDIR (or KVER)
#   make check        install what is missing, then every test
#   make run          the main job: VM + module + overhead benchmark
#   make bench        every benchmark suite available here
#
# KDIR defaults to /lib/modules/$(uname -r)/build when it exists, else the
# newest installed Debian headers; KVER=release picks that release's.

top := $(CURDIR)
JOBS ?= $(shell nproc)

KVER ?=
ifneq ($(KVER),)
KDIR ?= $(firstword $(wildcard /lib/modules/$(KVER)/build) /usr/src/linux-headers-$(KVER))
else
KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
	  $(lastword $(shell ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V)))
endif

SUBDIRS := lib tools tests/lib tests/kselftest bench

all: $(SUBDIRS:%=build-%)

build-lib:
	$(MAKE) -C lib

$(filter-out build-lib,$(SUBDIRS:%=build-%)): build-lib | build/ksrc/.done
	$(MAKE) -C $(@:build-%=%)

modules:
	$(MAKE) -C $(KDIR) M=$(top) modules

modules_clean:
	$(MAKE) -C $(KDIR) M=$(top) clean

deps:
	@scripts/deps.sh

# The kselftest headers and checkpatch come from Debian's linux-source.
build/ksrc/.done:
	@scripts/deps.sh

check: deps
	@scripts/check.sh

run: deps
	@scripts/run.sh

bench: deps all
	@scripts/bench.sh

# Keeps build/ksrc (extracted from linux-source, slow to redo).
clean:
	find build -mindepth 1 -maxdepth 1 ! -name ksrc -exec rm -rf {} + 2>/dev/null || true
	@for d in $(SUBDIRS); do $(MAKE) -s -C $$d clean; done

.PHONY: all $(SUBDIRS:%=build-%) modules modules_clean deps check run bench clean
