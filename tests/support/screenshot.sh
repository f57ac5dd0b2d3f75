#!/usr/bin/env bash
# screenshot.sh FILE OUT.png WIDTH HEIGHT [CHROMIUM-FLAG...]: FILE (an .svg or .html on disk)
# loaded from file:// in headless Chromium, with the network cut off (every host name fails to
# resolve, every connection goes to a closed proxy), in sRGB, and its first WIDTH x HEIGHT pixels
# written to OUT.png. Extra flags go to Chromium (--force-dark-mode, for instance). Exit 0 when
# OUT.png was written; Chromium's own chatter (D-Bus, GPU) is dropped unless it fails.
# CHROMIUM overrides the browser (default: chromium, Debian's).
set -uo pipefail
file=$1 out=$2 width=$3 height=$4
shift 4
browser=${CHROMIUM:-chromium}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$out"
log=$(timeout 90 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$profile" --force-color-profile=srgb --hide-scrollbars \
  --host-resolver-rules="MAP * ~NOTFOUND" --proxy-server=127.0.0.1:9 \
  --disable-background-networking --disable-component-update --disable-sync \
  --window-size="$width,$height" --screenshot="$out" "$@" \
  "file://$(realpath "$file")" 2>&1)
status=$?
if [ $status != 0 ] || [ ! -s "$out" ]; then
  echo "screenshot.sh: chromium failed (exit $status) on $file:" >&2
  printf '%s\n' "$log" | tail -n 20 >&2
  exit 1
fi
