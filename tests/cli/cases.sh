#!/usr/bin/env bash
# The command-line tests: each case_NAME function is one CTest test (tests/CMakeLists.txt finds
# them by name). Usage: cases.sh BINARY CASE
#   expect_output GOLDEN ARGS...   exit 0, stdout equal to tests/golden/cli/GOLDEN.txt byte for
#                                  byte, nothing on stderr
#   expect_error MESSAGE ARGS...   exit 2, nothing on stdout, stderr exactly
#                                  "attn-trace: error: MESSAGE"
# ATTN_UPDATE_GOLDEN=1 rewrites the golden files from the binary instead of comparing.
set -uo pipefail
binary=$1
case_name=$2
golden_dir=$(cd "$(dirname "$0")/../golden/cli" && pwd)
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
case_sentence_as_several_arguments() { expect_output default Life is short, eat dessert first; }
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
case_version() { expect_output version --version; }

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
  (ulimit -v 65536 && "$binary" --vocab-size 50000 --d-in 4096 --query 2 >"$work/out") &&
    grep -q "^x⁽²⁾ = X\[2\]: its embedding" "$work/out"
}
case_error_seed_negative() {
  expect_error "--seed: -1 is out of range; allowed: 0..2^64-1 (see attn-trace --help)" --seed -1
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
  expect_error "The following argument was not expected: --heads (see attn-trace --help)" --heads 2
}
case_error_unknown_kernel() {
  expect_error "--torch-kernel: neon not in {avx2,default} (see attn-trace --help)" --torch-kernel neon
}
case_error_precision() {
  expect_error "--precision: 9 is out of range; allowed: 0..8 (see attn-trace --help)" --precision 9
}
case_error_option_twice() {
  expect_error "--seed: given 2 times, once is allowed (see attn-trace --help)" --seed 1 --seed 2
}

"case_$case_name"
