#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time: run_fuzz.sh TARGET SECONDS WORKDIR SEED_DIR...
# New corpus entries go to WORKDIR/corpus (seed directories stay untouched); a crash, leak,
# timeout (>10 s for one input), out-of-memory (>2 GiB) or broken invariant fails the test and
# leaves the input in WORKDIR/crash-* (add it to fuzz/regressions/<target>/ once fixed).
set -u
target=$1 seconds=$2 work=$3
shift 3
mkdir -p "$work/corpus"
seeds=()
for d in "$@"; do [ -d "$d" ] && seeds+=("$d"); done
"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "${seeds[@]}" 2> "$work/log.txt"
rc=$?
grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)|ERROR|SUMMARY|invariant" "$work/log.txt"
if [ $rc -ne 0 ]; then
  tail -n 60 "$work/log.txt"
  echo "fuzz target $(basename "$target") failed (exit $rc); inputs: $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null)"
fi
exit $rc
