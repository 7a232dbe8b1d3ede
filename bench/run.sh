#!/usr/bin/env bash
# firstfault benchmark: throughput (MB/s), peak memory and start-up, against ripgrep with the
# library's own patterns and `wc -l` as the floor, on the same generated log, in one run.
#
#   bench/run.sh [--size-mb N] [--jobs N] [--build DIR] [--keep]
#
# --size-mb: size of the generated log (default 1024); --jobs: how many small jobs the triage
# scaling run uses (default 200). CTest runs it small as `bench_smoke` (label bench): a report,
# not a timed assertion; it fails only when a contender crashes or the diagnosis is wrong.
#
# Needs: a release build (default build/), ripgrep (rg) and GNU time for the comparisons (both
# optional: missing tools are reported and skipped). Prints a Markdown report on stdout.
set -euo pipefail
size_mb=1024
njobs=200
build=build
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --size-mb) size_mb=$2; shift 2 ;;
    --jobs) njobs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
ff=$build/firstfault
gen=$build/tests/firstfault-scenario
[ -x "$ff" ] && [ -x "$gen" ] || { echo "build first: cmake --preset release && cmake --build --preset release" >&2; exit 2; }
work=$(mktemp -d)
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
export FIRSTFAULT_CACHE_DIR=$work/cache

# A realistic multi-rank training log (64 ranks, HF/Megatron/DeepSpeed/tqdm chatter, one CUDA OOM
# on rank 37 near the end) of about the requested size (about 0.58 MB per step), used whole.
steps=$(( size_mb * 17 / 10 + 1 ))
"$gen" "$work/gen" --ranks 64 --steps "$steps" --noise 60 --failure cuda-oom --culprit 37 > /dev/null
log=$work/gen/job.log
bytes=$(stat -c %s "$log")
mb=$(awk -v b="$bytes" 'BEGIN{printf "%.1f", b/1e6}')

secs() { /usr/bin/env python3 - "$@" 2>/dev/null || true; }
now() { date +%s.%N; }
measure() {  # measure NAME CMD... -> prints "seconds maxrss_kb"
  local t0 t1 rss=""
  if [ -x /usr/bin/time ]; then
    t0=$(now); /usr/bin/time -f "%M" -o "$work/rss" "$@" > /dev/null 2>"$work/err" || true; t1=$(now)
    rss=$(tail -1 "$work/rss")
  else
    t0=$(now); "$@" > /dev/null 2>"$work/err" || true; t1=$(now)
  fi
  awk -v a="$t0" -v b="$t1" -v r="$rss" 'BEGIN{printf "%.3f %s\n", b-a, r}'
}

echo "# firstfault benchmark"
echo
echo "- machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "- input: generated 64-rank training log, $mb MB, $(wc -l < "$log") lines"
echo "- library: $($ff --version)"
echo
cat "$log" > /dev/null  # warm the page cache for every contender

read -r t_wc _ <<< "$(measure wc -l "$log")"
"$ff" list --patterns > "$work/patterns.txt"
rg_limit=${RG_TIMEOUT:-120}
if command -v rg > /dev/null; then
  # ripgrep's default 100 MB limit on a compiled regex is too small for ~2,200 patterns, several of
  # them case-insensitive: without a larger one it refuses at once and the comparison is void.
  read -r t_rg rss_rg <<< "$(measure timeout "$rg_limit" rg --regex-size-limit 4G -c -f "$work/patterns.txt" "$log")"
  if awk -v t="$t_rg" -v l="$rg_limit" 'BEGIN{exit !(t >= l - 0.5)}'; then rg_note=" (did not finish: stopped after ${rg_limit} s)"
  elif [ -s "$work/err" ]; then
    echo "- rg failed, not compared: $(head -c 200 "$work/err" | tr '\n' ' ')"
    t_rg=""
  fi
else
  t_rg=""
