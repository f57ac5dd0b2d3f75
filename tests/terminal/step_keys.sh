#!/usr/bin/env bash
# --step on a real terminal: attn-trace runs in a detached tmux pane (100 x 50, on a tmux server
# of this script's own), the keys are sent with `tmux send-keys`, and the screen is read with
# `capture-pane -p`. Each case: the keys do what the prompt says (q, space, Enter, → and ← in
# both encodings, b, ?), and after every way out (q, Ctrl-D, Ctrl-C, SIGTERM, SIGHUP, the end)
# the process has ended with the right status, nothing is left of the prompt, and `stty -g` in
# the pane gives the same settings as before the run. Ctrl-Z in an interactive bash: raw mode
# while paused, the prompt gone while stopped, raw again after `fg`, the settings as before at
# the end. Usage: step_keys.sh BINARY
#
# Without tmux it prints "SKIPPED: why" and exits 77 (CTest's SKIP_RETURN_CODE).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BINARY" >&2
  exit 2
fi
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v tmux >/dev/null || { echo "SKIPPED: tmux is not installed"; exit 77; }

work=$(mktemp -d)
socket="attn-step-$$"
tmux_() { tmux -L "$socket" "$@"; }
cleanup() {
  tmux_ kill-server 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

failures=0 cases=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

# A small trace: 11 steps of a few rows each, so that every block fits the pane.
trace="--step 'a b' --d-kq 1 --d-v 1"
session=""
screen="$work/screen"

# The run in a pane, under sh (no job control): the settings before and after it go to files,
# its pid to a file (for kill), and "exit=STATUS" is printed when it ends. Ctrl-C reaches the
# whole foreground group: sh outlives it as an interactive shell would, by a trap (which, unlike
# an ignored signal, is not inherited).
cat >"$work/run.sh" <<END
trap true INT
stty -g >"$work/before"
sh -c 'echo \$\$ >"$work/pid"; exec "\$0" "\$@"' "$binary" $trace
echo "exit=\$?"
stty -g >"$work/after"
sleep 60
END
start() {  # name
  session=$1
  rm -f "$work/before" "$work/after" "$work/pid"
  tmux_ new-session -d -s "$session" -x 100 -y 50 "env -u COLUMNS sh $work/run.sh"
}
capture() { tmux_ capture-pane -p -t "$session" >"$screen" 2>&1; }
wait_for() {  # extended regex [tenths of a second, default 100]: until the screen shows it
  for _ in $(seq "${2:-100}"); do
    capture || { fail "$session: the pane is gone: $(cat "$screen")"; return 1; }
    grep -Eq -- "$1" "$screen" && return 0
    sleep 0.1
  done
  fail "$session: the screen never showed '$1':"
  cat "$screen"
  return 1
}
keys() { tmux_ send-keys -t "$session" "$@"; }
# The last step header on the screen: "4" for "step 4/11 [...]".
last_step() { grep -Eo '^step [0-9]+/11' "$screen" | tail -n 1 | sed 's|step \([0-9]*\)/11|\1|'; }
prompts() { grep -c -- '^-- step' "$screen"; }

# After the process ended with `status`: a line "exit=STATUS" alone (nothing of the prompt
# before it), no prompt on the screen, and the settings as before the run.
ended() {  # status
  wait_for "^exit=" || return 1
  for _ in $(seq 50); do
    [ -s "$work/after" ] && break
    sleep 0.1
  done
  capture
  grep -Eq "^exit=$1\$" "$screen" || { fail "$session: expected a line 'exit=$1':"; cat "$screen"; return 1; }
  [ "$(prompts)" = 0 ] || { fail "$session: a prompt is left on the screen:"; cat "$screen"; return 1; }
  cmp -s "$work/before" "$work/after" ||
    { fail "$session: the terminal's settings changed: $(cat "$work/before") -> $(cat "$work/after")"; return 1; }
}

# The prompt for step N is on the screen, and no other.
at_step() {  # N
  wait_for "^-- step $1/11" || return 1
  [ "$(prompts)" = 1 ] || { fail "$session: $(prompts) prompts on the screen:"; cat "$screen"; return 1; }
}

# --- q without Enter quits at once -----------------------------------------------------------
cases=$((cases + 1))
start quit
wait_for '^step 1/11 \[embeddings\]' && at_step 1 &&
  keys q && ended 0 && ! grep -q 'step 2/11' "$screen" && pass "q quits without Enter"

# --- space, Enter, → (both encodings) go on; b and ← go back; ? shows the keys -------------------
cases=$((cases + 1))
start keys
ok=0
at_step 1 && [ "$(last_step)" = 1 ] &&
  keys Space && at_step 2 && [ "$(last_step)" = 2 ] &&
  keys Enter && at_step 3 && [ "$(last_step)" = 3 ] &&
  keys -H 1b 5b 43 && at_step 4 && [ "$(last_step)" = 4 ] &&
  keys -H 1b 4f 43 && at_step 5 && [ "$(last_step)" = 5 ] &&
  keys b && at_step 4 && [ "$(last_step)" = 4 ] &&
  keys -H 1b 5b 44 && at_step 3 && [ "$(last_step)" = 3 ] &&
  keys x && sleep 0.3 && at_step 3 && [ "$(last_step)" = 3 ] &&
  keys '?' && wait_for 'these keys' && at_step 3 &&
  keys Space && at_step 4 && keys q && ended 0 && ok=1
[ $ok = 1 ] && pass "space, Enter and → go on, b and ← go back, x is ignored, ? shows the keys"

# --- the step drawn again after b is the whole block: header, equation and every row ----------
cases=$((cases + 1))
start back
ok=0
"$binary" 'a b' --d-kq 1 --d-v 1 --steps omega | sed -n '/^step/,$p' |
  sed 's|^step 1/1 |step 8/11 |' >"$work/omega"
at_step 1 && keys Space Space Space Space Space Space Space Space && at_step 9 &&
  keys b && at_step 8 &&
  awk '/^step 8\/11/ { shown = ""; on = 1 } /^-- step/ { on = 0 } on { shown = shown $0 "\n" }
       END { printf "%s", shown }' "$screen" >"$work/shown" &&
  { diff "$work/omega" "$work/shown" >/dev/null ||
    { fail "back: step 8 drawn again differs:"; diff "$work/omega" "$work/shown"; false; }; } &&
  keys q && ended 0 && ok=1
[ $ok = 1 ] && pass "b draws the previous step again, whole"

# --- every way out restores the terminal ------------------------------------------------------
cases=$((cases + 1))
start ctrl_c
at_step 1 && keys C-c && ended 130 && pass "Ctrl-C: exit 130 (SIGINT), the terminal restored"

cases=$((cases + 1))
start ctrl_d
at_step 1 && keys Space && at_step 2 && keys C-d && ended 0 && pass "Ctrl-D quits, the terminal restored"

cases=$((cases + 1))
start sigterm
at_step 1 && [ -s "$work/pid" ] && kill -TERM "$(cat "$work/pid")" && ended 143 &&
  pass "SIGTERM: exit 143, the terminal restored"

cases=$((cases + 1))
start sighup
at_step 1 && [ -s "$work/pid" ] && kill -HUP "$(cat "$work/pid")" && ended 129 &&
  pass "SIGHUP: exit 129, the terminal restored"

cases=$((cases + 1))
start end
at_step 1 && keys Space Space Space Space Space Space Space Space Space Space && at_step 11 &&
  grep -q '^-- step 11/11 (the last)' "$screen" && keys Space && ended 0 &&
  grep -q '^step 11/11 \[context_vectors\]' "$screen" && pass "the end: the last step, then exit 0"

# --- Ctrl-Z and fg in an interactive bash -------------------------------------------------------
# Each command on its own line: bash goes on with the rest of a list when a job stops.
cases=$((cases + 1))
session=suspend
rm -f "$work/before" "$work/after"
tmux_ new-session -d -s "$session" -x 100 -y 50 "env -u COLUMNS PS1='$ ' bash --norc --noprofile -i"
tty=$(tmux_ display-message -p -t "$session" '#{pane_tty}')
ok=0
wait_for '^\$ ?$' && keys "stty -g >$work/before" Enter && keys "$binary $trace" Enter &&
  at_step 1 && before=$(cat "$work/before") &&
  { [ "$(stty -g -F "$tty")" != "$before" ] || { fail "suspend: the pager is not in raw mode"; false; }; } &&
  keys C-z && wait_for 'Stopped' &&
  { [ "$(prompts)" = 0 ] || { fail "suspend: the prompt is left:"; cat "$screen"; false; }; } &&
  keys 'fg' Enter && wait_for '^\$ fg' && sleep 0.3 && at_step 1 &&
  { [ "$(stty -g -F "$tty")" != "$before" ] || { fail "suspend: not raw again after fg"; false; }; } &&
  keys Space && at_step 2 && keys q &&
  keys "echo \"exit=\$?\"; stty -g >$work/after" Enter && ended 0 && ok=1
[ $ok = 1 ] && pass "Ctrl-Z restores the terminal; fg draws the step again, raw"

echo "$cases cases, $failures failures"
[ $failures = 0 ]
