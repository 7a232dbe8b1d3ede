#!/usr/bin/env bash
# The message inventory (signatures/inventory/*.tsv) holds: every row that names an entry lands on
# it, and docs/coverage.md is exactly what tools/inventory_coverage.py reports for this build (so a
# change that loses or gains coverage shows up in the diff of the commit that made it).
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 1
python3 tools/inventory_coverage.py "$bin" --write "$tmp/coverage.md" 2> /dev/null || exit 1
if grep -q " lands on " "$tmp/coverage.md"; then
  grep " lands on " "$tmp/coverage.md" | head -20
  echo "inventory rows that name an entry no longer land on it"
  exit 1
fi
if ! diff "$root/docs/coverage.md" "$tmp/coverage.md" > "$tmp/diff"; then
  head -40 "$tmp/diff"
  echo "docs/coverage.md is stale: run 'tools/inventory_coverage.py build/firstfault --write docs/coverage.md' and commit it"
  exit 1
fi
