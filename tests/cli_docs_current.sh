#!/usr/bin/env bash
# The man page and completions come from the CLI definition: the committed docs/firstfault.1
# must be exactly what `firstfault --help-man` prints, it must render without groff warnings,
# and the completions must parse and complete (bash behaviour is exercised; zsh and fish are
# syntax-checked when installed).
set -u
bin=$1
root=$2
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; status=1; }

"$bin" --help-man > "$tmp/firstfault.1" || fail "--help-man exited with $?"
if ! diff -u "$root/docs/firstfault.1" "$tmp/firstfault.1" > "$tmp/man.diff"; then
  head -40 "$tmp/man.diff"
  fail "docs/firstfault.1 is stale: run 'build/firstfault --help-man > docs/firstfault.1' and commit it"
fi
if command -v groff > /dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$tmp/firstfault.1" 2>&1)
  [ -z "$warnings" ] || fail "groff warnings: $warnings"
fi
for sub in diagnose check list explain catalog timeline watch completions; do
  grep -q "^\.SS \"firstfault $sub" "$tmp/firstfault.1" || fail "man page lacks the $sub command"
done

"$bin" completions bash > "$tmp/firstfault.bash" || fail "completions bash"
bash -n "$tmp/firstfault.bash" || fail "the bash completion does not parse"
if command -v zsh > /dev/null; then
  "$bin" completions zsh > "$tmp/_firstfault" && zsh -n "$tmp/_firstfault" || fail "the zsh completion does not parse"
fi
if command -v fish > /dev/null; then
  "$bin" completions fish > "$tmp/firstfault.fish" && fish -n "$tmp/firstfault.fish" || fail "the fish completion does not parse"
  got=$(fish -c "source '$tmp/firstfault.fish'; complete -C 'firstfault watch --format '" | cut -f1 | sort | tr '\n' ' ')
  [ "$got" = "jsonl text " ] || fail "fish: watch --format completes to '$got'"
  got=$(fish -c "source '$tmp/firstfault.fish'; complete -C 'firstfault watch --sta'" | cut -f1)
  [ "$got" = "--stall" ] || fail "fish: watch --sta completes to '$got'"
fi
"$bin" completions tcsh > /dev/null 2>&1 && fail "an unknown shell must be a usage error"

# Drive the bash completion function the way bash does: COMP_WORDS and COMP_CWORD.
mkdir -p "$tmp/sigdir"
touch "$tmp/sigfile.log"
out=$(bash -c '
  source "$1"
  bin=$2
  dir=$3
  comp() { COMP_WORDS=("$bin" "$@"); COMP_CWORD=$#; COMPREPLY=(); _firstfault; printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "; echo; }
  comp wat
  comp watch --st
  comp watch --format ""
  comp diagnose --format js
  comp completions ""
  comp watch --signatures "$dir/sig"
  comp explain cuda-oo
  comp watch --format = j
' _ "$tmp/firstfault.bash" "$bin" "$tmp")
expect() {
  local n=$1 want=$2 got
  got=$(printf '%s\n' "$out" | sed -n "${n}p")
  [ "$got" = "$want" ] || fail "completion case $n: got '$got', want '$want'"
}
expect 1 "watch "
expect 2 "--stall "
expect 3 "jsonl text "
expect 4 "json "
expect 5 "bash fish zsh "
expect 6 "$tmp/sigdir "
expect 7 "$("$bin" list | cut -d' ' -f1 | grep '^cuda-oo' | sort | tr '\n' ' ')"  # entry ids, asked at completion time
expect 8 "jsonl "
exit $status
