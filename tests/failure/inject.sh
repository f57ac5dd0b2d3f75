#!/usr/bin/env bash
# Failure injection: attn-trace on a full disk, against /dev/full, over `ulimit -f`, into a
# closed pipe, interrupted by SIGINT, SIGTERM and SIGHUP in the middle of an export, and racing
# another export. After each case: the exit code and the exact error line; the earlier export
# byte for byte as it was (sha256 of every file), or else a whole new set; and no temporary
# file or folder left beside it. Usage: inject.sh BINARY
#
# The disks are small tmpfs mounts (256K, 1M, and 512M for the signals, where a sync costs
# nothing), made in a mount namespace of the script's own (unshare -m), so they vanish with it.
# That needs root; otherwise, or where mounting is not allowed, it prints "SKIPPED: why" and
# exits 77 (CTest's SKIP_RETURN_CODE).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BINARY" >&2
  exit 2
fi
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
skip() {
  echo "SKIPPED: $1"
  exit 77
}

if [ -z "${ATTN_INJECT_NAMESPACE:-}" ]; then
  [ "$(id -u)" = 0 ] || skip "needs root to mount a small tmpfs (a full disk)"
  command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
  unshare -m true 2>/dev/null || skip "cannot make a mount namespace here (unshare -m refused)"
  ATTN_INJECT_NAMESPACE=1 exec unshare -m --propagation private bash "$0" "$binary"
fi

base=$(mktemp -d)
small=$base/small medium=$base/medium large=$base/large
mkdir "$small" "$medium" "$large"
cleanup() {
  cd /
  umount "$small" "$medium" "$large" 2>/dev/null
  rm -rf "$base"
}
trap cleanup EXIT
mount -t tmpfs -o size=256k tmpfs "$small" && mount -t tmpfs -o size=1m tmpfs "$medium" &&
  mount -t tmpfs -o size=512m tmpfs "$large" || skip "mounting a tmpfs is not allowed here"

failures=0 cases=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
pass() {
  echo "ok: $*"
}

# Every file of a folder (hidden ones too) with its sha256, sorted.
tree_sum() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum); }

# Nothing temporary beside the export: no .NAME.tmp-XXXXXX or .NAME.old-XXXXXX, file or folder.
no_debris() {  # folder, what
  local debris
  debris=$(find "$1" -maxdepth 1 \( -name '.*.tmp-*' -o -name '.*.old-*' \))
  [ -z "$debris" ] || { fail "$2: left behind: $debris"; return 1; }
}

# The exit code and stderr of the last command, against what is expected.
expect() {  # what, status, stderr line (or "~REGEX"), stderr file, actual status
  local what=$1 want_status=$2 want=$3 err_file=$4 status=$5 got
  got=$(cat "$err_file")
  cases=$((cases + 1))
  if [ "$status" != "$want_status" ]; then
    fail "$what: exit code $status, expected $want_status; stderr: $got"
    return 1
  fi
  if [ "${want:0:1}" = "~" ]; then
    [[ "$got" =~ ${want:1} ]] || { fail "$what: stderr '$got' does not match ${want:1}"; return 1; }
  elif [ "$got" != "$want" ]; then
    fail "$what: stderr '$got', expected '$want'"
    return 1
  fi
  return 0
}

long=$(seq 1 300 | sed 's/^/w/' | tr '\n' ' ')  # 300 tokens: a large trace
err=$base/stderr

# --- 1. A full disk under stdout: text and JSON -----------------------------------------------
for format in text json; do
  "$binary" --format "$format" "$long" >"$small/out.$format" 2>"$err"
  expect "full disk, --format $format" 2 \
    "attn-trace: error: cannot write the output: No space left on device" "$err" $? &&
    pass "full disk, --format $format"
  rm -f "$small/out.$format"
done

# --- 2. /dev/full ------------------------------------------------------------------------------
"$binary" >/dev/full 2>"$err"
expect "/dev/full" 2 "attn-trace: error: cannot write the output: No space left on device" \
  "$err" $? && pass "/dev/full"

# --- 3. ulimit -f with SIGXFSZ ignored: stdout, then an export ---------------------------------
(ulimit -f 16 && trap '' XFSZ && exec "$binary" --format json "$long" >"$large/big.json" 2>"$err")
expect "ulimit -f, stdout" 2 "attn-trace: error: cannot write the output: File too large" \
  "$err" $? && pass "ulimit -f, stdout"
