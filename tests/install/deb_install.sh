#!/usr/bin/env bash
# The .deb from CPack installs with dpkg -i, its binary diagnoses an example log and its man page
# and completions are in place, and it removes cleanly. Usage: deb_install.sh BUILD_DIR SOURCE_DIR;
# exit 77 (skip) without root or dpkg.
set -euo pipefail
build=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v dpkg > /dev/null || { echo "SKIP: no dpkg"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: dpkg -i needs root"; exit 77; }
if dpkg -s firstfault > /dev/null 2>&1; then echo "SKIP: a firstfault package is already installed here"; exit 77; fi

(cd "$build" && cpack -G DEB > cpack.log 2>&1) || { cat "$build/cpack.log"; fail "cpack failed"; }
deb=$(ls "$build"/firstfault_*.deb | head -1)
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg-deb -I "$deb" | grep -E 'Depends|Version' || true
trap 'dpkg -r firstfault > /dev/null 2>&1 || true' EXIT
dpkg -i "$deb" > /dev/null || fail "dpkg -i failed"
[ -x /usr/bin/firstfault ] || fail "/usr/bin/firstfault missing after install"
[ -f /usr/share/man/man1/firstfault.1 ] || [ -f /usr/share/man/man1/firstfault.1.gz ] || fail "no man page"
[ -f /usr/share/bash-completion/completions/firstfault ] || [ -f /usr/share/bash-completion/completions/firstfault.bash ] || fail "no bash completion"
grep -q '\[cuda-oom\]' <<< "$(/usr/bin/firstfault "$src/testdata/kb/cuda-oom.log")" || fail "the installed binary does not diagnose"
dpkg -r firstfault > /dev/null || fail "dpkg -r failed"
[ ! -e /usr/bin/firstfault ] || fail "binary left after dpkg -r"
echo "PASS: dpkg -i, diagnose, dpkg -r"
