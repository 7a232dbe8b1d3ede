#!/usr/bin/env bash
# `timeline --format html` in a real browser: Debian's chromium, headless. Renders the page of an
# 8-rank example and of a generated 1,024-rank job, checks the DOM the browser built (the
# initiating rank's lane is there and labelled, the many-rank page has its heat strip), that the
# screenshot is a picture and not a blank page, and that the page loads nothing from anywhere.
# Usage: timeline_html_browser.sh FIRSTFAULT SOURCE_DIR [OUT_DIR]; exit 77 (skip) without chromium.
set -euo pipefail
. "$(dirname "$0")/browser_common.sh"

render() {  # render NAME: DOM to NAME.dom, screenshot to NAME.png
  local name=$1
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/profile" \
    --window-size=1200,900 --screenshot="$out/$name.png" "file://$out/$name.html" > /dev/null 2>&1 ||
    fail "$name: chromium could not take the screenshot"
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$out/profile" \
    --dump-dom "file://$out/$name.html" > "$out/$name.dom" 2> /dev/null || fail "$name: chromium could not render the page"
}

# A screenshot that is a picture (tests/render/check_png.py).
check_png() { python3 "$(dirname "$0")/check_png.py" "$1"; }

# 1. The 8-rank example: rank 5 is the initiating rank.
"$ff" timeline --format html "$src/testdata/kb/nccl-collective-timeout.log" > "$out/small.html"
render small
grep -q 'class="lane initiating" data-rank="5"' "$out/small.dom" || fail "small: no lane for initiating rank 5 in the DOM"
grep -Eq '<text[^>]*class="label strong"[^>]*>rank 5</text>' "$out/small.dom" || fail "small: rank 5's lane is not labelled"
grep -q 'id="initiating"' "$out/small.dom" || fail "small: no initiating box"
[ "$(grep -o 'class="lane ' "$out/small.dom" | wc -l)" -eq 8 ] || fail "small: expected 8 lanes"
check_png "$out/small.png" || fail "small: bad screenshot"

# 2. A 1,024-rank job on 128 hosts: rank 613 runs out of memory, the others time out. The page
# shows a heat strip of all ranks and lanes only for the ranks that matter.
python3 - "$out/big.log" << 'PY'
import sys
lines = []
for r in range(1024):
    lines.append(f"[rank{r}]: 2024-11-07 10:00:{r % 60:02d},000 gpu-{r // 8:03d}:{4000 + r}:{4100 + r} [{r % 8}] NCCL INFO Init COMPLETE")
lines.append("[rank613]: 2024-11-07 10:20:01,000 torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
for r in range(1024):
    if r != 613:
        lines.append(f"[rank{r}]:[E1107 10:50:{r % 60:02d}.000000000 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
                     "operation timeout: WorkNCCL(SeqNum=991, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
                     "1800040 milliseconds before timing out.")
open(sys.argv[1], 'w').write('\n'.join(lines) + '\n')
PY
"$ff" timeline --format html "$out/big.log" > "$out/big.html"
render big
grep -q 'class="lane initiating" data-rank="613"' "$out/big.dom" || fail "big: no lane for initiating rank 613"
grep -q 'all 1024 ranks, by role' "$out/big.dom" || fail "big: no heat strip"
lanes=$(grep -o 'class="lane ' "$out/big.dom" | wc -l)
[ "$lanes" -le 48 ] || fail "big: $lanes lanes, more than the 48 a page shows"
check_png "$out/big.png" || fail "big: bad screenshot"

# 3. Self-contained and inert: no request leaves the page, and log text cannot add markup.
printf '%s\n' '[rank1]: RuntimeError: </script><img src=x onerror=alert(1)><a href="https://evil.example">x</a>' \
  '[rank0]: waiting' > "$out/hostile.log"
"$ff" timeline --format html "$out/hostile.log" > "$out/hostile.html" || true
for page in small big hostile; do
  # Inside a tag (text is escaped, so log text has no "<"): no src/href, no URL but SVG's namespace.
  if grep -Eo '<[^>]*' "$out/$page.html" | grep -E '\b(src|href)=|https?://' | grep -vq 'xmlns="http://www.w3.org/2000/svg"'; then
    fail "$page: the page references something outside itself"
  fi
  if grep -Eqi '<(script|img|link|iframe|a )' "$out/$page.html"; then fail "$page: markup that should not be there"; fi
done
echo "PASS: pages and screenshots in $out"
