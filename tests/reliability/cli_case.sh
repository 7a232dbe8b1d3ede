#!/usr/bin/env bash
# Reliability cases that need the real binary (exit code, stderr, pipes, FIFOs, peak memory):
#   cli_case.sh FIRSTFAULT SOURCE_DIR CASE [ARG]
# Each case prints what it checked; any failed check fails the test. docs/reliability.md lists
# them. The unit-level twins are in tests/unit/reliability_test.cpp.
set -u
bin=$1 src=$2 case=$3 arg=${4:-}
export TZ=UTC LC_ALL=C NO_COLOR=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
# run ARGS...: runs firstfault with stdout/stderr captured into $tmp/out, $tmp/err and $rc.
run() { "$bin" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?; }
expect_rc() { [ "$rc" = "$1" ] || fail "exit code $rc, expected $1 (stderr: $(head -c 600 "$tmp/err"))"; }
expect_out() { grep -qF -- "$1" "$tmp/out" || fail "stdout lacks: $1"; }
expect_err() { grep -qF -- "$1" "$tmp/err" || fail "stderr lacks: $1"; }
expect_no_err() { [ ! -s "$tmp/err" ] || fail "unexpected stderr: $(head -c 600 "$tmp/err")"; }

oom() {  # a root event on rank $1
  printf '[rank%s]:[E1107 09:50:00.000000000 train.cpp:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB\n' "$1"
}
timeout_line() {  # a collective timeout (cascade) on rank $1
  printf '[rank%s]:[E1107 10:02:41.300000000 ProcessGroupNCCL.cpp:607] [Rank %s] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600071 milliseconds before timing out.\n' "$1" "$1"
}
progress() {  # $1 MiB of healthy progress lines from 8 ranks
  local lines=""
  for r in 0 1 2 3 4 5 6 7; do
    lines+="[rank$r]:[I1107 09:40:00.000000000 train.py:88] step 1200 loss 1.2345 lr 3.0e-04 grad_norm 0.91 tok/s 41234"$'\n'
  done
  yes "${lines%$'\n'}" | head -c "$(( $1 * 1024 * 1024 ))"
}
job() { oom 3; progress "$1"; printf '\n'; for r in 0 1 2 4 5 6 7; do timeout_line $r; done; }

