#!/bin/sh
# Screenshot an HTML report (iopath bench --html FILE) with headless Chromium.
# Usage: scripts/report-screenshot.sh REPORT.html OUT.png [WIDTH [HEIGHT]]
#   WIDTH defaults to 1280 and HEIGHT to 1600 (the header and the first charts).
# Example: scripts/report-screenshot.sh /tmp/report.html docs/report.png
# Chromium runs with a throwaway profile and a dead proxy, so the page cannot
# reach the network (it has no reason to: the report is self-contained).
set -eu

if [ $# -lt 2 ] || [ $# -gt 4 ]; then
	echo "usage: $0 REPORT.html OUT.png [WIDTH [HEIGHT]]" >&2
	exit 2
fi
html=$1
out=$2
width=${3:-1280}
height=${4:-1600}

if [ ! -f "$html" ]; then
	echo "$0: $html: no such file" >&2
	exit 1
fi

chrome=
for c in chromium chromium-browser google-chrome google-chrome-stable; do
	if command -v "$c" >/dev/null 2>&1; then
		chrome=$(command -v "$c")
		break
	fi
done
if [ -z "$chrome" ]; then
	echo "$0: chromium not found: apt-get install -y chromium" >&2
	exit 1
fi

abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
case $out in
/*) png=$out ;;
*) png=$(pwd)/$out ;;
esac
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

# timeout(1) stops a Chromium that hangs; --kill-after makes sure it goes.
timeout --kill-after=5 60 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run \
	--disable-extensions --hide-scrollbars --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' \
	--user-data-dir="$profile" --window-size="$width,$height" --screenshot="$png" \
	"file://$abs" >/dev/null 2>&1 || {
	echo "$0: chromium failed (exit $?)" >&2
	exit 1
}
if [ ! -s "$png" ]; then
	echo "$0: chromium wrote no screenshot" >&2
	exit 1
fi
echo "$png (${width}x${height})"
