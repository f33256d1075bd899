#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Print the kernel releases the project tests against: the newest installed
# Debian headers of each major.minor series, oldest series first.
for h in /usr/src/linux-headers-*-amd64; do
	[ -e "$h/Module.symvers" ] && echo "${h#/usr/src/linux-headers-}"
done | sort -V | awk -F. '{ s = $1 "." $2; last[s] = $0; if (!(s in seen)) { seen[s] = 1; order[++n] = s } }
	END { for (i = 1; i <= n; i++) print last[order[i]] }'
