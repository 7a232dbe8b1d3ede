#!/usr/bin/env bash
# Masking holds in every output (docs/reliability.md, "Masking"): one value of every kind of
# src/util/redact.cpp's table (tests/reliability/redact/seeds.tsv) is seeded into a failing job's
# log, one per rank, and every format of every subcommand that prints log text runs on it at
# every level that masks: no secret survives at secrets, pii or all (nor at the CI formats'
# default), no personal data at pii or all, no host or address at all. stderr, watch's --exec
# input and FIRSTFAULT_HOST, and its metrics file are checked too.
#   redact_every_output.sh FIRSTFAULT SOURCE_DIR
set -u
bin=$1 src=$2
export TZ=UTC LC_ALL=C NO_COLOR=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0 runs=0
fail() { echo "FAIL: $*"; status=1; }
seeds=$(grep -v '^#' "$src/tests/reliability/redact/seeds.tsv")

# The job: an NCCL failure, then each seeded line as a rank's last line.
mkdir -p "$tmp/jobs/job-leaky"
log=$tmp/jobs/job-leaky/combined.log
{
  echo "gpu-a18:31790:31901 [1] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.20.3.5<41227> failed : No route to host"
  echo "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
  rank=2
  while IFS=$'\t' read -r _kind _level _value line; do
    printf '[rank%d]: %s\n' "$rank" "$line"
    rank=$((rank + 1))
  done <<< "$seeds"
} > "$log"

rank_of() { case $1 in secrets) echo 1 ;; pii|default) echo 2 ;; all) echo 3 ;; *) echo 0 ;; esac; }

# check WHAT LEVEL FILE...: no value the level must mask appears in the files.
check() {
  local what=$1 level=$2; shift 2
  local masked; masked=$(rank_of "$level")
  runs=$((runs + 1))
  while IFS=$'\t' read -r kind seed_level value _line; do
    [ "$(rank_of "$seed_level")" -le "$masked" ] || continue
    grep -qF -- "$value" "$@" 2>/dev/null && fail "$what --redact=$level: $kind value survives: $value"
  done <<< "$seeds"
}

# run WHAT LEVEL ARGS...: firstfault ARGS with the level's flag (none for `default`), stdout and
# stderr checked; a crash or a usage error fails.
run() {
  local what=$1 level=$2; shift 2
  local flag=(); [ "$level" = default ] || flag=("--redact=$level")
  "$bin" "$@" "${flag[@]}" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  { [ $rc -le 1 ] && [ -s "$tmp/out" ]; } || fail "$what --redact=$level: exit $rc, stdout $(wc -c < "$tmp/out") bytes: $(head -c 400 "$tmp/err")"
  check "$what" "$level" "$tmp/out" "$tmp/err"
}

# Without masking every value is in the output, so the checks below mean something.
"$bin" diagnose -f json --no-redact "$log" > "$tmp/raw.json"
while IFS=$'\t' read -r kind _level value _line; do
  grep -qF -- "$value" "$tmp/raw.json" || fail "unmasked JSON lacks the $kind value $value (the seed tests nothing)"
done <<< "$seeds"

for level in secrets pii all default; do
  for f in text json github markdown sarif gitlab junit; do
    case $level:$f in default:text|default:json) continue ;; esac  # no masking by default there
    run "diagnose -f $f" "$level" diagnose -f "$f" "$log"
  done
  [ "$level" = default ] && { run "triage -f markdown" default triage -f markdown --no-progress "$tmp/jobs"; continue; }
  run "diagnose -v" "$level" diagnose -v "$log"
  for f in text json html svg; do run "timeline -f $f" "$level" timeline -f "$f" "$log"; done
  for f in table jsonl csv markdown html; do run "triage -f $f" "$level" triage -f "$f" --no-progress "$tmp/jobs"; done
  for f in jsonl text; do
    rm -f "$tmp/hook" "$tmp/host" "$tmp/job.prom"
    "$bin" watch -f "$f" "--redact=$level" --update-interval 0s --metrics-file "$tmp/job.prom" \
      --exec "cat >> '$tmp/hook'; echo \"\$FIRSTFAULT_HOST\" >> '$tmp/host'" - < "$log" > "$tmp/out" 2> "$tmp/err"
    [ -s "$tmp/out" ] && [ -s "$tmp/hook" ] || fail "watch -f $f --redact=$level: no alert or no hook input"
    check "watch -f $f" "$level" "$tmp/out" "$tmp/err" "$tmp/hook" "$tmp/host" "$tmp/job.prom"
  done
done

echo "redact_every_output: $(wc -l <<< "$seeds") seeded values, $runs outputs checked"
exit $status
