#!/usr/bin/env bash
# bench.sh times examples/wc against GNU wc, wall clock, on warm data:
#
#   1 GiB of random bytes   wc -l FILE           vs GNU wc -l FILE
#   1 GiB of Go source      wc -l FILE, wc FILE  vs GNU wc -l FILE, wc FILE
#   $(go env GOROOT)/src    wc DIR               vs find DIR -type f -print0 | xargs -0 wc
#
# Runs are interleaved (ours, GNU, ours, GNU, ...) so that the noise of a
# shared machine hits both alike; it prints each side's median and the
# ratio GNU/ours (above 1: ours is faster), and the medians of CPU time
# (user + system), which the machine's load disturbs less. Both run with
# LC_ALL=C. The load average is printed before and after: on a machine
# where other work takes a core, ours cannot use two.
#
#   examples/wc/bench.sh            # RUNS=7 by default
#   RUNS=11 examples/wc/bench.sh
#
# The files are made once in /var/tmp (RAND_FILE, TEXT_FILE to choose
# others) and kept for the next run.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
runs=${RUNS:-7}
rand=${RAND_FILE:-/var/tmp/iopath-wc-1g.dat}
text=${TEXT_FILE:-/var/tmp/iopath-wc-text-1g.txt}
tree=${TREE:-$(go env GOROOT)/src}
gib=1073741824

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$repo" && go build -o "$work/wc" ./examples/wc)
ours=$work/wc
gnu=$(command -v wc)
export LC_ALL=C

if [[ ! -f $rand ]]; then
	(cd "$repo" && go run ./cmd/iopath gen "$rand" --size 1GiB)
fi
if [[ ! -f $text ]]; then
	# Go source, file after file in lexical order, again and again, cut at
	# 1 GiB: text with the line density of real code.
	find "$tree" -type f -name '*.go' -print0 | sort -z | xargs -0 cat >"$work/src.go.txt"
	: >"$text.part"
	while (($(stat -c %s "$text.part") < gib)); do
		cat "$work/src.go.txt" >>"$text.part"
	done
	truncate -s "$gib" "$text.part"
	mv "$text.part" "$text"
fi

# Warm: every byte read once, so that both sides read from the page cache.
cat "$rand" "$text" >/dev/null
find "$tree" -type f -print0 | xargs -0 cat >/dev/null

# Sanity: same numbers. For the tree GNU's output is split into several
# wc runs by xargs (several totals, widths), so compare the file lines only.
for args in "-l $rand" "-l $text" "$text"; do
	# shellcheck disable=SC2086
	if [[ $("$ours" $args) != $("$gnu" $args) ]]; then
		echo "bench.sh: our wc $args differs from GNU's" >&2
		exit 1
	fi
done
if ! diff <("$ours" "$tree" | awk '$NF != "total" {print $1, $2, $3, $4}' | sort) \
	<(find "$tree" -type f -print0 | xargs -0 "$gnu" | awk '$NF != "total" {print $1, $2, $3, $4}' | sort) >/dev/null; then
	echo "bench.sh: our wc $tree differs from GNU's on the same files" >&2
	exit 1
fi

# one CMD: the wall time of one run of CMD (a shell command line), and
# its CPU time (user + system, its children's included) when
# /usr/bin/time is there to say it.
one() {
	local t0 t1
	t0=$(date +%s%N)
	if [[ -x /usr/bin/time ]]; then
		/usr/bin/time -f '%U %S' -o "$work/cpu" bash -c "$1" >/dev/null
	else
		bash -c "$1" >/dev/null
		echo "0 0" >"$work/cpu"
	fi
	t1=$(date +%s%N)
	echo "$(echo "scale=4; ($t1 - $t0) / 1000000000" | bc) $(awk '{print $1 + $2}' "$work/cpu")"
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# compare NAME OURS GNU: RUNS interleaved runs of each; medians of wall
# and CPU time.
compare() {
	local name=$1 a=$2 b=$3 i
	: >"$work/a"
	: >"$work/b"
	for ((i = 0; i < runs; i++)); do
		one "$a" >>"$work/a"
		one "$b" >>"$work/b"
	done
	local wa wb ca cb
	wa=$(cut -d' ' -f1 "$work/a" | median)
	wb=$(cut -d' ' -f1 "$work/b" | median)
	ca=$(cut -d' ' -f2 "$work/a" | median)
	cb=$(cut -d' ' -f2 "$work/b" | median)
	printf '%-32s wall: ours %6.3fs GNU %6.3fs GNU/ours %5.2fx   CPU: ours %6.2fs GNU %6.2fs\n' \
		"$name" "$wa" "$wb" "$(echo "scale=4; $wb / $wa" | bc)" "$ca" "$cb"
}

echo "runs: $runs each, interleaved; medians; $(nproc) CPUs; $("$gnu" --version | head -1); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
compare "wc -l, 1 GiB random bytes" "$ours -l $rand" "$gnu -l $rand"
compare "wc -l, 1 GiB Go source" "$ours -l $text" "$gnu -l $text"
compare "wc, 1 GiB Go source" "$ours $text" "$gnu $text"
compare "wc DIR, $tree" "$ours $tree" "find $tree -type f -print0 | xargs -0 $gnu"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
