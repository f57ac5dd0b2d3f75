#!/usr/bin/env bash
# The SVG figures as renderers draw them: each figure converted by rsvg-convert (librsvg) and
# screenshot by headless Chromium from file:// with the network cut off; both images must be
# non-blank and carry the heatmap's colours (the cells' fills, read from the figure itself).
# Usage: svg_figures.sh ATTN_TRACE PNG_COLOURS. Exit 77 (skipped) without chromium or
# rsvg-convert.
set -uo pipefail
binary=$1
png_colours=$2
here=$(cd "$(dirname "$0")" && pwd)
screenshot="$here/../support/screenshot.sh"
for tool in "${CHROMIUM:-chromium}" rsvg-convert; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIPPED: $tool is not installed (Debian: apt-get install chromium librsvg2-bin)"
    exit 77
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# Labels with markup, quotes, an ampersand and control characters, as a file may give them.
printf '<b>x</b>,1,2\n"a&b",3,-4\ntab\there\x1b[2J,5,6\n' >"$work/hostile.csv"
long_sentence=$(seq -s ' ' 1 40 | sed 's/[0-9]\+/w&/g')

figure() {  # NAME ARGS...: the figure of the binary's run, or a failure
  local name=$1
  shift
  "$binary" --format svg "$@" >"$work/$name.svg" 2>"$work/$name.err" ||
    { fail "$name: attn-trace exited $?: $(cat "$work/$name.err")"; return 1; }
}

figure attention_weights --steps attention_weights
figure omega --steps omega
figure heads --steps attention_weights --heads 2 --causal -s "a b c" -s "d e"
figure blocks --steps omega "$long_sentence"
figure hostile --steps omega --x "$work/hostile.csv"

for name in attention_weights omega heads blocks hostile; do
  svg="$work/$name.svg"
  [ -s "$svg" ] || continue
  width=$(grep -o -m1 '<svg [^>]*' "$svg" | sed -n 's/.* width="\([0-9]*\)".*/\1/p')
  height=$(grep -o -m1 '<svg [^>]*' "$svg" | sed -n 's/.* height="\([0-9]*\)".*/\1/p')
  # Three of the cells' fills that every renderer must show: the two farthest from white and the
  # one nearest to it, leaving out any that the white page could pass for.
  mapfile -t colours < <(grep -o 'fill="#[0-9a-f]\{6\}"[^>]*class="cell"' "$svg" |
    sed 's/^fill="\(#[0-9a-f]*\)".*/\1/' | sort -u |
    while read -r c; do
      echo "$((765 - 16#${c:1:2} - 16#${c:3:2} - 16#${c:5:2})) $c"
    done | awk '$1 > 60' | sort -k1,1nr -k2 | awk '{print $2}' | sed -n '1,2p;$p' |
    sort -u)
  [ ${#colours[@]} -gt 0 ] || { fail "$name: no coloured cells in the figure"; continue; }
  # A blocks figure's cells are small: fewer pixels each.
  min=40
  [ "$name" = blocks ] && min=15

  # Well-formed XML, where xmllint is installed (libxml2-utils; rsvg-convert parses it anyway).
  if command -v xmllint >/dev/null && ! xmllint --noout --nonet "$svg" 2>"$work/$name.xmllint.err"; then
    fail "$name: not well-formed XML: $(head -n 3 "$work/$name.xmllint.err")"
  fi
  if ! rsvg-convert -o "$work/$name.rsvg.png" "$svg" 2>"$work/$name.rsvg.err"; then
    fail "$name: rsvg-convert refused the figure: $(cat "$work/$name.rsvg.err")"
  elif ! "$png_colours" --min "$min" "$work/$name.rsvg.png" "${colours[@]}" >"$work/$name.rsvg.txt"; then
    fail "$name: rsvg-convert's image lacks the cells' colours: $(tr '\n' ' ' <"$work/$name.rsvg.txt")"
  elif [ "$(sed -n 's/^size //p' "$work/$name.rsvg.txt")" != "$width $height" ]; then
    fail "$name: rsvg-convert drew $(sed -n 's/^size //p' "$work/$name.rsvg.txt"), the figure says $width $height"
  fi

  if ! "$screenshot" "$svg" "$work/$name.chromium.png" "$width" "$height"; then
    fail "$name: chromium made no screenshot"
    continue
  fi
  if ! "$png_colours" --min "$min" "$work/$name.chromium.png" "${colours[@]}" >"$work/$name.chromium.txt"; then
    fail "$name: chromium's screenshot lacks the cells' colours: $(tr '\n' ' ' <"$work/$name.chromium.txt")"
  fi
  # Not blank: the cells, the text and the legend cover a good part of the page.
  non_background=$(sed -n 's/^non-background //p' "$work/$name.chromium.txt")
  [ "${non_background:-0}" -gt $((width * height / 20)) ] ||
    fail "$name: chromium's screenshot is nearly blank ($non_background of $((width * height)) pixels drawn)"
  echo "ok: $name ($width x $height): $(tr '\n' ' ' <"$work/$name.chromium.txt")"
done

if [ -n "${ATTN_KEEP_SCREENSHOTS:-}" ]; then
  mkdir -p "$ATTN_KEEP_SCREENSHOTS" && cp "$work"/*.png "$work"/*.svg "$ATTN_KEEP_SCREENSHOTS"/
fi
[ $failures = 0 ]
