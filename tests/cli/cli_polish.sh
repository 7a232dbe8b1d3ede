#!/usr/bin/env bash
# The command line a new user meets (issue 26 §4-5): program name in usage, `help`/`version`,
# "did you mean" for commands, flags, entry ids and categories, durations that need a unit,
# `catalog` that needs its directory, TERM=dumb without colour, `new` + `check DIR` outside the
# source tree. Usage: cli_polish.sh FIRSTFAULT SOURCE_DIR
set -uo pipefail
ff=$(realpath "$1")
src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
status=0
fail() { echo "FAIL: $*"; status=1; }
# expect CODE PATTERN CMD...: run CMD, check its exit code and that stdout+stderr match PATTERN.
expect() {
  local code=$1 pattern=$2; shift 2
  local out rc
  out=$("$@" 2>&1 < /dev/null); rc=$?
  [ "$rc" -eq "$code" ] || fail "$*: exit $rc, expected $code; output: $out"
  # grep -q reading a here-string: with pipefail, a pipe from printf would fail on SIGPIPE when
  # grep stops reading at its first match (a long output, a loaded machine)
  grep -Eq -- "$pattern" <<< "$out" || fail "$*: output does not match /$pattern/: $out"
}

expect 0 '^Usage: firstfault \[OPTIONS\]' "$ff" --help
expect 0 'Usage: firstfault triage' "$ff" help triage
expect 0 '^firstfault [0-9.]+ \(built-in library: [0-9]+ entries\)' "$ff" version
expect 2 "'diagnos' is neither a command nor a file; did you mean 'diagnose'" "$ff" diagnos job.log
expect 2 'did you mean --format\?' "$ff" diagnose --fromat json "$src/testdata/kb/cuda-oom.log"
expect 2 "no entry 'cuda-om' \(did you mean: cuda-oom" "$ff" explain cuda-om
expect 2 "unknown category 'memry' \(did you mean 'memory'\?\); the categories are: network, " "$ff" list --category memry
expect 2 "'10' has no unit: write 10s, 10m or 10h" "$ff" watch --stall 10 /dev/null
expect 2 'dir is required' "$ff" catalog
# timeline JSON is indented for a person up to 64 ranks, one line beyond.
for r in $(seq 0 99); do printf '[rank%d]: step 1 loss 2.0\n' "$r"; done > ranks100.log
[ "$("$ff" timeline --format json ranks100.log | wc -l)" -eq 1 ] || fail "a 100-rank timeline JSON is not one line"
[ "$("$ff" timeline --format json "$src/testdata/kb/cuda-oom.log" | wc -l)" -gt 20 ] || fail "a small timeline JSON is not indented"
# explain renders its markup for a terminal: bold and code spans without their asterisks and backticks.
expect 0 '^cuda-oom · category memory · severity high · action stop' "$ff" explain cuda-oom --color never
expect 0 $'category \e\\[1mmemory\e\\[0m' "$ff" explain cuda-oom --color always
# A file named like a command typo is still a file.
cp "$src/testdata/kb/cuda-oom.log" diagnos
expect 0 '\[cuda-oom\]' "$ff" diagnos
# No colour for a terminal that cannot show it, even when asked for auto.
out=$(TERM=dumb "$ff" --color auto "$src/testdata/kb/cuda-oom.log")
case $out in *$'\e['*) fail "TERM=dumb printed escape sequences" ;; esac

# `new` writes a template that `check DIR` refuses until it is filled in; `check DIR` outside the
# source tree checks DIR's entries only, and says which built-in entry beat one and how to win.
expect 0 'fill in every REPLACE, then: firstfault check' "$ff" new my-failure --category memory --dir lib
[ -f lib/memory/my-failure.yaml ] && [ -f lib/my-failure.log ] || fail "new wrote no files"
expect 2 'does not match its positive sample' "$ff" check lib
expect 2 'exists; not overwritten' "$ff" new my-failure --category memory --dir lib
mkdir -p copy/memory
sed 's/^id: cuda-oom$/id: my-oom/; s#log: kb/cuda-oom.log#log: my-oom.log#' "$src/signatures/memory/cuda-oom.yaml" > copy/memory/my-oom.yaml
cp "$src/testdata/kb/cuda-oom.log" copy/my-oom.log
expect 1 'examples: 0/1 diagnosed' "$ff" check copy
expect 1 'the built-in entry cuda-oom won: if my-oom refines it, add `specializes: \[cuda-oom\]`' "$ff" check copy
sed -i 's/^related:/specializes: [cuda-oom]\nrelated:/' copy/memory/my-oom.yaml
expect 0 'examples: 1/1 diagnosed' "$ff" check copy
[ "$status" -eq 0 ] && echo "PASS: command-line polish"
exit "$status"
