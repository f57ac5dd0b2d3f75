#!/usr/bin/env bash
# Runs one libFuzzer target as a test:
#
#   run_fuzzer.sh FUZZER CORPUS_DIR REGRESSION_DIR SECONDS [DICT]
#
# 1. Replays every file of REGRESSION_DIR and CORPUS_DIR once (no fuzzing): a fixed crash must
#    stay fixed, and every seed must pass.
# 2. Fuzzes for SECONDS (0: skip) from a temporary copy of both folders, so the committed corpus
#    is never written, with DICT as the mutation dictionary if given.
# Prints a one-line summary; on a finding prints the sanitizer's report and the input (saved in
# ATTN_FUZZ_ARTIFACTS, default the current folder, when found by fuzzing), and exits 1.
set -uo pipefail

if [ $# -lt 4 ] || [ $# -gt 5 ]; then
  echo "usage: $0 FUZZER CORPUS_DIR REGRESSION_DIR SECONDS [DICT]" >&2
  exit 2
fi
absolute() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
# Absolute paths: a target may change its working folder at startup (fuzz_options does).
fuzzer=$(absolute "$1")
corpus=$(absolute "$2")
regressions=$(absolute "$3")
seconds=$4
dict=${5:-}
[ -n "$dict" ] && dict=$(absolute "$dict")
name=$(basename "$fuzzer")
artifacts=$(cd "${ATTN_FUZZ_ARTIFACTS:-.}" && pwd)

if [ ! -x "$fuzzer" ]; then echo "$name: no such fuzzer: $fuzzer" >&2; exit 2; fi
if [ ! -d "$corpus" ]; then echo "$name: no such corpus folder: $corpus" >&2; exit 2; fi
case $seconds in '' | *[!0-9]*) echo "$name: SECONDS must be a whole number" >&2; exit 2 ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(-rss_limit_mb=2048 -timeout=10 "-artifact_prefix=$artifacts/$name-")

# The sanitizer's report and the input that triggered it, then exit 1.
report() {  # LOG WHAT
  local error running
  error=$(grep -n -m1 -E '^==[0-9]+==|runtime error:|terminate called|deadly signal|ALARM|out-of-memory' \
    "$1" | cut -d: -f1)
  # When replaying: from the file that failed, which libFuzzer names just before the error.
  running=$(head -n "${error:-$(wc -l <"$1")}" "$1" | grep -n '^Running: ' | tail -n 1 | cut -d: -f1)
  tail -n +"${running:-${error:-1}}" "$1" | head -n 150
  echo "$name: FINDING while $2; the input:"
  if [ -n "$running" ]; then
    sed -n "${running}s/^Running: /  /p" "$1"
  else
    grep -h -o -E "Test unit written to [^ ]+" "$1" | sed 's/^Test unit written to /  /' || true
  fi
  exit 1
}

# 1. Replay: each file once.
mapfile -t files < <(find "$regressions" "$corpus" -maxdepth 1 -type f ! -name '.*' 2>/dev/null |
  sort)
n_regressions=$(find "$regressions" -maxdepth 1 -type f ! -name '.*' 2>/dev/null | wc -l)
if [ ${#files[@]} -gt 0 ]; then
  "$fuzzer" "${common[@]}" "${files[@]}" >"$tmp/replay.log" 2>&1 ||
    report "$tmp/replay.log" "replaying the regressions and the corpus"
fi
replayed="${#files[@]} inputs replayed ($n_regressions from regressions)"
if [ "$seconds" -eq 0 ]; then
  echo "$name: no findings; $replayed; not fuzzed (0 seconds)"
  exit 0
fi

# 2. Fuzz from a copy of the corpus and the regressions. -max_len: without it libFuzzer mutates
# inputs as long as the longest file (a deep-nesting regression is 200 KB), ten times slower.
mkdir "$tmp/corpus"
[ ${#files[@]} -gt 0 ] && cp "${files[@]}" "$tmp/corpus/"
args=("${common[@]}" "-max_total_time=$seconds" -max_len=4096 -print_final_stats=1)
[ -n "$dict" ] && args+=("-dict=$dict")
"$fuzzer" "${args[@]}" "$tmp/corpus" >"$tmp/fuzz.log" 2>&1 ||
  report "$tmp/fuzz.log" "fuzzing"

final_stat() {
  grep -h -o -E "^stat::$1: *[0-9]+" "$tmp/fuzz.log" | grep -o -E '[0-9]+$' | tail -n 1
}
last=$(grep -E '^#[0-9]+' "$tmp/fuzz.log" | tail -n 1)
cov=$(grep -o -E 'cov: [0-9]+' <<<"$last" | grep -o -E '[0-9]+')
corp=$(grep -o -E 'corp: [0-9]+' <<<"$last" | grep -o -E '[0-9]+')
echo "$name: no findings; $replayed; fuzzed ${seconds} s:" \
  "$(final_stat number_of_executed_units) executions ($(final_stat average_exec_per_sec)/s)," \
  "coverage ${cov:-?}, corpus ${corp:-?} inputs, peak RSS $(final_stat peak_rss_mb) MB"
