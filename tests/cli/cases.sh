#!/usr/bin/env bash
# The command-line tests: each case_NAME function is one CTest test (tests/CMakeLists.txt finds
# them by name). Usage: cases.sh BINARY CASE
#   expect_output GOLDEN ARGS...   exit 0, stdout equal to tests/golden/cli/GOLDEN.txt byte for
#                                  byte, nothing on stderr
#   expect_error MESSAGE ARGS...   exit 2, nothing on stdout, stderr exactly
#                                  "attn-trace: error: MESSAGE"
# ATTN_UPDATE_GOLDEN=1 rewrites the golden files from the binary instead of comparing.
set -uo pipefail
unset COLUMNS  # the views that fit the screen fit 80 columns when piped; a case sets COLUMNS itself
binary=$1
case_name=$2
golden_dir=$(cd "$(dirname "$0")/../golden/cli" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {
  "$binary" "$@" >"$work/stdout" 2>"$work/stderr"
  echo $? >"$work/status"
}

show_difference() {  # what, expected file, actual file
  echo "FAIL: $1 differs (expected | actual):"
  diff --side-by-side --width=200 "$2" "$3" | head -n 60
  diff -u "$2" "$3" | head -n 40
}

expect_output() {
  local golden="$golden_dir/$1.txt"
  shift
  run "$@"
  if [ "${ATTN_UPDATE_GOLDEN:-0}" = 1 ]; then cp "$work/stdout" "$golden"; fi
  local ok=1
  [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: exit code $(cat "$work/status"), expected 0"; ok=0; }
  [ -s "$work/stderr" ] && { echo "FAIL: unexpected stderr:"; cat "$work/stderr"; ok=0; }
  cmp -s "$golden" "$work/stdout" || { show_difference "stdout" "$golden" "$work/stdout"; ok=0; }
  [ $ok = 1 ]
}

# Like expect_output, against a file anywhere in the project (data/ holds example traces).
expect_output_file() {
  local golden="$root/$1"
  shift
  run "$@"
  if [ "${ATTN_UPDATE_GOLDEN:-0}" = 1 ]; then cp "$work/stdout" "$golden"; fi
  [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: exit code $(cat "$work/status"), expected 0"; return 1; }
  cmp -s "$golden" "$work/stdout" || { show_difference "stdout" "$golden" "$work/stdout"; return 1; }
}

# Exit code, stdout and stderr all as given (for diff and --expect, whose reports are output).
expect_report() {
  local status=$1 expected_out=$2 expected_err=$3
  shift 3
  run "$@"
  printf '%s' "$expected_out" >"$work/expected_stdout"
  printf '%s' "$expected_err" >"$work/expected_stderr"
  local ok=1
  [ "$(cat "$work/status")" = "$status" ] ||
    { echo "FAIL: exit code $(cat "$work/status"), expected $status"; ok=0; }
  cmp -s "$work/expected_stdout" "$work/stdout" ||
    { show_difference "stdout" "$work/expected_stdout" "$work/stdout"; ok=0; }
  cmp -s "$work/expected_stderr" "$work/stderr" ||
    { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; ok=0; }
  [ $ok = 1 ]
}

expect_error() {
  local message="attn-trace: error: $1"
  shift
  run "$@"
  printf '%s\n' "$message" >"$work/expected_stderr"
  local ok=1
  [ "$(cat "$work/status")" = 2 ] || { echo "FAIL: exit code $(cat "$work/status"), expected 2"; ok=0; }
  [ -s "$work/stdout" ] && { echo "FAIL: stdout should be empty, has $(wc -c <"$work/stdout") bytes"; ok=0; }
  cmp -s "$work/expected_stderr" "$work/stderr" ||
    { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; ok=0; }
  [ $ok = 1 ]
}

# --- golden runs --------------------------------------------------------------------------------
case_default() { expect_output default; }
case_walkthrough_spelled_out() {
  expect_output default "Life is short, eat dessert first" --seed 123 --vocab-size 50000 \
    --d-in 3 --d-kq 2 --d-v 4 --precision 4 --torch-kernel avx2
}
case_query_2() { expect_output query_2 --query 2; }
case_query_6_key_1() { expect_output query_6_key_1 --query 6 --key 1; }
case_fox_seed7() {
  expect_output fox_seed7 "The quick brown fox jumps over the lazy dog" --seed 7 --d-in 8 \
    --d-kq 4 --d-v 5
}
case_kernel_default() { expect_output kernel_default --torch-kernel default; }
case_precision_6() { expect_output precision_6 --precision 6; }
case_wide_rows_wrap() { expect_output wide_rows "one two three" --seed 1 --d-in 12 --d-kq 3 --d-v 10; }
case_help() { expect_output help --help; }

# --- variants -----------------------------------------------------------------------------------
case_causal() { expect_output causal --causal; }
case_causal_query_3() { expect_output causal_query_3 --causal --query 3; }
case_heads_2_wrapper() { expect_output heads_2_wrapper --heads 2; }
case_heads_2_wrapper_query_2() { expect_output heads_2_wrapper_query_2 --heads 2 --query 2; }
case_heads_2_split() { expect_output heads_2_split --heads 2 --multihead split --d-out 4 --init linear; }
case_heads_2_split_causal_query_2() {
  expect_output heads_2_split_causal_query_2 --heads 2 --multihead split --d-out 4 --init linear \
    --causal --query 2
}
case_cross() { expect_output cross --cross "The quick brown fox jumps over the lazy dog"; }
case_cross_query_3_key_9() {
  expect_output cross_query_3_key_9 --cross "The quick brown fox jumps over the lazy dog" --query 3 --key 9
}
case_init_linear() { expect_output init_linear --init linear; }
case_init_rand_transposed_earlier_walkthrough() {
  # The earlier walkthrough: omega_24 = query_2.dot(keys[4]) = 11.1466
  expect_output init_rand_transposed_query_2 --init rand-transposed --vocab-size 6 --d-in 16 \
    --d-kq 24 --d-v 28 --query 2
}
case_batch_padded() {
  expect_output batch_padded -s "Life is short, eat dessert first" -s "eat dessert" \
    -s "short life is sweet"
}
case_batch_padded_zero_rule_query_2() {
  expect_output batch_padded_zero_query_2 -s "Life is short, eat dessert first" -s "eat dessert" \
    --masked-rows zero --query 2
}
case_version() { expect_output version --version; }

# --- scripted use: formats, diff, --expect, export, your own numbers ----------------------------
case_json_walkthrough() { expect_output_file data/traces/walkthrough.json --format json; }
case_json_walkthrough_default_kernel() {
  expect_output_file data/traces/walkthrough_default_kernel.json --format json --torch-kernel default
}
case_json_batch_heads_causal_steps() {
  expect_output json_batch_heads_causal --format json --steps mask,attention_weights -s "a b" -s "c" \
    --heads 2 --causal
}
case_csv_omega() { expect_output csv_omega --format csv --steps omega; }
case_markdown_two_steps() {
  expect_output markdown_two_steps --format markdown --steps attention_weights,context_vectors
}
case_steps_text() { expect_output steps_text --steps scaled_scores,attention_weights; }
case_locale_does_not_matter() { LC_ALL=de_DE.UTF-8 LANG=de_DE.UTF-8 expect_output default; }
case_diff_equal() {
  expect_report 0 "equal: 11 steps, 222 cells, all within atol 1e-08, rtol 1e-05
" "" diff data/traces/walkthrough.json data/traces/walkthrough.json
}
case_diff_different() {
  run diff data/traces/walkthrough.json data/traces/walkthrough_default_kernel.json --atol 0 --rtol 0
  [ "$(cat "$work/status")" = 1 ] || { echo "FAIL: exit $(cat "$work/status"), expected 1"; return 1; }
  grep -qx 'context_vectors: row 3 "short", column 3: -0.262649924 vs -0.262650043, difference 1.19e-07' "$work/stdout" &&
    tail -n 1 "$work/stdout" | grep -q '^different: [0-9]* of 222 cells differ, in [0-9]* of 11 steps; 0 steps in only one trace (atol 0, rtol 0)$'
}
case_diff_unreadable() {
  expect_error "tests/golden/inputs/missing.json: cannot read: No such file or directory" diff \
    data/traces/walkthrough.json tests/golden/inputs/missing.json
}
case_diff_not_json() {
  expect_error "tests/golden/inputs/not_json.json is not JSON: line 1, column 20: syntax error while parsing value - invalid literal; last read: '0.3, N'" \
    diff data/traces/walkthrough.json tests/golden/inputs/not_json.json
}
case_diff_not_a_trace() {
  expect_error "tests/golden/inputs/string_value.json is not an attn-trace trace: it has no \"tool\": \"attn-trace\" and \"steps\"" \
    diff tests/golden/inputs/string_value.json data/traces/walkthrough.json
}
case_expect_equal() {
  # With --steps, the run's steps are compared with the same steps of the stored trace.
  run --expect data/traces/walkthrough.json --steps context_vectors --format csv
  if [ "${ATTN_UPDATE_GOLDEN:-0}" = 1 ]; then cp "$work/stdout" "$golden_dir/csv_context.txt"; fi
  [ "$(cat "$work/status")" = 0 ] && cmp -s "$golden_dir/csv_context.txt" "$work/stdout" &&
    [ "$(cat "$work/stderr")" = "equal: 1 step, 24 cells, all within atol 1e-08, rtol 1e-05" ]
}
# --expect compares only the chosen steps, with the HTML page too (whose trace keeps every step).
case_expect_html_chosen_steps() {
  run --expect data/traces/walkthrough.json --steps omega --format html
  [ "$(cat "$work/status")" = 0 ] && [ "$(cat "$work/stderr")" = "equal: 1 step, 36 cells, all within atol 1e-08, rtol 1e-05" ] ||
    { echo "FAIL: exit $(cat "$work/status")"; cat "$work/stderr"; return 1; }
}
case_expect_different() {
  run --expect data/traces/walkthrough.json --torch-kernel default --atol 0 --rtol 0
  [ "$(cat "$work/status")" = 1 ] && cmp -s "$work/stdout" "$golden_dir/kernel_default.txt" &&
    tail -n 1 "$work/stderr" | grep -q '^different: '
}
case_export_npy_and_manifest() {
  local dir="$work/export"
  run --export "$dir" --steps omega,b_out --multihead split --d-out 4 --init linear
  [ "$(cat "$work/status")" = 0 ] || { cat "$work/stderr"; return 1; }
  printf '%s\n' "$dir/01_b_out.npy" "$dir/02_omega.npy" "$dir/manifest.json" >"$work/expected"
  cmp "$work/expected" "$work/stdout" || return 1
  # NumPy's header for a float32 vector of 4 and a 6 x 6 matrix, as numpy.save writes them.
  head -c 10 "$dir/02_omega.npy" | od -An -c | grep -q '223   N   U   M   P   Y 001  \\0   v  \\0' &&
    grep -q "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }" "$dir/01_b_out.npy" &&
    grep -q "{'descr': '<f4', 'fortran_order': False, 'shape': (6, 6), }" "$dir/02_omega.npy" &&
    [ "$(stat -c %s "$dir/02_omega.npy")" = $((128 + 144)) ] &&
    grep -q '"file": "02_omega.npy"' "$dir/manifest.json"
}
# --- SVG figures ---------------------------------------------------------------------------------
case_svg_attention_weights() { expect_output svg_attention_weights --format svg --steps attention_weights; }
case_svg_omega() { expect_output svg_omega --format svg --steps omega --precision 2; }
case_svg_heads_batch_grid() {
  expect_output svg_heads_batch --format svg --steps attention_weights --heads 2 --causal -s "a b c" -s "d e"
}
case_svg_long_sentence_blocks() {
  local long_sentence
  long_sentence=$(seq -s ' ' 1 30 | sed 's/[0-9]\+/w&/g')
  expect_output svg_blocks_30 --format svg --steps omega "$long_sentence"
}
case_svg_needs_one_step() {
  expect_error "--format svg draws one step: choose it with --steps (like --steps attention_weights); --export DIR --format svg draws every step" \
    --format svg &&
    expect_error "--format svg draws one step: choose it with --steps (like --steps attention_weights), not 2; --export DIR --format svg draws every step" \
      --format svg --steps omega,attention_weights &&
    expect_error "--color colours heatmaps: it does not go with --format svg" --format svg --steps omega --color 256
}
case_export_svg_figures() {
  local dir="$work/export"
  run --export "$dir" --format svg --precision 2 --steps omega,attention_weights --heads 2
  [ "$(cat "$work/status")" = 0 ] || { cat "$work/stderr"; return 1; }
  printf '%s\n' "$dir/01_omega_head1.npy" "$dir/01_omega_head1.svg" "$dir/02_attention_weights_head1.npy" \
    "$dir/02_attention_weights_head1.svg" "$dir/03_omega_head2.npy" "$dir/03_omega_head2.svg" \
    "$dir/04_attention_weights_head2.npy" "$dir/04_attention_weights_head2.svg" "$dir/manifest.json" >"$work/expected"
  cmp "$work/expected" "$work/stdout" || { diff "$work/expected" "$work/stdout"; return 1; }
  grep -q '"figure": "03_omega_head2.svg"' "$dir/manifest.json" &&
    "$binary" --format svg --precision 2 --steps omega --heads 2 >"$work/both.svg" &&
    grep -q '<svg xmlns="http://www.w3.org/2000/svg"' "$dir/03_omega_head2.svg" &&
    grep -q '>head 2 of 2<' "$dir/03_omega_head2.svg" &&
    ! grep -q '>head 1 of 2<' "$dir/03_omega_head2.svg" &&
    # An export with figures is replaced with --force as a whole, figures and all.
    run --export "$dir" --force --steps omega &&
    [ "$(ls -A "$dir")" = "01_omega.npy
manifest.json" ]
}

case_export_list_escapes_the_folder_name() {
  # ESC, a newline and a byte that is not UTF-8 in the folder's name: the list of files shows them
  # as an error message does, one path a line; the files are in the folder so named.
  local dir="$work/out"$'\e[31m\nx\\y\xff'
  local shown="$work/out"'\x1b[31m\x0ax\y\xff'
  expect_report 0 "$shown/01_omega.npy
$shown/manifest.json
" "" "a b" --export "$dir" --steps omega && [ -f "$dir/01_omega.npy" ] && [ -f "$dir/manifest.json" ]
}
case_export_refuses_to_overwrite() {
  local dir="$work/export"
  mkdir -p "$dir" && echo "mine" >"$dir/01_omega.npy"
  run --export "$dir" --steps omega
  [ "$(cat "$work/status")" = 2 ] && [ ! -s "$work/stdout" ] &&
    grep -qx "attn-trace: error: $dir is not empty and not an export of attn-trace (it has no manifest.json): give a new or empty folder, or an earlier export to replace with --force" "$work/stderr" &&
    [ "$(cat "$dir/01_omega.npy")" = mine ] && [ ! -e "$dir/manifest.json" ] &&
    [ "$(ls -A "$dir" | wc -l)" = 1 ] || return 1
  # An earlier export is replaced with --force only.
  rm "$dir/01_omega.npy" && "$binary" --export "$dir" --steps omega --seed 1 >/dev/null || return 1
  run --export "$dir" --steps omega
  [ "$(cat "$work/status")" = 2 ] &&
    grep -qx "attn-trace: error: $dir holds an earlier export: replace it with --force" "$work/stderr" ||
    return 1
  run --export "$dir" --steps omega --force
  [ "$(cat "$work/status")" = 0 ] && [ "$(stat -c %s "$dir/01_omega.npy")" = 272 ]
}
case_exported_weights_read_back_give_the_same_trace() {
  local dir="$work/w"
  "$binary" --export "$dir" --steps embeddings,w_query,w_key,w_value >/dev/null || return 1
  "$binary" --format json >"$work/a.json" &&
    "$binary" --format json "Life is short, eat dessert first" --x "$dir/01_embeddings.npy" \
      --w-query "$dir/02_w_query.npy" --w-key "$dir/03_w_key.npy" --w-value "$dir/04_w_value.npy" \
      --steps omega,attention_weights,context_vectors >"$work/b.json" &&
    "$binary" diff "$work/a.json" "$work/b.json" --atol 0 --rtol 0 >"$work/report"
  # b has only three steps: the rest are reported as only in a; those three are equal, and
  # they are the steps compared.
  grep -q "^different: 0 of 96 cells differ, in 0 of 3 steps; 8 steps in only one trace" "$work/report"
}
case_your_journey_x() { expect_output your_journey --x data/your_journey.csv --d-kq 2 --d-v 2; }
case_your_journey_labels_from_sentence() {
  expect_output your_journey_sentence_labels "Your journey starts with one step" \
    --x tests/golden/inputs/journey_values.json --d-kq 2 --d-v 2 --query 2
}

# --- the classroom view: heatmaps, one cell explained, the softmax's steps, a lesson ------------
case_html_steps_and_precision() {
  # The chosen steps at the precision asked; --describe is accepted (the page describes every step).
  run --format html --precision 2 --describe --steps omega,attention_weights
  [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: exit code $(cat "$work/status")"; cat "$work/stderr"; return 1; }
  grep -q '<section class="step" id="s1" data-id="attention_weights"' "$work/stdout" &&
    ! grep -q 'id="s2"' "$work/stdout" && grep -q '>0.16</td>' "$work/stdout" &&
    ! grep -Eq 'https?://' "$work/stdout" ||
    { echo "FAIL: the page does not hold the two steps at 2 decimals"; return 1; }
  "$binary" --format html --precision 2 --describe --steps omega,attention_weights | cmp -s - "$work/stdout" ||
    { echo "FAIL: two runs wrote different pages"; return 1; }
}
case_html_refuses_colour() {
  expect_error "--color colours heatmaps: it does not go with --format html" --format html --color 24bit
}
case_html_unknown_step() {
  expect_error "step 'nope' is not in this trace: its steps are embeddings, w_query, w_key, w_value, queries, keys, values, omega, scaled_scores, attention_weights, context_vectors" --format html --steps nope
}
case_heatmap_shaded() { expect_output heatmap_never --format heatmap --color never; }
case_heatmap_256_colours() { expect_output heatmap_256 --format heatmap --color 256 --steps attention_weights; }
case_heatmap_24bit_colour() { expect_output heatmap_24bit --format heatmap --color 24bit --steps attention_weights; }
case_heatmap_auto_is_shaded_when_piped() {
  expect_output heatmap_never --format heatmap --color auto
}
case_heatmap_causal_heads() {
  expect_output heatmap_causal_heads --format heatmap --color never --causal --heads 2 "a b c"
}
case_heatmap_cjk_aligned() {
  expect_output heatmap_cjk --format heatmap --color never --steps attention_weights "我 爱 你 and you"
}
# 64 words: the blocks form in 80 columns, every line within them (display width).
long_sentence="the teacher drew a grid on the board and asked the class what each word \
looks at when the model reads a sentence of sixty four words one after another so that every \
row of the grid is a query and every column a key and the colour says how much attention flows \
from one to the other in this model with random weights"
fits_columns() {  # width: every line of stdout, escapes stripped, within it
  python3 -c 'import re, sys, unicodedata as u
w = lambda s: sum(2 if u.east_asian_width(c) in "WF" else 0 if u.combining(c) else 1 for c in s)
lines = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1], encoding="utf-8").read()).splitlines()
bad = [l for l in lines if w(l) > int(sys.argv[2])]
print("\n".join("FAIL: wider than %s: %s" % (sys.argv[2], l) for l in bad)); sys.exit(1 if bad else 0)' "$work/stdout" "$1"
}
case_heatmap_blocks_long_sentence_80_columns() {
  COLUMNS=80 expect_output heatmap_blocks_64 --format heatmap --color never --steps attention_weights \
    "$long_sentence" && fits_columns 80 &&
    COLUMNS=80 expect_output heatmap_blocks_64_256 --format heatmap --color 256 --steps omega "$long_sentence" &&
    fits_columns 80
}
case_heatmap_values_form_forced() {
  COLUMNS=80 expect_output heatmap_values_forced --format heatmap --color never --heatmap-form values \
    --steps attention_weights "the teacher drew a grid on the board and asked the class" && fits_columns 80
}
case_heatmap_blocks_form_forced() {
  expect_output heatmap_blocks_forced --format heatmap --color 24bit --heatmap-form blocks --steps attention_weights
}
case_heatmap_context_vectors() {
  expect_output heatmap_context_vectors --format heatmap --color never --steps context_vectors,w_query
}
case_heatmap_omega_diverging_256() { expect_output heatmap_omega_256 --format heatmap --color 256 --steps omega; }
case_heatmap_describe() {
  COLUMNS=60 expect_output heatmap_describe --format heatmap --color never --describe --steps omega,attention_weights &&
    fits_columns 60
}
case_heatmap_fits_the_terminal() {
  # A 72-column terminal and no COLUMNS: the blocks form, within 72 columns.
  tmux_start heatmap 72 100 "$binary --format heatmap --color 256 --steps attention_weights '$long_sentence'; sleep 30" || return 1
  local ok=0
  tmux_wait_for "legend:" && tmux -S "$tmux_sock" capture-pane -p -J -S - -t "$tmux_session" >"$work/stdout" &&
    fits_columns 72 && grep -q "^  tokens: 1 the" "$work/stdout" && ok=1
  tmux_stop
  [ $ok = 1 ] || { echo "FAIL: the heatmap does not fit 72 columns:"; cat "$work/stdout"; return 1; }
}
case_explain_2_5() { expect_output explain_2_5 --explain 2,5; }
case_explain_masked_cell() { expect_output explain_causal_2_5 --explain 2,5 --causal; }
case_explain_heads_batch() { expect_output explain_heads_batch --explain 1,2 --heads 2 -s "a b" -s "c" --masked-rows zero; }
case_explain_split_heads_batch() {
  # PyTorch's index names every dimension of its tensor, [B, H, T, T] here: attention_weights[1,
  # 0, 2, 0] is sentence 2's head 1's cell (3, 1).
  expect_output explain_split_heads_batch --explain 3,1 -s "Life is short" -s "eat dessert first" \
    --heads 2 --multihead split --d-out 4 --init linear
}
case_explain_batch_decode_online() {
  # [B, T, T] and [B, T, d_v]: the KV cache's and the online softmax's indices too.
  expect_output explain_batch_decode_online --explain 3,1 -s "Life is short" \
    -s "eat dessert first" --decode --online-softmax 2
}
case_softmax_steps() {
  expect_output softmax_steps --softmax-steps --steps scaled_scores,row_max,exponentials,row_sums,attention_weights,weight_sums
}
case_describe() { expect_output describe --describe; }
# --describe wherever steps are shown: markdown, JSON (a field), the query path, the explained cell.
case_describe_markdown() { expect_output describe_markdown --describe --format markdown --steps omega,attention_weights; }
case_describe_query() { expect_output describe_query_2 --describe --query 2; }
case_describe_explain() { expect_output describe_explain_2_5 --describe --explain 2,5; }
case_describe_json_field() {
  run --describe --format json --steps omega
  [ "$(cat "$work/status")" = 0 ] || return 1
  grep -q '^      "description": "Each score is the dot product' "$work/stdout" ||
    { echo "FAIL: no description"; return 1; }
  run --format json --steps omega
  ! grep -q '"description"' "$work/stdout" || { echo "FAIL: a description without --describe"; return 1; }
}
# Text, notes and the query path stay within 80 columns when piped, broken between words. The
# tensors' own lines are PyTorch's (its linewidth 80 leaves up to 82 with the brackets), and a
# Markdown table is one row per line: the other lines are checked.
case_text_within_80_columns() {
  local sentence="" i widest
  for i in $(seq 1 36); do sentence+="token$i "; done
  for how in "--describe" "--describe --causal --query 3" "--explain 3,2 --describe" "--format markdown --describe"; do
    # shellcheck disable=SC2086
    run $how "$sentence" --d-in 16
    [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: $how: exit $(cat "$work/status")"; return 1; }
    widest=$(grep -Ev '^(tensor\(| +[-0-9[]|\|)' "$work/stdout" | LC_ALL=C.UTF-8 wc -L)
    [ "$widest" -le 80 ] || { echo "FAIL: $how: a line of $widest columns"; return 1; }
    grep -q 'token1[0-9]*$\|token1[0-9]*[,:;)]' "$work/stdout" || { echo "FAIL: $how: words split"; return 1; }
  done
  # Written-out arithmetic, whose numbers set its length: broken before an "=" or a "+".
  for how in "--explain-grad 2,3 --backward --causal" "--query 2 --d-kq 8 --d-v 8" \
    "--x tests/golden/inputs/large_values.csv --explain 4,1" "--explain 1,1 --heads 2 -s a -s b_c_d"; do
    # shellcheck disable=SC2086
    run $how
    [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: $how: exit $(cat "$work/status")"; return 1; }
    widest=$(grep -Ev '^(tensor\(| +[-0-9[]|\|)' "$work/stdout" | LC_ALL=C.UTF-8 wc -L)
    [ "$widest" -le 80 ] || { echo "FAIL: $how: a line of $widest columns"; return 1; }
  done
}
# A number of 1e8 or more, or one that would read 0 at the precision, is written as PyTorch
# prints it then: in scientific notation.
case_explain_large_values() {
  expect_output explain_large_values --x tests/golden/inputs/large_values.csv --explain 4,1
}
case_step_mode_does_not_pause_when_piped() { expect_output default --step; }
# A real terminal: tmux runs the command in a session of its own; tmux_wait_for reads the screen.
tmux_start() {  # name, width, height, command
  command -v tmux >/dev/null || { echo "FAIL: tmux is not installed"; return 1; }
  tmux_session="attn-$1-$$" tmux_sock="$work/tmux.sock" screen="$work/screen"
  tmux -S "$tmux_sock" new-session -d -s "$tmux_session" -x "$2" -y "$3" "$4"
}
tmux_wait_for() {  # pattern [tenths of a second, default 50]: until the screen shows it
  for _ in $(seq "${2:-50}"); do
    tmux -S "$tmux_sock" capture-pane -p -t "$tmux_session" >"$screen"
    grep -q "$1" "$screen" && return 0
    sleep 0.1
  done
  echo "FAIL: the screen never showed '$1':"; cat "$screen"; return 1
}
tmux_keys() { tmux -S "$tmux_sock" send-keys -t "$tmux_session" "$@"; }
tmux_stop() { tmux -S "$tmux_sock" kill-server 2>/dev/null; }

# --step on a terminal: tests/terminal/step_keys.sh (keys, going back, the terminal restored).

case_sentence_from_stdin() {
  "$binary" - <tests/golden/inputs/walkthrough.txt >"$work/stdout" &&
    cmp "$golden_dir/default.txt" "$work/stdout"
}
case_sentence_from_file() { expect_output default --file tests/golden/inputs/walkthrough.txt; }
case_memory_limit_raised() {
  # 2,000 tokens: ω and A are 2,000 x 2,000; refused under 64M, traced under the default 4G.
  local words; words=$(for i in $(seq 2000); do printf 'w%d ' "$i"; done)
  "$binary" "$words" --max-memory 64M --steps attention_weights >/dev/null 2>"$work/err"
  [ $? = 2 ] && grep -q "more than the memory limit of 64.0 MiB" "$work/err" &&
    "$binary" "$words" --format csv --steps context_vectors | tail -n 1 | grep -q '^context_vectors,,,2000,4,w2000,,'
}

case_summary() { expect_output summary --format summary; }
# The most-attended keys of a causal run never name a masked key.
case_summary_causal_skips_masked_keys() {
  run --format summary --causal
  [ "$(cat "$work/status")" = 0 ] || return 1
  grep -q "^  query 1 'Life' attends most to 'Life' 1.0000$" "$work/stdout" &&
    grep -q "^  query 2 'is' attends most to 'is' 0.9468, 'Life' 0.0532$" "$work/stdout" &&
    ! grep -q "0\.0000" "$work/stdout" || { echo "FAIL:"; grep "attends most" "$work/stdout"; return 1; }
}
case_summary_counts_one_token() { run --format summary "word"; grep -q "^tokens: 1 sentence of 1 token, 1 distinct word$" "$work/stdout"; }
case_summary_batch_heads() { expect_output summary_batch_heads --format summary -s "a b c" -s "d" --heads 2 --causal; }

# The overview: the pipeline's matrices and shapes, drawn from the plan; COLUMNS=80 so that a
# wide terminal's COLUMNS does not change the goldens.
case_overview_walkthrough() { COLUMNS=80 expect_output overview_walkthrough --format overview; }
case_overview_heads_2() { COLUMNS=80 expect_output overview_heads_2 --format overview --heads 2; }
case_overview_causal() { COLUMNS=80 expect_output overview_causal --format overview --causal; }
case_overview_cross() {
  COLUMNS=80 expect_output overview_cross --format overview --cross "the cat sat on the mat"
}
case_overview_heads_2_split() {
  COLUMNS=80 expect_output overview_heads_2_split --format overview --heads 2 --multihead split --d-out 4
}
case_overview_batch() {
  COLUMNS=80 expect_output overview_batch --format overview -s "Life is short" -s "eat dessert first, then coffee"
}
case_overview_softmax_steps() {
  COLUMNS=80 expect_output overview_softmax_steps --format overview --softmax-steps
}
case_overview_long_sentence_fits_80_columns() {
  # 1000 words, and d = 8192 with 64 heads: wide shape numbers, a trace far beyond the memory
  # limit (the overview computes nothing, so it is not refused), every line at most 80 columns.
  local words; words=$(for i in $(seq 1000); do printf 'word%d ' "$i"; done)
  COLUMNS=80 expect_output overview_long_sentence --format overview "$words" --vocab-size 2000 \
    --d-in 8192 --d-out 8192 --heads 64 --multihead split --causal --softmax-steps || return 1
  local widest; widest=$(LC_ALL=C.UTF-8 wc -L <"$work/stdout")
  [ "$widest" -le 80 ] || { echo "FAIL: a line is $widest columns wide"; return 1; }
}
case_overview_follows_the_terminal_width() {
  local words; words=$(for i in $(seq 12); do printf 'supercalifragilistic%d ' "$i"; done)
  local columns widest
  for columns in 40 60 100; do
    COLUMNS=$columns run --format overview "$words" --heads 3 --causal --cross "$words"
    [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: exit code $(cat "$work/status")"; return 1; }
    widest=$(LC_ALL=C.UTF-8 wc -L <"$work/stdout")
    [ "$widest" -le "$columns" ] || { echo "FAIL: COLUMNS=$columns, a line is $widest wide"; return 1; }
  done
}
case_error_overview_refuses_the_options_of_a_computation() {
  expect_error "--steps chooses the steps of a trace: it does not go with --format overview" \
    --format overview --steps omega &&
    expect_error "--precision sets the decimals that text, markdown, heatmaps, SVG figures and HTML print: it does not go with --format overview" \
      --format overview --precision 6 &&
    expect_error "--color colours heatmaps: it does not go with --format overview" \
      --format overview --color never &&
    expect_error "--threads sets the threads of the computation: it does not go with --format overview" \
      --format overview --threads 2 &&
    expect_error "--timings times the steps' computation: it does not go with --format overview" \
      --format overview --timings &&
    expect_error "--expect compares a computed trace with a JSON trace: it does not go with --format overview" \
      --format overview --expect data/traces/walkthrough.json &&
    expect_error "--describe adds notes to text, markdown, heatmaps, HTML, JSON, --query and --explain: it does not go with --format overview" \
      --format overview --describe
}
case_error_overview_checks_the_input() {
  expect_error "vocabulary size 5 is smaller than the sentence's 6 distinct words: it must be at least 6" \
    --format overview --vocab-size 5
}

case_threads_do_not_change_the_output() {
  local words; words=$(for i in $(seq 400); do printf 'w%d ' $((i % 300)); done)
  "$binary" "$words" --d-in 48 --d-kq 24 --d-v 8 --format json --threads 1 >"$work/a" &&
    "$binary" "$words" --d-in 48 --d-kq 24 --d-v 8 --format json --threads 2 >"$work/b" &&
    "$binary" "$words" --d-in 48 --d-kq 24 --d-v 8 --format json >"$work/c" &&
    cmp "$work/a" "$work/b" && cmp "$work/a" "$work/c"
}

case_threads_do_not_change_the_summary_of_a_long_input() {
  # Blocked products, scores freed head by head, statistics on several threads.
  local words; words=$(for i in $(seq 0 699); do printf 'w%d ' "$i"; done)
  local args=(--vocab-size 700 --d-in 256 --d-kq 64 --d-v 32 --heads 3 --format summary)
  "$binary" "$words" "${args[@]}" --threads 1 >"$work/a" &&
    "$binary" "$words" "${args[@]}" --threads 2 >"$work/b" &&
    "$binary" "$words" "${args[@]}" --threads 3 >"$work/c" &&
    cmp "$work/a" "$work/b" && cmp "$work/a" "$work/c"
}

case_more_threads_than_cpus() {
  # 256 threads on the machine's few CPUs: the same summary as one thread, and no thread holds a
  # CPU that another needs (this run took more than two minutes on 2 CPUs, and now under a
  # second; given a minute here, for a loaded machine).
  local words; words=$(for i in $(seq 0 1499); do printf 'w%d ' "$i"; done)
  local args=(--vocab-size 1500 --d-in 64 --heads 2 --format summary)
  "$binary" "$words" "${args[@]}" --threads 1 >"$work/a" &&
    timeout 60 "$binary" "$words" "${args[@]}" --threads 256 >"$work/b" &&
    "$binary" "$words" "${args[@]}" --causal --backward --threads 1 >"$work/c" &&
    timeout 60 "$binary" "$words" "${args[@]}" --causal --backward --threads 64 >"$work/d" &&
    cmp "$work/a" "$work/b" && cmp "$work/c" "$work/d"
}

case_matmul_blocked_says_so() {
  expect_output matmul_blocked --matmul blocked --steps queries,omega,context_vectors
}
case_matmul_reference_long_input() {
  # --matmul reference keeps PyTorch's order on any shape: its products differ from auto's.
  local words; words=$(for i in $(seq 0 299); do printf 'w%d ' "$i"; done)
  local args=(--vocab-size 300 --d-in 64 --d-kq 64 --d-v 64 --format summary --steps omega)
  "$binary" "$words" "${args[@]}" >"$work/auto" &&
    "$binary" "$words" "${args[@]}" --matmul reference >"$work/reference" &&
    ! cmp -s "$work/auto" "$work/reference" &&
    grep -q "matmul reference" "$work/reference" && ! grep -q "matmul" "$work/auto"
}
case_error_unknown_matmul_kernel() {
  expect_error "--matmul: 'fast' is not one of auto, reference, blocked (see attn-trace --help)" --matmul fast
}
case_error_unknown_progress_mode() {
  expect_error "--progress: 'sometimes' is not one of auto, always, never (see attn-trace --help)" \
    --progress sometimes
}

# ATTN_ISA forces the vectorised code's instruction set: every one this CPU has gives the same
# bytes (the checksums of a blocked run, on 1 and 2 threads), and --timings says which ran.
case_attn_isa_same_bits_on_every_path() {
  local best words
  best=$("$binary" --timings --steps omega 2>&1 >/dev/null | sed -n "s/.*this CPU's best: \([a-z0-9]*\))$/\1/p")
  [ -n "$best" ] || { echo "FAIL: --timings names no ISA"; return 1; }
  words=$(for i in $(seq 300); do printf 'w%d ' "$i"; done)
  local isas="plain" expected=""
  [ "$best" = avx2 ] && isas="plain avx2"
  [ "$best" = avx512 ] && isas="plain avx2 avx512"
  echo "this CPU's best: $best; comparing $isas"
  for isa in $isas; do
    for threads in 1 2; do
      ATTN_ISA=$isa "$binary" "$words" --vocab-size 400 --d-in 48 --d-kq 40 --d-v 24 --heads 2 \
        --matmul blocked --threads $threads --format summary --timings >"$work/out" 2>"$work/err" ||
        { echo "FAIL: ATTN_ISA=$isa exit $?"; cat "$work/err"; return 1; }
      head -n 1 "$work/err" | grep -q ", isa $isa (this CPU's best: $best)$" ||
        { echo "FAIL: ATTN_ISA=$isa: --timings says"; head -n 1 "$work/err"; return 1; }
      if [ -z "$expected" ]; then cp "$work/out" "$work/expected"; expected=1; fi
      cmp -s "$work/expected" "$work/out" ||
        { echo "FAIL: ATTN_ISA=$isa, $threads threads: other bits"; diff "$work/expected" "$work/out" | head; return 1; }
    done
  done
}
case_error_attn_isa_unknown() {
  ATTN_ISA=sse4 expect_error "ATTN_ISA=sse4: allowed avx512, avx2, plain" &&
    ATTN_ISA=$'avx2\n' expect_error 'ATTN_ISA=avx2\x0a: allowed avx512, avx2, plain'
}
case_timings() {
  # Each step's wall time on stderr; stdout as without --timings.
  run --timings --format summary
  local ok=1
  [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: exit code $(cat "$work/status")"; ok=0; }
  cmp -s "$golden_dir/summary.txt" "$work/stdout" || { echo "FAIL: stdout changed"; ok=0; }
  head -n 1 "$work/stderr" | grep -Eq "^attn-trace: timings: [0-9]+ threads?, matmul auto, isa (avx512|avx2|plain) \(this CPU's best: (avx512|avx2|plain)\)$" ||
    { echo "FAIL: no timings header:"; cat "$work/stderr"; ok=0; }
  for id in embeddings w_query queries omega scaled_scores attention_weights context_vectors \
    "matrix products" "all steps" output total; do
    grep -Eq "^$id +(\[[0-9, ]+\] +)?[0-9]+\.[0-9]{3}( +[0-9.]+)?$" "$work/stderr" ||
      { echo "FAIL: no timing line for $id:"; cat "$work/stderr"; ok=0; }
  done
  [ $ok = 1 ]
}

# A run of well over a second, on one thread: 24 heads of d_in 1024 at T = 4096 (4-5 s on a
# Zen 5); under the sanitizers, whose build is slower, 8 heads at T = 2048 (about 7 s there; with
# 2 heads a quiet machine finished in under the second the progress line waits for).
long_run_heads() { if [ "${ATTN_SANITIZED:-0}" = 1 ]; then echo 8; else echo 24; fi; }
long_run_args() {
  local t=4096; [ "${ATTN_SANITIZED:-0}" = 1 ] && t=2048
  for i in $(seq 0 $((t - 1))); do printf 'w%d ' "$i"; done >"$work/long.txt"
  echo --file "$work/long.txt" --vocab-size $t --d-in 1024 --d-kq 128 --d-v 128 \
    --heads "$(long_run_heads)" --threads 1 --format summary --steps context_concat
}
case_progress_only_on_a_terminal() {
  # Piped (auto): nothing on stderr. --progress always: the progress line, then cleared; the
  # output is the same.
  local args; read -ra args <<<"$(long_run_args)"
  "$binary" "${args[@]}" >"$work/piped" 2>"$work/piped_err" &&
    "$binary" "${args[@]}" --progress always >"$work/always" 2>"$work/always_err" || return 1
  local ok=1
  [ -s "$work/piped_err" ] && { echo "FAIL: stderr not empty when piped:"; cat "$work/piped_err"; ok=0; }
  cmp -s "$work/piped" "$work/always" || { echo "FAIL: --progress changed the output"; ok=0; }
  # Each line says a step is done or how many of its rows are, and the time left (at most ten
  # lines a second).
  grep -aq "attn-trace: head [0-9]*/$(long_run_heads), [a-z_]* \(done\|rows [0-9]*/[0-9]*\) ([0-9.]* s, about [0-9]* \(s\|min\|h [0-9]* min\) left)" "$work/always_err" ||
    { echo "FAIL: no progress line:"; cat -v "$work/always_err"; ok=0; }
  [ "$(tail -c 4 "$work/always_err" | od -An -c | tr -d ' ')" = '\r033[K' ] ||
    { echo "FAIL: the progress line is not cleared at the end:"; tail -c 40 "$work/always_err" | cat -v; ok=0; }
  [ $ok = 1 ]
}
case_progress_in_a_terminal() {
  local args; args=$(long_run_args)
  tmux_start progress 120 30 "$binary $args >$work/out; echo EXIT=\$?; sleep 60" || return 1
  local ok=0
  # A step's line says "done", or "rows i/T" while its blocks of rows go through (most lines are
  # those: at most ten a second are drawn), and the time left; at the end the line is cleared.
  tmux_wait_for "^attn-trace: head [0-9]*/$(long_run_heads), [a-z_]* \(done\|rows [0-9]*/[0-9]*\) ([0-9.]* s, about [0-9]* \(s\|min\|h [0-9]* min\) left)" 600 &&
    tmux_wait_for "^EXIT=0" 6000 && ! grep -q "^attn-trace: " "$screen" &&
    grep -q "context_concat" "$work/out" && ok=1
  tmux_stop
  [ $ok = 1 ]
}

case_mistyped_steps_and_tokens_refused_before_the_run() {
  # The long run, with --progress always: a mistyped id is refused before the first step, so with
  # the error line alone (checked after the run, the progress lines would come first); the
  # query's and the key's numbers before the memory limit's check, which the same run not
  # streamed (24 heads at T = 4096: about 19 GiB) would fail.
  local args t=4096; read -ra args <<<"$(long_run_args)"
  [ "${ATTN_SANITIZED:-0}" = 1 ] && t=2048
  local ok=1
  expect_error "step 'omgea' is not in this trace: its steps are embeddings, w_query, w_key, w_value, queries, keys, values, omega, scaled_scores, attention_weights, context_vectors, context_concat" \
    "${args[@]}" --progress always --steps omgea || ok=0
  expect_error "query $((t + 1)) is out of range: the sentence has $t tokens, allowed 1..$t" \
    "${args[@]:0:14}" --progress always --query $((t + 1)) || ok=0
  expect_error "key $((t + 1)) is out of range: the sentence has $t tokens, allowed 1..$t" \
    "${args[@]:0:14}" --progress always --explain 1,$((t + 1)) || ok=0
  [ $ok = 1 ]
}

case_two_runs_same_bytes() {
  local args=("Two runs, same bytes: a b c d e f g h i j" --seed 99 --d-in 16 --d-kq 8 --d-v 8)
  "$binary" "${args[@]}" >"$work/a" && "$binary" "${args[@]}" >"$work/b" && cmp "$work/a" "$work/b"
}

# --- bad input: one line on stderr, exit 2 ------------------------------------------------------
case_error_empty_sentence() {
  expect_error "the sentence has no words: give at least one word (commas and white space do not count)" ""
}
case_error_only_commas_and_spaces() {
  expect_error "the sentence has no words: give at least one word (commas and white space do not count)" " ,  , "
}
case_error_invalid_utf8() {
  expect_error "the sentence is not valid UTF-8 (byte 4): a sentence must be UTF-8 text" $'Life\xff is short'
}
case_error_control_character() {
  expect_error "the sentence has a control character (byte 4): only printable text and white space are allowed" $'Life\x1b[31m is short'
}
case_error_message_escapes_control_characters_of_a_file_name() {
  # A newline, an escape sequence or a byte that is not UTF-8 (a lone 0x9b is CSI to a terminal
  # in an 8-bit mode) in a name the message quotes stays one line, and inert.
  expect_error "$work/no\\x0aline\\x1b[31m\\x9b: cannot read: No such file or directory" \
    --file "$work/no"$'\n'"line"$'\e[31m\xc2\x9b' &&
    expect_error "$work/lone\\x9b""2J caf\\xe9: cannot read: No such file or directory" \
      --file "$work/lone"$'\x9b'"2J caf"$'\xe9' &&
    expect_error "step 'a\\b' is not in this trace: its steps are embeddings, w_query, w_key, w_value, queries, keys, values, omega, scaled_scores, attention_weights, context_vectors" \
      --steps 'a\b'
}
case_error_control_character_in_a_batch_names_the_sentence() {
  # A batch file's sentence by its line (the blank line 2 is skipped: it is the third sentence);
  # -s items and the cross sentence by their place.
  printf 'Life is short\n\neat dessert first\nthen \033 tea\n , ,\n' >"$work/batch.txt" &&
    expect_error "$work/batch.txt: line 4: the sentence has a control character (byte 5): only printable text and white space are allowed" \
      --batch "$work/batch.txt" &&
    printf 'Life is short\n\n , ,\n' >"$work/commas.txt" &&
    expect_error "$work/commas.txt: line 3: the sentence has no words: give at least one word (commas and white space do not count)" \
      --batch "$work/commas.txt" &&
    expect_error "standard input: line 2: the sentence is not valid UTF-8 (byte 2): a sentence must be UTF-8 text" \
      --tokenizer gpt2 --batch - < <(printf 'Life is short\nok\377\n') &&
    expect_error "sentence 2 of 2 is not valid UTF-8 (byte 2): a sentence must be UTF-8 text" \
      -s "Life is short" -s $'ok\xff' &&
    expect_error "the key and value sentence has a control character (byte 1): only printable text and white space are allowed" \
      --cross $'x\x01' "Life is short"
}
case_error_d_in_zero() {
  expect_error "--d-in: 0 is out of range; allowed: 1..8192 (wider is not sensible for a trace) (see attn-trace --help)" --d-in 0
}
case_error_d_kq_negative() {
  expect_error "--d-kq: -2 is out of range; allowed: 1..8192 (wider is not sensible for a trace) (see attn-trace --help)" --d-kq -2
}
case_error_d_v_too_large() {
  expect_error "--d-v: 1000000000000 is out of range; allowed: 1..8192 (wider is not sensible for a trace) (see attn-trace --help)" --d-v 1000000000000
}
case_error_d_in_not_a_number() {
  expect_error "--d-in: 'three' is not an integer; allowed: 1..8192 (wider is not sensible for a trace) (see attn-trace --help)" --d-in three
}
case_error_vocab_smaller_than_words() {
  expect_error "vocabulary size 5 is smaller than the sentence's 6 distinct words: it must be at least 6" --vocab-size 5
}
case_error_vocab_zero() {
  expect_error "--vocab-size: 0 is out of range; allowed: 1..1000000000 (see attn-trace --help)" --vocab-size 0
}
case_error_vocab_too_large() {
  expect_error "--vocab-size: 1000000000000 is out of range; allowed: 1..1000000000 (see attn-trace --help)" --vocab-size 1000000000000
}
case_large_vocab_and_width_in_64_mb() {
  # V = 50,000 x d_in = 4,096 is an 800 MB table in PyTorch; the run holds only the sentence's
  # rows, so it fits in 64 MiB of address space (which bounds its resident memory too).
  # AddressSanitizer reserves terabytes of address space, so the limit applies to plain builds.
  local limit=65536
  [ "${ATTN_SANITIZED:-0}" = 1 ] && limit=unlimited
  (ulimit -v $limit && "$binary" --vocab-size 50000 --d-in 4096 --query 2 >"$work/out") &&
    grep -q "^x⁽²⁾ = X\[1\]: its embedding" "$work/out"
}
case_error_seed_negative() {
  expect_error "--seed: -1 is out of range; allowed: 0..2^64-1 (see attn-trace --help)" --seed -1
}
case_seed_minus_zero_is_zero() {
  # −0 is 0 for every integer option, as Python's int('-0') reads it; an unsigned one included.
  "$binary" --seed 0 --precision 0 >"$work/zero" && "$binary" --seed -0 --precision -0 >"$work/minus" &&
    cmp -s "$work/zero" "$work/minus" &&
    expect_error "--d-in: -0 is out of range; allowed: 1..8192 (wider is not sensible for a trace) (see attn-trace --help)" --d-in -0
}
case_error_seed_not_integer() {
  expect_error "--seed: '1.5' is not an integer; allowed: 0..2^64-1 (see attn-trace --help)" --seed 1.5
}
case_error_seed_2_pow_64() {
  expect_error "--seed: 18446744073709551616 is out of range; allowed: 0..2^64-1 (see attn-trace --help)" --seed 18446744073709551616
}
case_error_query_zero() {
  expect_error "--query: 0 is out of range; allowed: 1..T (see attn-trace --help)" --query 0
}
case_error_query_past_end() {
  expect_error "query 7 is out of range: the sentence has 6 tokens, allowed 1..6" --query 7
}
case_error_key_past_end() {
  expect_error "key 9 is out of range: the sentence has 6 tokens, allowed 1..6" --query 2 --key 9
}
case_error_key_without_query() { expect_error "--key 3 needs --query" --key 3; }
case_error_unknown_option() {
  expect_error "unknown option --heds: did you mean --heads? (see attn-trace --help)" --heds 2
}
case_error_unknown_kernel() {
  expect_error "--torch-kernel: 'neon' is not one of avx2, default (see attn-trace --help)" --torch-kernel neon
}
case_error_precision() {
  expect_error "--precision: 9 is out of range; allowed: 0..8 (see attn-trace --help)" --precision 9
}
case_error_split_needs_one_width() {
  expect_error "the split multi-head form projects to one width d_out, but d_kq 2 and d_v 4 differ: give one width with --d-out" --heads 2 --multihead split
}
case_error_split_heads_do_not_divide() {
  expect_error "d_out 4 does not split into 3 heads: it must be a multiple of 3" --heads 3 --multihead split --d-out 4
}
case_error_d_out_conflicts_with_d_kq() {
  expect_error "--d-kq and --d-out do not go together (see attn-trace --help)" --d-out 4 --d-kq 2
}
case_error_heads_zero() { expect_error "--heads: 0 is out of range; allowed: 1..64 (see attn-trace --help)" --heads 0; }
case_error_unknown_init() {
  expect_error "--init: 'uniform' is not one of rand, rand-transposed, linear (see attn-trace --help)" --init uniform
}
case_error_unknown_masked_rows_rule() {
  expect_error "--masked-rows: 'skip' is not one of nan, zero (see attn-trace --help)" --masked-rows skip
}
case_error_cross_with_a_batch() {
  expect_error "cross-attention takes one query sentence; got 2 sentences" -s "a b" -s "c" --cross "d e"
}
case_error_cross_sentence_empty() {
  expect_error "the key and value sentence has no words: give at least one word (commas and white space do not count)" --cross " , "
}
case_error_batch_sentence_empty() {
  expect_error "sentence 2 of 2 has no words: give at least one word (commas and white space do not count)" -s "a b" -s ""
}
case_error_cross_key_past_end() {
  expect_error "key 3 is out of range: the key and value sentence has 2 tokens, allowed 1..2" --cross "x y" --query 1 --key 3
}
case_error_format_with_query() {
  expect_error "--format and --query do not go together (see attn-trace --help)" --format json --query 2
}
case_error_unknown_step() {
  expect_error "step 'weights' is not in this trace: its steps are embeddings, w_query, w_key, w_value, queries, keys, values, omega, scaled_scores, attention_weights, context_vectors" --steps weights
}
case_error_force_without_export() { expect_error "--force goes with --export" --force; }
case_error_unknown_format() {
  expect_error "--format: 'yaml' is not one of text, json, csv, markdown, heatmap, summary, overview, svg, html (see attn-trace --help)" --format yaml
}
case_error_tolerance() {
  expect_error "--atol: '-1' is not a tolerance; allowed: a number >= 0 (see attn-trace --help)" diff a b --atol -1
}
case_error_x_missing_file() {
  expect_error "tests/golden/inputs/none.csv: cannot read: No such file or directory" --x tests/golden/inputs/none.csv
}
case_error_x_ragged() {
  expect_error "tests/golden/inputs/ragged.csv: line 2 has 2 fields, line 1 has 3: all rows must have the same length" --x tests/golden/inputs/ragged.csv
}
case_error_json_string_value() {
  expect_error "tests/golden/inputs/string_value.json: row 2, column 2 is a string: values must be numbers" --x tests/golden/inputs/string_value.json
}
case_error_weight_shape() {
  expect_error "W_q in tests/golden/inputs/w_4x2.csv has shape [4, 2], but X has d_in 3: with the rand init it must be [d_in, d_kq]" --w-query tests/golden/inputs/w_4x2.csv
}
case_error_x_labelled_and_sentence() {
  expect_error "data/your_journey.csv labels its rows already: give no sentence with it" "a b c d e f" --x data/your_journey.csv
}
case_error_x_with_embedding() {
  expect_error "--x and --embedding do not go together (see attn-trace --help)" --x data/your_journey.csv --embedding tests/golden/inputs/w_4x2.csv
}
case_error_explain_not_a_cell() {
  expect_error "--explain '2' is not a cell: give I,J, the query's and the key's token numbers from 1, like --explain 2,5" --explain 2
}
case_error_explain_out_of_range() {
  expect_error "key 7 is out of range: the sentence has 6 tokens, allowed 1..6" --explain 1,7
}
case_error_explain_with_format() {
  expect_error "--format and --explain do not go together (see attn-trace --help)" --explain 1,2 --format json
}
case_error_heatmap_form() {
  expect_error "--heatmap-form: 'grid' is not one of auto, values, blocks (see attn-trace --help)" \
    --format heatmap --heatmap-form grid &&
    expect_error "--heatmap-form chooses how heatmaps draw their cells: it does not go with --format text" \
      --heatmap-form blocks &&
    expect_error "--heatmap-form chooses how heatmaps draw their cells: it does not go with --query" \
      --heatmap-form values --query 2
}
case_error_unknown_color() {
  expect_error "--color: 'always' is not one of auto, never, 256, 24bit (see attn-trace --help)" --color always
}
case_error_threads_zero() {
  expect_error "--threads: 0 is out of range; allowed: 1..256 (see attn-trace --help)" --threads 0
}
case_error_option_twice() {
  expect_error "--seed: given 2 times, once is allowed (see attn-trace --help)" --seed 1 --seed 2
}

# --- read as the user meant: the sentence, numbers, options that would be ignored ---------------
case_unquoted_sentence_is_one_sentence() { expect_output default Life is short, eat dessert first; }
case_batch_from_a_file() {
  # A byte-order mark, CRLF line ends and blank lines: the same batch as three -s.
  expect_output batch_padded --batch tests/golden/inputs/batch_bom_crlf.txt
}
case_batch_from_stdin() {
  "$binary" --batch - <tests/golden/inputs/batch_bom_crlf.txt >"$work/stdout" &&
    cmp "$golden_dir/batch_padded.txt" "$work/stdout"
}
case_batch_of_joined_files_drops_each_byte_order_mark() {
  # Files joined with cat: a byte-order mark starts each file's first line, and is dropped like
  # the first line's (a line of one is blank); elsewhere U+FEFF is part of its word, shown as
  # repr() shows it. The message about a later sentence names its line.
  printf '\xef\xbb\xbfLife is short\n\xef\xbb\xbfeat dessert first\r\n\xef\xbb\xbf\n\xef\xbb\xbf\xef\xbb\xbfshort life\xef\xbb\xbf is\n' \
    >"$work/joined.txt"
  expect_output batch_joined_files --batch "$work/joined.txt" --steps w_query || return 1
  printf '\xef\xbb\xbfLife is short\n\xef\xbb\xbf\n\xef\xbb\xbf , \n' >"$work/joined.txt"
  expect_error "$work/joined.txt: line 3: the sentence has no words: give at least one word (commas and white space do not count)" \
    --batch "$work/joined.txt"
}
case_batch_skips_lines_of_unicode_white_space() {
  # A line that Python's str.split() makes no words of (U+00A0, U+3000, \v) is blank, skipped as
  # an empty line is; a line of commas is a sentence without words.
  printf 'the cat\n\xc2\xa0\n\xe3\x80\x80 \v\nthe dog\n' >"$work/spaces.txt"
  printf 'the cat\nthe dog\n' >"$work/plain.txt"
  "$binary" --batch "$work/plain.txt" >"$work/plain.out" &&
    "$binary" --batch "$work/spaces.txt" >"$work/spaces.out" &&
    cmp -s "$work/plain.out" "$work/spaces.out" || return 1
  printf '\xc2\xa0\n' >"$work/spaces.txt"
  expect_error "$work/spaces.txt has no sentences: give one sentence per line" --batch "$work/spaces.txt"
}
case_error_batch_file_without_sentences() {
  printf '\n  \n' >"$work/blank.txt"
  expect_error "$work/blank.txt has no sentences: give one sentence per line" --batch "$work/blank.txt"
}
case_error_batch_lines_ended_by_cr_alone() {
  # An old Mac file's lines, one sentence to a reader that splits at \n only.
  printf 'Life is short\rEat dessert first\r' >"$work/mac.txt"
  expect_error "$work/mac.txt: line 1 holds a carriage return (\r) that ends no line: a batch's sentences are lines ended by \n or \r\n (tr '\r' '\n' converts a file whose lines end in \r alone)" --batch "$work/mac.txt" &&
    printf 'Life is short\r\nEat dessert first\r\n' >"$work/dos.txt" &&
    run --batch "$work/dos.txt" --format summary &&
    head -1 "$work/stdout" | grep -qx "sentences: \['Life is short', 'Eat dessert first'\]"
}
case_error_matrix_file_beyond_the_memory_limit() {
  # A JSON document of many small values takes some 26 bytes of memory a byte of its text; a
  # device that never ends is read up to the limit, not up to 1 GiB.
  { printf '['; for i in $(seq 40000); do printf '[0],'; done; printf '[0]]'; } >"$work/rows.json"
  ln -s /dev/zero "$work/zero.csv"
  expect_error "$work/rows.json: reading it as JSON needs more than 1.0 MiB (about 32 bytes a value), the memory limit: give a smaller file or a .npy one (4 bytes a value), or raise the limit with --max-memory" \
    --x "$work/rows.json" --max-memory 1M &&
    expect_error "$work/zero.csv is larger than 1.0 MiB, the memory limit: give a smaller file, or raise the limit with --max-memory" \
      --x "$work/zero.csv" --max-memory 1M &&
    expect_error "$work/rows.json: reading it as JSON needs more than 1.0 MiB (about 32 bytes a value), the memory limit: give a smaller trace, or raise the limit with --max-memory" \
      --expect "$work/rows.json" --max-memory 1M
}
case_error_two_ways_to_give_the_sentence() {
  expect_error "a sentence argument and -s/--sentence both give the sentence: give it one way" \
    -s "a b" c d
}
case_error_sentence_beginning_with_a_dash() {
  expect_error "'-hello world' is not an option: to trace a sentence that begins with '-', put -- before it: attn-trace -- '-hello world'" \
    "-hello world"
}
case_error_word_beginning_with_a_dash() {
  expect_error "'-5' is not an option: to trace it as a word, put -- before the sentence (attn-trace -- WORDS...) or quote the sentence" \
    the temperature is -5 degrees
}
case_word_beginning_with_a_dash_after_double_dash() {
  run -- the temperature is -5 degrees
  [ "$(cat "$work/status")" = 0 ] && head -n 1 "$work/stdout" | grep -qx "sentence: 'the temperature is -5 degrees'"
}
case_sentence_beginning_with_a_dash_after_double_dash() {
  run -- "-hello world" --d-kq 1
  [ "$(cat "$work/status")" = 0 ] && head -n 1 "$work/stdout" | grep -qx "sentence: '-hello world --d-kq 1'"
}
case_sentence_in_brackets_read_as_given() {
  # CLI11 reads a list's value in brackets as a list: "[x]" was the word x, "[a,b]" two words and
  # "[]" no sentence at all (the walkthrough's, without a word).
  local sentence expected
  for sentence in "[x]" "[x], hello! [x]" "[]" "[a,b]"; do
    expected="sentence: '$sentence'"
    run "$sentence" --steps embeddings
    [ "$(cat "$work/status")" = 0 ] && head -n 1 "$work/stdout" | grep -qxF "$expected" ||
      { echo "FAIL: $sentence:"; head -n 3 "$work/stdout" "$work/stderr"; return 1; }
  done
  run --seed 3 "[a]" "[b,c]" --steps embeddings
  head -n 1 "$work/stdout" | grep -qxF "sentence: '[a] [b,c]'" &&
    run --tokenizer gpt2 "[x]" --format json --steps embeddings &&
    grep -qF '"inputs": [{"ids":[58,87,60],' "$work/stdout"
}
case_overview_narrower_than_40_columns() {
  # COLUMNS from 20 (a heatmap's least) to 39 once ended the overview by an uncaught exception.
  COLUMNS=30 expect_error "the overview needs a width of at least 40 columns, not 30: widen the terminal or set COLUMNS" \
    --format overview &&
    COLUMNS=40 "$binary" --format overview >/dev/null
}
case_error_overflow_after_the_attention() {
  # The output projection, the loss and a step of gradient descent overflow float32 where they
  # happen: refused, not printed as inf or nan with exit 0.
  printf '3e38,3e38,3e38,3e38\n3e38,3e38,3e38,3e38\n3e38,3e38,3e38,3e38\n3e38,3e38,3e38,3e38\n' >"$work/wo.csv" &&
    expect_error "the output projection's values out overflow float32 at row 2, column 1 (inf): the given numbers are too large; scale them down" \
      --heads 2 --multihead split --d-out 4 --w-out "$work/wo.csv" &&
    for _ in 1 2 3 4 5 6; do echo 1e20,1e20,1e20,1e20; done >"$work/target.csv" &&
    expect_error "the loss L overflows float32 (inf): the output's and the target's numbers are too large; scale them down" \
      --backward --loss mse --target "$work/target.csv" &&
    expect_error "W_q − 3e+38 dL/dW_q overflows float32: --lr 3e+38 is too large a step for these gradients; give a smaller one" \
      --backward --lr 3e38 &&
    printf '1e30,1e30,1e30,1e30\n1e30,1e30,1e30,1e30\n1e30,1e30,1e30,1e30\n' >"$work/wv.csv" &&
    expect_error "the loss after the step overflows float32 (nan): --lr 1 is too large a step for these numbers; give a smaller one" \
      --backward --lr 1 --w-value "$work/wv.csv"
}
case_error_split_widths_before_w_out() {
  # A W_q 6 wide and d_v 4 in the split form: the widths that differ are named, not W_o's shape
  # against a d_out that is not yet one width.
  printf '1,2,3\n4,5,6\n7,8,9\n1,2,3\n4,5,6\n7,8,9\n' >"$work/wq.csv" &&
    for _ in 1 2 3 4 5 6; do echo 1,1,1,1,1,1; done >"$work/wo.csv" &&
    expect_error "the split multi-head form projects to one width d_out, but d_kq 6 and d_v 4 differ: give --d-v 6 to match W_q" \
      --heads 2 --multihead split --init linear --w-query "$work/wq.csv" --w-out "$work/wo.csv" &&
    expect_error "W_o in $work/wo.csv has shape [6, 6], but d_out is 4: it must be [4, 4]" \
      --heads 2 --multihead split --init linear --d-out 4 --w-out "$work/wo.csv"
}
case_numbers_are_decimal() {
  run --seed 0123 && cmp -s "$golden_dir/default.txt" "$work/stdout" || { echo "FAIL: --seed 0123 is not seed 123"; return 1; }
  "$binary" --seed 09 --d-in 010 >"$work/a" && "$binary" --seed 9 --d-in 10 >"$work/b" && cmp "$work/a" "$work/b"
}
case_error_size_too_large() {
  expect_error "--max-memory: '99999999999999999999999' is too large: a size is at most 2^63 - 1 bytes (see attn-trace --help)" \
    --max-memory 99999999999999999999999 &&
    expect_error "--max-memory: '4Q' is not a size: give a number of bytes, or with K, M, G or T, like 4G (see attn-trace --help)" \
      --max-memory 4Q &&
    expect_error "--max-memory: '-5G' is not a size: give a number of bytes, or with K, M, G or T, like 4G (see attn-trace --help)" \
      --max-memory -5G &&
    expect_error "--max-memory: '-1' is not a size: give a number of bytes, or with K, M, G or T, like 4G (see attn-trace --help)" \
      --max-memory=-1
}
case_size_is_decimal() {
  # 0100 is 100 bytes, not octal 64: the limit the message names.
  run --max-memory 0100
  [ "$(cat "$work/status")" = 2 ] && grep -q "more than the memory limit of 100 bytes" "$work/stderr"
}
case_error_flag_with_a_value() {
  expect_error "--causal is a flag and takes no value: give --causal alone" --causal=3 &&
    expect_error "--causal is a flag and takes no value: give --causal alone" --causal= &&
    expect_error "--version is a flag and takes no value: give --version alone" --version=
}
case_error_option_without_its_value() {
  expect_error "--seed needs a value (see attn-trace --help)" --seed &&
    expect_error "--sentence needs a value (see attn-trace --help)" -s &&
    expect_error "--atol needs a value (see attn-trace --help)" diff a.json b.json --atol
}
case_error_empty_value_after_equals() {
  # CLI11 would read --seed= as --seed and take the next argument for its value, which the
  # sentence then held as well.
  expect_error "--seed: the value after '=' is empty: give --seed=VALUE or --seed VALUE (see attn-trace --help)" --seed= 5 &&
    expect_error "--cross: the value after '=' is empty: give --cross=VALUE or --cross VALUE (see attn-trace --help)" --cross= --causal
}
case_sentence_with_the_word_diff() {
  # Only a first word diff is the subcommand.
  run what is the diff --steps embeddings --format summary
  [ "$(cat "$work/status")" = 0 ] && head -1 "$work/stdout" | grep -qx "sentence: 'what is the diff'"
}
case_error_mistyped_option_suggests() {
  expect_error "unknown option --casual: did you mean --causal? (see attn-trace --help)" --casual &&
    expect_error "unknown option --sed: did you mean --seed? (see attn-trace --help)" --sed 3
}
case_error_diff_missing_trace() {
  expect_error "diff needs two JSON traces: attn-trace diff A.json B.json" diff data/traces/walkthrough.json
}
case_error_diff_third_trace() {
  expect_error "diff compares two JSON traces: 'c.json' is one argument too many" diff a.json b.json c.json
}
case_diff_tolerance_before_the_subcommand() {
  expect_report 0 "equal: 11 steps, 222 cells, all within atol 0.001, rtol 1e-05
" "" --atol 1e-3 diff data/traces/walkthrough.json data/traces/walkthrough_default_kernel.json
}
case_error_diff_takes_no_trace_option() {
  expect_error "--seed does not go with diff: diff compares two JSON traces and takes --atol and --rtol" \
    --seed 3 diff a.json b.json &&
    expect_error "--seed does not go with diff: diff compares two JSON traces and takes --atol and --rtol" \
      diff a.json b.json --seed 3
}
case_error_options_a_view_would_ignore() {
  expect_error "--export writes .npy files and prints their names: give no --format with it, or --format svg to add a figure of each step (not --format json)" \
    --export "$work/e" --format json &&
    expect_error "--step pauses text and heatmaps after each step: it does not go with --format json" \
      --step --format json &&
    expect_error "--describe adds notes to text, markdown, heatmaps, HTML, JSON, --query and --explain: it does not go with --format csv" \
      --describe --format csv &&
    expect_error "--describe adds notes to text, markdown, heatmaps, HTML, JSON, --query and --explain: it does not go with --format summary" \
      --describe --format summary &&
    expect_error "--color colours heatmaps: it does not go with --format text" --color never &&
    expect_error "--precision sets the decimals that text, markdown, heatmaps, SVG figures and HTML print: it does not go with --format json" \
      --precision 2 --format json &&
    expect_error "--softmax-steps adds the softmax's steps to a trace: it does not go with --query" \
      --softmax-steps --query 2 &&
    expect_error "--steps chooses the steps of a trace: it does not go with --explain" \
      --steps omega --explain 2,5 &&
    expect_error "--atol goes with --expect (or with diff, after it)" --atol 1 &&
    [ ! -e "$work/e" ]
}
case_dumb_terminal_gets_no_colour() {
  # On a terminal (script gives one), auto colour: escapes with TERM=xterm, none with TERM=dumb.
  TERM=xterm-256color COLORTERM=truecolor script -qec "$binary --format heatmap --steps attention_weights" /dev/null >"$work/xterm"
  TERM=dumb COLORTERM=truecolor script -qec "$binary --format heatmap --steps attention_weights" /dev/null >"$work/dumb"
  grep -q $'\x1b\\[48;2;' "$work/xterm" || { echo "FAIL: no colour on an xterm"; return 1; }
  ! grep -q $'\x1b' "$work/dumb" || { echo "FAIL: escapes with TERM=dumb:"; cat -v "$work/dumb" | head; return 1; }
}

case_help_fits_80_columns_when_piped() {
  run --help
  [ "$(cat "$work/status")" = 0 ] && [ "$(awk '{ print length($0) }' "$work/stdout" | sort -n | tail -n 1)" -le 80 ]
}
case_help_fits_every_width_from_20() {
  # COLUMNS from 20: every line of both helps within the width, in characters; below 44 the
  # text goes under each option, and a word wider than the line is cut.
  local w widest
  for w in 20 21 30 43 44 59 60 100; do
    for args in --help "diff --help"; do
      # shellcheck disable=SC2086
      widest=$(COLUMNS=$w "$binary" $args | LC_ALL=C.UTF-8 wc -L)
      [ "$widest" -le "$w" ] || { echo "FAIL: $args at COLUMNS=$w has a line of $widest"; return 1; }
    done
  done
  COLUMNS=30 "$binary" --help | grep -q "^      torch.manual_seed(N)$"
}
case_help_wraps_to_the_terminal() {
  # A 60-column terminal: every line of the help within 60 columns, broken between words.
  tmux_start help 60 200 "$binary --help >$work/dummy; $binary --help | cat >/dev/null; $binary --help; sleep 30" || return 1
  local ok=0
  tmux_wait_for "^Documentation" && tmux -S "$tmux_sock" capture-pane -p -J -S - -t "$tmux_session" >"$screen" &&
    [ "$(awk '{ print length($0) }' "$screen" | sort -n | tail -n 1)" -le 60 ] &&
    grep -q "^  --seed N              torch.manual_seed(N) before the$" "$screen" && ok=1
  tmux_stop
  [ $ok = 1 ] || { echo "FAIL: the help is not wrapped at 60 columns:"; cat "$screen"; return 1; }
}

# ---- Input read as the user meant: text from files --------------------------------------------
case_error_json_duplicate_key() {
  expect_error 'tests/golden/inputs/duplicate_key.json: line 3: the key "values" appears twice in one object: each key may be given once' \
    --x tests/golden/inputs/duplicate_key.json
}
case_error_json_nul_byte() {
  # JSON's parser would stop at a NUL byte and read [[0.1, 0.2, 0.3]] alone.
  printf '[[0.1, 0.2, 0.3]]\0garbage' >"$work/nul.json" &&
    expect_error "$work/nul.json is not valid JSON (byte 18): a NUL byte, which JSON text never holds" \
      --x "$work/nul.json" --d-v 2 &&
    expect_error "$work/nul.json is not JSON: line 1, column 18: a NUL byte, which JSON text never holds" \
      diff data/traces/walkthrough.json "$work/nul.json"
}
case_error_csv_utf16() {
  expect_error "tests/golden/inputs/utf16.csv: line 1: the file starts with a UTF-16 byte order mark (FF FE): CSV files must be UTF-8 text" \
    --x tests/golden/inputs/utf16.csv
}
case_error_csv_utf16_without_bom() {
  expect_error "tests/golden/inputs/utf16_no_bom.csv: line 1 has a NUL byte (is the file UTF-16?): CSV files must be UTF-8 text" \
    --x tests/golden/inputs/utf16_no_bom.csv
}
case_error_csv_label_hex_float() {
  expect_error "tests/golden/inputs/labels_like_numbers.csv: line 3, column 1: '0x1p3' looks like a number, but not one this reader knows, and would be taken for a row label: write numbers like 8, -1.5 or 1e3 (ASCII digits and '-'; no hex; no '_', spaces or commas between digits)" \
    --x tests/golden/inputs/labels_like_numbers.csv
}
case_error_csv_label_grouped_digits() {
  expect_error "tests/golden/inputs/labels_grouped_digits.csv: line 2, column 1: '1_000' looks like a number, but not one this reader knows, and would be taken for a row label: write numbers like 8, -1.5 or 1e3 (ASCII digits and '-'; no hex; no '_', spaces or commas between digits)" \
    --x tests/golden/inputs/labels_grouped_digits.csv
}
# Typeset text's minus sign (U+2212) in every first field: numbers, not labels, and refused.
case_error_csv_label_minus_sign() {
  expect_error "tests/golden/inputs/labels_minus_sign.csv: line 1, column 1: '−0.5' looks like a number, but not one this reader knows, and would be taken for a row label: write numbers like 8, -1.5 or 1e3 (ASCII digits and '-'; no hex; no '_', spaces or commas between digits)" \
    --x tests/golden/inputs/labels_minus_sign.csv
}
case_error_csv_value_minus_sign() {
  expect_error "tests/golden/inputs/value_minus_sign.csv: line 2, column 2: '−2' is not a number as written: write it with ASCII digits and '-' (-2)" \
    --x tests/golden/inputs/value_minus_sign.csv
}
case_error_csv_label_not_utf8() {
  expect_error "tests/golden/inputs/label_not_utf8.csv: line 2, column 1: the row label is not valid UTF-8 (byte 3): labels must be UTF-8 text" \
    --x tests/golden/inputs/label_not_utf8.csv
}
case_labels_with_control_characters_escaped() {
  # The labels would clear the screen, set the window's title, ring the bell, break lines and
  # start a C1 control sequence: every text output shows them escaped, as Python's repr does.
  local args=(--x tests/golden/inputs/control_labels.json --d-kq 2 --d-v 2)
  local ok=1 how
  for how in "--format text" "--format markdown" "--format summary" "--format heatmap --color never" \
    "--steps attention_weights" "--explain 1,2" "--query 1"; do
    # shellcheck disable=SC2086  # $how is two words on purpose
    run "${args[@]}" $how
    [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: $how: exit code $(cat "$work/status")"; ok=0; }
    # Bytes other than newlines, printable ASCII and UTF-8's; then the C1 controls' encodings.
    if [ "$(LC_ALL=C tr -d '\n -~\200-\377' <"$work/stdout" | wc -c)" != 0 ] ||
      LC_ALL=C grep -qP '\xc2[\x80-\x9f]' "$work/stdout"; then
      echo "FAIL: $how writes a control character from a label:"; cat -A "$work/stdout" | head -n 20; ok=0
    fi
    # (Markdown writes its brackets after a backslash, as it writes any markup character.)
    local first='\x1b[2J\x1b]0;pwned\x07x'
    [ "$how" = "--format markdown" ] && first='\x1b\[2J\x1b\]0;pwned\x07x'
    grep -qF "$first" "$work/stdout" ||
      { echo "FAIL: $how does not show the first label escaped"; ok=0; }
  done
  run "${args[@]}" --steps attention_weights
  grep -qF 'tensor([[1.7865e-14, 1.3366e-07, 1.0000e+00],    # \x1b[2J\x1b]0;pwned\x07x' "$work/stdout" &&
    grep -qF '   # two\nlines\r' "$work/stdout" && grep -qF '   # tab\there\x9b' "$work/stdout" ||
    { echo "FAIL: the rows' labels are not aligned and escaped:"; cat -A "$work/stdout"; ok=0; }
  [ $ok = 1 ]
}
case_sentence_unicode_white_space_escaped() {
  # The white space beyond ASCII's that Python's str.split() splits at (U+00A0, U+1680,
  # U+2000, U+2005, U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+0085), and U+180E and
  # U+FEFF, which are not white space and stay in their word: the sentences and the dictionary
  # show them as repr() does.
  expect_output sentence_unicode_white_space \
    $'Life\xc2\xa0is\xe1\x9a\x80short\xe2\x80\x80eat\xe2\x80\x85dessert\xe2\x80\x8afirst\xe2\x80\xa8a\xe2\x80\xa9b\xe2\x80\xafc\xe2\x81\x9fd\xe3\x80\x80e\xc2\x85f\xe1\xa0\x8eg\xef\xbb\xbf' \
    --cross $'one\xe3\x80\x80two\xc2\xa0three' --steps w_query
}
case_error_diff_value_beyond_float32() {
  # 1e300 is not float32's infinity: it is refused, not found equal to "inf".
  expect_error "tests/golden/inputs/trace_1e300.json is not a valid trace: step 1: row 1, column 2: 1e+300 is beyond float32's range: a trace holds float32 values, and writes an infinity as \"inf\" or \"-inf\"" \
    diff tests/golden/inputs/trace_inf.json tests/golden/inputs/trace_1e300.json
}
case_error_diff_duplicate_key() {
  expect_error 'tests/golden/inputs/trace_duplicate_key.json: line 7: the key "values" appears twice in one object: each key may be given once' \
    diff tests/golden/inputs/trace_inf.json tests/golden/inputs/trace_duplicate_key.json
}
case_error_matrix_file_never_ends_in_4_gib() {
  # A matrix file that never ends is refused at 1 GiB, within 4 GiB of address space (plain
  # builds; AddressSanitizer reserves terabytes).
  ln -s /dev/zero "$work/zero.csv"
  local limit=4194304
  [ "${ATTN_SANITIZED:-0}" = 1 ] && limit=unlimited
  (ulimit -v $limit && "$binary" --x "$work/zero.csv" >"$work/stdout" 2>"$work/stderr")
  local status=$?
  printf 'attn-trace: error: %s is larger than 1024 MiB: that is not an input of this tool\n' \
    "$work/zero.csv" >"$work/expected_stderr"
  [ $status = 2 ] || { echo "FAIL: exit code $status, expected 2"; cat "$work/stderr"; return 1; }
  cmp -s "$work/expected_stderr" "$work/stderr" ||
    { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; return 1; }
}

# --- a sentence from standard input or a file: capped while read, a byte-order mark dropped -----
case_sentence_file_with_bom_and_crlf() { expect_output default --file tests/golden/inputs/walkthrough_bom_crlf.txt; }
case_sentence_stdin_with_bom_and_crlf() { expect_output default - <tests/golden/inputs/walkthrough_bom_crlf.txt; }
case_error_stdin_never_ends() {
  # Refused within a second, in under 50 MB of address space.
  local limit=51200 start; [ "${ATTN_SANITIZED:-0}" = 1 ] && limit=unlimited
  start=$(date +%s%N)
  (ulimit -v $limit && "$binary" --max-memory 1M - </dev/zero >"$work/stdout" 2>"$work/stderr")
  local status=$? ms=$((($(date +%s%N) - start) / 1000000))
  printf '%s\n' "attn-trace: error: standard input: the sentence is longer than 1.0 MiB, the memory limit: give a shorter sentence, or raise the limit with --max-memory" >"$work/expected_stderr"
  [ $status = 2 ] || { echo "FAIL: exit code $status"; cat "$work/stderr"; return 1; }
  [ $ms -lt 1000 ] || { echo "FAIL: took $ms ms"; return 1; }
  cmp -s "$work/expected_stderr" "$work/stderr" || { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; return 1; }
}
case_error_long_batches_and_long_words_refused_for_their_steps_and_labels() {
  # Each sentence of a batch records its own steps (some 1 KB each) and each step its labels:
  # 2 million lines are refused before they are stored, 10,000 by the plan's estimate, and one
  # 20 MB word (labels in every step) too, each in under 200 MB of address space.
  local limit=204800; [ "${ATTN_SANITIZED:-0}" = 1 ] && limit=unlimited
  yes "a b" | head -n 2000000 >"$work/lines.txt"
  head -n 10000 "$work/lines.txt" >"$work/some_lines.txt"
  head -c 20000000 /dev/zero | tr '\0' a >"$work/word.txt"
  local status
  for what in lines some_lines word; do
    case $what in
      lines) set -- --batch "$work/lines.txt"
        printf '%s\n' "attn-trace: error: $work/lines.txt has 2000000 sentences, which need at least 11.4 GiB (6.0 KiB each), more than the memory limit of 4.0 GiB: give fewer sentences, or raise the limit with --max-memory" >"$work/expected_stderr" ;;
      some_lines) set -- --batch "$work/some_lines.txt" --max-memory 60M
        printf '%s\n' "attn-trace: error: this run would need about 97.4 MiB (T = 2 tokens x 10000 sentences, 1 head), more than the memory limit of 60.0 MiB: trace fewer tokens, or raise the limit with --max-memory" >"$work/expected_stderr" ;;
      word) set -- --file "$work/word.txt" --max-memory 100M
        printf '%s\n' "attn-trace: error: this run would need about 467.3 MiB (T = 1 token, 1 head), more than the memory limit of 100.0 MiB: trace fewer tokens, or raise the limit with --max-memory" >"$work/expected_stderr" ;;
    esac
    (ulimit -v $limit && "$binary" "$@" --format summary >"$work/stdout" 2>"$work/stderr")
    status=$?
    [ $status = 2 ] || { echo "FAIL ($what): exit code $status"; cat "$work/stderr"; return 1; }
    cmp -s "$work/expected_stderr" "$work/stderr" || { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; return 1; }
  done
  # The overview computes nothing, and refuses at 1 KiB a sentence.
  "$binary" --batch "$work/lines.txt" --format overview --max-memory 1G >"$work/stdout" 2>"$work/stderr"
  status=$?
  printf '%s\n' "attn-trace: error: $work/lines.txt has 2000000 sentences, which need at least 1.9 GiB (1.0 KiB each), more than the memory limit of 1.0 GiB: give fewer sentences, or raise the limit with --max-memory" >"$work/expected_stderr"
  [ $status = 2 ] || { echo "FAIL (overview): exit code $status"; cat "$work/stderr"; return 1; }
  cmp -s "$work/expected_stderr" "$work/stderr" || { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; return 1; }
  # Under the default limit the 10,000 lines run.
  "$binary" --batch "$work/some_lines.txt" --format summary | grep -x "tokens: 10000 sentences of 2 tokens, 2 distinct words" >/dev/null
}
case_error_run_larger_than_its_cgroup_memory_limit() {
  # Under the default --max-memory, but more than a container's memory limit: refused with the
  # limit, where the kernel would have ended the run for want of memory (exit 137, no message).
  local group="" dir file
  for dir in /sys/fs/cgroup/memory:memory.limit_in_bytes /sys/fs/cgroup:memory.max \
    /sys/fs/cgroup/unified:memory.max; do
    file=${dir#*:} dir=${dir%%:*}/attn-cli-$$
    mkdir "$dir" 2>/dev/null || continue
    if [ -e "$dir/$file" ] && echo 300M >"$dir/$file" 2>/dev/null; then group=$dir; break; fi
    rmdir "$dir"
  done
  if [ -z "$group" ]; then
    echo "SKIPPED: no cgroup hierarchy with the memory controller that this test may write"
    return 77
  fi
  seq -f 'w%g' 0 4095 | tr '\n' ' ' >"$work/words.txt"
  sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$group" "$binary" \
    --file "$work/words.txt" --vocab-size 4096 --d-in 1024 --d-kq 128 --d-v 128 \
    --steps attention_weights >"$work/stdout" 2>"$work/stderr"
  local status=$?
  rmdir "$group"
  # The message as docs/errors.md shows it.
  grep -x "    attn-trace: error: this run would need about 1.1 GiB .*" docs/errors.md |
    sed 's/^    //' >"$work/expected_stderr"
  [ -s "$work/expected_stderr" ] || { echo "FAIL: the message is not in docs/errors.md"; return 1; }
  [ $status = 2 ] || { echo "FAIL: exit code $status"; cat "$work/stderr"; return 1; }
  [ ! -s "$work/stdout" ] || { echo "FAIL: output written"; return 1; }
  cmp -s "$work/expected_stderr" "$work/stderr" || { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; return 1; }
}
case_error_many_words_refused_before_they_are_stored() {
  # 8 million one-letter words (16 MB) would take over 250 MB as strings: the count refuses the
  # run for the memory limit before any is stored, in under 100 MB of address space, with the
  # plan's own message (with --backward too); stored first, they ran out of memory.
  local limit=102400; [ "${ATTN_SANITIZED:-0}" = 1 ] && limit=unlimited
  yes a | head -n 8000000 | tr '\n' ' ' >"$work/words.txt"
  local flags need status
  for flags in "" "--backward"; do
    need=6.8; [ "$flags" = --backward ] && need=14.1
    # shellcheck disable=SC2086
    (ulimit -v $limit && "$binary" --max-memory 64M $flags - <"$work/words.txt" >"$work/stdout" 2>"$work/stderr")
    status=$?
    printf '%s\n' "attn-trace: error: this run would need about $need PiB (T = 8000000 tokens, 1 head), more than the memory limit of 64.0 MiB: trace fewer tokens, or raise the limit with --max-memory" >"$work/expected_stderr"
    [ $status = 2 ] || { echo "FAIL ($flags): exit code $status"; cat "$work/stderr"; return 1; }
    cmp -s "$work/expected_stderr" "$work/stderr" || { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; return 1; }
  done
  # The same text under a limit that the count says it fits is tokenized as before.
  "$binary" "a b, a ,, c" --format summary | grep -qx "tokens: 1 sentence of 4 tokens, 3 distinct words"
}
case_error_sentence_file_never_ends_in_4_gib() {
  local limit=4194304; [ "${ATTN_SANITIZED:-0}" = 1 ] && limit=unlimited
  (ulimit -v $limit && "$binary" --file /dev/zero >"$work/stdout" 2>"$work/stderr"); local status=$?
  printf '%s\n' "attn-trace: error: /dev/zero: the sentence is longer than 1.0 GiB: a sentence may have at most 1.0 GiB, whatever the memory limit" >"$work/expected_stderr"
  [ $status = 2 ] || { echo "FAIL: exit code $status"; cat "$work/stderr"; return 1; }
  cmp -s "$work/expected_stderr" "$work/stderr" || { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; return 1; }
}

# --- output and exports: every write checked; an export is one whole set or nothing ------------
# Run the binary with stdout going where the caller says; exit code and stderr kept.
run_to() {  # target, args...
  local target=$1
  shift
  "$binary" "$@" >"$target" 2>"$work/stderr"
  echo $? >"$work/status"
}
expect_write_error() {  # error text (after "attn-trace: error: ")
  printf 'attn-trace: error: %s\n' "$1" >"$work/expected_stderr"
  local ok=1
  [ "$(cat "$work/status")" = 2 ] || { echo "FAIL: exit code $(cat "$work/status"), expected 2"; ok=0; }
  cmp -s "$work/expected_stderr" "$work/stderr" ||
    { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; ok=0; }
  [ $ok = 1 ]
}
no_space="cannot write the output: No space left on device"
case_output_full_device_text() { run_to /dev/full && expect_write_error "$no_space"; }
case_output_full_device_json() { run_to /dev/full --format json && expect_write_error "$no_space"; }
case_output_full_device_help() { run_to /dev/full --help && expect_write_error "$no_space"; }
case_output_full_device_diff() {
  run_to /dev/full diff data/traces/walkthrough.json data/traces/walkthrough.json &&
    expect_write_error "$no_space"
}
case_output_full_device_export_list() {
  # The export is complete; the list of its files cannot be printed, and that is an error.
  run_to /dev/full --export "$work/out" --steps omega &&
    expect_write_error "$no_space (the export in $work/out is complete: only its list of files was not written)" &&
    [ -f "$work/out/01_omega.npy" ] && [ -f "$work/out/manifest.json" ]
}
case_output_file_size_limit() {
  # ulimit -f: with SIGXFSZ ignored, and with its default action (which attn-trace ignores).
  local long
  long=$(seq 1 300 | tr '\n' ' ')
  for trap_it in yes no; do
    (ulimit -f 8 && { [ $trap_it = no ] || trap '' XFSZ; } &&
      "$binary" --format json "$long" >"$work/big.json" 2>"$work/stderr"; echo $? >"$work/status")
    expect_write_error "cannot write the output: File too large" || return 1
    [ "$(stat -c %s "$work/big.json")" = 8192 ] || { echo "FAIL: $(stat -c %s "$work/big.json") bytes"; return 1; }
  done
}
case_output_broken_pipe_sigpipe_ignored() {
  # As in a child of Python, which ignores SIGPIPE: the write fails with EPIPE. 1 MB of JSON
  # is far more than a pipe holds, so the reader is gone before the end.
  local long
  long=$(seq 1 300 | tr '\n' ' ')
  (trap '' PIPE
    "$binary" --format json "$long" 2>"$work/stderr" | head -c 10 >"$work/head"
    echo "${PIPESTATUS[0]}" >"$work/status")
  expect_write_error "cannot write the output: Broken pipe" && [ "$(cat "$work/head")" = '{
  "tool"' ]
}
case_output_stderr_report_full() {
  # The --expect report cannot be written: exit code 2, with nowhere left to say so.
  "$binary" --expect data/traces/walkthrough.json --steps omega >"$work/stdout" 2>/dev/full
  [ $? = 2 ] && [ -s "$work/stdout" ]
}
case_export_force_replaces_the_whole_set() {
  local dir="$work/export"
  "$binary" --export "$dir" >/dev/null || return 1
  [ "$(ls "$dir" | wc -l)" = 12 ] || return 1
  run --export "$dir" --force --steps omega
  printf '%s\n' "$dir/01_omega.npy" "$dir/manifest.json" >"$work/expected"
  [ "$(cat "$work/status")" = 0 ] && cmp "$work/expected" "$work/stdout" &&
    [ "$(ls -A "$dir")" = "01_omega.npy
manifest.json" ] && [ "$(ls -A "$work")" = "$(printf 'expected\nexport\nstatus\nstderr\nstdout')" ]
}
case_export_force_refuses_a_folder_of_other_files() {
  local dir="$work/mine"
  mkdir "$dir" && echo "mine" >"$dir/notes.txt" && echo "{}" >"$dir/manifest.json"
  expect_error "$dir is not empty and not an export of attn-trace (its manifest.json is not attn-trace's): give a new or empty folder, or an earlier export to replace with --force" \
    --export "$dir" --force &&
    [ "$(ls "$dir" | tr '\n' ' ')" = "manifest.json notes.txt " ] && [ "$(cat "$dir/notes.txt")" = mine ]
}
case_export_fills_an_empty_folder() {
  mkdir "$work/empty" && run --export "$work/empty" --steps omega &&
    [ "$(cat "$work/status")" = 0 ] && [ "$(ls "$work/empty" | wc -l)" = 2 ]
}
case_export_dangling_symlink_as_folder() {
  ln -s "$work/nowhere" "$work/link"
  expect_error "$work/link is a symbolic link: give a new or empty folder, or an earlier export to replace with --force" \
    --export "$work/link" --force && [ ! -e "$work/nowhere" ]
}
case_export_dangling_symlink_as_manifest() {
  mkdir "$work/out" && ln -s "$work/nowhere" "$work/out/manifest.json"
  expect_error "$work/out is not empty and not an export of attn-trace (its manifest.json is a symbolic link): give a new or empty folder, or an earlier export to replace with --force" \
    --export "$work/out" --force && [ -L "$work/out/manifest.json" ]
}
case_export_folder_that_cannot_be_searched() {
  if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIPPED: needs root and setpriv to run as another user"
    return 77
  fi
  chmod 755 "$work" && mkdir -m 700 "$work/locked"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$binary" --export "$work/locked/out" \
    >"$work/stdout" 2>"$work/stderr"
  [ $? = 2 ] && [ ! -s "$work/stdout" ] &&
    [ "$(cat "$work/stderr")" = "attn-trace: error: cannot export to $work/locked/out: Permission denied" ] &&
    [ -z "$(ls -A "$work/locked")" ] || return 1
  # An export that can be listed but not searched: its manifest cannot be read.
  "$binary" --export "$work/ex" --steps omega >/dev/null && chmod 0666 "$work/ex" && chmod 777 "$work" &&
    chown 65534 "$work/ex" || return 1
  setpriv --reuid=65534 --regid=65534 --clear-groups "$binary" --export "$work/ex" --force \
    >"$work/stdout" 2>"$work/stderr"
  local status=$?
  chmod 755 "$work/ex"
  [ $status = 2 ] &&
    [ "$(cat "$work/stderr")" = "attn-trace: error: cannot export to $work/ex: $work/ex/manifest.json: Permission denied" ] &&
    [ "$(ls -A "$work" | grep -c tmp)" = 0 ]
}
case_export_name_too_long() {
  local long
  long=$(printf 'a%.0s' $(seq 1 256))
  expect_error "cannot export to $work/p/q/$long: File name too long" --export "$work/p/q/$long" &&
    [ ! -e "$work/p" ]
}
case_export_names_sort_in_step_order_past_999() {
  # 64 heads of the split form and 4 sentences: 1,577 files, numbered with 4 digits.
  run --export "$work/out" --heads 64 --multihead split --d-out 64 -s "a b" -s c -s d -s e
  [ "$(cat "$work/status")" = 0 ] || return 1
  head -n 2 "$work/stdout" | cmp - <(printf '%s\n' "$work/out/0001_embeddings.npy" \
    "$work/out/0001_embeddings_sentence1.npy") &&
    grep -q "^$work/out/1000_" "$work/stdout" && [ "$(wc -l <"$work/stdout")" = 1577 ] &&
    LC_ALL=C sort -c "$work/stdout"
}
case_export_whole_tensor_beside_its_slices() {
  run --export "$work/out" --steps omega --heads 2 --multihead split --d-out 4 -s "a b c" -s "d e"
  printf '%s\n' 01_omega.npy 01_omega_head1_sentence1.npy 02_omega_head2_sentence1.npy \
    03_omega_head1_sentence2.npy 04_omega_head2_sentence2.npy manifest.json |
    sed "s|^|$work/out/|" >"$work/expected"
  cmp "$work/expected" "$work/stdout" &&
    grep -q "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 3, 3), }" "$work/out/01_omega.npy" &&
    [ "$(stat -c %s "$work/out/01_omega.npy")" = $((128 + 4 * 36)) ] &&
    # The whole tensor's values are the slices' values, in order.
    cmp <(tail -c 144 "$work/out/01_omega.npy") \
      <(for f in 01_omega_head1_sentence1 02_omega_head2_sentence1 03_omega_head1_sentence2 \
        04_omega_head2_sentence2; do tail -c 36 "$work/out/$f.npy"; done)
}
case_export_manifest_lists_every_file() {
  run --export "$work/out" --heads 2 --multihead split --d-out 4 -s "a b c" -s "d e"
  [ "$(cat "$work/status")" = 0 ] || return 1
  # Every file but the manifest is listed, with dtype and shape; the dictionary and the ids too.
  local listed
  listed=$(grep -c '"file": ' "$work/out/manifest.json")
  [ "$listed" = $(($(ls "$work/out" | wc -l) - 1)) ] &&
    [ "$(grep -c '"dtype": "<f4"' "$work/out/manifest.json")" = "$listed" ] &&
    [ "$(grep -c '"array_shape": \[' "$work/out/manifest.json")" = "$listed" ] &&
    grep -q '^  "dictionary": {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "<pad>": 5},$' "$work/out/manifest.json" &&
    grep -q '"ids":\[3,4,5\]' "$work/out/manifest.json" || { cat "$work/out/manifest.json" | head -20; return 1; }
  for f in "$work"/out/*.npy; do grep -q "\"file\": \"$(basename "$f")\"" "$work/out/manifest.json" || return 1; done
}
case_export_read_by_numpy() {
  # With NumPy, when it is installed: each file loads with the manifest's shape, and each whole
  # tensor is its slices stacked.
  if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    echo "SKIPPED: python3 with numpy is not installed"
    return 77
  fi
  "$binary" --export "$work/out" --heads 2 --multihead split --d-out 4 -s "a b c" -s "d e" >/dev/null &&
    /usr/bin/python3 - "$work/out" <<'PY'
import json, sys
import numpy as np
d = sys.argv[1]
m = json.load(open(f"{d}/manifest.json"))
for f in m["files"]:
    a = np.load(f"{d}/{f['file']}")
    assert a.dtype == np.dtype(f["dtype"]) and list(a.shape) == f["array_shape"], f["file"]
    if "slices" in f:
        slices = np.stack([np.load(f"{d}/{s}") for s in f["slices"]])
        assert a.tobytes() == slices.tobytes(), f["file"]  # nan too: the same bits
print("ok")
PY
}

# --- the backward pass ----------------------------------------------------------------------------
case_backward() { expect_output backward --backward; }
case_backward_split_lr() {
  expect_output backward_split_lr --backward --heads 2 --multihead split --d-out 4 --init linear \
    --lr 0.1 --steps loss,grad_output,grad_w_out,grad_b_out,step_b_out,loss_after_step
}
case_backward_causal_heatmap() {
  expect_output backward_causal_heatmap --backward --causal --format heatmap --color never \
    --steps grad_attention_weights,grad_omega
}
case_backward_json() { expect_output backward_json --backward --format json --steps loss,grad_omega; }
case_backward_overview() { expect_output backward_overview --backward --format overview --heads 2; }
case_backward_csv() { expect_output backward_csv --backward --format csv --steps grad_values,grad_embedding_table -s "the cat the dog" -s "a cat"; }
case_backward_diff() {
  "$binary" --backward --format json >"$work/a.json" &&
    "$binary" --backward --format json --seed 1 >"$work/b.json" || return 1
  "$binary" diff "$work/a.json" "$work/a.json" >"$work/same.txt" || return 1
  "$binary" diff "$work/a.json" "$work/b.json" >"$work/diff.txt"
  [ $? = 1 ] && grep -q "^grad_omega: " "$work/diff.txt" && grep -q "^grad_embedding_table: " "$work/diff.txt" ||
    { echo "FAIL: diff does not report the gradient steps"; cat "$work/diff.txt"; return 1; }
}
case_backward_export() {
  "$binary" --backward --heads 2 --export "$work/out" >/dev/null &&
    [ -f "$work/out/manifest.json" ] && ls "$work/out" | grep -q "_grad_w_query_head1.npy$" &&
    ls "$work/out" | grep -q "_grad_embedding_table.npy$" ||
    { echo "FAIL: the export has no gradient steps"; ls "$work/out"; return 1; }
}
case_backward_html() {
  "$binary" --backward --format html >"$work/page.html" && grep -q "grad_omega" "$work/page.html" ||
    { echo "FAIL: the HTML page has no gradient steps"; return 1; }
}
case_explain_grad() { expect_output explain_grad_2_5 --backward --explain-grad 2,5; }
case_explain_grad_masked() { expect_output explain_grad_causal_2_5 --backward --causal --explain-grad 2,5; }
case_explain_grad_split_heads_batch() {
  # omega.grad is [B, H, T, T], as omega is.
  expect_output explain_grad_split_heads_batch --backward --explain-grad 3,1 -s "Life is short" \
    -s "eat dessert first" --heads 2 --multihead split --d-out 4 --init linear
}
case_backward_mse_lr() {
  printf '0,1,0,1\n1,0,1,0\n0,0,1,1\n1,1,0,0\n0,1,1,0\n1,0,0,1\n' >"$work/target.csv"
  "$binary" --backward --loss mse --target "$work/target.csv" --lr 0.5 --format json \
    --steps loss,loss_after_step >"$work/out.json" || return 1
  /usr/bin/python3 - "$work/out.json" <<'PY'
import json, sys
steps = {s["id"]: s for s in json.load(open(sys.argv[1]))["steps"]}
before, after = steps["loss"]["values"][0][0], steps["loss_after_step"]["values"][0][0]
assert after < before, (before, after)
print("ok")
PY
}
case_backward_causal_other_way() {
  expect_output backward_causal_other_way --backward --causal \
    --steps grad_omega,grad_zeroed_weights,grad_unmasked_weights,grad_omega_other_way
}
case_backward_rope_shared_kv() {
  expect_output backward_rope_shared_kv --backward --rope --heads 2 --kv-heads 1 --multihead split \
    --d-out 4 --lr 0.01 --steps grad_rotated_keys,grad_shared_keys,grad_keys,grad_shared_values,step_w_key,loss_after_step
}
case_backward_kv_heads_equal_heads_is_the_split_form() {
  # N = H K/V heads are the plain split form: the same bytes as without --kv-heads.
  "$binary" --backward --heads 2 --kv-heads 2 --multihead split --d-out 4 --format json >"$work/a.json" &&
    "$binary" --backward --heads 2 --multihead split --d-out 4 --format json >"$work/b.json" &&
    cmp -s "$work/a.json" "$work/b.json" || { echo "FAIL: --kv-heads 2 of 2 heads changed the trace"; return 1; }
}
case_backward_window_decode_online() {
  # The KV cache and the online softmax leave Z, so every gradient, as it is; a window masks.
  "$binary" --backward --window 2 --format json >"$work/w.json" &&
    "$binary" --backward --window 2 --decode --online-softmax 2 --format json >"$work/d.json" || return 1
  /usr/bin/python3 - "$work/w.json" "$work/d.json" <<'PY'
import json, sys
w, d = ({(s["id"], s["head"], s["batch"]): s["values"] for s in json.load(open(f))["steps"]}
        for f in sys.argv[1:])
grads = [k for k in w if k[0].startswith("grad_")]
assert grads and all(w[k] == d[k] for k in grads), "a gradient changed"
assert w[("grad_omega", None, None)][0][2] == 0, "a key outside the window has a gradient"
print("ok")
PY
}
case_backward_settings_json() {
  printf '0,1,0,1\n1,0,1,0\n0,0,1,1\n1,1,0,0\n0,1,1,0\n1,0,0,1\n' >"$work/target.csv"
  "$binary" --backward --loss mse --target "$work/target.csv" --lr 0.5 --format json >"$work/t.json" &&
    "$binary" --backward --export "$work/out" >/dev/null &&
    "$binary" --format json >"$work/plain.json" || return 1
  /usr/bin/python3 - "$work/t.json" "$work/out/manifest.json" "$work/plain.json" "$work/target.csv" <<'PY'
import json, sys
t, m, plain = (json.load(open(f))["settings"] for f in sys.argv[1:4])
assert t["backward"] == {"loss": "mse", "target": sys.argv[4], "lr": 0.5}, t["backward"]
assert m["backward"] == {"loss": "sum", "target": None, "lr": None}, m["backward"]
assert "backward" not in plain
print("ok")
PY
}
case_backward_nan_prints_as_tensors_do() {
  # A padded sentence's fully masked rows are nan, as torch.softmax gives them: "nan", not "-nan".
  run --backward -s "a b c" -s x --lr 0.01 --steps loss_after_step
  grep -q "the loss went from nan to nan (nan)" "$work/stdout" && ! grep -q -- "-nan" "$work/stdout" ||
    { echo "FAIL: the loss note"; cat "$work/stdout"; return 1; }
  run --backward -s "a b c" -s x --explain-grad 2,1
  grep -q "sum: r₂ = nan" "$work/stdout" && ! grep -q -- "-nan" "$work/stdout" ||
    { echo "FAIL: --explain-grad"; cat "$work/stdout"; return 1; }
}
case_backward_errors() {
  printf '1,2\n3,4\n' >"$work/t2.csv"
  expect_error "--lr: '1e-50' is too small a learning rate: float32 rounds it to 0; allowed: a number > 0 that float32 holds, 1.4e-45 to 3.4e38 (see attn-trace --help)" \
    --backward --lr 1e-50 &&
    expect_error "--lr: '1e40' is too large a learning rate: float32 cannot hold it; allowed: a number > 0 that float32 holds, 1.4e-45 to 3.4e38 (see attn-trace --help)" \
      --backward --lr 1e40 &&
    expect_error "--lr: '1e400' is too large a learning rate: float32 cannot hold it; allowed: a number > 0 that float32 holds, 1.4e-45 to 3.4e38 (see attn-trace --help)" \
      --backward --lr 1e400 &&
    expect_error "--backward and --model do not go together: the backward pass follows the lesson's attention, and has no gradient through a checkpoint's ln_1, biases and earlier blocks" \
      --backward --model "$work/none.safetensors" &&
    expect_error "--loss chooses the backward pass's loss: it needs --backward" --loss mse &&
    expect_error "--lr takes a step against the gradients: it needs --backward" --lr 0.1 &&
    expect_error "--explain-grad works out a gradient of the backward pass: it needs --backward" \
      --explain-grad 2,5 &&
    expect_error "--loss mse needs --target FILE: the values the final output should have" \
      --backward --loss mse &&
    expect_error "--target is the target of the mse loss: it needs --loss mse" \
      --backward --target "$work/t2.csv" &&
    expect_error "--backward adds the gradient steps to a trace: it does not go with --query; --explain-grad I,J works out a gradient" \
      --backward --query 2 &&
    expect_error "--lr: '0' is not a learning rate; allowed: a number > 0 that float32 holds, 1.4e-45 to 3.4e38 (see attn-trace --help)" \
      --backward --lr 0 &&
    expect_error "--explain-grad 'x' is not a cell: give I,J, the query's and the key's token numbers from 1, like --explain-grad 2,5" \
      --backward --explain-grad x &&
    expect_error "the target in $work/t2.csv has shape [2, 2], but the output is [6, 4]: give one value per output value" \
      --backward --loss mse --target "$work/t2.csv"
}

# --- GPT-2's tokenizer (--tokenizer gpt2) ------------------------------------------------------
case_gpt2_text() { expect_output gpt2_text --tokenizer gpt2 "Life is short, eat dessert first"; }
case_gpt2_json() {
  expect_output gpt2_json --tokenizer gpt2 --format json --d-in 2 --d-kq 2 --d-v 2 \
    $'It\'s 2026:  naïve\ncafé 😀'
}
case_gpt2_batch_padded_with_endoftext() {
  expect_output gpt2_batch --tokenizer gpt2 --steps embeddings -s "Hello world" -s "Hi"
}
case_gpt2_file_keeps_bytes_but_one_final_newline() {
  # The file's bytes: a byte-order mark, "\r" and the second-last newline stay; one "\n" goes.
  printf '\xef\xbb\xbfHi\r\n\n' >"$work/text.txt"
  run --tokenizer gpt2 --format json --steps embeddings --file "$work/text.txt"
  grep -q '"ids":\[171,119,123,17250,201,198\]' "$work/stdout" || { cat "$work/stdout" "$work/stderr" | head -20; return 1; }
  printf 'a  \n' | "$binary" --tokenizer gpt2 --format json --steps embeddings - >"$work/stdin.json" &&
    grep -q '"ids":\[64,220,220\]' "$work/stdin.json" || { head -8 "$work/stdin.json"; return 1; }
  # The words tokenizer still trims every final newline and the mark.
  run --format json --steps embeddings --file "$work/text.txt"
  grep -q '"words":\["Hi"\]' "$work/stdout" || { head -8 "$work/stdout"; return 1; }
}
case_gpt2_every_view() {
  local args=(--tokenizer gpt2 "Life is short, eat dessert first")
  local view
  for view in "--query 2" "--query 3 --key 5" "--explain 2,3" "--format heatmap" "--format csv" \
    "--format markdown" "--format summary" "--format overview" "--format html" \
    "--format svg --steps attention_weights" "--format json" "--describe" "--heads 2" "--causal"; do
    # shellcheck disable=SC2086
    run "${args[@]}" $view
    [ "$(cat "$work/status")" = 0 ] && [ ! -s "$work/stderr" ] && [ -s "$work/stdout" ] ||
      { echo "FAIL: $view"; cat "$work/stderr"; return 1; }
  done
  grep -q "␣short" "$work/stdout" || return 1
  "$binary" "${args[@]}" --export "$work/out" >/dev/null && [ -f "$work/out/manifest.json" ] &&
    grep -q '"tokens":\["Life","Ġis"' "$work/out/manifest.json" || return 1
  "$binary" "${args[@]}" --format json >"$work/a.json" &&
    "$binary" diff "$work/a.json" "$work/a.json" >/dev/null &&
    "$binary" "${args[@]}" --expect "$work/a.json" >/dev/null || return 1
}
case_gpt2_views_show_readable_tokens() {
  expect_output gpt2_heatmap --tokenizer gpt2 --format heatmap --steps attention_weights \
    $'a\tb\nc \'s'
  expect_output gpt2_query --tokenizer gpt2 --query 2 "Life is short"
}
# A byte that is only part of a character reads \xNN in every view, as in the dictionary: no view
# escapes the readable form's backslashes a second time. A backslash token reads \\ everywhere.
case_gpt2_partial_bytes_read_as_in_the_dictionary() {
  local args=(--tokenizer gpt2 --d-in 4 --d-kq 2 --d-v 2 $'我 😀 a\\b')
  expect_output gpt2_partial_bytes "${args[@]}" --steps attention_weights || return 1
  local view
  for view in "--format heatmap" "--format summary" "--explain 2,3" "--query 2" \
    "--format svg --steps attention_weights" "--decode --query 3"; do
    # shellcheck disable=SC2086
    run "${args[@]}" $view
    [ "$(cat "$work/status")" = 0 ] && grep -qF '␣\xf0\x9f\x98' "$work/stdout" &&
      grep -qF '\\' "$work/stdout" && ! grep -qF '\\x' "$work/stdout" ||
      { echo "FAIL: $view"; cat "$work/stderr"; grep -n 'x9f' "$work/stdout"; return 1; }
  done
  # Markdown escapes each backslash of a cell, so that it renders as the text views read.
  run "${args[@]}" --format markdown --steps attention_weights
  grep -qF '| **␣\\xf0\\x9f\\x98** |' "$work/stdout" && grep -qF '| **\\\\** |' "$work/stdout" ||
    { grep -n 'x9f' "$work/stdout"; return 1; }
}
case_gpt2_empty_text() {
  expect_error "the sentence is empty: give at least one character" --tokenizer gpt2 ""
}
case_gpt2_invalid_utf8() {
  expect_error "the sentence is not valid UTF-8 (byte 3): a sentence must be UTF-8 text" \
    --tokenizer gpt2 $'caf\xe9'
}
case_gpt2_vocab_size_too_small() {
  expect_error "vocabulary size 1000 is smaller than the sentence's token ids need (gpt2 tokens, the largest id 14662): it must be at least 14663" \
    --tokenizer gpt2 --vocab-size 1000 "Life is short"
}
case_gpt2_unknown_tokenizer() {
  expect_error "--tokenizer: 'gpt3' is not one of words, gpt2 (see attn-trace --help)" --tokenizer gpt3
}
case_error_gpt2_long_texts_refused_before_their_tokens_are_stored() {
  # GPT-2's tokens are counted before they are stored, the text read a piece at a time: 8 million
  # short words (16 MB) and a word of 2 million letters (one piece of BPE, merged from a heap of
  # its pairs, not a scan of the piece per merge) are refused for the memory limit with the plan's
  # message, in under 100 MB of address space. Stored first, they ran out of memory.
  local limit=102400; [ "${ATTN_SANITIZED:-0}" = 1 ] && limit=unlimited
  yes a | head -n 8000000 | tr '\n' ' ' >"$work/words.txt"
  awk 'BEGIN { x = 1; for (i = 0; i < 2000000; i++) { x = (x * 75 + 74) % 65537; printf "%c", 97 + x % 26 } }' >"$work/word.txt"
  local text need status
  for text in words word; do
    need="6.8 PiB (T = 8000001 tokens"; [ $text = word ] && need="155.8 TiB (T = 1194945 tokens"
    (ulimit -v $limit && "$binary" --tokenizer gpt2 --max-memory 64M --file "$work/$text.txt" >"$work/stdout" 2>"$work/stderr")
    status=$?
    printf '%s\n' "attn-trace: error: this run would need about $need, 1 head), more than the memory limit of 64.0 MiB: trace fewer tokens, or raise the limit with --max-memory" >"$work/expected_stderr"
    [ $status = 2 ] || { echo "FAIL ($text): exit code $status"; cat "$work/stderr"; return 1; }
    cmp -s "$work/expected_stderr" "$work/stderr" || { show_difference "stderr" "$work/expected_stderr" "$work/stderr"; return 1; }
  done
}

# --- a GPT-2 checkpoint (--model) ----------------------------------------------------------------
gpt2_models=data/reference/gpt2_model
case_model_text() {
  expect_output model_text --model $gpt2_models/bf16_l1_h2_d16/model.safetensors "Hello world"
}
case_model_layer_head_summary() {
  expect_output model_layer_head_summary --model $gpt2_models/f16_l3_h4_d64/model.safetensors \
    --layer 2 --head 3 --format summary "Life is short, eat dessert first"
}
case_model_heatmap_without_config() {
  expect_output model_heatmap --model $gpt2_models/prefix_l2_h4_d32/model.safetensors --n-head 4 \
    --head 2 --format heatmap --steps attention_weights "Attention is all you need."
}
case_model_every_view() {
  local args=(--model $gpt2_models/f32_l2_h2_d32/model.safetensors --layer 1 "Life is short, eat dessert first")
  local view
  for view in "" "--query 2" "--explain 3,2" "--explain 3,2 --head 1" "--format heatmap" \
    "--format csv" "--format markdown" "--format summary" "--format overview" "--format html" \
    "--format svg --steps attention_weights --head 0" "--format json" "--describe" \
    "--softmax-steps" "--steps omega,output"; do
    # shellcheck disable=SC2086
    run "${args[@]}" $view
    [ "$(cat "$work/status")" = 0 ] && [ ! -s "$work/stderr" ] && [ -s "$work/stdout" ] ||
      { echo "FAIL: $view"; cat "$work/stderr"; return 1; }
  done
  # A batch: padded with <|endoftext|>, whose rows the mask hides.
  run --model $gpt2_models/f32_l2_h2_d32/model.safetensors -s "Hi" -s "Hello world" --format summary
  [ "$(cat "$work/status")" = 0 ] && grep -q "^attention_weights L0H1 s1" "$work/stdout" ||
    { cat "$work/stderr"; return 1; }
  # Layers and heads from 0 in every view: JSON, export names, text.
  "$binary" "${args[@]}" --head 1 --format json >"$work/a.json" &&
    grep -q '"head": 1,' "$work/a.json" && ! grep -q '"head": 2,' "$work/a.json" || return 1
  "$binary" "${args[@]}" --head 1 --export "$work/out" >/dev/null &&
    [ -f "$work/out/24_attention_weights_layer1_head1.npy" ] &&
    [ -f "$work/out/17_head_queries_layer1_head1.npy" ] || { ls "$work/out"; return 1; }
  # CSV: a layer column, empty before the layer; heads from 0.
  "$binary" "${args[@]}" --head 1 --format csv >"$work/a.csv" &&
    [ "$(head -n 1 "$work/a.csv")" = "step,layer,head,batch,row,col,row_label,col_label,value" ] &&
    grep -q "^embeddings,,,,1,1,Life," "$work/a.csv" &&
    grep -q "^head_queries,1,1,,1,1,Life,," "$work/a.csv" &&
    grep -q "^attention_weights,1,1,,1,1,Life,Life,1$" "$work/a.csv" &&
    ! grep -q "^omega,1,2," "$work/a.csv" || { head -n 3 "$work/a.csv"; return 1; }
  "$binary" "${args[@]}" --head 1 --steps attention_weights >"$work/weights.txt" &&
    grep -q "(layer 1, head 1)$" "$work/weights.txt" || return 1
  "$binary" diff "$work/a.json" "$work/a.json" >/dev/null &&
    "$binary" "${args[@]}" --head 1 --expect "$work/a.json" >/dev/null || return 1
}
case_model_errors() {
  local m=$gpt2_models/f32_l2_h2_d32/model.safetensors
  expect_error "--layer chooses in a GPT-2 checkpoint: it goes with --model" --layer 1 || return 1
  expect_error "--head chooses in a GPT-2 checkpoint: it goes with --model" --head 0 || return 1
  expect_error "--seed and --model do not go together (see attn-trace --help)" --model $m --seed 3 ||
    return 1
  expect_error "--layer 2 is not in $m: its layers are 0 … 1" --model $m --layer 2 || return 1
  expect_error "--head 2 is not in $m: its heads are 0 … 1" --model $m --head 2 || return 1
  expect_error "$gpt2_models/prefix_l2_h4_d32/model.safetensors: has no config.json beside it: give the number of heads with --n-head" \
    --model $gpt2_models/prefix_l2_h4_d32/model.safetensors || return 1
  expect_error "$gpt2_models/f32_l2_h2_d32/config.json: n_head is 2, but 4 heads were asked for" \
    --model $m --n-head 4 || return 1
  expect_error "--model reads GPT-2's tokens: --tokenizer words does not go with it" \
    --model $m --tokenizer words || return 1
  expect_error "cannot open the model $gpt2_models/none.safetensors: No such file or directory" \
    --model $gpt2_models/none.safetensors || return 1
  expect_error "the model $gpt2_models is not a file: give a model.safetensors" --model $gpt2_models ||
    return 1
  expect_error "$gpt2_models/f32_l2_h2_d32/config.json: is not a safetensors file: its header length 7237123119542962811 runs past the end of the file (205 bytes)" \
    --model $gpt2_models/f32_l2_h2_d32/config.json || return 1
  expect_error "the text has 40 tokens, more than the model's 32 positions (n_positions): give a shorter text" \
    --model $gpt2_models/bf16_l1_h2_d16/model.safetensors "$(printf ' word%.0s' {1..40})"
}
case_model_hostile_files() {
  # Not a file: refused at once (a FIFO with no writer would block open() for ever); a config.json
  # too large, or with a key given twice; a nan in a weight the trace reads.
  local m=$work/m/model.safetensors c=$work/m/config.json
  mkdir -p "$work/m" && mkfifo "$work/fifo" && mkfifo "$c" || return 1
  cp $gpt2_models/bf16_l1_h2_d16/model.safetensors "$m" || return 1
  expect_error "the model $work/fifo is not a file: give a model.safetensors" --model "$work/fifo" ||
    return 1
  expect_error "$c: is not a file: a model's config.json must be a file of JSON" --model "$m" ||
    return 1
  rm "$c" && mkdir "$c" || return 1
  expect_error "$c: is not a file: a model's config.json must be a file of JSON" --model "$m" ||
    return 1
  rmdir "$c" && truncate -s 2M "$c" || return 1
  expect_error "$c: is larger than 1 MiB: a GPT-2 config.json is about 1 KB" --model "$m" || return 1
  printf '{"n_head": 2, "n_head": 4}' >"$c"
  expect_error "$c: line 1: the key \"n_head\" appears twice in one object: each key may be given once" \
    --model "$m" || return 1
  cp $gpt2_models/bf16_l1_h2_d16/config.json "$c" &&  # h.0.attn.c_proj.weight's first value: nan
    printf '\xc0\x7f' | dd of="$m" bs=1 seek=1612312 conv=notrunc status=none || return 1
  expect_error "$m: tensor 'h.0.attn.c_proj.weight' has a nan at row 1, column 1: a checkpoint's weights must be finite" \
    --model "$m" "Hello world"
}

# --- the KV cache (--decode) and the online softmax (--online-softmax) ---------------------------
case_decode() { expect_output decode --decode; }
case_decode_heads_split_batch() {
  expect_output decode_heads_split_batch --decode --heads 2 --multihead split --d-out 4 \
    -s "Life is short" -s "eat dessert" --steps key_cache_t2,decode_weights_t2,decode_check
}
case_decode_window_rope_gqa() {
  # The cache keeps the window's last keys, one cache per K/V head, q_t and k_t turned.
  expect_output decode_window_rope_gqa --decode --window 3 --rope --heads 4 --kv-heads 2 \
    --multihead split --d-out 8 --steps decode_query_t5,key_cache_t5,decode_weights_t5
}
case_online_softmax_window_explain() {
  # A tile wholly outside the window is skipped for that row.
  expect_output online_softmax_window_explain --online-softmax 2 --window 2 --explain 5,4
}
case_online_softmax() { expect_output online_softmax --online-softmax 2; }
case_online_softmax_causal_explain() {
  expect_output online_softmax_causal_explain --online-softmax 2 --causal --explain 3,2
}
case_online_softmax_json() {
  expect_output online_softmax_json --online-softmax 4 --causal --format json \
    --steps online_max,online_rescale,online_sum,online_context
}
case_decode_online_overview() {
  expect_output decode_online_overview --decode --online-softmax 4 --format overview
}
case_decode_online_overview_window() {
  # the cache capped at min(t, 2) rows; the band of a window
  expect_output decode_online_overview_window --decode --online-softmax 4 --window 2 --format overview
}
case_overview_window_band_long() {
  # 60 keys: one column a key at 80 columns; 40 keys: two at 120; 200 keys: too many for 120
  local words60 words40 words200
  words60=$(for i in $(seq 60); do printf 'w%d ' "$i"; done)
  words40=$(for i in $(seq 40); do printf 'w%d ' "$i"; done)
  words200=$(for i in $(seq 200); do printf 'w%d ' "$i"; done)
  COLUMNS=80 expect_output overview_window_band_60 --format overview --window 4 "$words60" &&
    fits_columns 80 &&
    COLUMNS=120 expect_output overview_window_band_40_120 --format overview --window 4 "$words40" &&
    fits_columns 120 &&
    COLUMNS=120 run --format overview --window 4 "$words200" &&
    grep -q "200 keys are too many to draw in 120 columns: --format heatmap --steps mask draws" \
      "$work/stdout" || { echo "FAIL: 200 keys at 120 columns"; cat "$work/stdout"; return 1; }
}
case_decode_heatmap() {
  expect_output decode_heatmap --decode --format heatmap --color never --steps decode_weights_t4
}
case_decode_online_expect_and_export() {
  # The per-token ids are distinct: --expect, diff and --export each find every step once.
  "$binary" --decode --online-softmax 3 --heads 2 --format json >"$work/a.json" || return 1
  run --decode --online-softmax 3 --heads 2 --expect "$work/a.json"
  [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: --expect exit $(cat "$work/status")"; cat "$work/stderr"; return 1; }
  "$binary" diff "$work/a.json" "$work/a.json" >/dev/null || { echo "FAIL: diff"; return 1; }
  "$binary" --decode --online-softmax 3 --heads 2 --export "$work/out" >"$work/names" || return 1
  local files
  files=$(ls "$work/out" | grep -c 'decode_context_t6')
  [ "$files" = 2 ] || { echo "FAIL: $files files of decode_context_t6, expected 2 (one per head)"; return 1; }
  "$binary" --decode --format html >"$work/page.html" || { echo "FAIL: html"; return 1; }
  grep -q 'decode_check' "$work/page.html" || { echo "FAIL: the page has no decode_check"; return 1; }
}
case_decode_query() { expect_output decode_query --decode --query 3; }
case_decode_window_query_gqa() {
  # the token's cache with the window's dropped keys, a shared K/V head, and its online row
  expect_output decode_window_query_gqa --decode --window 3 --online-softmax 2 --rope --heads 4 \
    --kv-heads 2 --multihead split --d-out 8 --query 5
}
case_decode_window_explain() {
  # key 2 has left token 5's cache (a window of 3), key 4 is in it, key 6 comes later
  expect_output decode_window_explain --decode --window 3 --explain 5,2
  run --decode --window 3 --explain 5,4
  grep -q "key 4 is row 2 of the cache: a_t\[1\] = 0.3476, and the trace's$" "$work/stdout" ||
    { echo "FAIL: key 4 of token 5's cache"; cat "$work/stdout"; return 1; }
  run --decode --explain 3,6
  grep -q "key 6 is not in the cache when token 3 is decoded: it comes later" "$work/stdout" ||
    { echo "FAIL: key 6 after token 3"; cat "$work/stdout"; return 1; }
}
case_online_softmax_query() { expect_output online_softmax_query --online-softmax 2 --causal --query 3; }
case_decode_window_of_t_is_causal() {
  # a window of T or more drops no key: every view is the causal decode's, byte for byte
  local args
  for args in "" "--format json" "--format markdown" "--describe" "--query 4" "--explain 4,2" \
    "--format overview"; do
    # shellcheck disable=SC2086
    "$binary" --decode --online-softmax 2 --rope $args >"$work/causal" || return 1
    # shellcheck disable=SC2086
    "$binary" --decode --online-softmax 2 --rope --window 6 $args >"$work/window" || return 1
    cmp -s "$work/causal" "$work/window" ||
      { show_difference "--window 6 $args" "$work/causal" "$work/window"; return 1; }
  done
}
case_decode_steps_by_kind() {
  # the overview's id of a per-token step chooses every token's
  expect_output decode_steps_by_kind --decode --window 2 --describe --steps key_cache,decode_check \
    --sentence "Life is short"
}
case_error_decode_step_unknown() {
  # each per-token step is listed once, with its tokens, and the message says its bare id works
  expect_error "step 'key_cache_t4' is not in this trace: its steps are embeddings, w_query, w_key, w_value, queries, keys, values, omega, mask, masked_omega, scaled_scores, attention_weights, unmasked_weights, zeroed_weights, renormalized_weights, context_vectors, decode_query_t1 to _t3, decode_key_t1 to _t3, decode_value_t1 to _t3, key_cache_t1 to _t3, value_cache_t1 to _t3, decode_scores_t1 to _t3, decode_weights_t1 to _t3, decode_context_t1 to _t3, decode_check; a decoding step's id without _t<t>, such as decode_query, gives it for every token" \
    --decode --steps key_cache_t4 --sentence "Life is short"
}
case_decode_with_cross_refused() {
  expect_error "--decode and --cross do not go together: decoding caches each new token's own key and value, and cross-attention takes keys and values from another sentence" \
    --decode --cross "The quick brown fox"
}
case_online_softmax_zero_refused() {
  expect_error "--online-softmax: 0 is out of range; allowed: 1..2^40 (see attn-trace --help)" \
    --online-softmax 0
}
case_online_softmax_not_integer_refused() {
  expect_error "--online-softmax: '1.5' is not an integer; allowed: 1..2^40 (see attn-trace --help)" \
    --online-softmax 1.5
}
# --- today's attention: --rope, --kv-heads, --window ----------------------------------------------
case_rope() { expect_output rope --rope --d-kq 4; }
case_rope_interleaved_causal_fox() {
  expect_output rope_interleaved_fox "The quick brown fox jumps over the lazy dog" --seed 7 \
    --d-in 8 --d-kq 6 --d-v 5 --rope --rope-pairs interleaved --rope-theta 100 --causal \
    --steps rope_cos,rotated_keys,attention_weights
}
case_rope_query_2() { expect_output rope_query_2 --rope --d-kq 4 --query 2; }
case_rope_explain_3_1() { expect_output rope_explain_3_1 --rope --d-kq 4 --explain 3,1; }
case_rope_split_explain() {
  expect_output rope_gqa_explain_2_1 --rope --heads 4 --kv-heads 2 --multihead split --d-out 8 \
    --init linear --explain 2,1
}
case_gqa_4_2() { expect_output gqa_4_2 --heads 4 --kv-heads 2 --multihead split --d-out 8 --init linear; }
case_gqa_query_3() {
  expect_output gqa_query_3 --heads 4 --kv-heads 1 --multihead split --d-out 8 --query 3
}
case_gqa_kv_heads_equal_heads_is_the_split_form() {
  # N = H: exactly today's split form, byte for byte.
  expect_output heads_2_split --heads 2 --multihead split --d-out 4 --init linear --kv-heads 2
}
case_window_3() { expect_output window_3 --window 3; }
case_window_t_or_more_is_the_causal_trace() {
  expect_output causal --window 6 && expect_output causal --window 1000 &&
    expect_output causal_query_3 --window 6 --query 3
}
case_overview_gqa_rope() {
  COLUMNS=80 expect_output overview_gqa_rope --format overview --heads 4 --kv-heads 2 \
    --multihead split --d-out 8 --rope
}
case_overview_window_3() { COLUMNS=80 expect_output overview_window_3 --format overview --window 3; }
case_heatmap_window_3() {
  expect_output heatmap_window_3 --format heatmap --color never --window 3 --steps masked_omega,attention_weights
}
case_json_rope_gqa_window() {
  expect_output json_rope_gqa_window --format json --heads 2 --kv-heads 1 --multihead split \
    --d-out 4 --rope --window 2 --steps rope_cos,rotated_keys,mask
}
case_modern_export_diff_html() {
  local args=(--heads 4 --kv-heads 2 --multihead split --d-out 16 --rope --window 3 -s "a b c d" -s "e f")
  run --export "$work/export" "${args[@]}"
  [ "$(cat "$work/status")" = 0 ] || { cat "$work/stderr"; return 1; }
  for f in rope_cos rope_sin rotated_queries rotated_keys; do
    ls "$work/export" | grep -q "_${f}" || { echo "FAIL: no ${f} in the export"; return 1; }
  done
  "$binary" --format json "${args[@]}" >"$work/a.json" || return 1
  "$binary" --format json "${args[@]}" --rope-pairs interleaved >"$work/b.json" || return 1
  run diff "$work/a.json" "$work/a.json"
  [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: a trace differs from itself"; return 1; }
  run diff "$work/a.json" "$work/b.json"
  [ "$(cat "$work/status")" = 1 ] || { echo "FAIL: half and interleaved pairs do not differ"; return 1; }
  grep -q "rotated_queries" "$work/stdout" || { echo "FAIL: diff does not name rotated_queries"; return 1; }
  run --format html "${args[@]}"
  [ "$(cat "$work/status")" = 0 ] || { cat "$work/stderr"; return 1; }
  grep -q "rotated_keys" "$work/stdout" || { echo "FAIL: the page has no rotated_keys"; return 1; }
}
case_rope_odd_width() {
  expect_error "rotary embeddings turn pairs of numbers, but each head's queries and keys have 3 (d_kq), an odd number: it must be even" --rope --d-kq 3
}
case_rope_odd_head_width() {
  expect_error "rotary embeddings turn pairs of numbers, but each head's queries and keys have 3 (d_out / heads), an odd number: it must be even" --rope --heads 2 --multihead split --d-out 6
}
case_rope_cross() {
  expect_error "--rope turns each token by its position in its own sentence: it does not go with --cross, whose two sentences share no positions" --rope --cross "The quick brown fox"
}
case_masked_rows_without_a_batch() {
  # Only a padded batch has rows whose every key is masked; with -s or --batch it is taken
  # whatever the lengths, so that a script's batch of equal lengths is not refused.
  local message="--masked-rows sets the weights of a row whose every key is masked, which only a padded batch (the <pad> queries of -s or --batch sentences of different lengths) or a --window past the --cross sentence's end has: this run has none"
  expect_error "$message" --masked-rows zero &&
    expect_error "$message" --masked-rows nan --causal "Life is short" &&
    expect_error "$message" --masked-rows zero --x tests/golden/inputs/journey_values.json --d-v 2 &&
    "$binary" --masked-rows zero -s "a b" -s "c d" >/dev/null &&
    printf 'a b\nc\n' | "$binary" --masked-rows zero --batch - --steps attention_weights |
    grep -q "^        \[0., 0.\]\])   # <pad>$" &&
    expect_error "$message" --masked-rows zero --window 2 &&
    # A window that ends before the other sentence does masks every key of the rows past it.
    "$binary" --cross "a b" --window 2 --masked-rows zero --steps attention_weights |
    grep -q "^        \[0.0000, 0.0000\]\])   # first$"
}
case_weight_sums_leave_out_rows_that_mask_every_key() {
  # The rows of <pad> queries are 0 by --masked-rows zero: not a softmax's rounding.
  run -s "a b c" -s d --masked-rows zero --softmax-steps --steps weight_sums
  grep -q "the largest |sum − 1| is 0.0e+00" "$work/stdout" &&
    ! grep -q "is 1.0e+00" "$work/stdout" || { cat "$work/stdout"; return 1; }
  run -s "a b c" -s d --masked-rows zero --format summary
  grep -q "^attention_weights s2: largest |row sum − 1| = 0.0e+00$" "$work/stdout" ||
    { cat "$work/stdout"; return 1; }
}
case_embedding_row_labels() {
  # A table's rows are read by id: labels out of id order are refused, labels in order are read.
  expect_error "the embedding table in tests/golden/inputs/embedding_labels_swapped.csv labels row 1 'zebra', but that row is token id 0, 'apple': a table's rows follow the token ids from 0; put each token's row at its id, or give the table without labels" \
    "apple zebra" --embedding tests/golden/inputs/embedding_labels_swapped.csv &&
    run "zebra apple" --embedding tests/golden/inputs/embedding_labels.csv --steps embeddings &&
    [ "$(cat "$work/status")" = 0 ] &&
    grep -q "^tensor(\[\[2., 2., 2.\],    # zebra$" "$work/stdout" ||
    { echo "FAIL: zebra's row is not the row labelled zebra"; cat "$work/stdout" "$work/stderr"; return 1; }
}
case_weight_row_labels() {
  expect_error "W_q in tests/golden/inputs/w_3x2_labelled.csv labels its rows ('r1' first): a weight's rows are dimensions, not tokens; give it without labels (only X, the embedding table and the target have them)" \
    "a b" --w-query tests/golden/inputs/w_3x2_labelled.csv &&
    expect_error "W_o in tests/golden/inputs/w_3x2_labelled.csv labels its rows ('r1' first): a weight's rows are dimensions, not tokens; give it without labels (only X, the embedding table and the target have them)" \
      "a b" --multihead split --w-out tests/golden/inputs/w_3x2_labelled.csv
}
case_target_row_labels() {
  local swapped="the target in tests/golden/inputs/target_labels_swapped.csv labels row 2 'c', but the output's row 2 is the token 'b': its rows follow the output's tokens; put them in that order, or give the target without labels"
  expect_error "$swapped" "a b c" --backward --loss mse --target tests/golden/inputs/target_labels_swapped.csv &&
    expect_error "$swapped" "a b c" --backward --loss mse --target tests/golden/inputs/target_labels_swapped.csv --format overview &&
    expect_error "$swapped" "a b c" --backward --loss mse --target tests/golden/inputs/target_labels_swapped.csv --explain-grad 1,1 &&
    run "a b c" --backward --loss mse --target tests/golden/inputs/target_labels.csv --steps loss &&
    [ "$(cat "$work/status")" = 0 ] || { echo "FAIL: labels in order refused"; cat "$work/stderr"; return 1; }
}
case_target_shape_in_the_overview() {
  # The overview computes nothing, but refuses what the run would.
  local message="the target in tests/golden/inputs/target_2x2.csv has shape [2, 2], but the output is [3, 4]: give one value per output value"
  expect_error "$message" "a b c" --backward --loss mse --target tests/golden/inputs/target_2x2.csv --format overview &&
    expect_error "$message" "a b c" --backward --loss mse --target tests/golden/inputs/target_2x2.csv --format summary &&
    expect_error "the target in tests/golden/inputs/target_2x2.csv has shape [2, 2], but the output is [4, 8] (the 2 sentences' rows one after another): give one value per output value" \
      -s "a b" -s "c" --heads 2 --backward --loss mse --target tests/golden/inputs/target_2x2.csv --format overview
}
case_lr_with_explain_grad() {
  expect_error "--lr takes a step of gradient descent after the gradients: it does not go with --explain-grad" \
    "a b c" --backward --explain-grad 1,1 --lr 0.5
}
case_tokenizer_without_a_sentence() {
  expect_error "--tokenizer splits a sentence into tokens: X in tests/golden/inputs/journey_values.json is given with no sentence to split; give the sentence that labels its rows, or no --tokenizer" \
    --x tests/golden/inputs/journey_values.json --tokenizer gpt2
}
case_seed_that_draws_nothing() {
  local w=tests/golden/inputs/w_3x4.csv
  expect_error "--seed 5 draws nothing here: the input and every weight are given in files; give no --seed" \
    --x tests/golden/inputs/journey_values.json --w-query $w --w-key $w --w-value $w --seed 5 &&
    # W_o is still drawn in the split form, W_v when it is not given.
    "$binary" --x tests/golden/inputs/journey_values.json --w-query $w --w-key $w --w-value $w \
      --multihead split --seed 5 >/dev/null &&
    "$binary" --x tests/golden/inputs/journey_values.json --w-query $w --w-key $w --seed 5 >/dev/null
}
case_split_widths_with_a_given_weight() {
  # --d-out does not go with a given W: the advice names what does.
  expect_error "the split multi-head form projects to one width d_out, but d_kq 4 and d_v 2 differ: give --d-v 4 to match W_q" \
    "a b" --multihead split --w-query tests/golden/inputs/w_3x4.csv --d-v 2 &&
    expect_error "the split multi-head form projects to one width d_out, but d_kq 2 and d_v 4 differ: give --d-kq 4 to match W_v" \
      "a b" --multihead split --w-value tests/golden/inputs/w_3x4.csv &&
    expect_error "the split multi-head form projects to one width d_out, but d_kq 2 and d_v 4 differ: give W_v as wide as W_q" \
      "a b" --multihead split --w-value tests/golden/inputs/w_3x4.csv --w-query tests/golden/inputs/w_3x2.csv
}
case_max_memory_strict_sizes() {
  local size
  for size in 4GB 4GiB +4G "4 G" 4g. 0x10; do
    expect_error "--max-memory: '$size' is not a size: give a number of bytes, or with K, M, G or T, like 4G (see attn-trace --help)" \
      --max-memory "$size" || return 1
  done
  "$binary" --max-memory 4g --steps embeddings a >/dev/null
}
case_memory_message_of_one_token() {
  expect_error "this run would need about 19.2 KiB (T = 1 token, 1 head), more than the memory limit of 4.0 KiB: trace fewer tokens, or raise the limit with --max-memory" \
    --max-memory 4K a
}
case_diff_reads_standard_input() {
  "$binary" --format json "a b" >"$work/a.json" || return 1
  run --format json "a b"
  "$binary" diff - "$work/a.json" <"$work/stdout" >"$work/report" 2>&1 || { cat "$work/report"; return 1; }
  grep -q "^equal: 11 steps, 66 cells" "$work/report" || { cat "$work/report"; return 1; }
  expect_error "diff reads one trace from standard input ('-'), not both: give a file for the other" diff - -
}
case_diff_as_a_first_word() {
  expect_error "diff compares two JSON traces, and there is no file is: to trace a sentence that begins with the word diff, put -- before it: attn-trace -- diff is hard" \
    diff is hard &&
    "$binary" -- diff is hard >"$work/trace.txt" && grep -q "^sentence: 'diff is hard'$" "$work/trace.txt"
}
case_atol_below_the_smallest_double() {
  "$binary" --format json "a b" >"$work/a.json" || return 1
  expect_report 0 "equal: 11 steps, 66 cells, all within atol 0, rtol 1e-05
" "" diff "$work/a.json" "$work/a.json" --atol 1e-400 &&
    expect_error "--atol: '-1e-400' is not a tolerance; allowed: a number >= 0 (see attn-trace --help)" \
      diff "$work/a.json" "$work/a.json" --atol -1e-400
}
case_one_dimensional_files_keep_their_shape() {
  # A 1-D array is read as one row, and named by the shape it has in the file.
  expect_error "W_q in tests/golden/npy/f4_vector5.npy has shape [5], but X has d_in 3: with the rand init it must be [d_in, d_kq]" \
    "a b" --w-query tests/golden/npy/f4_vector5.npy &&
    expect_error "b_o in tests/golden/npy/f4_vector5.npy has shape [5], but d_out is 4: it must be [4]" \
      "a b" --multihead split --init linear --d-out 4 --b-out tests/golden/npy/f4_vector5.npy &&
    expect_error "the target in tests/golden/npy/f4_vector5.npy has shape [5], but the output is [2, 4]: give one value per output value" \
      "a b" --backward --loss mse --target tests/golden/npy/f4_vector5.npy
}
case_labels_escape_what_reorders_the_line() {
  # A right-to-left override in a word would turn the rest of each line around on a terminal.
  expect_output labels_bidi_override $'ab\u202ec d' --steps embeddings
}
case_file_sentence_errors_name_the_file() {
  # As --batch's name their file and line, --file's and standard input's name where they came from.
  expect_error "tests/golden/inputs/sentence_not_utf8.txt: the sentence is not valid UTF-8 (byte 8): a sentence must be UTF-8 text" \
    --file tests/golden/inputs/sentence_not_utf8.txt &&
    run - <tests/golden/inputs/sentence_not_utf8.txt &&
    [ "$(cat "$work/stderr")" = "attn-trace: error: standard input: the sentence is not valid UTF-8 (byte 8): a sentence must be UTF-8 text" ] ||
    { cat "$work/stderr"; return 1; }
}
case_counts_and_signs_in_words() {
  # One tile of 1 key; one tile of every key needs no "tile by tile"; a count of 1 is a value;
  # a negative number subtracted goes in parentheses.
  run "a b c" --online-softmax 1 --steps online_context
  grep -q "^  tiles of 1 key; " "$work/stdout" || { cat "$work/stdout"; return 1; }
  run "a b c" --online-softmax 3 --steps online_context
  grep -q "one tile of every key" "$work/stdout" && ! grep -q "tile by tile" "$work/stdout" ||
    { cat "$work/stdout"; return 1; }
  run "a b" --backward --steps loss --format heatmap
  grep -q "^  L = Z.sum()    one row, columns: 1 value$" "$work/stdout" || { cat "$work/stdout"; return 1; }
  run --backward --explain-grad 3,1 -s "Life is short" -s "eat dessert first" --heads 2 \
    --multihead split --d-out 4 --init linear
  grep -q "^   = 0.3214 × (-0.0150 − (-0.0577)) = 0.0137$" "$work/stdout" &&
    ! grep -q " − -" "$work/stdout" || { cat "$work/stdout" "$work/stderr"; return 1; }
}
case_overview_memory_as_the_run_counts_it() {
  # The overview's word on the memory limit is the run's estimate, not the float32 values alone.
  run --max-memory 10K --format overview
  [ "$(cat "$work/status")" = 0 ] && tr '\n' ' ' <"$work/stdout" | tr -s ' ' |
    grep -q "the text trace would need about 29.4 KiB, more than the memory limit of 10.0 KiB" ||
    { cat "$work/stdout"; return 1; }
  expect_error "this run would need about 29.4 KiB (T = 6 tokens, 1 head), more than the memory limit of 10.0 KiB: trace fewer tokens, or raise the limit with --max-memory" \
    --max-memory 10K || return 1
  # A size's number and unit stay on one line at every width.
  local columns
  for columns in 40 50 60 70 80 90 100; do
    COLUMNS=$columns "$binary" --max-memory 10K --format overview >"$work/narrow" &&
      ! grep -Eq '^ *(KiB|bytes)' "$work/narrow" || { echo "COLUMNS=$columns"; cat "$work/narrow"; return 1; }
  done
}
case_error_width_from_a_file_names_it() {
  # A width that a file sets is refused in the file's terms, not as a d_in no option gave.
  awk 'BEGIN { for (r = 0; r < 2; r++) { for (c = 0; c < 9000; c++) printf "%s1", c ? "," : ""; print "" } }' \
    >"$work/wide.csv"
  printf '1,2\n' >"$work/x.csv"
  expect_error "X in $work/wide.csv has shape [2, 9000]: a width of 9000 is out of range, allowed 1..8192" \
    --x "$work/wide.csv" &&
    expect_error "W_q in $work/wide.csv has shape [2, 9000]: a width of 9000 is out of range, allowed 1..8192" \
      --x "$work/x.csv" --w-query "$work/wide.csv"
}
case_error_steps_with_an_empty_item() {
  # CLI11 drops an empty item of a list unseen: ",omega" would be read as "omega".
  expect_error "--steps: ',omega' has an empty item: join the items with single commas, like omega,keys" \
    --steps ,omega &&
    expect_error "--steps: 'omega,,keys' has an empty item: join the items with single commas, like omega,keys" \
      --steps=omega,,keys &&
    expect_error "--steps: the value is empty: give one or more items joined by commas, like omega,keys" \
      --steps "" &&
    expect_error "--steps: the value is empty: give one or more items joined by commas, like omega,keys" \
      --steps= &&
    expect_error "--steps: 'omega, ,keys' has an empty item: join the items with single commas, like omega,keys" \
      --steps "omega, ,keys" &&
    expect_error "--steps: the value is empty: give one or more items joined by commas, like omega,keys" \
      --steps " "
}
# Spaces after the commas, as a list is often typed, are read as without them.
case_steps_and_cells_with_spaces() {
  expect_output steps_text --steps "scaled_scores, attention_weights" &&
    expect_output steps_text --steps " scaled_scores ,attention_weights " &&
    expect_output explain_2_5 --explain "2, 5" &&
    expect_error "--explain '2, x' is not a cell: give I,J, the query's and the key's token numbers from 1, like --explain 2,5" \
      --explain "2, x"
}
# A row that masks every key under the rule zero: dL/dA reaches the softmax as 0, and the
# working says why.
case_explain_grad_zero_rule() {
  expect_output explain_grad_zero_rule --cross 'p q r' --window 1 --masked-rows zero --backward \
    'a b c d' --explain-grad 4,1
}
# A given table's padding row is read as it is, as nn.Embedding.from_pretrained(E, padding_idx)
# reads it (only a table that nn.Embedding draws has it zero).
case_embedding_padding_row_as_given() {
  expect_output embedding_padding_row -s "a b c" -s a --embedding tests/golden/inputs/pad_table.csv \
    --steps embeddings,omega
}
# A step named twice is drawn once; a decoding step's bare id picks one step per token, which
# one figure cannot draw.
case_svg_step_named_twice() {
  expect_output svg_omega --format svg --steps omega,omega --precision 2 &&
    expect_output svg_omega --format svg --steps omega --steps omega --precision 2 &&
    expect_error "--format svg draws one step: --steps key_cache picks 6, key_cache_t1 to key_cache_t6: choose one, like --steps key_cache_t1" \
      --decode --format svg --steps key_cache
}
# Rows whose kept keys' weights underflow in the softmax over every key: the causal lesson's
# renormalized weights are 0 / 0 there, and the notes say so rather than "the same weights".
case_causal_underflow() {
  expect_output causal_underflow --x tests/golden/inputs/underflow.csv --causal --backward \
    --steps renormalized_weights,grad_omega_other_way
}
case_rope_theta_without_rope() {
  expect_error "--rope-theta sets the rotary embeddings: it goes with --rope" --rope-theta 500000
}
case_rope_pairs_without_rope() {
  expect_error "--rope-pairs sets the rotary embeddings: it goes with --rope" --rope-pairs interleaved
}
case_rope_theta_zero() {
  expect_error "--rope-theta: '0' is not a base; allowed: a number > 0 that float32 holds (1.4e-45 to 3.4028235e38) (see attn-trace --help)" --rope --rope-theta 0
}
case_rope_theta_zero_in_float32() {
  expect_error "--rope-theta: '1e-46' is not a base; allowed: a number > 0 that float32 holds (1.4e-45 to 3.4028235e38) (see attn-trace --help)" --rope --rope-theta 1e-46
}
case_rope_theta_infinite_in_float32() {
  expect_error "--rope-theta: '3.41e38' is not a base; allowed: a number > 0 that float32 holds (1.4e-45 to 3.4028235e38) (see attn-trace --help)" --rope --rope-theta 3.41e38
}
case_rope_theta_overflows_inv_freq() {
  expect_error "the rotary base θ 1e-45 is too small for a head width of 16: inv_freq_7 = 1 / θ^(14/16) overflows float32, and the tables would be nan: give a larger base with --rope-theta" --rope --rope-theta 1e-45 --d-kq 16
}
case_rope_theta_overflows_angle() {
  expect_error "the rotary base θ 1.2e-39 is too small for 6 positions and a head width of 128: the angle p · inv_freq_63 = 2 · 2.0543801e+38 overflows float32, and the tables would be nan: give a larger base with --rope-theta" --rope --rope-theta 1.2e-39 --d-kq 128
}
case_rope_theta_largest() {
  # FLT_MAX, as float32 holds it: inv_freq underflows to 0 past the first pair, every angle 0
  expect_output rope_theta_largest --rope --rope-theta 3.4028235e38 --d-kq 4 --steps rope_cos,rope_sin
}
case_rope_pairs_unknown() {
  expect_error "--rope-pairs: 'twos' is not one of half, interleaved (see attn-trace --help)" --rope --rope-pairs twos
}
case_kv_heads_wrapper() {
  expect_error "--kv-heads shares the K and V of the split form's heads: it needs --multihead split (the wrapper form's heads each have their own)" --heads 4 --kv-heads 2
}
case_kv_heads_not_dividing() {
  expect_error "--kv-heads 3 does not divide --heads 4: each K/V head serves the same number of query heads" --heads 4 --kv-heads 3 --multihead split --d-out 12
}
case_kv_heads_more_than_heads() {
  expect_error "--kv-heads 4 does not divide --heads 2: each K/V head serves the same number of query heads" --heads 2 --kv-heads 4 --multihead split --d-out 4
}
case_kv_heads_given_key_weights() {
  # W_k and W_v of N · d_out / H columns: 2 K/V heads of 2 for 4 query heads of d_out 8
  expect_output kv_heads_given_key_weights --heads 4 --kv-heads 2 --multihead split \
    --w-key tests/golden/inputs/w_3x4.csv --w-value tests/golden/inputs/w_3x4.csv \
    --steps w_key,keys,values
}
case_kv_heads_given_key_weights_wrong_width() {
  expect_error "W_k in tests/golden/inputs/w_3x3.csv has shape [3, 3], but 2 key/value heads share it: with the rand init it must be [d_in, d_kv], d_kv = 2 · d_head, a multiple of 2" --heads 4 --kv-heads 2 --multihead split --w-key tests/golden/inputs/w_3x3.csv
}
case_kv_heads_zero() { expect_error "--kv-heads: 0 is out of range; allowed: 1..64 (see attn-trace --help)" --kv-heads 0; }
case_window_zero() { expect_error "--window: 0 is out of range; allowed: 1..2^63-1 (see attn-trace --help)" --window 0; }
case_window_too_large() {
  expect_error "--window: 9223372036854775808 is out of range; allowed: 1..2^63-1 (see attn-trace --help)" --window 9223372036854775808
}

"case_$case_name"