fi
# Run twice: the first run may find the file partly out of the page cache or (with extra
# --signatures) compile the prefilter; the built-in library's prefilter is compiled into the binary.
read -r t_cold rss_cold <<< "$(measure "$ff" diagnose --format json "$log")"
read -r t_warm rss_warm <<< "$(measure "$ff" diagnose --format json "$log")"
verdict=$("$ff" diagnose --color never "$log" | sed -n '1s/.*\[\([a-z0-9-]*\)\]$/\1/p' || true)
echo "step 1" > "$work/one.log"
best=999
for i in 1 2 3 4 5; do
  read -r t _ <<< "$(measure "$ff" diagnose "$work/one.log")"
  best=$(awk -v a="$best" -v b="$t" 'BEGIN{print (b<a)?b:a}')
done

rate() { awk -v b="$bytes" -v t="$1" 'BEGIN{ if (t>0) printf "%.0f MB/s", b/1e6/t; else print "n/a" }'; }
echo "| tool | seconds | throughput | peak RSS |"
echo "|---|---:|---:|---:|"
echo "| wc -l (floor) | $t_wc | $(rate "$t_wc") | |"
[ -n "$t_rg" ] && echo "| rg -c -f <library patterns>${rg_note:-} | $t_rg | $(rate "$t_rg") | ${rss_rg:-?} KB |"
echo "| firstfault diagnose (first run) | $t_cold | $(rate "$t_cold") | ${rss_cold:-?} KB |"
echo "| firstfault diagnose (second run) | $t_warm | $(rate "$t_warm") | ${rss_warm:-?} KB |"
echo
[ -n "$t_rg" ] && echo "- speed-up over rg: $(awk -v a="$t_rg" -v b="$t_warm" 'BEGIN{printf "%.2fx", a/b}')${rg_note:+ (at least)}"
echo "- diagnosis of the benchmark log: $verdict (expected cuda-oom)"
echo "- start-up (load + compile the embedded library + diagnose a one-line file, best of 5): $(awk -v t="$best" 'BEGIN{printf "%.0f ms", t*1000}')"

# Triage scaling: many small jobs, -j 1 versus all cores.
mkdir -p "$work/jobs"
examples=(testdata/kb/*.log)
for i in $(seq 1 "$njobs"); do
  cp "${examples[$(( i % ${#examples[@]} ))]}" "$work/jobs/job-$i.log"
done
read -r t_j1 _ <<< "$(measure "$ff" triage -j 1 --format jsonl "$work/jobs")"
read -r t_jn rss_jn <<< "$(measure "$ff" triage --format jsonl "$work/jobs")"
echo "- triage of $njobs jobs: -j 1 $t_j1 s, -j $(nproc) $t_jn s (speed-up $(awk -v a="$t_j1" -v b="$t_jn" 'BEGIN{printf "%.2fx", a/b}'), peak RSS ${rss_jn:-?} KB)"

# The adversarial case (issue 27): every sample line of the library, over 512 ranks, so every
# pattern is woken and confirmed again and again; a tenth of the benchmark log's size.
hostile=$build/tests/firstfault-hostile
if [ -x "$hostile" ]; then
  "$hostile" "$work/hostile.log" --ranks 512 --size-mb "$(awk -v m="$size_mb" 'BEGIN{print (m/10 < 1) ? 1 : m/10}')" > /dev/null
  hbytes=$(stat -c %s "$work/hostile.log")
  for mode in diagnose timeline; do
    read -r t_h rss_h <<< "$(measure "$ff" "$mode" "$work/hostile.log")"
    echo "- hostile log (every library sample line, 512 ranks, $(awk -v b="$hbytes" 'BEGIN{printf "%.0f MB", b/1e6}')), $mode: $t_h s ($(awk -v b="$hbytes" -v t="$t_h" 'BEGIN{printf "%.0f MB/s", b/1e6/t}')), peak RSS ${rss_h:-?} KB"
  done
  read -r t_h rss_h <<< "$(measure sh -c "cat '$work/hostile.log' | '$ff' watch -")"
  echo "- hostile log through a pipe, watch -: $t_h s, peak RSS ${rss_h:-?} KB"
fi

# A report, not a timed assertion; but a wrong answer on the benchmark log is a failure.
case "$verdict" in cuda-oom) ;; *) echo "bench: expected cuda-oom on the benchmark log, got: $verdict" >&2; exit 1 ;; esac
