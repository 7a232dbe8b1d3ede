#!/usr/bin/env bash
# Rewrites the expected output of every golden case (or of the cases named) after an intended change.
# Usage: tests/e2e/regen.sh [build/firstfault] [case...]
set -eu
cd "$(dirname "$0")/../.."
bin=${1:-build/firstfault}
shift || true
export TZ=UTC LC_ALL=C NO_COLOR=1
unset GITHUB_STEP_SUMMARY  # --format github would append to the CI run's real summary
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=($(ls tests/e2e | grep -v '\.sh$'))
for c in "${cases[@]}"; do
  d=tests/e2e/$c
  read -r -a args < "$d/cmd"
  input=/dev/null
  n=${#args[@]}
  if [ "$n" -ge 2 ] && [ "${args[n-2]}" = "<" ]; then input=${args[n-1]}; args=("${args[@]:0:n-2}"); fi
  set +e
  "$bin" "${args[@]}" < "$input" > "$d/expected.out" 2>/dev/null
  echo $? > "$d/expected.rc"
  set -e
  echo "regenerated $c (exit $(cat "$d/expected.rc"))"
done