rm -f "$large/big.json"

"$binary" --export "$large/exp" >/dev/null || fail "the first export"
before=$(tree_sum "$large/exp")
(ulimit -f 16 && trap '' XFSZ &&
  exec "$binary" --export "$large/exp" --force --heads 4 "$long" >/dev/null 2>"$err")
expect "ulimit -f, --export" 2 \
  "~^attn-trace: error: cannot write $large/exp/[0-9]+_[a-z_0-9]+\.npy: File too large$" \
  "$err" $? &&
  { [ "$(tree_sum "$large/exp")" = "$before" ] || fail "ulimit -f, --export: the earlier export changed"; } &&
  no_debris "$large" "ulimit -f, --export" && pass "ulimit -f, --export"

# --- 4. A closed pipe with SIGPIPE ignored, as in any child of Python -------------------------
(trap '' PIPE
  "$binary" --format json "$long" 2>"$err" | head -c 10 >/dev/null
  exit "${PIPESTATUS[0]}")
expect "closed pipe, SIGPIPE ignored" 2 "attn-trace: error: cannot write the output: Broken pipe" \
  "$err" $? && pass "closed pipe, SIGPIPE ignored"

# --- 5. A full disk during --export --force, and parents made for an export --------------------
"$binary" --export "$medium/exp" >/dev/null || fail "the first export on 1M"
before=$(tree_sum "$medium/exp")
"$binary" --export "$medium/exp" --force --heads 4 "$long" >"$base/stdout" 2>"$err"
expect "full disk, --export --force" 2 \
  "~^attn-trace: error: cannot write $medium/exp/[0-9]+_[a-z_0-9]+\.npy: No space left on device$" \
  "$err" $? &&
  { [ "$(tree_sum "$medium/exp")" = "$before" ] || fail "full disk: the earlier export changed"; } &&
  { [ ! -s "$base/stdout" ] || fail "full disk: stdout not empty"; } &&
  no_debris "$medium" "full disk, --export --force" && pass "full disk, --export --force"
"$binary" --export "$medium/new/a/b" --heads 4 "$long" >/dev/null 2>"$err"
expect "full disk, new parents" 2 \
  "~^attn-trace: error: cannot write $medium/new/a/b/[0-9]+_[a-z_0-9]+\.npy: No space left on device$" \
  "$err" $? &&
  { [ ! -e "$medium/new" ] || fail "full disk: the parent folders made for it are left"; } &&
  pass "full disk, the parents made for the export removed"

# --- 6. A folder where a file of the earlier export should be --------------------------------
rm "$medium/exp/08_omega.npy" && mkdir "$medium/exp/08_omega.npy"
before=$(tree_sum "$medium/exp")
"$binary" --export "$medium/exp" --force >/dev/null 2>"$err"
expect "a folder in the export" 2 \
  "attn-trace: error: $medium/exp is not empty and not an export of attn-trace (08_omega.npy is not a file): give a new or empty folder, or an earlier export to replace with --force" \
  "$err" $? &&
  { [ "$(tree_sum "$medium/exp")" = "$before" ] && [ -d "$medium/exp/08_omega.npy" ] ||
    fail "a folder in the export: it changed"; } &&
  no_debris "$medium" "a folder in the export" && pass "a folder where a file should be"

# --- 7. SIGINT, SIGTERM and SIGHUP in the middle of a slow export ------------------------------
# 300 tokens and 64 heads: 643 files, 71 MB, about 0.15 s of writing. The earlier export must
# stay byte for byte, or (a signal during the swap is held until it is done) be the whole new
# set; the process ends by the signal; nothing is left. Rounds go on until a signal has landed
# while the files were being written.
slow=(--heads 64 --d-in 64 "$long")
"$binary" --export "$large/new_ref" "${slow[@]}" >/dev/null || fail "the reference export"
new_ref=$(tree_sum "$large/new_ref")
rm -rf "$large/new_ref" "$large/exp"
"$binary" --export "$large/exp" --steps omega >/dev/null || fail "the first export on 512M"
if ! env --default-signal=INT true 2>/dev/null; then
  echo "SKIPPED (signals): env --default-signal is not supported (coreutils < 8.31)"
