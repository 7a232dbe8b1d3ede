#!/usr/bin/env bash
# The static binary runs where no library is at all: it has no dynamic section (not even glibc),
# and in a root that holds only the binary and two logs it diagnoses an example log and a gzip
# log. Usage: static_bare_root.sh FIRSTFAULT SOURCE_DIR; exit 77 (skip) when chroot is not
# allowed (not root).
set -euo pipefail
ff=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

if readelf -d "$ff" | grep -q '(NEEDED)'; then
  fail "needs shared libraries: $(readelf -d "$ff" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
fi
if readelf -l "$ff" | grep -q 'Requesting program interpreter'; then fail "has a program interpreter (not static)"; fi
echo "no shared library, no interpreter: $(file -b "$ff" 2>/dev/null | cut -d, -f1-4)"

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: chroot needs root"; exit 77; fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/job"
cp "$ff" "$root/firstfault"
cp "$src/testdata/kb/xid-79-gpu-fell-off-bus.log" "$root/job/job.log"
gzip -c "$src/testdata/kb/cuda-oom.log" > "$root/job/oom.log.gz"
echo "bare root: $(find "$root" -type f | sed "s|$root||" | tr '\n' ' ')"

out=$(chroot "$root" /firstfault diagnose --format json /job/job.log) || true
grep -q '"id": "xid-79-gpu-fell-off-bus"' <<< "$out" || fail "no Xid 79 diagnosis in the bare root: $out"
out=$(chroot "$root" /firstfault /job/oom.log.gz) || true
grep -q '\[cuda-oom\]' <<< "$out" || fail "no diagnosis of a gzip log in the bare root (libarchive's codecs): $out"
out=$(chroot "$root" /firstfault triage --format jsonl -j 2 /job) || true
grep -q 'cuda-oom' <<< "$out" || fail "no triage with two threads in the bare root: $out"
chroot "$root" /firstfault --version
echo "PASS: the static binary diagnoses in a root that holds nothing but itself"
