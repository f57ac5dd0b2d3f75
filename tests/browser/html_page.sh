#!/usr/bin/env bash
# The HTML lesson (--format html) in a real browser: Debian's chromium, headless, with the network
# off. For each variant: the page holds no http(s) URL; its self-test (#selftest:I,J) finds every
# step, opens each weight step's working through hover and focus events, presses the keys (p, →,
# ←, space) and draws the lines; each working equals `attn-trace --explain I,J`'s text; no error
# reaches the console or the page's error marker; the DOM is ready within the virtual time budget.
# Then the page's layout in windows of a projector's, a laptop's and a small screen's size (a
# script added to the page moves through it as a reader does and measures it): → and a contents
# link show the step's heading below the sticky header, the counter says the heading's number and
# follows the reader's scrolling, projector mode fits a step and its working on the screen, the
# lines fit long and right-to-left words, print leaves no table wider than the page, the canvas's
# tip stays in the window, and the legends and labels name what they show.
# Last, a screenshot of the walkthrough must carry the heatmap's colours (png_colours, libpng).
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
# --run-all-compositor-stages-before-draw: without it, chromium's virtual time stalled now and
# then while a check scrolled and waited for the page's frames on a loaded machine (nav at
# 1280 × 720 beside a busy loop: 4 of 15 runs printed nothing before the timeout; with it, 0 of 45,
# with one or two busy loops).
browse() {
  HOME=$work timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$work/profile" --host-resolver-rules='MAP * ~NOTFOUND' \
    --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' --disable-background-networking \
    --disable-component-update --disable-sync --enable-logging=stderr --v=0 \
    --run-all-compositor-stages-before-draw --virtual-time-budget=20000 "$@"
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

# ---- Layout -----------------------------------------------------------------------------------
# The checks' script, added to the page after its own; it reads which check from the address
# (#layout:NAME) and writes "ok: …" or "FAIL: …" lines in a <pre id="layout-report">.
cat >"$work/layout.js" <<'LAYOUT_JS'
(async () => {
  const out = [];
  const check = (ok, what) => out.push((ok ? 'ok: ' : 'FAIL: ') + what);
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const key = (k) => document.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));
  const header = document.querySelector('header.top');
  const position = document.getElementById('position');
  const current = () => document.querySelector('main > section.current');
  const headingNumber = (s) => {
    const m = /^(\d+)\./.exec(s.querySelector('h2').textContent.trim());
    return m ? +m[1] : null;
  };
  const vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight;
  const r = (x) => Math.round(x);
  // A step's heading shown: below the sticky header and inside the window.
  const headingShown = (s) => {
    const h = s.querySelector('h2').getBoundingClientRect(), bar = header.getBoundingClientRect();
    return h.top >= bar.bottom - 1 && h.bottom <= vh + 1 ? '' :
      s.id + "'s heading at y " + r(h.top) + '..' + r(h.bottom) + ', the header ends at ' + r(bar.bottom);
  };
  const what = location.hash.slice('#layout:'.length);
  try {
    if (what === 'nav') {
      // → through the page: each step's heading below the header, and the counter's number is
      // the heading's.
      const stops = document.querySelectorAll('main > section').length;
      const hidden = [], numbers = [];
      for (let k = 1; k < stops; ++k) {
        key('ArrowRight');
        await sleep(30);
        const s = current();
        const shown = headingShown(s);
        if (shown) hidden.push(shown);
        const n = headingNumber(s), c = /\d+/.exec(position.textContent);
        if (n !== null && (!c || +c[0] !== n)) {
          numbers.push('heading ' + n + ', counter "' + position.textContent + '"');
        }
      }
      check(hidden.length === 0, '→ shows each heading below the header ' + hidden.slice(0, 2).join('; '));
      check(numbers.length === 0, "the counter's number is the heading's " + numbers.slice(0, 2).join('; '));
      // A contents link, then →: the step after the link's.
      window.scrollTo(0, 0);
      await sleep(200);
      const link = document.querySelector('.toc a[href="#s4"]');
      link.click();
      await sleep(300);
      const s4 = document.getElementById('s4');
      const shown = headingShown(s4);
      check(!shown, 'a contents link shows the heading below the header ' + shown);
      key('ArrowRight');
      await sleep(30);
      check(current().id === 's5', '→ after the contents link to #s4 goes to #s5, not #' + current().id);
      // Scrolled by hand to step 3's start, → goes to step 4.
      const s2 = document.getElementById('s2');
      window.scrollTo(0, s2.getBoundingClientRect().top + window.scrollY - header.offsetHeight);
      await sleep(300);
      key('ArrowRight');
      await sleep(30);
      check(current().id === 's3', '→ after scrolling to #s2 goes to #s3, not #' + current().id);
    } else if (what === 'projector') {
      // Projector mode on the first weights: a compact header, a title as large as the body, the
      // matrix and its working (after a hover on its last cell) inside the window, the column
      // header and row labels beside a scrolled cell.
      key('p');
      await sleep(100);
      const step = document.querySelector('section[data-id="attention_weights"]');
      for (let k = 0; k < 60 && current() !== step; ++k) key('ArrowRight');
      await sleep(100);
      const bar = header.getBoundingClientRect();
      check(bar.height <= 64, 'projector: the header is ' + r(bar.height) + ' px high (at most 64)');
      const title = parseFloat(getComputedStyle(step.querySelector('h2')).fontSize);
      const body = parseFloat(getComputedStyle(step.querySelector('.desc')).fontSize);
      check(title >= body, 'projector: the title is ' + title + ' px, the text ' + body + ' px');
      const box = step.querySelector('.scroll');
      const b = box.getBoundingClientRect();
      const rows = Array.from(box.querySelectorAll('tbody tr'));
      const bottom = Math.min(b.bottom, vh);
      const seen = rows.filter((tr) => tr.getBoundingClientRect().bottom <= bottom + 1 &&
                                       tr.getBoundingClientRect().top >= bar.bottom - 1).length;
      check(seen >= Math.min(rows.length, 6), 'projector: ' + seen + ' of the ' + rows.length +
            ' rows in the window (at least 6)');
      const last = rows[rows.length - 1], td = last.cells[last.cells.length - 1];
      td.scrollIntoView({ block: 'nearest', inline: 'nearest' });
      await sleep(50);
      td.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
      await sleep(50);
      const c = td.getBoundingClientRect();
      const col = box.querySelector('thead tr').cells[last.cells.length - 1].getBoundingClientRect();
      const row = last.cells[0].getBoundingClientRect();
      check(col.top >= bar.bottom - 1 && col.bottom <= c.top + 1 && row.right <= c.left + 1 &&
            row.left >= 0 && c.bottom <= vh + 1,
            'projector: the last cell (y ' + r(c.top) + ', x ' + r(c.left) + ') with its key (y ' +
            r(col.top) + ') and its token (x ' + r(row.left) + ') in view');
      const w = document.getElementById('w' + step.id.slice(1)).getBoundingClientRect();
      check(w.top >= bar.bottom - 1 && w.bottom <= vh + 1 && w.height > 100,
            'projector: the working at y ' + r(w.top) + '..' + r(w.bottom) + ' in the window (' + vh + ')');
    } else if (what === 'lines') {
      // The lines of a long or right-to-left word: no sideways scroll, every label and weight
      // inside the picture, each key's weight right of its label.
      check(document.documentElement.scrollWidth <= vw, 'lines: the page is ' +
            document.documentElement.scrollWidth + ' px wide in a ' + vw + ' px window');
      const svg = document.querySelector('#lines-view svg'), box = svg.getBoundingClientRect();
      const texts = Array.from(svg.querySelectorAll('text'));
      const outside = texts.filter((t) => {
        const b = t.getBoundingClientRect();
        return b.left < box.left - 1 || b.right > box.right + 1 || b.right > vw;
      });
      check(outside.length === 0, 'lines: ' + outside.length + ' labels outside the picture ' +
            outside.slice(0, 2).map((t) => t.textContent.slice(0, 30)).join(', '));
      const rows = new Map();  // a key's texts, by their line
      for (const t of texts) {
        if (t.closest('g.q')) continue;
        const y = t.getAttribute('y');
        if (!rows.has(y)) rows.set(y, []);
        rows.get(y).push(t);
      }
      const wrong = [];
      for (const ts of rows.values()) {
        const chars = [];  // [character, left, right] in the DOM's order
        for (const t of ts) {
          const s = t.textContent;
          for (let i = 0; i < t.getNumberOfChars(); ++i) {
            const e = t.getExtentOfChar(i);
            chars.push([s[i], e.x, e.x + e.width]);
          }
          chars.push([' ', 0, 0]);
        }
        const text = chars.map((c) => c[0]).join('');
        const m = /(-?\d+\.\d+|nan|-?inf)\s*$/.exec(text);
        if (!m) { wrong.push('no weight in "' + text + '"'); continue; }
        const label = chars.slice(0, m.index).filter((c) => c[0].trim());
        const weight = chars.slice(m.index, m.index + m[1].length);
        const labelRight = Math.max(...label.map((c) => c[2])), weightLeft = Math.min(...weight.map((c) => c[1]));
        if (weightLeft < labelRight - 0.5) wrong.push('"' + text.trim().slice(0, 40) + '"');
      }
      check(wrong.length === 0, "lines: each key's weight right of its label " + wrong.slice(0, 3).join(', '));
    } else if (what === 'print') {
      // The print stylesheet, on the screen at a page's width: every table inside the page, and
      // every cell of the wide ones printed.
      for (const sheet of document.styleSheets) {
        for (const rule of sheet.cssRules) if (rule.media && rule.media.mediaText === 'print') rule.media.mediaText = 'all';
      }
      await sleep(100);
      const shown = (e) => e.getClientRects().length > 0;
      const tables = Array.from(document.querySelectorAll('table.m')).filter(shown);
      const wide = tables.filter((t) => t.getBoundingClientRect().right > vw + 1);
      check(wide.length === 0, 'print: ' + wide.length + ' tables wider than the page, ' +
            wide.slice(0, 1).map((t) => r(t.getBoundingClientRect().width) + ' px').join(''));
      let want = 0;
      for (const t of document.querySelectorAll('.scroll > table.m')) want += t.querySelectorAll('tbody td').length;
      const got = tables.reduce((n, t) => n + t.querySelectorAll('tbody td').length, 0);
      check(got === want, 'print: ' + got + ' of ' + want + ' cells printed');
    } else if (what === 'canvas') {
      // A canvas's last cell at the window's bottom: the tip inside the window, naming the row's
      // token and the column's key.
      const canvas = document.querySelector('canvas');
      window.scrollTo(0, canvas.getBoundingClientRect().bottom + window.scrollY - vh + 2);
      await sleep(100);
      const b = canvas.getBoundingClientRect();
      canvas.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: b.right - 1, clientY: b.bottom - 1 }));
      await sleep(50);
      const tip = document.getElementById('tip'), t = tip.getBoundingClientRect();
      check(!tip.hidden && t.top >= 0 && t.left >= 0 && t.bottom <= vh && t.right <= vw,
            'canvas: the tip at ' + r(t.left) + ',' + r(t.top) + '..' + r(t.right) + ',' + r(t.bottom) +
            ' in a ' + vw + ' × ' + vh + ' window');
      const n = canvas.height, m = canvas.width;
      check(tip.textContent.includes('token ' + n) && tip.textContent.includes('key ' + m),
            'canvas: the tip "' + tip.textContent + '" names token ' + n + ' and key ' + m);
      // The rulers: each number at the middle of its column (above) or row (left), every step-th
      // and the first (unless every second is), within 1.5 px; none drawn over the canvas.
      const ticks = (sel) => [...canvas.parentNode.querySelectorAll(sel + ' span')];
      const tops = ticks('.ax-top'), lefts = ticks('.ax-left');
      const first = (t) => t.length >= 2 && (t[0].textContent === '1' || t[0].textContent === '2');
      check(first(tops) && first(lefts), 'canvas: rulers of ' + tops.length + ' and ' + lefts.length +
            ' numbers, from ' + tops[0]?.textContent + ' and ' + lefts[0]?.textContent);
      const cw = b.width - 2, ch = b.height - 2;  // inside its border
      const off = [];
      for (const t of tops) {
        const k = Number(t.textContent), q = t.getBoundingClientRect();
        const want = b.left + 1 + (k - 0.5) / m * cw;
        if (Math.abs((q.left + q.right) / 2 - want) > 1.5 || q.bottom > b.top) off.push('column ' + k);
      }
      for (const t of lefts) {
        const k = Number(t.textContent), q = t.getBoundingClientRect();
        const want = b.top + 1 + (k - 0.5) / n * ch;
        if (Math.abs((q.top + q.bottom) / 2 - want) > 1.5 || q.right > b.left) off.push('row ' + k);
      }
      check(off.length === 0, 'canvas: ruler numbers off their cells: ' + off.slice(0, 4).join(', '));
    } else if (what === 'words') {
      // Legends name the cells they leave uncoloured; the lines' selector names what it lists.
      const wrong = [];
      for (const s of document.querySelectorAll('section.step[data-id]')) {
        const kinds = new Set(Array.from(s.querySelectorAll('td.nf'), (td) => td.textContent));
        const note = (s.querySelector('.legend .lnote') || { textContent: '' }).textContent;
        if ((note.includes('−inf') && !kinds.has('-inf')) || (kinds.has('nan') && !note.includes('nan'))) {
          wrong.push(s.id + ' (' + Array.from(kinds).join(' ') + '): ' + note);
        }
      }
      check(wrong.length === 0, 'legends: ' + wrong.slice(0, 2).join('; '));
      const select = document.getElementById('lines-work');
      const label = Array.from(select.closest('label').childNodes)
        .filter((n) => n !== select).map((n) => n.textContent).join('');
      const options = Array.from(select.options, (o) => o.textContent).join(' ');
      check(['sentence', 'head'].every((w) => !options.includes(w) || label.includes(w)),
            'lines: the selector "' + label.trim() + '" lists ' + options);
    } else {
      check(false, 'no such check: ' + what);
    }
  } catch (e) {
    check(false, 'exception: ' + e);
  }
  out.push('layout done');
  const pre = document.createElement('pre');
  pre.id = 'layout-report';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
})();
LAYOUT_JS

