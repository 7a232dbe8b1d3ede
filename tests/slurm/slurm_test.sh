#!/bin/bash
# A real single-node Slurm cluster (munged, slurmctld, slurmd) in a temporary directory, to test
#   (a) the job-array triage recipe of docs/scale-out.md: 4 shards merged == one unsharded run;
#   (b) contrib/slurm/firstfault-epilog.sh as EpilogSlurmctld: a job failing with an Xid 79 on
#       this host is requeued with this host excluded (and then cannot run anywhere), a job
#       failing with a `stop` diagnosis is not requeued and carries the AdminComment.
#
#   tests/slurm/slurm_test.sh FIRSTFAULT_BINARY [SOURCE_DIR]
#
# Needs root and the Debian packages slurm-wlm and munge (slurmctld, slurmd, munged). Installs
# nothing. Exits 77 (CTest SKIP) with the reason when the daemons cannot run here; never passes
# without running the jobs. FIRSTFAULT_SLURM_KEEP=1 keeps the temporary directory.

set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin   # the daemons live in sbin

skip() { printf 'SKIP: %s\n' "$*"; exit 77; }
fail() { printf 'FAIL: %s\n' "$*"; failed=1; }
note() { printf '%s %s\n' "[$(( $(date +%s) - t0 ))s]" "$*"; }
t0=$(date +%s)
failed=0

ff=${1:-}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -n "$ff" ] || { echo "usage: $0 FIRSTFAULT_BINARY [SOURCE_DIR]" >&2; exit 2; }
ff=$(cd "$(dirname "$ff")" && pwd)/$(basename "$ff")
[ -x "$ff" ] || { echo "not an executable: $ff" >&2; exit 2; }
epilog=$src/contrib/slurm/firstfault-epilog.sh
kb=$src/testdata/kb
if [ ! -r "$epilog" ] || [ ! -d "$kb" ]; then echo "no $epilog or $kb: give the source dir" >&2; exit 2; fi

# ------------------------------------------------------------------ can Slurm run here?
[ "$(id -u)" = 0 ] || skip "needs root (slurmd starts jobs as their user; SlurmUser=root here)"
missing=()
for c in munged munge unmunge slurmctld slurmd sbatch scontrol squeue sinfo scancel; do
    command -v "$c" >/dev/null || missing+=("$c")
