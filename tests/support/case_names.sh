#!/bin/sh
# ctest runs each doctest case by its name, and CMake cuts a name at a ';' (its list separator):
# such a case would run none of its checks and pass. No case's name may hold one.
# Usage: case_names.sh UNIT_TEST_BINARY
names=$("$1" --list-test-cases) || exit 1
bad=$(printf '%s\n' "$names" | grep ';')
if [ -n "$bad" ]; then
  printf 'FAIL: test cases whose names hold a semicolon (ctest would run none of their checks):\n%s\n' "$bad"
  exit 1
fi
echo "ok: $(printf '%s\n' "$names" | grep -c .) lines of test case names, none with a semicolon"
