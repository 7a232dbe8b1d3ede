#!/usr/bin/env bash
# Runs one golden end-to-end case: tests/e2e/<case>/cmd holds the arguments (one line, run from
# the repository root; a final "< FILE" is its stdin); expected.out is stdout and expected.rc the exit code.
# Regenerate after an intended change with tests/e2e/regen.sh.
set -u
bin=$1
case_dir=$2
export TZ=UTC LC_ALL=C NO_COLOR=1
unset GITHUB_STEP_SUMMARY  # --format github would append to the CI run's real summary
read -r -a args < "$case_dir/cmd"
# A cmd ending in "< FILE" reads FILE on stdin (a log with no year and no file date, for one).
input=/dev/null
n=${#args[@]}
if [ "$n" -ge 2 ] && [ "${args[n-2]}" = "<" ]; then input=${args[n-1]}; args=("${args[@]:0:n-2}"); fi
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
"$bin" "${args[@]}" < "$input" > "$actual" 2>/dev/null
rc=$?
expected_rc=$(cat "$case_dir/expected.rc")
status=0
if [ "$rc" != "$expected_rc" ]; then
  echo "exit code $rc, expected $expected_rc"
  status=1
fi
if ! diff -u "$case_dir/expected.out" "$actual"; then
  echo "output differs from $case_dir/expected.out (regenerate with tests/e2e/regen.sh if intended)"
  status=1
fi
exit $status
