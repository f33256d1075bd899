#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Guest smoke test for make check: every driver benchmark once, briefly
# (--fast), as TAP. Installed into build/kselftest by bench/Makefile so the
# kselftest VM boot runs it; timings are not asserted, only that each case
# runs or says why it is skipped.
exec ./tio-bench --fast --tap --suite overhead
