#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# man.sh OUTDIR: one man3 page per documented function (and function-like
# macro) of the public headers, from their kernel-doc comments through the
# kernel's own scripts/kernel-doc -man, into OUTDIR/man3. kernel-doc's
# warnings go to stderr and fail the run, as does an exported symbol of
# lib/libtensorio.map without a page. A function that returns a value
# must say what (kernel-doc -v: "Return:").
#
# kernel-doc: $KERNEL_DOC, else build/ksrc/scripts/kernel-doc (make deps
# extracts it from Debian's linux-source), else taken from the
# linux-source tarball when one is installed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: man.sh OUTDIR}
kdoc=${KERNEL_DOC:-$top/build/ksrc/scripts/kernel-doc}
if [ ! -e "$kdoc" ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.* 2>/dev/null | sort -V | tail -1)
	if [ -z "$tarball" ]; then
		echo "man.sh: no scripts/kernel-doc: install linux-source-6.1 (make deps) or set KERNEL_DOC" >&2
		exit 1
	fi
	mkdir -p "$top/build/ksrc"
	tar -xf "$tarball" -C "$top/build/ksrc" --strip-components=1 \
		"$(basename "${tarball%.tar.*}")/scripts/kernel-doc"
fi
version=$(sed -n 's/^VERSION := //p' "$top/Makefile")
date=$(git -C "$top" log -1 --format=%cd --date=format:'%Y-%m-%d' 2>/dev/null || date +%F)
rm -rf "$out/man3" && mkdir -p "$out/man3"
warn=$(mktemp)
raw=$(mktemp)
trap 'rm -f "$warn" "$raw"' EXIT
for h in $(grep -l "^/\*\*" "$top"/lib/include/tensorio/*.h); do
	hdr=tensorio/$(basename "$h")
	# -v adds "no description for the return value" (a page without a
	# RETURN section); its notes and its "contents before sections" (a
	# paragraph in a function without parameters) are dropped.
	perl "$kdoc" -man -v "$h" 2>"$raw" |
	awk -v dir="$out/man3" -v hdr="$hdr" -v ver="tensorio $version" -v date="$date" '
		# One .TH per documented item: a function or macro is named
		# by its own identifier, a struct/enum/typedef page is dropped.
		/^\.TH / {
			if (f) close(f)
			f = ""
			# The whole first quoted field: a struct page is titled
			# "Kernel API", which must not become Kernel.3.
			if (!match($0, /^\.TH "[^"]*"/))
				next
			name = substr($0, 6, RLENGTH - 6)
			if (name !~ /^[A-Za-z_][A-Za-z0-9_]*$/)
				next
			f = dir "/" name ".3"
			printf ".TH \"%s\" 3 \"%s\" \"%s\" \"tensorio Library Functions\"\n", name, date, ver > f
			next
		}
		!f { next }
		/^\.SH SYNOPSIS/ {
			print > f
			printf ".B #include <%s>\n.sp\n", hdr > f
			next
		}
		{ gsub(/"TIO_(API|INLINE) /, "\""); print > f }
		END { if (f) close(f) }'
	grep -v -e ': info: ' -e 'contents before sections' -e '^[0-9]* warnings\?$' \
		"$raw" >>"$warn" || true
done
# An SEE ALSO pointing at the overview page, in every page.
for p in "$out"/man3/*.3; do
	printf '.SH "SEE ALSO"\n.BR libtensorio (3)\n' >>"$p"
done
if [ -s "$warn" ]; then
	sed 's|^'"$top"'/||' "$warn" >&2
	exit 1
fi
missing=0
for sym in $(sed -n 's/^[[:space:]]*\(tio_[a-z0-9_]*\);$/\1/p' "$top/lib/libtensorio.map"); do
	[ -e "$out/man3/$sym.3" ] && continue
	echo "man.sh: exported $sym has no kernel-doc comment in lib/include/tensorio/" >&2
	missing=1
done
exit $missing
