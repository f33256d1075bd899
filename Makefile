# SPDX-License-Identifier: GPL-2.0
#
# tensorio: kernel driver, library, tools, benchmarks and tests.
#
#   make              library, tioctl, tio-bench and examples; installs nothing
#   make tests        the test programs (need the kselftest headers: make deps)
#   make man          man3 pages from the headers' kernel-doc (build/man)
#   make modules      kmod/tensorio.ko against KDIR (or KVER)
#   make install      see below; make deps installs the build and test packages
#   make check        install what is missing, then every test
#   make run          the main job: VM + module + overhead benchmark, ending
#                     in "targets: N met, M missed" and build/run/*.png
#   make bench        every benchmark suite available here
#   make bench-report a run's JSON as Markdown in docs/results/ (KIND=run,
#                     the default, bench, gpu, or a suite run by
#                     scripts/bench-report.sh -r SUITE)
#   make gpu-bundle   what gpu-check runs, in build/gpu-bundle: programs,
#                     the libraries they need, peers, fio (for a GPU machine
#                     that builds nothing: build/gpu-bundle/run.sh OUTDIR)
#   make gpu-check    on a machine with a GPU: the bundle, run (build/gpu-check)
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

PROGDIRS := lib tools bench examples
TESTDIRS := tests/lib tests/kselftest tests/fuzz tests/fault tests/stress tests/net
SUBDIRS := $(PROGDIRS) $(TESTDIRS)

all: $(PROGDIRS:%=build-%)

build-lib:
	$(MAKE) -C lib

build-tools build-examples: build-lib
	$(MAKE) -C $(@:build-%=%)

build-bench: build-lib
	$(MAKE) -C bench prog

# Test programs: the kselftest harness comes from linux-source (make deps).
tests: all $(TESTDIRS:%=build-%) build-bench-tests

$(TESTDIRS:%=build-%) build-bench-tests: build-lib | build/ksrc/.done
build-bench-tests:
	$(MAKE) -C bench
$(TESTDIRS:%=build-%):
	$(MAKE) -C $(@:build-%=%)

# The kselftests carry tioctl and tio-bench into the VM.
build-tests/kselftest: build-tools build-bench-tests

man:
	@scripts/man.sh build/man

# Import it with PYTHONPATH=python; pip install --no-build-isolation ./python
# installs it (docs/python.md).
python: build-lib
	$(MAKE) -C python

modules:
	$(MAKE) -C $(KDIR) M=$(top) modules

modules_clean:
	$(MAKE) -C $(KDIR) M=$(top) clean

# make install [PREFIX=/usr/local] [DESTDIR=...]: the libraries
# (libtensorio, libtensorio-tvmffi, libtensorio-net), headers (the uapi
# header included), pkg-config files (tensorio, tensorio-net), tioctl and
# man pages.
PREFIX ?= /usr/local
# The multiarch directory where dpkg knows one (Debian), else lib.
MULTIARCH ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
LIBDIR ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
VERSION := 0.1.0

DOCDIR ?= $(PREFIX)/share/doc/tensorio
COMPLETIONSDIR ?= $(PREFIX)/share/bash-completion/completions
# The public headers include <dlpack/dlpack.h> (Debian: libdlpack-dev).
DLPACK_INCLUDEDIR ?= /usr/include
# Run after installing into the real root (no DESTDIR) so the loader finds
# the new soname.
LDCONFIG ?= ldconfig