else
  for signal in INT TERM HUP; do
    number=$(kill -l "$signal")
    landed=0
    for round in $(seq 1 20); do
      before=$(tree_sum "$large/exp")
      # A background job of a script ignores SIGINT unless told otherwise: env resets it.
      env --default-signal=INT,TERM,HUP "$binary" --export "$large/exp" --force "${slow[@]}" \
        >/dev/null 2>"$err" &
      pid=$!
      for _ in $(seq 1 3000); do  # until the staging folder appears (at most ~30 s)
        compgen -G "$large/.exp.tmp-*" >/dev/null && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.01
      done
      sleep "0.0$((round % 5))"
      kill -s "$signal" $pid 2>/dev/null
      { wait $pid; } 2>/dev/null  # (bash's "Hangup" notice)
      status=$?
      now=$(tree_sum "$large/exp")
      no_debris "$large" "SIG$signal, round $round" || break
      if [ "$status" = $((128 + number)) ] && [ "$now" = "$before" ]; then
        landed=$((landed + 1))
        [ -s "$err" ] && fail "SIG$signal: stderr: $(cat "$err")"
        break
      elif [ "$now" != "$new_ref" ]; then
        fail "SIG$signal, round $round: exit $status, and the export is neither the earlier one nor the whole new one"
        break
      fi
      # It finished first (exit 0), or the signal came during the swap: the whole new set. Again,
      # from a small export.
      rm -rf "$large/exp" && "$binary" --export "$large/exp" --steps omega --seed $round >/dev/null
    done
    cases=$((cases + 1))
    if [ $landed = 0 ]; then
      fail "SIG$signal never landed in the middle of an export in $round rounds"
    else
      pass "SIG$signal in the middle of an export (round $round): the earlier export unchanged, nothing left"
    fi
  done
fi

# --- 8. Two --force exports racing: one whole set, never a mix ---------------------------------
rm -rf "$large/exp"
a=(--heads 8 --d-in 64 "$(seq 1 100 | sed 's/^/a/' | tr '\n' ' ')")
b=(--heads 3 --steps omega,keys "$(seq 1 150 | sed 's/^/b/' | tr '\n' ' ')")
"$binary" --export "$large/ref_a" "${a[@]}" >/dev/null && "$binary" --export "$large/ref_b" "${b[@]}" >/dev/null ||
  fail "the racing exports' references"
ref_a=$(tree_sum "$large/ref_a") ref_b=$(tree_sum "$large/ref_b")
rm -rf "$large/ref_a" "$large/ref_b"
race_ok=1
for round in $(seq 1 8); do
  "$binary" --export "$large/exp" --force "${a[@]}" >/dev/null 2>"$base/err_a" &
  pid_a=$!
  "$binary" --export "$large/exp" --force "${b[@]}" >/dev/null 2>"$base/err_b" &
  pid_b=$!
  wait $pid_a
  status_a=$?
  wait $pid_b
  status_b=$?
  now=$(tree_sum "$large/exp")
  if [ $status_a != 0 ] || [ $status_b != 0 ]; then
    fail "race, round $round: exit codes $status_a and $status_b: $(cat "$base/err_a" "$base/err_b")"
    race_ok=0
  elif [ "$now" != "$ref_a" ] && [ "$now" != "$ref_b" ]; then
    fail "race, round $round: the export is a mix of the two"
    race_ok=0
  fi
  no_debris "$large" "race, round $round" || race_ok=0
  [ $race_ok = 1 ] || break
done
cases=$((cases + 1))
[ $race_ok = 1 ] && pass "two --force exports racing, 8 rounds: one whole set each time"

# --- 9. An export onto a mount point, which no rename can replace ------------------------------
find "$medium" -mindepth 1 -delete
"$binary" --export "$medium" >/dev/null 2>"$err"
expect "export onto a mount point" 2 \
  "attn-trace: error: cannot export to $medium: Device or resource busy (a mount point, which an export cannot replace: export into a folder inside it)" \
  "$err" $? && [ -z "$(ls -A "$medium")" ] && pass "export onto a mount point: refused, nothing left"

echo "$cases cases, $failures failures"
[ $failures = 0 ]
