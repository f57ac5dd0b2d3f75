// The lesson page's script: the workings of the weights (--explain's numbers, from the page's
// data), the large heatmaps on canvases, the attention as lines, the keys and the projector mode,
// and a self-test (the page's address ending in #selftest) for the browser tests.
'use strict';
(function () {
  const errors = document.getElementById('page-errors');
  function fail(message) {
    errors.hidden = false;
    errors.textContent += 'page error: ' + message + '\n';
  }
  window.addEventListener('error', (e) => fail(e.message + ' at ' + e.lineno));
  window.addEventListener('unhandledrejection', (e) => fail(String(e.reason)));
  const started = performance.now();

  // ---- The data: every float32 exact --------------------------------------------------------
  const D = JSON.parse(document.getElementById('attn-data').textContent);
  const special = { nan: NaN, inf: Infinity, '-inf': -Infinity };
  for (const m of D.mats) {
    const v = new Float64Array(m.v.length);
    for (let k = 0; k < v.length; ++k) {
      const x = m.v[k];
      v[k] = typeof x === 'number' ? x : special[x];
    }
    m.v = v;
  }
  const num = (x) => (typeof x === 'number' ? x : special[x]);
  const P = D.precision;
  const at = (m, i, j) => D.mats[m].v[i * D.mats[m].c + j];

  // ---- Numbers as the tool prints them ----------------------------------------------------------
  // x at p decimals, rounded as fmt's {:.pf} rounds the exact binary value (half to even); a value
  // that rounds to zero has no minus sign.
  function fixed(x, p) {
    if (Number.isNaN(x)) return 'nan';
    if (x === Infinity) return 'inf';
    if (x === -Infinity) return '-inf';
    const a = Math.abs(x);
    const s = a >= 1e21 ? BigInt(a).toString() + '.0' : a.toFixed(100);  // exact
    const dot = s.indexOf('.');
    const frac = (s.slice(dot + 1) + '0'.repeat(p + 1));
    let digits = s.slice(0, dot) + frac.slice(0, p);
    const rest = frac.slice(p);
    const first = rest.charCodeAt(0) - 48;
    const last = digits.charCodeAt(digits.length - 1) - 48;
    if (first > 5 || (first === 5 && (/[1-9]/.test(rest.slice(1)) || last % 2 === 1))) {
      const d = digits.split('');
      let i = d.length - 1;
      for (; i >= 0 && d[i] === '9'; --i) d[i] = '0';
      if (i < 0) d.unshift('1'); else d[i] = String.fromCharCode(d[i].charCodeAt(0) + 1);
      digits = d.join('');
    }
    let out = p > 0 ? digits.slice(0, digits.length - p) + '.' + digits.slice(digits.length - p)
                    : digits;
    if (x < 0 && /[1-9]/.test(out)) out = '-' + out;
    return out;
  }
  // A number in a written-out sum; a negative factor in parentheses (render_common's number()).
  const number = (x, factor) => {
    const s = fixed(x, P);
    return factor && s[0] === '-' ? '(' + s + ')' : s;
  };
  const SUB = '₀₁₂₃₄₅₆₇₈₉', SUP = '⁰¹²³⁴⁵⁶⁷⁸⁹';
  const subscript = (n) => String(n).split('').map((c) => SUB[+c]).join('');
  const sup = (name, i) => name + '⁽' + String(i).split('').map((c) => SUP[+c]).join('') + '⁾';
  const sub2 = (name, i, j) => name + subscript(i) + ',' + subscript(j);

  // ---- A weight worked out, line for line as attn-trace --explain I,J prints it --------------------
  function working(w, qi, kj) {
    const W = D.works[w];
    const i = qi + 1, j = kj + 1;
    const dk = D.mats[W.q].c, tk = D.mats[W.scaled].c;
    const aij = sub2('A', i, j), wij = sub2('ω', i, j), si = 's' + subscript(i);
    // PyTorch's index names every dimension of its tensor: the sentence and head first (lead).
    const torch = 'attention_weights[' + W.lead.concat([qi, kj]).join(', ') + ']';
    const L = [];
    L.push(aij + ': how much token ' + i + ' (' + W.queries.reprs[qi] + ') attends to key ' + j +
           ' (' + W.keys.reprs[kj] + ')' + W.where);
    L.push('in PyTorch, which counts from 0: ' + torch);
    L.push('');
    L.push('1. the score ' + wij + ' = ' + sup('q', i) + ' · ' + sup('k', j) + ', term by term');
    for (let d = 0; d < dk; ++d) {
      const q = at(W.q, qi, d), k = at(W.k, kj, d);
      L.push('   ' + number(q, true) + ' × ' + number(k, true) + ' = ' +
             number(Math.fround(q * k), false));  // the float32 product
    }
    const omega = at(W.omega, qi, kj), scaled = at(W.scaled, qi, kj), root = num(W.root);
    L.push('   sum: ' + wij + ' = ' + number(omega, false));
    if (scaled === -Infinity || scaled === Infinity) {
      L.push('2. masked: key ' + j + ' may not be seen from query ' + i + ', so its score is ' +
             '−inf, and so is ' + wij + ' / √' + dk);
    } else {
      L.push('2. scaled: ' + wij + ' / √' + dk + ' = ' + number(omega, false) + ' / ' +
             number(root, false) + ' = ' + number(scaled, false));
    }
    const m = num(W.max[qi]), sum = num(W.sum[qi]);
    const traceWeight = at(W.weights, qi, kj);
    if (m === -Infinity) {
      L.push('3. every key of row ' + i + ' is masked: the softmax of a row of −inf gives ' +
             (D.masked_rows === 'zero' ? '0' : 'nan') + ' (the masked-rows rule ' +
             D.masked_rows + ')');
      L.push("   the trace's " + torch + ' = ' + number(traceWeight, false));
      return L.join('\n');
    }
    let argmax = 0, anyMasked = false;
    for (let t = tk - 1; t >= 0; --t) if (at(W.scaled, qi, t) === m) argmax = t;
    L.push("3. the row's largest scaled score: m" + subscript(i) + ' = ' + number(m, false) +
           ' (key ' + (argmax + 1) + ', ' + W.keys.reprs[argmax] + ')');
    L.push('4. each exponential e' + subscript(i) + ',ⱼ = exp(' + si + ',ⱼ − m' + subscript(i) +
           '), which is at most 1');
    let width = 0;
    for (const r of W.keys.reprs) width = Math.max(width, r.length - 2);
    for (let t = 0; t < tk; ++t) {
      const who = ('key ' + (t + 1) + ' ' + W.keys.reprs[t]).padEnd(width + 10);
      const arrow = t === kj ? '   ← this cell' : '';
      const s = at(W.scaled, qi, t);
      if (s === -Infinity || s === Infinity) {
        anyMasked = true;
        L.push('   ' + who + '  exp(−inf) = 0' + arrow);
      } else {
        L.push('   ' + who + '  exp(' + number(s, false) + ' − ' + number(m, false) + ') = ' +
               number(at(W.exps, qi, t), false) + arrow);
      }
    }
    const e = at(W.exps, qi, kj);
    // PyTorch's kernel: w = e · (1 / Σ), each in float32.
    const weight = Math.fround(e * Math.fround(1 / sum));
    L.push('5. their sum: Σ' + subscript(i) + ' = ' + number(sum, false));
    L.push('6. the weight: ' + aij + ' = e' + sub2('', i, j) + ' / Σ' + subscript(i) + ' = ' +
           number(e, false) + ' / ' + number(sum, false) + ' = ' + number(weight, false));
    L.push("   the trace's " + torch + ' = ' + number(traceWeight, false) +
           (anyMasked ? ' (masked keys add 0 to the sum)' : ''));
    return L.join('\n');
  }

  function showWorking(stepIndex, i, j) {
    const S = D.steps[stepIndex];
    const panel = document.getElementById('w' + stepIndex);
    if (!panel) return;
    let text;
    if (S.work >= 0) {
      text = working(S.work, i, j);
    } else {
      const v = at(S.mat, i, j);
      text = S.id + '[' + i + ', ' + j + '] (row ' + S.rows[i] + ', column ' + S.cols[j] + ') = ' +
             fixed(v, P);
    }
    let pre = panel.querySelector('pre');
    if (!pre) {
      panel.textContent = '';
      pre = document.createElement('pre');
      panel.appendChild(pre);
    }
    pre.textContent = text;
  }

  // ---- Tables: hover, focus or tap a cell; the arrow keys move between cells --------------------
  let selected = null;
  function select(td) {
    if (selected) selected.classList.remove('sel');
    selected = td;
    td.classList.add('sel');
  }
  for (const table of document.querySelectorAll('table.m.w')) {
    const stepIndex = +table.id.slice(1);
    const cells = table.tBodies[0].rows;
    cells[0].cells[1].tabIndex = 0;
    for (const row of cells) for (let c = 1; c < row.cells.length; ++c) {
      const td = row.cells[c];
      if (c > 1 || row !== cells[0]) td.tabIndex = -1;
      td.setAttribute('aria-describedby', 'w' + stepIndex);
    }
    const open = (td) => {
      if (!td || td.tagName !== 'TD') return;
      select(td);
      showWorking(stepIndex, td.parentNode.sectionRowIndex, td.cellIndex - 1);
    };
    table.addEventListener('mouseover', (e) => open(e.target.closest('td')));
    table.addEventListener('focusin', (e) => open(e.target.closest('td')));
    table.addEventListener('click', (e) => open(e.target.closest('td')));
    table.addEventListener('keydown', (e) => {
      const td = e.target.closest('td');
      if (!td) return;
      let r = td.parentNode.sectionRowIndex, c = td.cellIndex;
      if (e.key === 'ArrowRight') ++c; else if (e.key === 'ArrowLeft') --c;
      else if (e.key === 'ArrowDown') ++r; else if (e.key === 'ArrowUp') --r;
      else if (e.key === 'Home') c = 1; else if (e.key === 'End') c = cells[r].cells.length - 1;
      else return;
      e.preventDefault();
      e.stopPropagation();
      if (r < 0 || r >= cells.length || c < 1 || c >= cells[r].cells.length) return;
      td.tabIndex = -1;
      const next = cells[r].cells[c];
      next.tabIndex = 0;
      next.focus();
    });
  }

  // ---- Large matrices on canvases: one pixel per cell, scaled up -----------------------------------
  function rampRgb(ramp, t) {
    const a = D.ramps[ramp];
    const x = Math.min(Math.max(Number.isNaN(t) ? 0.5 : t, 0), 1) * (a.length - 1);
    const i = Math.min(Math.floor(x), a.length - 2), f = x - i;
    return [0, 1, 2].map((c) => Math.round(a[i][c] + (a[i + 1][c] - a[i][c]) * f));
  }
  function scaleT(S, v) {  // render_heatmap_cells.cpp's Scale::t
    if (S.ramp === 1) return S.hi > 0 ? 0.5 + v / (2 * S.hi) : 0.5;
    return S.hi > S.lo ? (v - S.lo) / (S.hi - S.lo) : 0.5;
  }
  const tip = document.getElementById('tip');
  // "token 3 (cat)", "key 7 (mat)", "dimension 2": a canvas's row or column.
  function axisName(S, axis, k) {
    const label = S[axis][k], n = String(k + 1);
    const name = axis === 'rows' ? (label === n ? 'row' : 'token')
                                 : (S.keys ? 'key' : 'column');
    return name + ' ' + n + (label === n ? '' : ' (' + label + ')');
  }
  // The tip beside the pointer, inside the window: to its left or above it near an edge.
  function placeTip(x, y) {
    const w = tip.offsetWidth, h = tip.offsetHeight;
    const vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight;
    let left = x + 14, top = y + 14;
    if (left + w > vw - 4) left = x - 14 - w;
    if (top + h > vh - 4) top = y - 14 - h;
    tip.style.left = Math.max(4, Math.min(left, vw - 4 - w)) + 'px';
    tip.style.top = Math.max(4, Math.min(top, vh - 4 - h)) + 'px';
  }
  // 1, 2, 5, 10, 20, 50, ...: every step-th row or column numbered, so that numbers `gap` pixels
  // apart are at least `room` apart (render_svg.cpp's number_step).
  function numberStep(gap, room) {
    for (let step = 1; ; step *= 10) {
      for (const m of [1, 2, 5]) if (gap * step * m >= room) return step * m;
    }
  }
  // The canvas's rulers: its rows' and columns' numbers (the tokens', from 1, as the tip and the
  // text views number them) above and left of it, every step-th and the first, each at the
  // middle of its cell, so that they stay with their cells when the canvas is scaled down.
  function addRulers(canvas, M, px) {
    const frame = document.createElement('div');
    frame.className = 'axes';
    canvas.parentNode.insertBefore(frame, canvas);
    const ruler = (name, n, step) => {
      const r = document.createElement('div');
      r.className = name;
      r.setAttribute('aria-hidden', 'true');
      for (let k = 0; k < n; ++k) {
        if ((k + 1) % step !== 0 && !(k === 0 && step !== 2)) continue;
        const t = document.createElement('span');
        t.textContent = String(k + 1);
        t.style[name === 'ax-top' ? 'left' : 'top'] = ((k + 0.5) / n * 100).toFixed(4) + '%';
        r.appendChild(t);
      }
      return r;
    };
    const digits = String(Math.max(M.r, M.c)).length;
    frame.append(document.createElement('span'), ruler('ax-top', M.c, numberStep(px, 7 * digits + 8)),
                 ruler('ax-left', M.r, numberStep(px, 16)), canvas);
    frame.style.setProperty('--ax-digits', digits);
  }
  function drawCanvas(stepIndex) {
    const S = D.steps[stepIndex], M = D.mats[S.mat];
    const canvas = document.getElementById('c' + stepIndex);
    canvas.width = M.c;
    canvas.height = M.r;
    const px = Math.max(1, Math.min(8, Math.floor(900 / Math.max(M.c, M.r))));
    canvas.style.width = M.c * px + 'px';
    addRulers(canvas, M, px);
    const ctx = canvas.getContext('2d');
    const img = ctx.createImageData(M.c, M.r);
    for (let k = 0; k < M.v.length; ++k) {
      const v = M.v[k];
      if (!Number.isFinite(v)) continue;  // −inf and nan: not coloured
      const c = rampRgb(S.ramp, scaleT(S, v));
      img.data[4 * k] = c[0]; img.data[4 * k + 1] = c[1]; img.data[4 * k + 2] = c[2];
      img.data[4 * k + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    const cell = (e) => {
      const r = canvas.getBoundingClientRect();
      const j = Math.floor((e.clientX - r.left) / r.width * M.c);
      const i = Math.floor((e.clientY - r.top) / r.height * M.r);
      return i >= 0 && i < M.r && j >= 0 && j < M.c ? [i, j] : null;
    };
    const hover = (e) => {
      const ij = cell(e);
      if (!ij) { tip.hidden = true; return; }
      tip.hidden = false;
      // No room for the tokens beside the canvas's axes (a pixel or a few per cell): the tip
      // names the row's and the column's.
      tip.textContent = axisName(S, 'rows', ij[0]) + ' × ' + axisName(S, 'cols', ij[1]) + ': ' +
                        fixed(at(S.mat, ij[0], ij[1]), P);
      placeTip(e.clientX, e.clientY);
      showWorking(stepIndex, ij[0], ij[1]);
    };
    canvas.addEventListener('mousemove', hover);
    canvas.addEventListener('click', hover);
    canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
    let cur = [0, 0];
    canvas.addEventListener('focus', () => showWorking(stepIndex, cur[0], cur[1]));
    canvas.addEventListener('keydown', (e) => {
      const d = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] }[e.key];
      if (!d) return;
      e.preventDefault();
      e.stopPropagation();
      cur = [Math.min(M.r - 1, Math.max(0, cur[0] + d[0])), Math.min(M.c - 1, Math.max(0, cur[1] + d[1]))];
      showWorking(stepIndex, cur[0], cur[1]);
    });
  }
  D.steps.forEach((S, n) => { if (S.mat >= 0) drawCanvas(n); });

  // ---- The attention as lines (inline SVG, parsed as HTML: no namespace needed) ------------------
  // Queries right-aligned on the left, keys on the right and their weights in a column of their
  // own (so that a right-to-left key cannot move its number); a label wider than LABEL is
  // shortened with an ellipsis, its whole text in a tooltip.
  const linesWork = document.getElementById('lines-work');
  const linesView = document.getElementById('lines-view');
  D.works.forEach((W, n) => {
    const o = document.createElement('option');
    o.value = n;
    o.textContent = W.label;
    linesWork.appendChild(o);
  });
  {
    const heads = D.works.some((W) => W.head !== null);
    const batch = D.works.some((W) => W.batch !== null);
    document.getElementById('lines-work-label').textContent =
        heads && batch ? 'head and sentence:' : batch ? 'sentence:' : 'head:';
  }
  let linesQuery = 0;
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
                      .replace(/"/g, '&quot;');
  const measurer = document.createElement('canvas').getContext('2d');
  // The stylesheet's monospace fonts, from its rules (getComputedStyle would style the whole page
  // before its first paint).
  let mono = 'monospace';
  for (const rule of document.styleSheets[0].cssRules) {
    if (rule.selectorText === ':root' && rule.style.getPropertyValue('--mono')) {
      mono = rule.style.getPropertyValue('--mono').trim();
      break;
    }
  }
  const LINE_FONT = '14px ' + mono;
  // The width of s in a font (setting a canvas's font is slow: only when it changes).
  let measurerFont = '';
  const textWidth = (s, font = LINE_FONT) => {
    if (measurerFont !== font) measurer.font = measurerFont = font;
    return measurer.measureText(s).width;
  };
  let segmenter = null;  // made when a label is first shortened
  const graphemes = (s) => {
    if (!segmenter && typeof Intl === 'object' && Intl.Segmenter) {
      segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
    }
    return segmenter ? Array.from(segmenter.segment(s), (g) => g.segment) : Array.from(s);
  };
  const LABEL = 180;
  function shorten(s, max) {
    if (textWidth(s) <= max) return s;
    const g = graphemes(s);
    let lo = 0, hi = g.length - 1;  // the most graphemes that fit with the ellipsis
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (textWidth(g.slice(0, mid).join('') + '…') <= max) lo = mid; else hi = mid - 1;
    }
    return g.slice(0, lo).join('') + '…';
  }
  function drawLines() {
    const W = D.works[+linesWork.value || 0];
    if (!W) return;
    const tq = D.mats[W.weights].r, tk = D.mats[W.weights].c, h = 24;
    const height = Math.max(tq, tk) * h + 16;
    const qs = W.queries.words.map((w) => shorten(w, LABEL));
    const ks = W.keys.words.map((w) => shorten(w, LABEL));
    const ws = [];
    for (let j = 0; j < tk; ++j) ws.push(fixed(at(W.weights, linesQuery, j), P));
    const widest = (a) => a.reduce((m, t) => Math.max(m, textWidth(t)), 0);
    const qx = 8 + Math.ceil(widest(qs)), x1 = qx + 10, x2 = x1 + 210, kx = x2 + 10;
    const wx = kx + Math.ceil(widest(ks)) + 14, width = wx + Math.ceil(widest(ws)) + 8;
    const title = (full, shown) => (full === shown ? '' : '<title>' + esc(full) + '</title>');
    // Projector mode fits the picture to the screen, but no smaller than its own size.
    const parts = ['<svg viewBox="0 0 ' + width + ' ' + height + '" width="' + width +
                   '" height="' + height + '" preserveAspectRatio="xMinYMin meet" ' +
                   'style="--lines-min: ' + height + 'px" role="group" aria-label="query ' +
                   (linesQuery + 1) + ' to every key">'];
    for (let j = 0; j < tk; ++j) {
      const w = at(W.weights, linesQuery, j);
      const ww = Number.isFinite(w) ? w : 0;
      parts.push('<line x1="' + x1 + '" y1="' + (14 + linesQuery * h) + '" x2="' + x2 + '" y2="' +
                 (14 + j * h) + '" stroke-width="' + (0.5 + 9 * ww).toFixed(2) +
                 '" stroke-opacity="' + (0.15 + 0.85 * ww).toFixed(3) + '"></line>');
      parts.push('<g class="k">' + title(W.keys.words[j], ks[j]) + '<text x="' + kx + '" y="' +
                 (19 + j * h) + '">' + esc(ks[j]) + '</text><text class="wt" x="' + wx + '" y="' +
                 (19 + j * h) + '">' + ws[j] + '</text></g>');
    }
    for (let i = 0; i < tq; ++i) {
      parts.push('<g class="q' + (i === linesQuery ? ' on' : '') + '" tabindex="0" role="button" ' +
                 'aria-pressed="' + (i === linesQuery) + '">' + title(W.queries.words[i], qs[i]) +
                 '<text x="' + qx + '" y="' + (19 + i * h) + '" text-anchor="end">' + esc(qs[i]) +
                 '</text></g>');
    }
    linesView.innerHTML = parts.join('') + '</svg>';
    linesView.querySelectorAll('g.q').forEach((g, i) => {
      const choose = () => {
        linesQuery = i;
        drawLines();
        linesView.querySelectorAll('g.q')[i].focus();
      };
      g.addEventListener('click', choose);
      g.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter' && e.key !== ' ') return;
        e.preventDefault();
        e.stopPropagation();
        choose();
      });
    });
  }
  linesWork.addEventListener('change', () => { linesQuery = 0; drawLines(); });
  drawLines();

  // ---- Steps, keys and the projector -------------------------------------------------------------
  // The stops of → and ←: the run, the steps (numbered 1 to M, as their headings are) and the
  // lines. The current stop follows the reader's scrolling: it is the one at the top of the view.
  const sections = Array.from(document.querySelectorAll('main > section'));
  const projector = document.getElementById('projector');
  const position = document.getElementById('position');
  const header = document.querySelector('header.top');
  const stepCount = sections.filter((s) => /^s\d+$/.test(s.id)).length;
  const inProjector = () => document.body.classList.contains('projector');
  // The sticky header's height, as the page's scroll-padding-top: a step scrolled to (→, a
  // contents link, a focused cell) starts below it. Measured again when the header's size
  // changes (the window's width, projector mode): the observer's first call is after the first
  // layout, which the page's script does not force.
  function measureHeader() {
    document.documentElement.style.scrollPaddingTop =
        Math.ceil(header.getBoundingClientRect().height) + 'px';
  }
  if (window.ResizeObserver) {
    new ResizeObserver(measureHeader).observe(header);
  } else {
    measureHeader();
    window.addEventListener('resize', measureHeader);
  }
  function stopName(k) {
    const s = sections[k], m = /^s(\d+)$/.exec(s.id);
    if (m) return 'step ' + (+m[1] + 1) + ' of ' + stepCount;
    if (s.id === 'intro') return 'the run, before step 1 of ' + stepCount;
    return 'the lines, after step ' + stepCount + ' of ' + stepCount;
  }
  let current = 0, scrolledTo = null;
  function setCurrent(n) {
    current = Math.max(0, Math.min(sections.length - 1, n));
    sections.forEach((s, k) => s.classList.toggle('current', k === current));
    position.textContent = stopName(current);
  }
  function go(n) {
    setCurrent(n);
    if (!inProjector()) {
      sections[current].scrollIntoView({ block: 'start' });  // below the header: scroll-padding-top
    } else {
      window.scrollTo(0, 0);
    }
    scrolledTo = window.scrollY;  // this scroll is ours: it does not move the current stop
  }
  // The stop at the top of the view: the last section that starts above a line a little below
  // the header.
  function stopInView() {
    const bar = header.getBoundingClientRect().bottom;
    const line = bar + Math.min(120, (document.documentElement.clientHeight - bar) / 4);
    let k = 0;
    sections.forEach((s, n) => { if (s.getBoundingClientRect().top <= line) k = n; });
    return k;
  }
  // The current stop, after the reader's own scrolling (the wheel, a contents link, the find
  // bar): the counter follows it as the page scrolls, and → and ← start from it.
  function followScroll() {
    if (inProjector()) return current;
    if (scrolledTo !== null && Math.abs(window.scrollY - scrolledTo) < 2) return current;
    scrolledTo = null;
    const k = stopInView();
    if (k !== current) setCurrent(k);
    return current;
  }
  let scrollQueued = false;
  window.addEventListener('scroll', () => {
    if (scrollQueued) return;
    scrollQueued = true;
    requestAnimationFrame(() => { scrollQueued = false; followScroll(); });
  }, { passive: true });
  function toggleProjector() {
    followScroll();  // the projector starts at the step in view
    const on = document.body.classList.toggle('projector');
    projector.setAttribute('aria-pressed', on ? 'true' : 'false');
    measureHeader();
    go(current);
  }
  document.getElementById('next').addEventListener('click', () => go(followScroll() + 1));
  document.getElementById('prev').addEventListener('click', () => go(followScroll() - 1));
  projector.addEventListener('click', toggleProjector);
  document.addEventListener('keydown', (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const tag = e.target && e.target.tagName;
    if (tag === 'SELECT' || tag === 'INPUT' || tag === 'TEXTAREA') return;
    const projecting = inProjector();
    if (e.key === 'p' || e.key === 'P') toggleProjector();
    else if (e.key === 'ArrowRight' || e.key === 'PageDown' || (e.key === ' ' && projecting)) {
      go(followScroll() + 1);
    } else if (e.key === 'ArrowLeft' || e.key === 'PageUp') go(followScroll() - 1);
    else if (e.key === 'Escape' && projecting) toggleProjector();
    else return;
    e.preventDefault();
  });
  setCurrent(0);  // a page opened scrolled (a reload, an address with #s4) sends a scroll event

  // ---- Print: a table wider than a printed page, also as bands of its columns -------------------
  // Each band is as wide as the page allows (A4 or Letter with the default margins, at the print
  // stylesheet's 8pt) and repeats the row labels; the print stylesheet shows the bands instead.
  // Made after the page is ready (or before it prints, if that is sooner).
  let banded = false;
  function makeBands() {
    if (banded) return;
    banded = true;
    const PAGE = 680, FONT = '10.67px ' + mono, PAD = 10;
    const width = (cell) => textWidth(cell.textContent, FONT) + PAD;
    for (const table of document.querySelectorAll('.scroll > table.m')) {
      const head = table.tHead.rows[0], body = Array.from(table.tBodies[0].rows);
      const cols = head.cells.length - 1;
      // At most two columns of the 8pt font per character (wide characters): narrow enough?
      const most = (row) => {
        let n = 0;
        for (const cell of row.cells) n += 2 * 6.4 * cell.textContent.length + PAD;
        return n;
      };
      if (Math.max(most(head), ...body.map(most)) <= PAGE) continue;
      // Each column's width, the row labels' first.
      const colW = [];
      for (let c = 0; c <= cols; ++c) {
        let w = width(head.cells[c]);
        for (const row of body) w = Math.max(w, width(row.cells[c]));
        colW.push(w);
      }
      const labelW = colW[0];
      if (colW.reduce((a, b) => a + b, 0) <= PAGE) continue;
      const bands = document.createElement('div');
      bands.className = 'bands';
      let from = 0;
      while (from < cols) {
        let to = from, used = labelW;
        while (to < cols && (to === from || used + colW[to + 1] <= PAGE)) used += colW[++to];
        const band = document.createElement('table');
        band.className = 'm';
        const caption = table.caption.cloneNode(true);
        caption.textContent += '; columns ' + (from + 1) + '–' + to + ' of ' + cols;
        band.appendChild(caption);
        for (const [src, section] of [[[head], 'thead'], [body, 'tbody']]) {
          const part = document.createElement(section);
          for (const row of src) {
            const tr = document.createElement('tr');
            tr.appendChild(row.cells[0].cloneNode(true));
            for (let c = from + 1; c <= to; ++c) {
              const cell = row.cells[c].cloneNode(true);
              cell.removeAttribute('tabindex');
              cell.removeAttribute('aria-describedby');
              cell.classList.remove('sel');
              tr.appendChild(cell);
            }
            part.appendChild(tr);
          }
          band.appendChild(part);
        }
        bands.appendChild(band);
        from = to;
      }
      table.parentNode.classList.add('banded');
      table.parentNode.after(bands);
    }
  }
  window.addEventListener('beforeprint', makeBands);
  setTimeout(makeBands, 0);

  const readyMs = performance.now() - started;

  // ---- The self-test: #selftest or #selftest:I,J ---------------------------------------------------
  if (location.hash.startsWith('#selftest')) {
    const out = [];
    const check = (ok, what) => out.push((ok ? 'ok: ' : 'FAIL: ') + what);
    const shown = document.querySelectorAll('section.step[data-id]').length;
    check(shown === D.steps.length, 'steps ' + shown + ' of ' + D.steps.length);
    const m = /#selftest:(\d+),(\d+)/.exec(location.hash);
    const qi = m ? +m[1] - 1 : 0, kj = m ? +m[2] - 1 : 0;
    // Each weight step's working, through the events a reader's hover and focus send.
    D.steps.forEach((S, n) => {
      if (S.id !== 'attention_weights' || S.work < 0) return;
      const table = document.getElementById('t' + n);
      if (table) {
        const td = table.tBodies[0].rows[qi].cells[kj + 1];
        td.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
        const hovered = document.getElementById('w' + n).textContent;
        document.getElementById('w' + n).textContent = '';
        td.focus();
        td.dispatchEvent(new FocusEvent('focusin', { bubbles: true }));
        check(document.getElementById('w' + n).textContent === hovered && hovered.length > 0,
              'step ' + n + ': hover and focus give the same working');
      } else {
        const canvas = document.getElementById('c' + n);
        const r = canvas.getBoundingClientRect(), M = D.mats[S.mat];
        canvas.dispatchEvent(new MouseEvent('mousemove', {
          bubbles: true, clientX: r.left + (kj + 0.5) * r.width / M.c,
          clientY: r.top + (qi + 0.5) * r.height / M.r }));
        check(!tip.hidden && tip.textContent.endsWith(fixed(at(S.mat, qi, kj), P)),
              'step ' + n + ': the canvas tip shows the value');
      }
      out.push('working ' + n + ':');
      out.push(document.getElementById('w' + n).textContent);
      out.push('end working');
    });
    // The script colours a value as the C++ ramp does (each step's probe: [v, r, g, b]).
    let probes = 0, same = 0;
    for (const S of D.steps) {
      if (!S.probe) continue;
      ++probes;
      const c = rampRgb(S.ramp, scaleT(S, num(S.probe[0])));
      if (c[0] === S.probe[1] && c[1] === S.probe[2] && c[2] === S.probe[3]) ++same;
    }
    check(probes > 0 && probes === same, 'colours: ' + same + ' of ' + probes + ' steps as C++ draws them');
    // The keys: p, →, →, ←, space, p.
    const key = (k) => document.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));
    document.activeElement && document.activeElement.blur && document.activeElement.blur();
    go(0);
    key('p');
    const on = document.body.classList.contains('projector');
    key('ArrowRight'); key('ArrowRight');
    const two = current;
    key('ArrowLeft');
    const one = current;
    key(' ');
    const spaced = current;
    const visible = sections.filter((s) => getComputedStyle(s).display !== 'none').length;
    key('p');
    check(on && two === 2 && one === 1 && spaced === 2 && visible === 1 &&
          !document.body.classList.contains('projector'),
          'keys: p projector ' + on + ', → → at ' + two + ', ← at ' + one + ', space at ' + spaced +
          ', ' + visible + ' section shown');
    // The lines: a query's line to every key.
    const W = D.works[0];
    const lines = linesView.querySelectorAll('line').length;
    check(lines === D.mats[W.weights].c, 'lines: ' + lines + ' from query 1');
    const q2 = linesView.querySelectorAll('g.q')[Math.min(1, D.mats[W.weights].r - 1)];
    q2.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    check(linesView.querySelector('g.q.on') !== null, 'lines: a click chooses the query');
    out.push('ready in ' + readyMs.toFixed(0) + ' ms');
    out.push('selftest done');
    const st = document.getElementById('selftest');
    st.textContent = out.join('\n');
    st.hidden = false;
  }
})();