case $case in
  empty)
    : > "$tmp/empty.log"
    run diagnose "$tmp/empty.log"
    expect_rc 1; expect_out "No failure found"; expect_out "Read 0 line(s), 0 byte(s) from 1 input(s)"; expect_no_err ;;
  missing_among_good)
    oom 2 > "$tmp/rank2.log"; timeout_line 0 > "$tmp/rank0.log"
    run diagnose "$tmp/rank2.log" "$tmp/nope.log" "$tmp/rank0.log"
    expect_rc 2; expect_err "firstfault: $tmp/nope.log: no such file or directory"
    expect_out "[cuda-oom]"; expect_out "Initiating rank: 2" ;;
  unreadable_among_good)
    # /proc/self/mem opens, then every read at offset 0 fails: unreadable even for root.
    oom 2 > "$tmp/rank2.log"
    run diagnose --format json "$tmp/rank2.log" /proc/self/mem
    expect_rc 2; expect_err "firstfault: /proc/self/mem: "
    expect_out '"id": "cuda-oom"'; expect_out '"path": "/proc/self/mem"'; expect_out '"error": ' ;;
  truncated_gzip|truncated_zstd|truncated_xz|truncated_bzip2)
    tool=${case#truncated_}; ext=$tool
    job 2 > "$tmp/job.log"
    case $tool in gzip) gzip -c "$tmp/job.log" > "$tmp/job.z" ;; zstd) zstd -q -c "$tmp/job.log" > "$tmp/job.z" ;;
                  xz) xz -c "$tmp/job.log" > "$tmp/job.z" ;; bzip2) bzip2 -c "$tmp/job.log" > "$tmp/job.z" ;; esac
    size=$(stat -c %s "$tmp/job.z")
    head -c $(( size / 2 )) "$tmp/job.z" > "$tmp/cut.log.$ext"
    run diagnose "$tmp/cut.log.$ext"
    expect_rc 2; expect_err "firstfault: $tmp/cut.log.$ext: $tool"
    expect_out "[cuda-oom]"; expect_out "Initiating rank: 3"
    run diagnose --format json "$tmp/cut.log.$ext"
    expect_rc 2; expect_out '"error": '; expect_out "\"compression\": \"$tool\"" ;;
  fifo)
    mkfifo "$tmp/rank1.log"
    ( oom 1; timeout_line 0 ) > "$tmp/rank1.log" &
    run diagnose "$tmp/rank1.log"
    wait
    expect_rc 0; expect_out "Initiating rank: 1"; expect_no_err ;;
  sigint_fifo)
    # Ctrl-C while a FIFO has no writer (a worker thread waits in open()): the wait ends within a
    # second, the good input read before it is diagnosed, exit 130.
    ( oom 1; timeout_line 0 ) > "$tmp/good.log"
    mkfifo "$tmp/stuck.fifo"
    "$bin" diagnose "$tmp/good.log" "$tmp/stuck.fifo" > "$tmp/out" 2> "$tmp/err" &
    pid=$!
    # Interrupt once a thread waits on the FIFO (its kernel wait channel says so), not after a fixed
    # second: a sanitized build on a loaded machine can take longer than that to start.
    for _ in $(seq 100); do
      grep -qsE 'fifo|partner|pipe' /proc/"$pid"/task/*/wchan && break
      sleep 0.1
    done
    sleep 0.5
    kill -INT "$pid"
    for _ in $(seq 20); do kill -0 "$pid" 2> /dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2> /dev/null; then kill -9 "$pid"; fail "still running 1 s after SIGINT"; fi
    wait "$pid"; rc=$?
    expect_rc 130; expect_out "Initiating rank: 1"; expect_err "interrupted" ;;
  pipe)
    ( oom 1; timeout_line 0 ) > "$tmp/job.log"
    "$bin" < "$tmp/job.log" > "$tmp/out" 2> "$tmp/err"; rc=$?
    expect_rc 0; expect_out "Initiating rank: 1"; expect_no_err
    cat "$tmp/job.log" | "$bin" diagnose --format json - > "$tmp/out" 2> "$tmp/err"; rc=$?
    expect_rc 0; expect_out '"path": "-"' ;;
  symlink_loop)
    mkdir -p "$tmp/job/a" "$tmp/job/b"
    timeout_line 0 > "$tmp/job/a/rank0.log"; oom 1 > "$tmp/job/b/rank1.log"
    ln -s "$tmp/job" "$tmp/job/a/up"; ln -s "$tmp/job/b" "$tmp/job/a/b-again"
    run diagnose --format json "$tmp/job"
    expect_rc 0; expect_no_err
    [ "$(grep -c '"path": ' "$tmp/out")" = 2 ] || fail "expected each file once: $(grep '"path": ' "$tmp/out")" ;;
  long_line)
    { oom 0 | head -c 60; head -c $(( 100 * 1024 * 1024 )) /dev/zero | tr '\0' x; printf '\n'; oom 5; } |
      "$bin" diagnose --format json - > "$tmp/out" 2> "$tmp/err"; rc=$?
    expect_rc 0; expect_out '"long_lines": 1'; expect_out '"lines": 2,'; expect_out '"truncated": true'
    expect_out "1 line(s) longer than 65536 bytes"; expect_out '"initiating_rank": 5' ;;
  ten_million_lines)
    { yes x | head -n 10000000; oom 4; } | "$bin" diagnose --format json - > "$tmp/out" 2> "$tmp/err"; rc=$?
    expect_rc 0; expect_out '"lines": 10000001'; expect_out '"truncated": false'; expect_out '"line": 10000001,' ;;
  stream)
    # ARG MiB streamed through a pipe; peak RSS must stay flat (independent of the size).
    mib=${arg:-256} limit=${FIRSTFAULT_RSS_LIMIT_MB:-160}
    start=$(date +%s%N)
    job "$mib" | /usr/bin/time -f '%M' -o "$tmp/rss" "$bin" diagnose --format json - > "$tmp/out" 2> "$tmp/err"; rc=$?
    end=$(date +%s%N)
    rss_kb=$(tail -n 1 "$tmp/rss")
    expect_rc 0; expect_out '"id": "cuda-oom"'; expect_out '"initiating_rank": 3'
    bytes=$(grep -m1 -o '"bytes": [0-9]*' "$tmp/out" | grep -o '[0-9]*$')
    [ "${bytes:-0}" -gt $(( mib * 1024 * 1024 )) ] || fail "read ${bytes:-?} bytes, expected more than $mib MiB"
    echo "streamed $mib MiB: peak RSS $(( rss_kb / 1024 )) MiB, $(( (end - start) / 1000000 )) ms"
    [ "$rss_kb" -lt $(( limit * 1024 )) ] || fail "peak RSS $(( rss_kb / 1024 )) MiB exceeds $limit MiB" ;;
  bad_signatures)
    mkdir -p "$tmp/sigs/memory" "$tmp/sigs/memory/dup"
    cat > "$tmp/sigs/memory/bad-entry.yaml" <<'YAML'
id: bad-entry
title: T
category: memory
severity: high
patterns:
  - name: root_line
    role: root
    regex: 'boom (unclosed'
    positive: ['boom']
    negative: ['x']
  - name: second
    role: cascade
    regex: 'never'
    positive: ['this does not match']
    negative: ['never here']
root_cause: x
confirm: [x]
prevention: [x]
references: ['https://example.org']
colour: red
examples:
  - log: kb/x.log
    initiating_rank: 0
YAML
    cp "$tmp/sigs/memory/bad-entry.yaml" "$tmp/sigs/memory/dup/bad-entry.yaml"
    oom 0 > "$tmp/job.log"
    for cmd in "check $tmp/sigs --no-examples" "diagnose --signatures $tmp/sigs $tmp/job.log"; do
      # shellcheck disable=SC2086
      run $cmd
      expect_rc 2
      expect_err "$tmp/sigs/memory/bad-entry.yaml:8:12: invalid regex for pattern 'bad-entry/root_line'"
      expect_err "$tmp/sigs/memory/bad-entry.yaml:20:1: unknown key 'colour' in an entry"
      expect_err "$tmp/sigs/memory/bad-entry.yaml:1:1: missing required key 'fix'"
      expect_err "$tmp/sigs/memory/bad-entry.yaml:1:1: missing required key 'action' (restart, restart-excluding, stop, investigate"
      expect_err "$tmp/sigs/memory/bad-entry.yaml:14:16: pattern 'bad-entry/second' does not match its positive sample"
      expect_err "$tmp/sigs/memory/bad-entry.yaml:15:16: pattern 'bad-entry/second' matches its negative sample"
      expect_err "$tmp/sigs/memory/dup/bad-entry.yaml:1:1: duplicate id 'bad-entry'"
      [ ! -s "$tmp/out" ] || fail "stdout not empty for a broken library: $(head -c 300 "$tmp/out")"
    done ;;
  override)
    mkdir -p "$tmp/sigs/memory"
    sed 's/^title: .*/title: Site-specific OOM entry/' "$src/signatures/memory/cuda-oom.yaml" > "$tmp/sigs/memory/cuda-oom.yaml"
    oom 0 > "$tmp/job.log"
    run diagnose --signatures "$tmp/sigs" "$tmp/job.log"
    expect_rc 0; expect_out "Site-specific OOM entry  [cuda-oom]"
    expect_err "$tmp/sigs/memory/cuda-oom.yaml:1:1: note: entry 'cuda-oom' overrides the built-in one (signatures/memory/cuda-oom.yaml)"
    printf 'colour: red\n' >> "$tmp/sigs/memory/cuda-oom.yaml"
    run diagnose --signatures "$tmp/sigs" "$tmp/job.log"
    expect_rc 2; expect_err "$tmp/sigs/memory/cuda-oom.yaml:"; expect_err "unknown key 'colour'" ;;
  random_binary)
    head -c $(( 8 * 1024 * 1024 )) /dev/urandom > "$tmp/random.bin"
    printf 'x' | dd of="$tmp/random.bin" bs=1 count=1 conv=notrunc 2>/dev/null  # never a compression magic
    # Random bytes hold a NUL in their first 64 KiB: a binary file, skipped; named alone, that
    # leaves nothing to diagnose.
    run diagnose --format json "$tmp/random.bin"
    expect_rc 2; expect_err "firstfault: $tmp/random.bin: binary file (NUL byte at offset "
    [ ! -s "$tmp/out" ] || fail "stdout not empty for a skipped binary file"
    # Without NUL bytes they are text: read to the end, and they cannot drive the terminal.
    tr -d '\000' < "$tmp/random.bin" > "$tmp/noise.txt"
    run diagnose --format json "$tmp/noise.txt"
    expect_rc 1; expect_out "\"bytes\": $(stat -c %s "$tmp/noise.txt")"; expect_no_err
    run diagnose "$tmp/noise.txt"
    expect_rc 1
    ! grep -q $'\x1b' "$tmp/out" || fail "log bytes reached the terminal as escape sequences" ;;
  binary_files)
    # Binary files (a NUL byte in the first 64 KiB) are skipped as ripgrep skips them: found in a
    # directory, noted with -v and counted; named on the command line, noted always.
    mkdir -p "$tmp/jobs/run" "$tmp/jobs/other"
    oom 1 > "$tmp/jobs/run/rank1.log"; timeout_line 0 > "$tmp/jobs/other/rank0.log"
    printf '\x10\x5c\0\0\0\0\0\0{"w": {}}' > "$tmp/jobs/run/model.safetensors"
    run diagnose "$tmp/jobs/run"
    expect_rc 0; expect_no_err; expect_out "Note: 1 binary file(s) skipped"
    run diagnose -v "$tmp/jobs/run"
    expect_rc 0; expect_err "firstfault: $tmp/jobs/run/model.safetensors: skipped: binary file (NUL byte at offset 2)"
    run diagnose --format json "$tmp/jobs/run"
    expect_rc 0; expect_no_err; expect_out '"skipped": "binary file (NUL byte at offset 2)"'
    run diagnose "$tmp/jobs/run/model.safetensors" "$tmp/jobs/run/rank1.log"
    expect_rc 0; expect_err "firstfault: $tmp/jobs/run/model.safetensors: skipped: binary file"; expect_out "[cuda-oom]"
    run diagnose "$tmp/jobs/run/model.safetensors"
    expect_rc 2; expect_err "firstfault: $tmp/jobs/run/model.safetensors: binary file (NUL byte at offset 2)"
    expect_err "nothing to diagnose"
    "$bin" < "$tmp/jobs/run/model.safetensors" > "$tmp/out" 2> "$tmp/err"; rc=$?  # stdin is named too
    expect_rc 2; expect_err "firstfault: -: binary file (NUL byte at offset 2)"; expect_err "from stdin"
    run timeline "$tmp/jobs/run"
    expect_rc 0; expect_no_err; expect_out "(1 binary file(s) skipped)"
    run triage --no-progress "$tmp/jobs"
    expect_rc 0; expect_out "2 job(s): 2 diagnosed, 0 unrecognized, 0 clean, 0 error(s); 1 binary file(s) skipped" ;;
  nothing_to_diagnose)
    # No input yielded a line: an error (exit 2) naming each input and its reason, in every
    # format and command; never a "no failure found" verdict. stdout holds no result for text
    # and JSON; the CI formats still write their report, which carries the input errors.
    mkdir "$tmp/empty"
    printf '\x1f\x8b\x08' > "$tmp/cut.log.gz"  # a gzip header cut short: yields nothing
    for inputs in "$tmp/empty" "/proc/self/mem" "$tmp/cut.log.gz" "$tmp/empty /proc/self/mem $tmp/nope.log"; do
      for cmd in "diagnose -f text" "diagnose -f json" "diagnose -f github" "diagnose -f markdown" "diagnose -f sarif" \
                 "diagnose -f gitlab" "diagnose -f junit" "timeline -f text" "timeline -f json"; do
        # shellcheck disable=SC2086
        run $cmd $inputs
        what="$cmd $inputs"
        [ "$rc" = 2 ] || fail "$what: exit code $rc, expected 2"
        grep -qF "nothing to diagnose: no line could be read from ${inputs%% *}" "$tmp/err" || fail "$what: stderr lacks the summary: $(cat "$tmp/err")"
        for path in $inputs; do grep -qF "firstfault: $path: " "$tmp/err" || fail "$what: stderr does not name $path"; done
        ! grep -qiE 'no failure found|"clean"|verdict" value="clean' "$tmp/out" || fail "$what: reported as clean: $(head -c 300 "$tmp/out")"
        case $cmd in
          *text|*json) [ ! -s "$tmp/out" ] || fail "$what: stdout not empty: $(head -c 300 "$tmp/out")" ;;
          *) grep -qF -- "${inputs%% *}" "$tmp/out" || fail "$what: the report does not name the input" ;;
        esac
      done
    done
    tar -C "$tmp/empty" -czf "$tmp/empty.tgz" .
    for format in table jsonl csv markdown; do
      run triage --no-progress -f "$format" "$tmp/empty" "$tmp/empty.tgz" "$tmp/cut.log.gz"
      expect_rc 2
      expect_out "no file to read in this directory"; expect_out "the archive holds no file"; expect_out "incomplete header"
    done
    run triage
    expect_rc 2; expect_err "nothing to triage" ;;
  some_inputs_bad)
    # Good inputs are still diagnosed beside bad ones, in every format; exit 2 says one failed.
    oom 2 > "$tmp/rank2.log"; timeout_line 0 > "$tmp/rank0.log"
    for format in text json github markdown sarif gitlab junit; do
      run diagnose -f "$format" "$tmp/rank2.log" "$tmp/nope.log" "$tmp/rank0.log"
      expect_rc 2; expect_err "firstfault: $tmp/nope.log: no such file or directory"; expect_out "cuda-oom"
    done
    for format in text json; do
      run timeline -f "$format" "$tmp/rank2.log" "$tmp/nope.log" "$tmp/rank0.log"
      expect_rc 2; expect_err "firstfault: $tmp/nope.log: no such file or directory"; expect_out "initiating"
    done
    mkdir -p "$tmp/jobs/a" "$tmp/jobs/b"; cp "$tmp/rank2.log" "$tmp/jobs/a/"; ln -s /proc/self/mem "$tmp/jobs/b/rank0.log"
    for format in table jsonl csv markdown; do
      run triage --no-progress -f "$format" "$tmp/jobs"
      expect_rc 2; expect_out "cuda-oom"; expect_out "rank0.log"
    done ;;
  file_choice)
    # --glob and --exclude on every command that reads directories and archives; a bad glob is
    # a usage error that names it.
    mkdir -p "$tmp/run/ckpt"
    oom 2 > "$tmp/run/rank2.log"; oom 5 > "$tmp/run/ckpt/rank5.log"; timeout_line 0 > "$tmp/run/rank0.txt"
    run diagnose --exclude ckpt --glob '*.log' "$tmp/run"
    expect_rc 0; expect_out "Initiating rank: 2"; expect_no_err
    run timeline -f json --glob '!ckpt/' "$tmp/run"
    expect_rc 0; expect_out "rank0.txt"; ! grep -q "rank5.log" "$tmp/out" || fail "timeline read the excluded folder"
    run triage --no-progress --job-depth 0 --exclude 'rank2*' --glob '*.log' "$tmp/run"
    expect_rc 0; expect_out "cuda-oom"
    for cmd in diagnose timeline triage; do
      run "$cmd" --glob 'rank[0-3.log' "$tmp/run"
      expect_rc 2; expect_err "firstfault: --glob 'rank[0-3.log': unclosed"
      [ ! -s "$tmp/out" ] || fail "$cmd printed results for a bad glob"
    done
    run diagnose --glob '*.out' "$tmp/run"
    expect_rc 2; expect_err "firstfault: $tmp/run: no file here matches --glob/--exclude" ;;
  many_jobs)
    # A directory of many jobs given to diagnose: diagnosed as one job, with a hint to use triage.
    for j in a b c; do mkdir -p "$tmp/runs/job-$j"; oom 0 > "$tmp/runs/job-$j/rank0.log"; done
    run diagnose "$tmp/runs"
    expect_rc 0; expect_out "[cuda-oom]"
    expect_err "firstfault: $tmp/runs looks like 3 jobs (3 folders each hold their own rank-0 log); use \`firstfault triage $tmp/runs\` to diagnose each"
    run diagnose "$tmp/runs/job-a"
    expect_rc 0; expect_no_err ;;
  many_members_archive)
    # A tar of 10,000 one-line members (2,500 jobs of 4 ranks, one of them a CUDA OOM): each job
    # is finished, written and freed as soon as its last member is read. Keeping every job open
    # to the end of the archive cost about 20 KB per member (232 MB here, 2 GB at 100,000).
    limit=${FIRSTFAULT_RSS_LIMIT_MB:-100}
    mkdir -p "$tmp/m"
    for j in $(seq 0 2499); do
      mkdir "$tmp/m/job-$j"
      for r in 0 1 2 3; do printf '[rank%d]: step 1 loss 2.0\n' "$r" > "$tmp/m/job-$j/rank$r.log"; done
    done
    oom 2 >> "$tmp/m/job-1234/rank2.log"
    tar cf "$tmp/m.tar" -C "$tmp/m" .
    /usr/bin/time -f '%M' -o "$tmp/rss" "$bin" triage --format jsonl "$tmp/m.tar" > "$tmp/out" 2> "$tmp/err"; rc=$?
    rss_kb=$(tail -n 1 "$tmp/rss")
    jobs=$(grep -c '"type":"job"' "$tmp/out")
    [ "$jobs" = 2500 ] || fail "$jobs jobs written, expected 2500"
    grep -F '"job":"' "$tmp/out" | grep -F 'job-1234' | grep -qF '"id":"cuda-oom"' || fail "job-1234 is not the CUDA OOM: $(grep -F job-1234 "$tmp/out" | head -c 300)"
    echo "triage of 10,000 members: peak RSS $(( rss_kb / 1024 )) MiB"
    [ "$rss_kb" -lt $(( limit * 1024 )) ] || fail "peak RSS $(( rss_kb / 1024 )) MiB exceeds $limit MiB" ;;
  many_members_zip)
    # A zip of 100,000 one-line members (25,000 jobs of 4 ranks) stored in numeric job order
    # (job-0, job-1, job-2, ...) while rows are written in name order (job-0, job-1, job-10, ...):
    # nearly every finished row waits for its turn, and a zip's central directory would be
    # indexed in memory. Both are bounded: peak RSS under 64 MiB, every row written, masked or not.
    # Sanitized builds run a tenth of it (FIRSTFAULT_ZIP_JOBS): their RSS bound is ASan's, not
    # ours, and the same code runs at any size (the full size took 8 minutes under ASan).
    limit=${FIRSTFAULT_RSS_LIMIT_MB:-64}
    zip_jobs=${FIRSTFAULT_ZIP_JOBS:-25000}
    oom_job=$(( zip_jobs / 2 ))
    python3 - "$tmp/m.zip" "$zip_jobs" "$oom_job" <<'PY' || fail "could not make the zip"
