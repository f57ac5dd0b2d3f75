#!/usr/bin/env bash
# What the build makes from the option table (app/option_table.cpp) agrees with it:
#   docs/cli.md's option table, between its two marker comments, is `attn-trace-docs markdown`;
#   the man page and the bash, zsh and fish completions name every option, and bash's
#   completion function offers the options and each enum option's values.
# Usage: check_options.sh ATTN_TRACE_DOCS GENERATED_DIR CLI_MD
# ATTN_UPDATE_DOCS=1 rewrites the table in docs/cli.md instead of comparing.
set -uo pipefail
unset COLUMNS  # the help is as printed into a pipe: 80 columns
docs_tool=$1 generated=$2 cli_md=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

begin='<!-- the option table: made by attn-trace-docs markdown from app/option_table.cpp -->'
end='<!-- end of the option table -->'
"$docs_tool" markdown "$work/table.md" || exit 1
awk -v b="$begin" -v e="$end" -v t="$work/table.md" '
  $0 == b { print; while ((getline line < t) > 0) print line; skip = 1; next }
  $0 == e { skip = 0 }
  !skip { print }' "$cli_md" >"$work/cli.md"
grep -qxF "$begin" "$cli_md" && grep -qxF "$end" "$cli_md" || fail "$cli_md has no option-table markers"
if [ "${ATTN_UPDATE_DOCS:-0}" = 1 ]; then
  cmp -s "$work/cli.md" "$cli_md" || { cp "$work/cli.md" "$cli_md" && echo "updated $cli_md"; }
elif ! cmp -s "$work/cli.md" "$cli_md"; then
  fail "$cli_md's option table differs from the option table (- doc, + table):"
  diff -u "$cli_md" "$work/cli.md" | head -n 40
fi

# Every option's long name, from the table.
names=$(grep -o '^| `-[^`]*`\(, `--[^ `]*\)\?' "$work/table.md" | grep -o -- '--[a-z0-9-]*' | sort -u)
[ "$(echo "$names" | wc -l)" -gt 30 ] || fail "too few options in the table: $names"
for name in $names; do
  grep -q -- "${name//-/\\\\-}" "$generated/attn-trace.1" || fail "the man page lacks $name"
  grep -q -- "$name" "$generated/attn-trace.bash" || fail "the bash completion lacks $name"
  grep -q -- "$name\[" "$generated/_attn-trace" || fail "the zsh completion lacks $name"
  grep -q -- "-l ${name#--}\b" "$generated/attn-trace.fish" || fail "the fish completion lacks $name"
done

# bash: run the completion function as bash would on Tab.
complete_words() {  # the command line's words, the last being completed -> COMPREPLY
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _attn_trace; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$generated/attn-trace.bash" "$@"
}
[ "$(complete_words attn-trace --form)" = "--format" ] || fail "bash: --form does not complete to --format"
[ "$(complete_words attn-trace --format '' | tr '\n' ' ')" = "text json csv markdown heatmap summary overview svg html " ] ||
  fail "bash: --format's values: $(complete_words attn-trace --format '')"
[ "$(complete_words attn-trace diff a.json --at)" = "--atol" ] || fail "bash: diff --at"
offered=$(complete_words attn-trace --)
for name in $names; do
  # A here-string, not a pipe: under pipefail, grep -q leaving early can fail the echo (SIGPIPE).
  grep -qx -- "$name" <<<"$offered" || fail "bash: -- does not offer $name"
done
grep -q '^complete -F _attn_trace attn-trace$' "$generated/attn-trace.bash" || fail "bash: no complete line"

# zsh and fish check their own syntax, where they are installed.
if command -v zsh >/dev/null; then zsh -n "$generated/_attn-trace" || fail "zsh: syntax"
else echo "skipped: zsh is not installed, so the zsh completion's syntax is not checked"; fi
if command -v fish >/dev/null; then fish -n "$generated/attn-trace.fish" || fail "fish: syntax"
else echo "skipped: fish is not installed, so the fish completion's syntax is not checked"; fi
# The man page: man's own formatter reads it without a warning, where man is installed.
if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww "$generated/attn-trace.1" 2>&1 >/dev/null)
  [ -z "$warnings" ] || fail "groff warns about the man page: $warnings"
else echo "skipped: groff is not installed, so the man page is not formatted"; fi
exit $status
