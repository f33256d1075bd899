#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The docs against the tree: README.md's C quick start is
# examples/quickstart.c and runs, its Python quick start runs
# (PYTHONPATH=python, after make python), every figure row it quotes is in
# docs/results/, every relative Markdown link of README.md, docs/ and
# tests/README.md reaches a file (and a heading, for #anchors), every
# tioctl command the docs name is one tioctl has, every script they name
# exists, and no doc says "issue N" or "stop N". TAP output.
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/include/tap.sh"
cd "$top" || exit 1
docs=(README.md docs/*.md docs/results/*.md tests/README.md)
echo "TAP version 13"

# The first fenced block of a language in README.md.
block() {
	awk -v lang="$1" '$0 == "```" lang { on = 1; next }
		on && /^```/ { exit } on' README.md
}

block c >"$tmp/readme.c"
sed -n '/^#include/,$p' examples/quickstart.c >"$tmp/example.c"
t "README's C quick start is examples/quickstart.c from its first #include" \
	diff -u "$tmp/example.c" "$tmp/readme.c"
t "... and runs on the user backend" 0 "^backend user; point 1, status 0; 1 tensor in " \
	env TIO_BACKEND=user build/examples/quickstart "$tmp/q.safetensors"

block python >"$tmp/quick.py"
if ls python/tensorio/_tensorio*.so >/dev/null 2>&1; then
	t "README's Python quick start runs (PYTHONPATH=python)" 0 "^2.0 user$" \
		env TIO_BACKEND=user PYTHONPATH=python /usr/bin/python3 "$tmp/quick.py"
else
	n=$((n + 1)); echo "ok $n # SKIP no python extension (make python)"
fi

# Table rows README quotes under "Figures" are rows of a results file.
missing=$(awk '/^## Figures/ { on = 1; next } /^## / { on = 0 } on && /^\| /' README.md |
	while IFS= read -r row; do
		grep -qxF -- "$row" docs/results/*.md || echo "$row"
	done)
t "every figure README quotes is a row of docs/results/" test -z "$missing"
[ -z "$missing" ] || echo "# not in docs/results: $missing"

# GitHub's anchor of a heading: lower case, punctuation dropped, spaces to -.
anchors() {
	grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ //; s/`//g' | tr 'A-Z' 'a-z' |
		sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}
miss=
for f in "${docs[@]}"; do
	dir=$(dirname "$f")
	# Links outside code: fenced blocks and `spans` dropped first.
	for link in $(awk '/^```/ { code = !code; next } !code' "$f" | sed -E 's/`[^`]*`//g' |
		      grep -oE '\]\([^)#[:space:]]*(#[^)[:space:]]*)?\)' |
		      sed -E 's/^\]\(//; s/\)$//' | grep -vE '^(https?|mailto):'); do
		path=${link%%#*} anchor=
		[[ $link == *#* ]] && anchor=${link#*#}
		target=$f
		[ -n "$path" ] && target=$dir/$path
		if [ ! -e "$target" ]; then
			miss+="$f: $link (no $target) "
		elif [ -n "$anchor" ] && [ -f "$target" ] &&
		     ! anchors "$target" | grep -qxF -- "$anchor"; then
			miss+="$f: $link (no heading #$anchor in $target) "
		fi
	done
done
t "every relative link in the docs reaches a file and a heading" test -z "$miss"
[ -z "$miss" ] || echo "# $miss"

have=$(build/tools/tioctl --help 2>&1 | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
miss=
for c in $(grep -ohE '`tioctl [a-z][a-z-]*' "${docs[@]}" | awk '{ print $2 }' | sort -u); do
	grep -qxF -- "$c" <<<"$have" || miss+="$c "
done
t "every tioctl command the docs name is in tioctl --help" test -z "$miss"
[ -z "$miss" ] || echo "# unknown tioctl commands: $miss"

miss=
for s in $(grep -ohE '\b(scripts|bench|tests/[a-z]+)/[A-Za-z0-9_.-]+\.(sh|py)\b' "${docs[@]}" | sort -u); do
	[ -e "$s" ] || miss+="$s "
done
t "every script the docs name exists" test -z "$miss"
[ -z "$miss" ] || echo "# missing scripts: $miss"

t "no doc says \"issue N\" or \"stop N\" (history goes to CHANGELOG.md)" 1 "" \
	grep -rniE '\b(issue|stop) [0-9]+' "${docs[@]}"
echo "1..$n"
exit $fail
