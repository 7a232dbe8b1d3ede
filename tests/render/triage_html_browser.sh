#!/usr/bin/env bash
# `triage --format html` in a real browser: Debian's chromium, headless. Builds an archive of
# dated jobs (two bad nodes, unrecognised errors, an unreadable job, a hostile job name), renders
# the report, checks the DOM the browser built (counts, the per-day chart with its bars, the
# entries, the fleet view naming the bad host, the clusters), that the screenshot is a picture
# and not a blank page, and that the page loads nothing from anywhere.
# Usage: triage_html_browser.sh FIRSTFAULT SOURCE_DIR [OUT_DIR]; exit 77 (skip) without chromium.
set -euo pipefail
. "$(dirname "$0")/browser_common.sh"

jobs="$out/archive"
rm -rf "$jobs"
# 14 days x 3 jobs, each log dated by its own lines; every fifth job loses a GPU on gpu-a17.
python3 - "$jobs" << 'PY'
import os, sys
root = sys.argv[1]
timeout = ("[rank{r}]:[E{m}{d} 10:{mi:02d}:00.000000000 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
           "600071 milliseconds before timing out.")
for day in range(1, 15):
    for n in range(1, 4):
        job = os.path.join(root, f"2026-11-{day:02d}", f"job-{n}")
        os.makedirs(job)
        kind = (day + n) % 5
        when = f"2026-11-{day:02d}"
        if kind == 0:
            lines = [f"{when}T09:59:00.000000+00:00 gpu-a17 kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=4{n}, name=pt_main_thread, GPU has fallen off the bus."]
            lines += [timeout.format(r=r, m=11, d=day, mi=10) for r in (0, 1, 2)]
        elif kind == 1:
            lines = [f"[rank3]: {when} 10:00:01,000 torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
        elif kind == 2:
            lines = [f"{when}T10:00:00.000000+00:00 gpu-b{n:02d} kernel: Out of memory: Killed process 4{n}1 (python) total-vm:1kB, anon-rss:1kB"]
        elif kind == 3:
            lines = [f"{when} 10:00:00,000 step 1", "Traceback (most recent call last):", f"LabelMapError: no mapping for 'labels_{day}{n}'"]
        else:
            lines = [f"[rank{r}]: {when} 10:00:00,000 step 5 loss 2.1" for r in range(4)] + [timeout.format(r=r, m=11, d=day, mi=20) for r in (0, 1, 3)]
        open(os.path.join(job, "rank.log"), "w").write("\n".join(lines) + "\n")
PY
mkdir -p "$jobs/2026-11-14/broken" "$jobs/2026-11-14/<b>x"
printf '\037\213\010\000broken' > "$jobs/2026-11-14/broken/rank.log.gz"
printf '%s\n' '[rank1]: SystemError: </script><img src=x onerror=alert(1)>' > "$jobs/2026-11-14/<b>x/rank.log"

"$ff" triage --format html --no-progress --job-depth 2 "$jobs" > "$out/triage.html" || true
timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/profile" \
  --window-size=1200,1400 --screenshot="$out/triage.png" "file://$out/triage.html" > /dev/null 2>&1 ||
  fail "chromium could not take the screenshot"
timeout 90 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$out/profile" \
  --dump-dom "file://$out/triage.html" > "$out/triage.dom" 2> /dev/null || fail "chromium could not render the page"

dom="$out/triage.dom"
grep -q '<b>44</b>jobs' "$dom" || fail "the job count is not 44"
grep -q 'id="by-day"' "$dom" || fail "no per-day chart"
bars=$(grep -o '<rect ' "$dom" | wc -l)
[ "$bars" -ge 28 ] || fail "the chart has $bars bar segments, expected at least two per day"
grep -Eq '<title>2026-11-[0-9]{2}: xid-79-gpu-fell-off-bus × 1</title>' "$dom" || fail "no hover text on the Xid 79 bars"
grep -q 'id="entries"' "$dom" || fail "no table of entries"
grep -Eq '<td class="n">[0-9]+</td><td><code>gpu-a17</code></td>' "$dom" || fail "the fleet view does not name gpu-a17"
grep -q "LabelMapError: no mapping for '&lt;\*&gt;'" "$dom" || fail "no cluster of the unrecognised LabelMapError"
grep -q 'broken' "$dom" || fail "the unreadable job is not listed"
grep -q '&lt;img src=x' "$out/triage.html" || fail "the hostile line is not shown as text"
python3 "$(dirname "$0")/check_png.py" "$out/triage.png" || fail "bad screenshot"
# Self-contained and inert: no request leaves the page, and log text cannot add markup.
if grep -Eo '<[^>]*' "$out/triage.html" | grep -E '\b(src|href)=|https?://' | grep -vq 'xmlns="http://www.w3.org/2000/svg"'; then
  fail "the page references something outside itself"
fi
if grep -Eqi '<(script|img|link|iframe|a )' "$out/triage.html"; then fail "markup that should not be there"; fi
echo "PASS: page and screenshot in $out"