import sys, zipfile
jobs, oom_job = int(sys.argv[2]), int(sys.argv[3])
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for j in range(jobs):
        for r in range(4):
            line = "[rank%d]: step 1 loss 2.0\n" % r
            if j == oom_job and r == 2:
                line += "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            z.writestr("job-%d/rank%d.log" % (j, r), line)
PY
    /usr/bin/time -f '%M' -o "$tmp/rss" "$bin" triage --format jsonl "$tmp/m.zip" > "$tmp/out" 2> "$tmp/err"; rc=$?
    rss_kb=$(tail -n 1 "$tmp/rss")
    jobs=$(grep -c '"type":"job"' "$tmp/out")
    [ "$jobs" = "$zip_jobs" ] || fail "$jobs jobs written, expected $zip_jobs"
    grep -F "job-$oom_job\"" "$tmp/out" | grep -qF '"id":"cuda-oom"' || fail "job-$oom_job is not the CUDA OOM: $(grep -F "job-$oom_job\"" "$tmp/out" | head -c 300)"
    sort -c <(grep -o '"job":"[^"]*"' "$tmp/out") 2>/dev/null || fail "rows are not in job-name order"
    echo "triage of a $(( zip_jobs * 4 ))-member zip: peak RSS $(( rss_kb / 1024 )) MiB"
    [ "$rss_kb" -lt $(( limit * 1024 )) ] || fail "peak RSS $(( rss_kb / 1024 )) MiB exceeds $limit MiB"
    # Markdown masks (--redact) in job order: the waiting rows keep their texts, not their diagnoses.
    /usr/bin/time -f '%M' -o "$tmp/rss" "$bin" triage --format markdown "$tmp/m.zip" > "$tmp/out" 2> "$tmp/err"; rc=$?
    rss_kb=$(tail -n 1 "$tmp/rss")
    grep -qF 'cuda-oom' "$tmp/out" || fail "the markdown report does not name cuda-oom: $(head -c 300 "$tmp/out")"
    echo "triage --format markdown (masked) of a $(( zip_jobs * 4 ))-member zip: peak RSS $(( rss_kb / 1024 )) MiB"
    [ "$rss_kb" -lt $(( limit * 1024 )) ] || fail "masked: peak RSS $(( rss_kb / 1024 )) MiB exceeds $limit MiB" ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
[ $status = 0 ] && echo "ok: $case"
exit $status