done
[ ${#missing[@]} -eq 0 ] || skip "not installed: ${missing[*]} (Debian packages: slurm-wlm munge)"
command -v jq >/dev/null || command -v python3 >/dev/null || skip "the epilog needs jq or python3"
command -v jq >/dev/null || skip "this test compares jsonl with jq (Debian package jq)"

host=$(hostname -s)
[[ $host =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || skip "hostname -s is '$host', not a plain host name Slurm can use"
cpus=$(nproc)

tmp=$(mktemp -d /tmp/ff-slurm.XXXXXX)   # short: munge's socket path must fit in sun_path
chmod 755 "$tmp"                       # munged wants every directory above its socket searchable
mkdir -p "$tmp/munge" "$tmp/ctld" "$tmp/spool" "$tmp/log" "$tmp/jobs" "$tmp/results" "$tmp/archive"
chmod 755 "$tmp/munge"
export SLURM_CONF=$tmp/slurm.conf
unset SLURM_JOB_ID SLURM_JOBID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID

pids=()
cleanup() {
    local rc=$?
    set +e
    if [ -f "$SLURM_CONF" ] && [ ${#pids[@]} -gt 0 ]; then
        scancel --quiet --user=root >/dev/null 2>&1
        for _ in 1 2 3 4 5; do
            [ -z "$(squeue -h 2>/dev/null)" ] && break
            sleep 1
        done
    fi
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        local alive=0
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.5
    done
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    if [ -f "$tmp/munge/munged.pid" ]; then
        p=$(cat "$tmp/munge/munged.pid")
        [ -n "$p" ] && kill -TERM "$p" 2>/dev/null
    fi
    wait 2>/dev/null
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
        for f in "$tmp"/log/*.log; do
            [ -f "$f" ] || continue
            echo "---- last lines of $f"
            tail -n 15 "$f"
        done
    fi
    if [ "${FIRSTFAULT_SLURM_KEEP:-0}" = 1 ]; then
        echo "kept $tmp"
    else
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two free TCP ports (nothing answers on them).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=$((20000 + RANDOM % 20000))
while ! port_free "$base" || ! port_free $((base + 1)); do base=$((base + 2)); done

# ------------------------------------------------------------------ munge
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$tmp/munge/munge.key"
sock=$tmp/munge/munge.socket
if ! munged --socket="$sock" --key-file="$tmp/munge/munge.key" --log-file="$tmp/log/munged.log" \
    --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" 2> "$tmp/munged.err"; then
    skip "munged refused to start: $(tr '\n' ' ' < "$tmp/munged.err") $(tail -n 3 "$tmp/log/munged.log" 2>/dev/null | tr '\n' ' ')"
fi
munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1 ||
    skip "munged started but a credential does not round-trip: $(tail -n 3 "$tmp/log/munged.log" | tr '\n' ' ')"

# ------------------------------------------------------------------ the epilog under test
# slurmctld gives EpilogSlurmctld no environment of ours: this wrapper names the cluster's
# slurm.conf and the firstfault binary, and keeps any /etc/slurm/firstfault-epilog.conf out.
# A finished job's AdminComment can only be set in the accounting database (sacctmgr; man
# sacctmgr, "SPECIFICATIONS FOR JOB"); this cluster has none, so the epilog's sacctmgr call is
# recorded by a stand-in, and the test checks the command line it was given.
cat > "$tmp/sacctmgr-recorder" <<EOF
#!/bin/bash
(IFS='|'; printf '%s\n' "\$*") >> '$tmp/log/sacctmgr.calls'
EOF
cat > "$tmp/epilog-wrapper.sh" <<EOF
#!/bin/bash
export SLURM_CONF='$SLURM_CONF'
export FIRSTFAULT='$ff'
export FIRSTFAULT_EPILOG_CONF=/nonexistent
export FIRSTFAULT_EPILOG_LOG='$tmp/log/epilog.log'
export FIRSTFAULT_MAX_REQUEUES=3
export FIRSTFAULT_ACCOUNTING=1
export SACCTMGR='$tmp/sacctmgr-recorder'
exec /bin/bash '$epilog' 2>/dev/null
EOF
chmod 755 "$tmp/epilog-wrapper.sh" "$tmp/sacctmgr-recorder"

cat > "$SLURM_CONF" <<EOF
ClusterName=fftest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/ctld
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=5
JobRequeue=1
EpilogSlurmctld=$tmp/epilog-wrapper.sh
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=500 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=10 State=UP
EOF

# ------------------------------------------------------------------ slurmctld, slurmd
slurmctld -D -i > "$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D > "$tmp/log/slurmd.out" 2>&1 &
pids+=($!)

state=""
for _ in $(seq 1 60); do
    for p in "${pids[@]}"; do
        kill -0 "$p" 2>/dev/null ||
            skip "a Slurm daemon exited at start: $(tail -n 4 "$tmp/log/slurmctld.log" "$tmp/log/slurmd.log" "$tmp"/log/*.out 2>/dev/null | tr '\n' ' ')"
    done
    state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 1
done
[ "$state" = idle ] ||
    skip "node $host not idle after 60 s (state '${state:-no answer}'): $(tail -n 4 "$tmp/log/slurmctld.log" "$tmp/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
note "single-node cluster up: $host, $cpus CPUs, slurmctld on port $base ($(slurmctld -V))"

# ------------------------------------------------------------------ (a) job-array triage
# An archive of a dozen example jobs, one folder per job.
mapfile -t examples < <(cd "$kb" && printf '%s\n' *.log | awk 'NR % 47 == 1' | head -n 12)
[ ${#examples[@]} -ge 10 ] || { fail "found only ${#examples[@]} example logs in $kb"; exit 1; }
for e in "${examples[@]}"; do
    mkdir -p "$tmp/archive/job-${e%.log}"
    cp "$kb/$e" "$tmp/archive/job-${e%.log}/train.log"
done

# The script of docs/scale-out.md ("Slurm job array"), sized for this node.
cat > "$tmp/triage.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=firstfault-triage
#SBATCH --array=1-4
#SBATCH --cpus-per-task=1
#SBATCH --time=00:05:00
#SBATCH --output=$tmp/jobs/triage-%A_%a.log
'$ff' triage -j "\$SLURM_CPUS_PER_TASK" --no-progress -f jsonl \\
  --shard "\${SLURM_ARRAY_TASK_ID}/\${SLURM_ARRAY_TASK_COUNT}" '$tmp/archive' \\
  > "$tmp/results/shard-\${SLURM_ARRAY_TASK_ID}.jsonl"
EOF
# sbatch --wait exits with the highest exit code of the tasks: triage exits 1 for a shard in
# which no job was diagnosed (an empty shard too: "nothing recognised"), 2 for unreadable input.
rc=0
(cd "$tmp" && timeout 100 sbatch --wait --quiet "$tmp/triage.sbatch") || rc=$?
shards=()
for i in 1 2 3 4; do
    s=$tmp/results/shard-$i.jsonl
    if [ -f "$s" ] && [ "$(tail -n 1 "$s" | jq -r .type 2>/dev/null)" = summary ]; then shards+=("$s"); fi
done
if [ "$rc" -gt 1 ] || [ ${#shards[@]} -ne 4 ]; then
    fail "(a) sbatch --wait of the triage array exited $rc with ${#shards[@]} complete shards of 4: $(cat "$tmp"/jobs/triage-*.log 2>/dev/null | head -n 5 | tr '\n' ' ')"
else
    note "(a) array of 4 tasks done (sbatch --wait: $rc), job rows per shard: $(for s in "${shards[@]}"; do jq -c 'select(.type == "job")' "$s" | wc -l; done | tr '\n' ' ')"
    "$ff" triage --no-progress -f jsonl "$tmp/archive" > "$tmp/single.jsonl" || true
    "$ff" triage --merge "${shards[@]}" -f jsonl > "$tmp/merged.jsonl" || true
    jobrows() { jq -c -S 'select(.type == "job")' "$@" | LC_ALL=C sort; }
    jobrows "$tmp/single.jsonl" > "$tmp/single.rows"
    jobrows "${shards[@]}" > "$tmp/shards.rows"
    jobrows "$tmp/merged.jsonl" > "$tmp/merged.rows"
    n=$(wc -l < "$tmp/single.rows")
    if [ "$n" -ne ${#examples[@]} ]; then
        fail "(a) the unsharded run has $n job rows for ${#examples[@]} jobs"
    elif ! cmp -s "$tmp/single.rows" "$tmp/shards.rows"; then
        fail "(a) the 4 shards' job rows are not the unsharded run's rows:"
        diff <(jq -r .job "$tmp/single.rows") <(jq -r .job "$tmp/shards.rows") | head -n 20
    elif ! cmp -s "$tmp/single.rows" "$tmp/merged.rows"; then
        fail "(a) triage --merge of the shards does not give the unsharded run's job rows"
        diff <(jq -r .job "$tmp/single.rows") <(jq -r .job "$tmp/merged.rows") | head -n 20
    elif ! cmp -s <(jq -c -S 'select(.type == "summary")' "$tmp/single.jsonl") \
                  <(jq -c -S 'select(.type == "summary")' "$tmp/merged.jsonl"); then
        fail "(a) the merged summary differs from the unsharded run's summary"
    else
        note "(a) ok: 4 shards hold the same $n job rows as one unsharded run, and --merge gives its summary"
    fi
fi

# ------------------------------------------------------------------ (b) the epilog
job_field() {  # job_field JOBID KEY
    scontrol show job -o "$1" 2>/dev/null | head -n 1 | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
# An Xid 79 (restart-excluding) whose host is this host, and an Xid 13 (stop).
sed "s/gpu-a17/$host/g" "$kb/xid-79-gpu-fell-off-bus.log" > "$tmp/xid79.log"
cp "$kb/xid-13-graphics-engine-exception.log" "$tmp/xid13.log"
kind79=$("$ff" diagnose --format json --fail-on none "$tmp/xid79.log" | jq -r '.action.kind + " " + (.action.exclude_hosts | join(","))')
kind13=$("$ff" diagnose --format json --fail-on none "$tmp/xid13.log" | jq -r '.action.kind')
[ "$kind79" = "restart-excluding $host" ] || fail "(b) setup: the Xid 79 log's action is '$kind79', not 'restart-excluding $host'"
[ "$kind13" = stop ] || fail "(b) setup: the Xid 13 log's action is '$kind13', not 'stop'"

j79=$(cd "$tmp" && sbatch --parsable --job-name=xid79 --output="$tmp/jobs/xid79-%j.out" \
        --wrap "cat '$tmp/xid79.log'; exit 1")
note "(b) submitted job $j79: prints the Xid 79 log of $host, exits 1"
st="" restarts="" exc="" comment=""
for _ in $(seq 1 40); do
    st=$(job_field "$j79" JobState); restarts=$(job_field "$j79" Restarts)
    exc=$(job_field "$j79" ExcNodeList)
    [ "$st" = PENDING ] && [ "${restarts:-0}" -ge 1 ] && [ "$exc" = "$host" ] && break
    sleep 0.5
done
comment=$(scontrol show job -o "$j79" | sed -n 's/.* AdminComment=//p' | sed 's/ [A-Za-z][A-Za-z0-9:/_]*=.*//')
if [ "$st" = PENDING ] && [ "${restarts:-0}" -ge 1 ] && [ "$exc" = "$host" ]; then
    note "(b) job $j79 requeued by the epilog: JobState=$st Restarts=$restarts ExcNodeList=$exc"
    note "(b) AdminComment=$comment"
    # Requeued jobs wait 2 minutes (BeginTime); make it eligible now: with this host, the
    # only node, excluded, it must stay pending.
    scontrol update JobId="$j79" StartTime=now
    reason=BeginTime
    for _ in $(seq 1 30); do
        reason=$(job_field "$j79" Reason)
        [ "$reason" != BeginTime ] && break
        sleep 0.5
    done
    sleep 2
    st=$(job_field "$j79" JobState); reason=$(job_field "$j79" Reason); restarts2=$(job_field "$j79" Restarts)
    if [ "$st" = PENDING ] && [ "$reason" != BeginTime ] && [ "$restarts2" = "$restarts" ]; then
        note "(b) ok: eligible now, job $j79 cannot run anywhere: JobState=$st Reason=$reason"
    else
        fail "(b) job $j79 with $host excluded: JobState=$st Reason=$reason Restarts=$restarts2 (expected PENDING, not BeginTime, Restarts=$restarts)"
    fi
else
    fail "(b) job $j79 was not requeued with $host excluded: JobState=$st Restarts=$restarts ExcNodeList=$exc"
fi
case $comment in
    "firstfault: xid-79-gpu-fell-off-bus:"*"requeued excluding $host"*) ;;
    *) fail "(b) job $j79 AdminComment is '$comment'" ;;
esac
report79=$tmp/jobs/xid79-$j79.out.firstfault.json
if [ -f "$report79" ] && [ "$(jq -r '.diagnosis.id + " " + .action.kind' "$report79")" = "xid-79-gpu-fell-off-bus restart-excluding" ]; then
    note "(b) ok: diagnosis written next to the output: $(basename "$report79")"
else
    fail "(b) no diagnosis of job $j79 in $report79"
fi
scancel "$j79" || true

j13=$(cd "$tmp" && sbatch --parsable --job-name=xid13 --output="$tmp/jobs/xid13-%j.out" \
        --wrap "cat '$tmp/xid13.log'; exit 1")
note "(b) submitted job $j13: prints the Xid 13 log, exits 1"
for _ in $(seq 1 40); do
    st=$(job_field "$j13" JobState)
    [ "$st" = FAILED ] && grep -q "job $j13\]: .*AdminComment" "$tmp/log/epilog.log" 2>/dev/null && break
    sleep 0.5
done
sleep 3   # a requeue would show by now
st=$(job_field "$j13" JobState); restarts=$(job_field "$j13" Restarts)
report13=$tmp/jobs/xid13-$j13.out.firstfault.json
title13=$(jq -r .diagnosis.title "$report13" 2>/dev/null || echo '?')
want="firstfault: xid-13-graphics-engine-exception: $title13"
comment=$(scontrol show job -o "$j13" | sed -n 's/.* AdminComment=//p' | sed 's/ [A-Za-z][A-Za-z0-9:/_]*=.*//')
recorded=$(grep -F -x -- "-i|modify|job|where|JobID=$j13|set|AdminComment=$want" "$tmp/log/sacctmgr.calls" 2>/dev/null || true)
if [ "$st" = FAILED ] && [ "$restarts" = 0 ]; then
    note "(b) ok: job $j13 (action stop) not requeued: JobState=$st Restarts=$restarts"
else
    fail "(b) job $j13 (action stop): JobState=$st Restarts=$restarts (expected FAILED, 0)"
fi
if [ "$comment" = "$want" ]; then
    note "(b) ok: job $j13 AdminComment=$comment"
elif [ -n "$recorded" ]; then
    note "(b) ok: job $j13 had finished, so scontrol could not set its AdminComment; the epilog ran: sacctmgr ${recorded//|/ }"
else
    fail "(b) job $j13: no AdminComment '$want' (scontrol shows '$comment'; sacctmgr calls: $(tr '\n' ';' < "$tmp/log/sacctmgr.calls" 2>/dev/null))"
fi
if [ "$(jq -r .action.kind "$report13" 2>/dev/null)" != stop ]; then
    fail "(b) no diagnosis with action stop in $report13"
fi

# By hand, as a --requeue helper would call it: --job, dry run.
hand=$(FIRSTFAULT="$ff" FIRSTFAULT_EPILOG_CONF=/nonexistent FIRSTFAULT_ACCOUNTING=0 \
       bash "$epilog" --job "$j13" --dry-run 2>&1 || true)
if grep -qF "dry-run: scontrol update JobId=$j13 AdminComment=firstfault:\\ xid-13-graphics-engine-exception:" <<< "$hand" &&
   ! grep -q "requeue" <<< "$hand"; then
    note "(b) ok: firstfault-epilog.sh --job $j13 --dry-run: $(grep '^dry-run:' <<< "$hand" | head -n 1)"
else
    fail "(b) firstfault-epilog.sh --job $j13 --dry-run printed: $hand"
fi

echo "---- epilog messages"
cat "$tmp/log/epilog.log" 2>/dev/null || true
note "done"
if [ "$failed" != 0 ]; then exit 1; fi
echo "PASS"
