#!/usr/bin/env bash
# The memory estimate holds what a run holds: for each format that prints every value, a run of
# some thousands of values per step, on one thread (two threads fault the estimate's pages in
# first, so their peak is the estimate itself), peaks within its own estimate (the one that
# --max-memory refuses a run by) and the process's own start (its code and libraries, 12 MiB).
# Usage: estimate.sh BINARY PEAK_RSS
set -uo pipefail
binary=$1
peak_rss=$2
if [ "${ATTN_SANITIZED:-0}" = 1 ]; then
  echo "SKIPPED: the sanitizers' shadow memory is no run's own"
  exit 77
fi
words=$(seq -s ' ' 700)
failed=0
probe_limit=4K  # below every estimate here, above what reading the input needs
estimate_kib() {  # ARGS...: the estimate, in KiB, from the refusal at a limit of $probe_limit
  local message number unit
  message=$("$binary" --max-memory "$probe_limit" "$@" 2>&1 >/dev/null)
  number=$(sed -n 's/.*would need about \([0-9.]*\) \([KMG]i*B\).*/\1/p' <<<"$message")
  unit=$(sed -n 's/.*would need about \([0-9.]*\) \([KMG]i*B\).*/\2/p' <<<"$message")
  case $unit in
    KiB) awk -v n="$number" 'BEGIN { printf "%d", n }' ;;
    MiB) awk -v n="$number" 'BEGIN { printf "%d", n * 1024 }' ;;
    GiB) awk -v n="$number" 'BEGIN { printf "%d", n * 1024 * 1024 }' ;;
    *) echo "no estimate in: $message" >&2; echo 0 ;;
  esac
}
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
check() {  # FORMAT EXTRA [SENTENCE]: one run on one thread, its peak against its estimate
  local args estimate status peak
  # shellcheck disable=SC2206  # the options are words
  args=(--threads 1 --format "$1" $2)
  [ -z "$3" ] || args+=("$3")  # none with --batch
  estimate=$(estimate_kib "${args[@]}")
  read -r status peak < <("$peak_rss" "$binary" --max-memory 4G "${args[@]}")
  rm -rf "$folder/x"
  if [ "$status" != 0 ] || [ "$estimate" -le 0 ] || [ "$peak" -gt $((estimate + 12 * 1024)) ]; then
    echo "FAIL: --format $1 $2: exit $status, peak $peak KiB, estimate $estimate KiB"
    failed=1
  else
    echo "ok: --format $1 $2: peak $peak KiB, estimate $estimate KiB"
  fi
}
for format in text json csv markdown html heatmap; do
  for extra in "--heads 3" "--causal --backward"; do check "$format" "$extra" "$words"; done
done
# --steps: the run ends once the steps chosen are recorded, and its estimate counts only the
# steps up to them.
for extra in "--heads 3 --steps queries" "--causal --backward --steps attention_weights"; do
  check text "$extra" "$words"
done
# One large step written, held two or three times over as it is written.
long=$(seq -s ' ' 1500)
for format in text heatmap; do check "$format" "--steps attention_weights" "$long"; done
# A summary that holds a head's scores whole: the KV cache's and the online softmax's lessons
# read them (every other summary goes through blocks of rows).
for extra in "--decode --window 4" "--causal --online-softmax 1"; do
  check summary "$extra" "$long"
done
# An SVG figure: one of a step's slices together, or an export's figure beside each slice's file,
# drawn one at a time (fewer tokens: an export writes a figure of every step).
short=$(seq -s ' ' 300)
for extra in "--causal --steps masked_omega" "--heads 3 --steps omega" \
  "--heads 3 --export $folder/x" "--causal --backward --export $folder/x"; do
  check svg "$extra" "$short"
done
# A batch's weight gradients with --init rand-transposed: each of the 200 items' product of
# W_q (128 x 512) at once, 52 MB, before the sum over the items.
seq 200 | sed 's/.*/w& x&/' >"$folder/batch.txt"
probe_limit=2M  # a batch's sentences need 6 KiB each to be read
check summary "--backward --init rand-transposed --d-in 512 --d-kq 128 --d-v 128 --batch \
$folder/batch.txt" ""
exit $failed