# chromium's window is taller than the page's viewport by its (headless) frame: measured once, so
# that a check asks for the viewport it names.
printf '<!DOCTYPE html><body><script>document.body.textContent = "viewport " + innerHeight;</script>' \
  >"$work/viewport.html"
viewport=$(browse --window-size=800,600 --dump-dom "file://$work/viewport.html" 2>/dev/null |
  grep -o 'viewport [0-9]*' | grep -o '[0-9]*$')
frame=$((600 - ${viewport:-600}))

# layout_check NAME CHECK WIDTH HEIGHT ARGS...: check CHECK of layout.js on the page of
# `attn-trace --format html ARGS` in a WIDTH × HEIGHT viewport.
layout_check() {
  local name=$1 check=$2 width=$3 height=$4
  shift 4
  local page=$work/layout_$name.html
  if ! "$binary" --format html "$@" >"$page.orig" 2>"$work/$name.err"; then
    fail "layout $name: attn-trace --format html $* failed: $(cat "$work/$name.err")"
    return
  fi
  awk -v js="$work/layout.js" '
    /^<\/body>$/ { print "<script>"; while ((getline l < js) > 0) print l; print "</script>" }
    { print }' "$page.orig" >"$page"
  # An empty dump (chromium stopped by the timeout) is tried once more.
  local attempt
  for attempt in 1 2; do
    browse --window-size="$width,$((height + frame))" --dump-dom "file://$page#layout:$check" \
      >"$work/layout_$name.dom" 2>"$work/layout_$name.log"
    [ -s "$work/layout_$name.dom" ] && break
    echo "layout $name: chromium printed nothing (attempt $attempt)"
  done
  sed -n '/<pre id="layout-report"/,/<\/pre>/p' "$work/layout_$name.dom" |
    sed 's/<[^>]*>//g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g' >"$work/layout_$name.report"
  grep -q '^layout done' "$work/layout_$name.report" ||
    fail "layout $name ($width × $height): the check did not finish"
  while IFS= read -r line; do
    fail "layout $name ($width × $height): ${line#FAIL: }"
  done < <(grep '^FAIL: ' "$work/layout_$name.report")
  if grep -q 'CONSOLE' "$work/layout_$name.log"; then
    fail "layout $name: console messages: $(grep 'CONSOLE' "$work/layout_$name.log" | head -5)"
  fi
  echo "layout $name ($width × $height): $(grep -c '^ok: ' "$work/layout_$name.report") checks passed"
}

