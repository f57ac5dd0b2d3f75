#!/usr/bin/env bash
# The HTML lesson (--format html) in a real browser: Debian's chromium, headless, with the network
# off. For each variant: the page holds no http(s) URL; its self-test (#selftest:I,J) finds every
# step, opens each weight step's working through hover and focus events, presses the keys (p, →,
# ←, space) and draws the lines; each working equals `attn-trace --explain I,J`'s text; no error
# reaches the console or the page's error marker; the DOM is ready within the virtual time budget.
# Then a screenshot of the walkthrough must carry the heatmap's colours (png_colours, libpng).
# Usage: html_page.sh ATTN_TRACE PNG_COLOURS. Exits 77 (skipped) without chromium.
set -u
binary=$1
png_colours=$2
chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $chromium ]]; then
  echo "SKIPPED: chromium is not installed (apt-get install chromium)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# chromium, headless, no network: every host resolves to nothing and any proxy is a closed port.
browse() {
  HOME=$work timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$work/profile" --host-resolver-rules='MAP * ~NOTFOUND' \
    --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' --disable-background-networking \
    --disable-component-update --disable-sync --enable-logging=stderr --v=0 \
    --virtual-time-budget=20000 "$@"
}

# The whitespace of a text collapsed, so that wrapped and unwrapped lines compare equal.
flat() { tr -s ' \n' '  ' | sed 's/^ //; s/ $//'; }

# check_variant NAME I J ARGS...: the page of `attn-trace --format html ARGS` against
# `attn-trace --explain I,J ARGS`.
check_variant() {
  local name=$1 i=$2 j=$3
  shift 3
  local page=$work/$name.html
  if ! "$binary" --format html "$@" >"$page" 2>"$work/$name.err"; then
    fail "$name: attn-trace --format html $* failed: $(cat "$work/$name.err")"
    return
  fi
  if grep -Eq 'https?://' "$page"; then
    fail "$name: the page has a URL: $(grep -Eo 'https?://[^" ]*' "$page" | head -3)"
  fi
  local start end
  start=$(date +%s%N)
  browse --dump-dom "file://$page#selftest:$i,$j" >"$work/$name.dom" 2>"$work/$name.log"
  end=$(date +%s%N)
  local dom=$work/$name.dom
  # The self-test's report: the <pre id="selftest"> that the page's script filled (the script's own
  # source is in the DOM too, so only the report is read).
  sed -n '/<pre id="selftest"/,/<\/pre>/p' "$dom" | sed 's/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g' \
    >"$work/$name.selftest"
  local report=$work/$name.selftest
  echo "$name: $(wc -c <"$page") bytes, loaded and tested in $(((end - start) / 1000000)) ms" \
    "(chromium's start included); page script $(grep -o 'ready in [0-9]* ms' "$report")"
  grep -q '^selftest done' "$report" || fail "$name: the self-test did not finish (virtual time budget?)"
  if grep -q '^FAIL: ' "$report"; then
    fail "$name: self-test: $(grep '^FAIL: ' "$report")"
  fi
  grep -q '<div id="page-errors" hidden=""></div>' "$dom" ||
    fail "$name: the page caught an error: $(sed -n '/id="page-errors"/,/<\/div>/p' "$dom" | head -5)"
  if grep -q 'CONSOLE' "$work/$name.log"; then
    fail "$name: console messages: $(grep 'CONSOLE' "$work/$name.log" | head -5)"
  fi
  # The workings in the DOM, one per weight step, against --explain's blocks in the same order
  # (sentence by sentence, head by head).
  awk '/^working [0-9]+:$/ {n++; on = 1; next} /^end working$/ {on = 0} on {print > (dir "/page." n)}' \
    dir="$work" "$work/$name.selftest"
  # --explain takes the same arguments but the softmax's steps (it shows them itself).
  local explain_args=()
  for a in "$@"; do [[ $a == --softmax-steps ]] || explain_args+=("$a"); done
  "$binary" --explain "$i,$j" "${explain_args[@]}" 2>&1 |
    awk '/^A[₀₁₂₃₄₅₆₇₈₉]+,[₀₁₂₃₄₅₆₇₈₉]+:/ {n++} n {print > (dir "/explain." n)}' dir="$work"
  local blocks=0
  for f in "$work"/explain.*; do
    [[ -e $f ]] || { fail "$name: --explain printed no working"; break; }
    local k=${f##*.}
    blocks=$((blocks + 1))
    if [[ ! -e $work/page.$k ]]; then
      fail "$name: the page has no working $k"
    elif [[ $(flat <"$f") != "$(flat <"$work/page.$k")" ]]; then
      fail "$name: working $k differs from --explain $i,$j:"
      diff <(fold -w 100 <"$f") <(fold -w 100 <"$work/page.$k") | head -20
    fi
  done
  [[ -e $work/page.$((blocks + 1)) ]] && fail "$name: the page has more workings than --explain"
  rm -f "$work"/explain.* "$work"/page.*
}

check_variant walkthrough 2 5
check_variant heads_causal 3 2 --heads 2 --causal
check_variant causal_other_way 4 4 --causal --softmax-steps
check_variant cross 2 3 --cross "the cat sat on a mat"
check_variant batch 2 2 -s "Life is short, eat dessert first" -s "eat dessert" --causal
check_variant split 1 3 --heads 2 --multihead split --d-out 4
check_variant init_linear 2 1 --init linear --precision 2
# A sentence that would end the page's data early, or keep it from ending ("<!--" then
# "<script"), were its "<" written as they are.
check_variant markup 1 2 '<!--<script> x </script> y'
check_variant long 300 7 --vocab-size 1000 "$(seq -f 'w%g' 1 512 | tr '\n' ' ')"

# A screenshot of the walkthrough: not blank, and carrying the heatmap's colours (the ramps'
# anchors, from the page's data).
page=$work/walkthrough.html
"$binary" --format html >"$page"
anchors=$(grep -o '"ramps":\[\[.*\]\]\]' "$page" | grep -o '\[[0-9]*,[0-9]*,[0-9]*\]' |
  tr -d '[]' | awk -F, '{printf "#%02x%02x%02x\n", $1, $2, $3}' | grep -v -e f7f7f7 -e d1e5f0 -e fddbc7)
browse --screenshot="$work/shot.png" --window-size=1200,3000 "file://$page" >/dev/null 2>&1
if [[ ! -s $work/shot.png ]]; then
  fail "no screenshot"
else
  # shellcheck disable=SC2086
  "$png_colours" --tolerance 12 "$work/shot.png" $anchors >"$work/colours"
  distinct=$(awk '$1 == "distinct" { print $2 }' "$work/colours")
  near=$(awk '$1 ~ /^#/ { n += $2 } END { print n + 0 }' "$work/colours")
  echo "screenshot: $near pixels near the palettes' colours, $distinct distinct colours"
  ((distinct > 50)) || fail "the screenshot looks blank: $distinct distinct colours"
  ((near > 2000)) || fail "the screenshot has few heatmap colours: $near pixels"
fi

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all variants passed"
