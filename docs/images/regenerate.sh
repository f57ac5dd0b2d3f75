#!/usr/bin/env bash
# Regenerates every image the docs show, from the binary; none is made by hand.
#
#   docs/images/regenerate.sh [ATTN_TRACE]     (default: build/ci/app/attn-trace)
#
# Run it from anywhere after building, and commit what changed in docs/images/. Needs tmux, aha,
# chromium (Debian's; headless, file:// only, the network cut off) and rsvg-convert — the README's
# install line has them all. It writes:
#   attention_weights.svg      the walkthrough's attention weights: --format svg (README, tutorial)
#   heatmap-never.png, heatmap-256.png, heatmap-24bit.png
#                              the terminal's heatmap of the weights in its three colour modes
#                              (--color never, 256, 24bit): run in tmux, captured with its escapes
#                              (capture-pane -e), turned into HTML by aha, screenshot by Chromium
#   page-light.png, page-dark.png      (--heads 2 --causal --steps attention_weights)
#                              the --format html page in a light and a dark colour scheme; only
#                              when the binary has --format html (skipped with a message if not)
# The same binary gives the same SVG bytes; the PNGs depend on the fonts installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/docs/images"
binary=$(realpath "${1:-$root/build/ci/app/attn-trace}")
screenshot="$root/tests/support/screenshot.sh"
for tool in "$binary" tmux aha chromium rsvg-convert; do
  command -v "$tool" >/dev/null || { echo "regenerate.sh: $tool is missing" >&2; exit 1; }
done
work=$(mktemp -d)
socket="$work/tmux.sock"
trap 'tmux -S "$socket" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$root"

# 1. The SVG figure, checked by a second renderer besides the browsers that show it.
"$binary" --format svg --steps attention_weights >"$out/attention_weights.svg"
rsvg-convert -o "$work/attention_weights.png" "$out/attention_weights.svg"
echo "wrote docs/images/attention_weights.svg"

# 2. The terminal's heatmap in each colour mode, as a terminal of 80 columns shows it.
for mode in never 256 24bit; do
  tmux -S "$socket" -f /dev/null new-session -d -s "heatmap-$mode" -x 80 -y 30 \
    "TERM=xterm-256color '$binary' --format heatmap --color $mode --steps attention_weights; tmux -S '$socket' wait-for -S done-$mode; sleep 60"
  tmux -S "$socket" wait-for "done-$mode"
  tmux -S "$socket" capture-pane -e -p -t "heatmap-$mode" >"$work/$mode.ansi"
  tmux -S "$socket" kill-session -t "heatmap-$mode"
  # Trailing blank lines off; the prompt's line is the command, as a reader would type it.
  sed -i -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$work/$mode.ansi"
  lines=$(($(wc -l <"$work/$mode.ansi") + 1))
  {
    printf '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><style>\n'
    printf 'body{margin:0;padding:12px 14px;background:#1d1f21;color:#d8d8d8}\n'
    printf 'pre{margin:0;font:14px/18px "DejaVu Sans Mono",monospace}\n'
    printf '.prompt{color:#8fbf7f}\n</style></head><body><pre>'
    printf '<span class="prompt">$ attn-trace --format heatmap --color %s --steps attention_weights</span>\n' "$mode"
    # aha draws black (30) as dim grey and bright white (97) through a CSS filter that its next
    # span drops: the two foregrounds the heatmap uses go to aha as explicit colours instead.
    sed -e 's/\x1b\[30m/\x1b[38;2;0;0;0m/g' -e 's/\x1b\[97m/\x1b[38;2;255;255;255m/g' \
      "$work/$mode.ansi" | aha --no-header
    printf '</pre></body></html>\n'
  } >"$work/$mode.html"
  "$screenshot" "$work/$mode.html" "$out/heatmap-$mode.png" 700 $((lines * 18 + 24))
  echo "wrote docs/images/heatmap-$mode.png"
done

# 3. The HTML page, light and dark: only once the binary can write it.
# The causal weights of two heads: the run's header, the steps' list and the first heatmap.
if "$binary" --format html --heads 2 --causal --steps attention_weights >"$work/page.html" \
  2>"$work/page.err"; then
  "$screenshot" "$work/page.html" "$out/page-light.png" 1000 1150 \
    --blink-settings=preferredColorScheme=1
  "$screenshot" "$work/page.html" "$out/page-dark.png" 1000 1150 \
    --force-dark-mode --blink-settings=preferredColorScheme=0
  echo "wrote docs/images/page-light.png, page-dark.png"
else
  echo "skipped page-light.png and page-dark.png: this attn-trace has no --format html" \
    "($(head -n 1 "$work/page.err"))"
fi
