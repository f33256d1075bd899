# SPDX-License-Identifier: GPL-2.0
# Sourced by the reliability guest scripts (tests/{fuzz,fault,stress}).

# Small limits so that the VM (1 GiB, KASAN) never runs out of memory.
tio_limits() {
	p=/sys/module/tensorio/parameters
	echo $((4 << 20)) >$p/max_buf_size
	echo $((64 << 20)) >$p/max_pinned
	# Short fence bounds: exported and attached points expire meanwhile.
	echo 300 >$p/fence_timeout_ms
	ulimit -n 4096
}

# TAP: the driver's debugfs counters are back to zero once every file is
# closed (dma-buf and file releases may be deferred: wait up to 5 s).
tio_counters_zero() {
	s=/sys/kernel/debug/tensorio/stats
	if [ ! -r $s ]; then
		echo "ok - $1: driver counters back to zero # SKIP no debugfs stats"
		return 0
	fi
	i=0
	while [ $i -lt 50 ]; do
		# fences_expired counts events, not live objects.
		bad=$(awk '$1 != "fences_expired" && $2 != 0' $s)
		[ -z "$bad" ] && break
		sleep 0.1
		i=$((i + 1))
	done
	if [ -z "$bad" ]; then
		echo "ok - $1: driver counters back to zero"
	else
		echo "not ok - $1: driver counters back to zero"
		sed "s/^/# stats: /" $s
		tio_files_report
		return 1
	fi
}

# On failure: which files are still open.
tio_files_report() {
	for f in /sys/kernel/debug/tensorio/files/*/stats; do
		[ -r "$f" ] && sed "s|^|# ${f%/stats}: |" "$f"
	done
}