forty='sat cat brown dog money bank money lazy mat dog money the lazy river the bank brown quick'
forty+=' dog jumps the the the house the lazy mat river the tree quick bank money house quick over'
forty+=' quick quick bank fox'
long=supercalifragilisticexpialidociouspneumonoultramicroscopicsilicovolcanoconiosis
for size in "1280 720" "800 600" "1920 1080"; do
  # shellcheck disable=SC2086
  layout_check "nav_${size% *}" nav $size
done
layout_check projector_1280 projector 1280 720
layout_check projector_800 projector 800 600 '我们 😀 naïve été שלום مرحبا ab c 123 ... tree x y'
layout_check projector_1920 projector 1920 1080 "$forty"
layout_check lines_long lines 800 600 "$long is a $long word"
layout_check lines_rtl lines 1280 720 "שלום world مرحبا بالعالم hello"
layout_check print print 718 1000 "$forty"
layout_check canvas canvas 1280 720 "$(seq -f 'w%g' 1 100 | tr '\n' ' ')"
# The same canvas scaled down to a phone's width: its rulers stay with its cells.
layout_check canvas_narrow canvas 400 800 "$(seq -f 'w%g' 1 100 | tr '\n' ' ')"
layout_check words words 1280 720 -s 'a b c d e f g' -s 'x' -s '我们 喜欢' --masked-rows nan

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
