#!/usr/bin/env bash
# Issue 24's scale measurement: a 4,096-rank job of about 16 GiB across 512 per-node files
# (`gpu-node-NNN.log`, eight ranks each, torchrun prefixes), one CUDA OOM on rank 2,926, read by
# `firstfault diagnose` on one core and on all cores: wall time, peak RSS, and the diagnosis.
#
#   bench/scale.sh [--gib N] [--build DIR] [--keep]
#
# Each node's file is a healthy body (HF/Megatron/DeepSpeed/tqdm chatter of eight ranks, renumbered
# for the node) followed by the node's part of the generated failure: the generator writes the
# small job, perl renumbers one body per node, so the 16 GiB never sit in memory. Needs GNU time,
# perl, taskset. Prints a Markdown report on stdout.
set -euo pipefail
gib=16
build=build
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --gib) gib=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
ff=$(realpath "$build/firstfault")
gen=$build/tests/firstfault-scenario
work=$(mktemp -d)
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
ranks=4096 nodes=512 culprit=2926
"$gen" "$work/job" --ranks $ranks --layout nodes --failure cuda-oom --culprit $culprit --steps 4 --skew-ms 2000 2>/dev/null >/dev/null
# One node's healthy body: 8 ranks, about (gib * 2) MiB; ~0.58 MB per step at 64 ranks, so ~73 KB per step at 8.
body_mb=$(( gib * 1024 / nodes ))
steps=$(( body_mb * 1000 / 73 + 1 ))
"$gen" "$work/body" --ranks 8 --layout torchrun --failure healthy --steps $steps --noise 60 2>/dev/null >/dev/null
grep -v ' NCCL INFO ' "$work/body/job.log" > "$work/body.log"
make_node() {  # node index: renumber the body's ranks and host for this node, then append its failure part
  local n=$1 host
  host=$(printf 'gpu-node-%03d' "$n")
  perl -pe "s/^\[rank(\d+)\]/'[rank'.(\$1+8*$n).']'/e; s/\[Rank (\d+)\]/'[Rank '.(\$1+8*$n).']'/e" "$work/body.log" > "$work/data/$host.log"
  cat "$work/job/$host.log" >> "$work/data/$host.log"
}
export -f make_node
export work
mkdir -p "$work/data"
seq 0 $((nodes - 1)) | xargs -P "$(nproc)" -I{} bash -c 'make_node {}'
bytes=$(du -sb "$work/data" | cut -f1)
files=$(ls "$work/data" | wc -l)
echo "## Scale: $ranks ranks, $files files, $(( bytes / 1048576 )) MiB"
echo
echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)."
echo
echo "| cores | wall (s) | GB/s | peak RSS (MiB) | diagnosis |"
echo "|---|---|---|---|---|"
cores_list="0"
[ "$(nproc)" -gt 1 ] && cores_list="0 0-$(( $(nproc) - 1 ))"
for cores in $cores_list; do
  sync; cat "$work"/data/*.log > /dev/null  # warm the page cache: the same for every run
  /usr/bin/time -f '%e %M' -o "$work/time" taskset -c "$cores" "$ff" diagnose --format json "$work/data" > "$work/out.json" 2>/dev/null || true
  read -r wall rss_kb < "$work/time"
  diag=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); g=d.get("diagnosis") or {}; print(g.get("id"), "rank", g.get("initiating_rank"))' "$work/out.json")
  n=$(taskset -c "$cores" nproc)
  echo "| $n | $wall | $(python3 -c "print(f'{$bytes/1e9/$wall:.2f}')") | $(( rss_kb / 1024 )) | $diag |"
done
