#!/usr/bin/env bash
# The static binary runs where none of the build's libraries are: in a root that holds only
# glibc's loader, libc and libm (copied from this machine), it diagnoses an example log. Its
# dynamic section may name nothing else. Usage: static_bare_root.sh FIRSTFAULT SOURCE_DIR; exit 77
# (skip) when chroot is not allowed (not root).
set -euo pipefail
ff=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

needed=$(readelf -d "$ff" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "NEEDED: $needed"
for lib in $needed; do
  case $lib in libc.so.6|libm.so.6|ld-linux-x86-64.so.2|ld-linux-aarch64.so.1) ;; *) fail "needs $lib beyond glibc" ;; esac
done
glibc=$(objdump -T "$ff" | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n | tail -1)
echo "newest glibc symbol version: $glibc (docs/install.md states the minimum)"

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: chroot needs root"; exit 77; fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/lib64" "$root/lib/x86_64-linux-gnu" "$root/job"
loader=$(readelf -l "$ff" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
cp -L "$loader" "$root$loader"
for lib in libc.so.6 libm.so.6; do cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$root/lib/x86_64-linux-gnu/$lib"; done
cp "$ff" "$root/firstfault"
cp "$src/testdata/kb/xid-79-gpu-fell-off-bus.log" "$root/job/job.log"
gzip -c "$src/testdata/kb/cuda-oom.log" > "$root/job/oom.log.gz"
echo "bare root: $(find "$root" -type f | sed "s|$root||" | tr '\n' ' ')"

out=$(chroot "$root" /firstfault diagnose --format json /job/job.log) || true
grep -q '"id": "xid-79-gpu-fell-off-bus"' <<< "$out" || fail "no Xid 79 diagnosis in the bare root: $out"
out=$(chroot "$root" /firstfault /job/oom.log.gz) || true
grep -q '\[cuda-oom\]' <<< "$out" || fail "no diagnosis of a gzip log in the bare root (libarchive's codecs): $out"
chroot "$root" /firstfault --version
echo "PASS: the static binary diagnoses in a root with only glibc"
