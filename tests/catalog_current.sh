#!/usr/bin/env bash
# The committed docs/catalog must be exactly what `firstfault catalog` generates from signatures/.
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" catalog --format markdown "$tmp/catalog" > /dev/null || exit 1
if ! diff -r "$root/docs/catalog" "$tmp/catalog" > "$tmp/diff"; then
  head -50 "$tmp/diff"
  echo "docs/catalog is stale: run 'build/firstfault catalog --format markdown docs/catalog' and commit it"
  exit 1
fi