install: all
	@test -e $(DLPACK_INCLUDEDIR)/dlpack/dlpack.h || \
		{ echo "install: no $(DLPACK_INCLUDEDIR)/dlpack/dlpack.h (libdlpack-dev; DLPACK_INCLUDEDIR=)"; exit 1; }
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/tensorio \
		$(DESTDIR)$(INCLUDEDIR)/linux $(DESTDIR)$(BINDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man4 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 build/lib/libtensorio.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libtensorio.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtensorio.so.0
	ln -sf libtensorio.so.0 $(DESTDIR)$(LIBDIR)/libtensorio.so
	install -m 0644 build/lib/libtensorio.a $(DESTDIR)$(LIBDIR)/
	install -m 0755 build/lib/libtensorio-tvmffi.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libtensorio-tvmffi.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtensorio-tvmffi.so.0
	ln -sf libtensorio-tvmffi.so.0 $(DESTDIR)$(LIBDIR)/libtensorio-tvmffi.so
	install -m 0755 build/lib/libtensorio-net.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libtensorio-net.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtensorio-net.so.0
	ln -sf libtensorio-net.so.0 $(DESTDIR)$(LIBDIR)/libtensorio-net.so
	install -m 0644 build/lib/libtensorio-net.a $(DESTDIR)$(LIBDIR)/
	install -m 0644 lib/include/tensorio/*.h $(DESTDIR)$(INCLUDEDIR)/tensorio/
	install -m 0644 uapi/linux/tensorio.h $(DESTDIR)$(INCLUDEDIR)/linux/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@DLPACK_INCLUDEDIR@|$(DLPACK_INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|; s|^Libs.private:.*|Libs.private: '"$$($(MAKE) -s -C lib print-ldlibs)"'|' \
	    lib/tensorio.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/tensorio.pc
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|; s|^Libs.private:.*|Libs.private: '"$$($(MAKE) -s -C lib/net print-ldlibs)"'|' \
	    lib/net/tensorio-net.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/tensorio-net.pc
	install -m 0755 build/tools/tioctl $(DESTDIR)$(BINDIR)/
	install -D -m 0644 tools/tioctl.bash-completion $(DESTDIR)$(COMPLETIONSDIR)/tioctl
	install -m 0644 docs/man/libtensorio.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 docs/man/tensorio.4 $(DESTDIR)$(MANDIR)/man4/
	install -m 0644 docs/man/tioctl.8 $(DESTDIR)$(MANDIR)/man8/
	@if scripts/man.sh build/man; then \
		install -m 0644 build/man/man3/*.3 $(DESTDIR)$(MANDIR)/man3/; \
	else \
		echo "install: the per-function man3 pages are left out (see above)"; \
	fi
	install -m 0644 README.md CHANGELOG.md COPYING $(DESTDIR)$(DOCDIR)/
	cp -r docs/*.md LICENSES $(DESTDIR)$(DOCDIR)/
	$(if $(DESTDIR),,$(LDCONFIG))

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
	@echo "make: the test programs need the kselftest headers from Debian's linux-source;" >&2
	@echo "      'make deps' installs it and the other test packages (as root)" >&2
	@exit 1

check: deps
	@scripts/check.sh

run: deps
	@scripts/run.sh

bench: deps tests python
	@scripts/bench.sh

KIND ?= run
bench-report:
	@scripts/bench-report.sh $(KIND)

gpu-bundle: all tests
	@scripts/gpu-bundle.sh build/gpu-bundle

GPU_CHECK_OUT ?= build/gpu-check
gpu-check: gpu-bundle
	@build/gpu-bundle/run.sh $(GPU_CHECK_OUT)

# make fuzz [DURATION=seconds] [SEED=n] [FUZZ_KERNEL=fuzz|debug]
#           [FUZZ_KVER=release] [FUZZ_UPDATE=1]:
# fuzz the driver in a VM, guided by its KCOV coverage (default 3600 s),
# on the fuzz kernel (the debug kernel without KASAN, lockdep and
# kmemleak, several times faster; FUZZ_KERNEL=debug for those checkers,
# which make check's short run has); prints the kmod line coverage and
# inputs per second. FUZZ_UPDATE=1 minimises the corpus into
# tests/fuzz/corpus/kmod (run-fuzz.sh -m -u). docs/fuzzing.md.
DURATION ?= 3600
FUZZ_KERNEL ?= fuzz
fuzz: deps tests
	@tests/fuzz/run-fuzz.sh -d $(DURATION) $(if $(SEED),-s $(SEED)) -v $(FUZZ_KERNEL) \
		$(if $(FUZZ_KVER),-k $(FUZZ_KVER)) $(if $(FUZZ_UPDATE),-m -u)

# Keeps build/ksrc (extracted from linux-source, slow to redo).
clean:
	find build -mindepth 1 -maxdepth 1 ! -name ksrc -exec rm -rf {} + 2>/dev/null || true
	@for d in $(SUBDIRS) python; do $(MAKE) -s -C $$d clean; done

.PHONY: all tests man build-bench-tests $(SUBDIRS:%=build-%) python install install-system modules modules_clean deps check run bench bench-report gpu-bundle gpu-check fuzz clean
