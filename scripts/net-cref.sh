#!/bin/bash
# Measure iopath's epoll and io_uring echo servers against the same designs
# written in C (netio/netbench/testdata/cref), so that a gap between
# io_uring and epoll can be told apart from a gap between Go and C.
#
# Usage: scripts/net-cref.sh [-r RUNS] [-d DURATION] [-u 'BUFSIZE NBUFS BUNDLE'] [POINT...]
#   POINT is CONNSxSIZExMODE, for example 1000x64xstream or 1x1024xpipeline:16;
#   without one, the 36 points of `iopath net bench`'s default matrix.
#   RUNS (default 3) rounds alternate the four servers at each point;
#   DURATION (default 2s) is each run's measured window, after 1 s of warm-up.
#   -u sets the C io_uring server's provided buffers (default '4096 4096 1':
#   4096 buffers of 4 KiB, bundle RECVs, as iopath's engine has them).
#
# Each server runs alone on CPU 1 (the Go ones with one event loop and
# GOMAXPROCS 2, as `net bench` runs them), the load generator (`iopath net
# load`, which verifies every byte) on CPU 0. It prints each run, then per
# point the medians of server CPU µs per request and of the paired ratios:
#   uring÷epoll in C, uring÷epoll in iopath, and iopath÷C for each design;
# and, with more than one point, the median of each ratio over the points.
# Needs: cc, liburing's header (Debian: liburing-dev), go, jq, taskset,
# and io_uring. Ctrl-C stops it and its servers.
set -euo pipefail

runs=3
dur=2s
uring_args="4096 4096 1"
while getopts r:d:u: o; do
	case $o in
	r) runs=$OPTARG ;;
	d) dur=$OPTARG ;;
	u) uring_args=$OPTARG ;;
	*)
		echo "usage: $0 [-r RUNS] [-d DURATION] [-u 'BUFSIZE NBUFS BUNDLE'] [CONNSxSIZExMODE...]" >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
[[ $uring_args =~ ^[0-9]+\ [0-9]+\ [01]$ ]] || { echo "$0: -u '$uring_args': want 'BUFSIZE NBUFS BUNDLE', as '65536 256 0'" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "$0: -r $runs: want a whole number of runs, 1 or more" >&2; exit 2; }
for tool in cc go jq taskset; do
	command -v $tool >/dev/null || { echo "$0: $tool: not found" >&2; exit 1; }
done
points=("$@")
if [ ${#points[@]} -eq 0 ]; then
	for c in 1 100 1000 10000; do for s in 64 1024 16384; do for m in pingpong pipeline:16 stream; do
		points+=("${c}x${s}x${m}")
	done; done; done
fi
for p in "${points[@]}"; do
	[[ $p =~ ^[0-9]+x[0-9]+x[a-z:0-9]+$ ]] || { echo "$0: point $p: want CONNSxSIZExMODE, as 1000x64xstream" >&2; exit 2; }
done

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
server=
cleanup() {
	set +e # a server that Ctrl-C stopped too has a status wait reports
	[ -n "$server" ] && kill "$server" 2>/dev/null
	[ -n "$server" ] && wait "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

src=$root/netio/netbench/testdata/cref
cc -O2 -Wall -o "$tmp/epoll_echo" "$src/epoll_echo.c"
cc -O2 -Wall -o "$tmp/uring_echo" "$src/uring_echo.c" -luring
(cd "$root" && go build -o "$tmp/iopath" ./cmd/iopath)
servers=(c-epoll c-uring go-epoll go-uring)
declare -A cmd=(
	[c-epoll]="$tmp/epoll_echo 0"
	[c-uring]="$tmp/uring_echo 0 $uring_args"
	[go-epoll]="env GOMAXPROCS=2 $tmp/iopath net serve -e epoll --loops 1 --addr 127.0.0.1:0"
	[go-uring]="env GOMAXPROCS=2 $tmp/iopath net serve -e io_uring --loops 1 --addr 127.0.0.1:0"
)

# run SERVER CONNS SIZE MODE sets result to the server's CPU µs per
# request. It runs in this shell, so that the traps above know the server.
run() {
	taskset -c 1 ${cmd[$1]} >"$tmp/out" 2>"$tmp/err" &
	server=$!
	local addr=
	for _ in $(seq 100); do
		addr=$(grep -o 'listening on [^ ]*' "$tmp/out" 2>/dev/null | cut -d' ' -f3) && [ -n "$addr" ] && break
		kill -0 $server 2>/dev/null || break
		sleep 0.05
	done
	if [ -z "$addr" ]; then
		echo "$0: $1 did not start: $(head -c 300 "$tmp/err")" >&2
		exit 1
	fi
	local out
	out=$(taskset -c 0 "$tmp/iopath" net load --addr "$addr" --conns "$2" --size "$3" --mode "$4" \
		--duration "$dur" --warmup 1s --server-pid $server --format json 2>"$tmp/lerr") || {
		echo "$0: $1 at $2×$3 B $4: $(tail -1 "$tmp/lerr")" >&2
		exit 1
	}
	kill $server && wait $server 2>/dev/null || true
	server=
	result=$(jq -r '.server_cpu_us_per_req * 1000 | round / 1000' <<<"$out")
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {printf "%.3f", NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

declare -A point_ratio=()
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1); $(uname -r); C io_uring buffers: $uring_args"
for p in "${points[@]}"; do
	IFS=x read -r conns size mode <<<"$p"
	declare -A cpu=() ratio=()
	for r in $(seq "$runs"); do
		declare -A v=()
		for s in "${servers[@]}"; do
			run "$s" "$conns" "$size" "$mode"
			v[$s]=$result
			cpu[$s]+="${v[$s]} "
		done
		printf '%s run %d: c-epoll %s, c-uring %s, go-epoll %s, go-uring %s µs/req\n' "$p" "$r" \
			"${v[c-epoll]}" "${v[c-uring]}" "${v[go-epoll]}" "${v[go-uring]}"
		ratio[c]+="$(jq -n "${v[c-uring]} / ${v[c-epoll]}") "
		ratio[go]+="$(jq -n "${v[go-uring]} / ${v[go-epoll]}") "
		ratio[epoll]+="$(jq -n "${v[go-epoll]} / ${v[c-epoll]}") "
		ratio[uring]+="$(jq -n "${v[go-uring]} / ${v[c-uring]}") "
	done
	for k in c go epoll uring; do
		m=$(median <<<"${ratio[$k]}")
		point_ratio[$k]+="$m "
		ratio[$k]=$m
	done
	printf '%s: µs/req c-epoll %s, c-uring %s, go-epoll %s, go-uring %s; uring÷epoll: C %s, iopath %s; iopath÷C: epoll %s, uring %s\n' "$p" \
		"$(median <<<"${cpu[c-epoll]}")" "$(median <<<"${cpu[c-uring]}")" "$(median <<<"${cpu[go-epoll]}")" "$(median <<<"${cpu[go-uring]}")" \
		"${ratio[c]}" "${ratio[go]}" "${ratio[epoll]}" "${ratio[uring]}"
done
if [ ${#points[@]} -gt 1 ]; then
	printf 'median of the %d points: uring÷epoll: C %s, iopath %s; iopath÷C: epoll %s, uring %s\n' ${#points[@]} \
		"$(median <<<"${point_ratio[c]}")" "$(median <<<"${point_ratio[go]}")" "$(median <<<"${point_ratio[epoll]}")" "$(median <<<"${point_ratio[uring]}")"
fi
