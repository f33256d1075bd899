#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Every SPDX-License-Identifier in the tracked files names a licence (and
# exception) whose text is in LICENSES/. Prints the offenders; exit 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."
known=$(sed -n 's/^Valid-License-Identifier: *//p; s/^SPDX-Exception-Identifier: *//p' \
	LICENSES/*/* | sort -u)
bad=0
while IFS=: read -r file ids; do
	for id in $ids; do
		[ "$id" = WITH ] && continue
		grep -qxF -- "$id" <<<"$known" && continue
		echo "$file: no text in LICENSES/ for '$id'"
		bad=1
	done
done < <(git grep -I -o -m1 -e 'SPDX-License-Identifier: .*' -- . ':!LICENSES' |
	 sed -E 's/SPDX-License-Identifier: *//; s/ *(\*\/|-->)? *$//')
[ -n "$(git ls-files COPYING)" ] || { echo "COPYING is not tracked"; bad=1; }
exit $bad
