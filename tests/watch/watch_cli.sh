#!/usr/bin/env bash
# `firstfault watch` as a process: stdin to its end (exit 0/1), a followed file with --exec and
# --metrics-file until SIGINT (exit 130), and usage errors (exit 2).
set -u
bin=$1
status=0
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2> /dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; status=1; }
export TZ=UTC LC_ALL=C NO_COLOR=1

oom='[rank2]:[E1107 09:50:00.000000000 train.cpp:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB'
timeout_line() {
  echo "[rank$1]:[E1107 10:02:41.300000000 ProcessGroupNCCL.cpp:607] [Rank $1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600071 milliseconds before timing out."
}

# 1. stdin: one JSON alert per line while the job runs; at the end of the input the exit code
#    says what the complete log shows. The writer waits for the watcher (its metrics file) before
#    each step, so a slow start on a loaded machine cannot merge the steps.
wait_for() {  # wait_for FILE PATTERN: up to 20 s
  for _ in $(seq 200); do
    grep -q -- "$2" "$1" 2> /dev/null && return 0
    sleep 0.1
  done
  fail "timed out waiting for '$2' in $1"
  return 1
}
{
  printf '[rank0]:step 1 loss 2.3\n[rank2]:step 1 loss 2.3\n'
  wait_for "$tmp/stdin.prom" '^firstfault_watch_lines_total 2$'
  echo "$oom"
  wait_for "$tmp/stdin.prom" 'alerts_total{kind="failure",entry="cuda-oom"} 1'
  timeout_line 0
} | "$bin" watch --format jsonl --update-interval 0s --metrics-file "$tmp/stdin.prom" - > "$tmp/stdin.out" 2> "$tmp/stdin.err"
rc=$?
[ "$rc" = 0 ] || fail "stdin with a failure: exit $rc, want 0"
[ "$(grep -c '"schema":"firstfault.alert/v1"' "$tmp/stdin.out")" = 2 ] || fail "stdin: want 2 alerts: $(cat "$tmp/stdin.out")"
head -1 "$tmp/stdin.out" | grep -q '"kind":"failure"' || fail "stdin: the first alert is not a failure"
head -1 "$tmp/stdin.out" | grep -q '"entry":"cuda-oom"' || fail "stdin: the first alert is not cuda-oom"
# The cascade updates the alert; arriving just before the end of the input, it may come as the final one.
sed -n 2p "$tmp/stdin.out" | grep -q -E '"kind":"(update|final)"' || fail "stdin: the cascade did not update the alert"
sed -n 2p "$tmp/stdin.out" | grep -q '"ranks":\[0\]' || fail "stdin: the update does not name rank 0 as collateral"

printf '[rank0]:step 1 loss 2.3\n[rank0]:step 2 loss 2.2\n' | "$bin" watch - > "$tmp/clean.out" 2> "$tmp/clean.err"
rc=$?
[ "$rc" = 1 ] || fail "clean stdin: exit $rc, want 1"
[ -s "$tmp/clean.out" ] && fail "clean stdin printed to stdout: $(cat "$tmp/clean.out")"
grep -q "no failure seen" "$tmp/clean.err" || fail "clean stdin: no note on stderr"

# 2. a followed file, --exec and --metrics-file, stopped with SIGINT.
log=$tmp/train.log
: > "$log"
"$bin" watch --format text --exec "cat > '$tmp/hook.json'; echo \"hook \$FIRSTFAULT_ALERT_KIND \$FIRSTFAULT_ENTRY \$FIRSTFAULT_RANK\"" \
  --metrics-file "$tmp/job.prom" "$log" > "$tmp/file.out" 2> "$tmp/file.err" &
pid=$!
printf '[rank0]:step 1 loss 2.3\n[rank1]:step 1 loss 2.3\n[rank2]:step 1 loss 2.3\n' >> "$log"
echo "$oom" >> "$log"
wait_for "$tmp/job.prom" 'firstfault_watch_alerts_total{kind="failure"'
wait_for "$tmp/file.err" '^hook '
kill -INT "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" = 130 ] || fail "SIGINT: exit $rc, want 130"
grep -q '^== firstfault alert #1 \[failure\]' "$tmp/file.out" || fail "text alert missing: $(cat "$tmp/file.out")"
grep -q 'CUDA out of memory on one rank' "$tmp/file.out" || fail "text alert lacks the diagnosis"
grep -q '"schema":"firstfault.alert/v1"' "$tmp/hook.json" || fail "--exec did not get the alert JSON on stdin"
grep -q '^hook failure cuda-oom 2$' "$tmp/file.err" || fail "--exec output (on stderr) or environment wrong: $(cat "$tmp/file.err")"
grep -q '^firstfault_watch_alerts_total{kind="failure",entry="cuda-oom"} 1$' "$tmp/job.prom" || fail "metrics: $(cat "$tmp/job.prom")"
grep -q '^firstfault_watch_last_progress_step{rank="1"} 1$' "$tmp/job.prom" || fail "metrics lack rank progress"
ls "$tmp" | grep -q 'job.prom.tmp' && fail "a temporary metrics file was left behind"

# 3. usage errors name the option and the reason.
"$bin" watch --stall ten "$log" > /dev/null 2> "$tmp/usage.err"
rc=$?
[ "$rc" = 2 ] || fail "--stall ten: exit $rc, want 2"
grep -q -- "--stall: 'ten' is not a duration" "$tmp/usage.err" || fail "--stall ten: $(cat "$tmp/usage.err")"
"$bin" watch --metrics-file "$tmp/no/such/dir/x.prom" "$log" > /dev/null 2> "$tmp/usage.err"
rc=$?
[ "$rc" = 2 ] || fail "unwritable --metrics-file: exit $rc, want 2"
grep -q "no/such/dir" "$tmp/usage.err" || fail "unwritable --metrics-file: $(cat "$tmp/usage.err")"
exit $status
