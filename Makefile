# SPDX-License-Identifier: GPL-2.0
#
# tensorio: kernel driver, library, tools, benchmarks and tests.
#
#   make              library, tools, benchmarks and test programs (host)
#   make modules      kmod/tensorio.ko against KDIR (or KVER)
#   make check        install what is missing, then every test
#   make run          the main job: VM + module + overhead benchmark
#   make bench        every benchmark suite available here
#   make python       the Python package's extension, in the tree (python/)
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

SUBDIRS := lib tools tests/lib tests/kselftest bench tests/fuzz tests/fault tests/stress examples

all: $(SUBDIRS:%=build-%)

build-lib:
	$(MAKE) -C lib

$(filter-out build-lib,$(SUBDIRS:%=build-%)): build-lib | build/ksrc/.done
	$(MAKE) -C $(@:build-%=%)

# The kselftests carry tioctl into the VM.
build-tests/kselftest: build-tools

# Import it with PYTHONPATH=python; pip install --no-build-isolation ./python
# installs it (docs/python.md).
python: build-lib
	$(MAKE) -C python

modules:
	$(MAKE) -C $(KDIR) M=$(top) modules

modules_clean:
	$(MAKE) -C $(KDIR) M=$(top) clean

# make install [PREFIX=/usr/local] [DESTDIR=...]: library, headers (the
# uapi header included), pkg-config file, tioctl and man pages.
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
VERSION := 0.1.0

install: all
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/tensorio \
		$(DESTDIR)$(INCLUDEDIR)/linux $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man4 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 build/lib/libtensorio.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libtensorio.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtensorio.so.0
	ln -sf libtensorio.so.0 $(DESTDIR)$(LIBDIR)/libtensorio.so
	install -m 0644 build/lib/libtensorio.a $(DESTDIR)$(LIBDIR)/
	install -m 0755 build/lib/libtensorio-tvmffi.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libtensorio-tvmffi.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtensorio-tvmffi.so.0
	ln -sf libtensorio-tvmffi.so.0 $(DESTDIR)$(LIBDIR)/libtensorio-tvmffi.so
	install -m 0644 lib/include/tensorio/*.h $(DESTDIR)$(INCLUDEDIR)/tensorio/
	install -m 0644 uapi/linux/tensorio.h $(DESTDIR)$(INCLUDEDIR)/linux/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|; s|^Libs.private:.*|Libs.private: '"$$($(MAKE) -s -C lib print-ldlibs)"'|' \
	    lib/tensorio.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/tensorio.pc
	install -m 0755 build/tools/tioctl $(DESTDIR)$(BINDIR)/
	install -m 0644 docs/man/libtensorio.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 docs/man/tensorio.4 $(DESTDIR)$(MANDIR)/man4/
	install -m 0644 docs/man/tioctl.8 $(DESTDIR)$(MANDIR)/man8/

# The system side, for a real machine (as root): udev rule, modprobe.d
# example and the module through DKMS.
install-system:
	getent group tensorio >/dev/null || groupadd --system tensorio
	install -D -m 0644 packaging/60-tensorio.rules $(DESTDIR)/etc/udev/rules.d/60-tensorio.rules
	install -D -m 0644 packaging/tensorio.conf $(DESTDIR)/etc/modprobe.d/tensorio.conf
	rm -rf $(DESTDIR)/usr/src/tensorio-$(VERSION)
	install -d $(DESTDIR)/usr/src/tensorio-$(VERSION)
	cp -r Kbuild dkms.conf kmod uapi $(DESTDIR)/usr/src/tensorio-$(VERSION)/
	dkms add -m tensorio -v $(VERSION) && dkms install -m tensorio -v $(VERSION)

deps:
	@scripts/deps.sh

# The kselftest headers and checkpatch come from Debian's linux-source.
build/ksrc/.done:
	@scripts/deps.sh

check: deps
	@scripts/check.sh

run: deps
	@scripts/run.sh

bench: deps all python
	@scripts/bench.sh

# make fuzz [DURATION=seconds] [SEED=n] [FUZZ_KVER=release]: fuzz the driver
# in the debug-kernel VM (default 3600 s; make check runs a bounded one).
DURATION ?= 3600
fuzz: deps all
	@tests/fuzz/run-fuzz.sh -d $(DURATION) $(if $(SEED),-s $(SEED)) $(if $(FUZZ_KVER),-k $(FUZZ_KVER))

# Keeps build/ksrc (extracted from linux-source, slow to redo).
clean:
	find build -mindepth 1 -maxdepth 1 ! -name ksrc -exec rm -rf {} + 2>/dev/null || true
	@for d in $(SUBDIRS) python; do $(MAKE) -s -C $$d clean; done

.PHONY: all $(SUBDIRS:%=build-%) python install install-system modules modules_clean deps check run bench fuzz clean
