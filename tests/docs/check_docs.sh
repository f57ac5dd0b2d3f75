#!/usr/bin/env bash
# Every sample in the docs is what the binary prints. Usage: check_docs.sh BINARY FILE...
# A sample is a ```console block: each line "$ COMMAND" is run through bash, with the binary
# first on PATH, from the project's root; the lines after it, up to the next "$ " line or the
# closing fence, must be exactly its output (stdout, then stderr).
# ATTN_UPDATE_DOCS=1 rewrites the samples in place from the binary instead of comparing.
set -uo pipefail
unset COLUMNS  # the samples are as printed into a pipe: 80 columns (a sample sets COLUMNS itself)
bindir=$(cd "$(dirname "$1")" && pwd)
shift
root=$(cd "$(dirname "$0")/../.." && pwd)

regenerate() {
  local in_block=0 skipping=0 line
  while IFS= read -r line || [ -n "$line" ]; do
    if [ $in_block = 0 ]; then
      printf '%s\n' "$line"
      [ "$line" = '```console' ] && in_block=1
      continue
    fi
    if [ "$line" = '```' ]; then
      in_block=0 skipping=0
      printf '%s\n' "$line"
    elif [ "${line:0:2}" = '$ ' ]; then
      printf '%s\n' "$line"
      (cd "$root" && PATH="$bindir:$PATH" NO_COLOR=1 bash -c "${line:2}" 2>&1)
      skipping=1
    elif [ $skipping = 0 ]; then
      printf '%s\n' "$line"
    fi
  done <"$1"
}

status=0
for file in "$@"; do
  fresh=$(mktemp)
  regenerate "$file" >"$fresh"
  if [ "${ATTN_UPDATE_DOCS:-0}" = 1 ]; then
    cmp -s "$fresh" "$file" || { cp "$fresh" "$file" && echo "updated $file"; }
  elif ! cmp -s "$fresh" "$file"; then
    echo "FAIL: $file: a sample differs from the binary's output (- doc, + binary):"
    diff -u "$file" "$fresh" | head -n 80
    status=1
  fi
  rm -f "$fresh"
done
exit $status
