#!/bin/bash
# firstfault-epilog.sh: diagnose a failed Slurm job with firstfault and act on the diagnosis.
#
#   slurm.conf:  EpilogSlurmctld=/etc/slurm/firstfault-epilog.sh    (recommended, see README.md)
#   by hand:     firstfault-epilog.sh --job JOBID [--log FILE] [--dry-run]
#
# For a job that failed, it runs `firstfault diagnose --format json` on the job's output file
# (StdOut of `scontrol show job -o`), writes the diagnosis next to it as
# <stdout>.firstfault.json, and acts on action.kind:
#   restart-excluding  requeue held, ExcNodeList += the failed hosts, release
#                      (and, with FIRSTFAULT_DRAIN=1, drain those hosts)
#   restart            requeue
#   stop, investigate  AdminComment="firstfault: <id>: <title>", no requeue
# A job is requeued at most FIRSTFAULT_MAX_REQUEUES times (its Restarts count).
#
# Variables (slurmctld gives its scripts no environment of their own: set them in
# FIRSTFAULT_EPILOG_CONF, default /etc/slurm/firstfault-epilog.conf, sourced when it exists):
#   FIRSTFAULT               the firstfault binary      (default /usr/local/bin/firstfault, else PATH)
#   FIRSTFAULT_MAX_REQUEUES  requeue cap                (default 3; 0 never requeues)
#   FIRSTFAULT_DRAIN         1: drain excluded hosts    (default 0)
#   FIRSTFAULT_COMMENT_FIELD AdminComment or Comment    (default AdminComment)
#   FIRSTFAULT_TIMEOUT       seconds for one diagnosis  (default 120)
#   FIRSTFAULT_REPORT_DIR    also write <dir>/<jobid>.firstfault.json (default: unset)
#   FIRSTFAULT_EPILOG_LOG    append this script's messages to this file (default: stderr only)
#   FIRSTFAULT_TRUST_LOG_HOSTS 1: exclude/drain hosts even when they are not nodes of the job
#                            (default 0: a log cannot name another job's node)
#   FIRSTFAULT_DRY_RUN       1: print the scontrol commands that change something, run none
#   FIRSTFAULT_ACCOUNTING    auto, 1 or 0: set the comment of a finished job with sacctmgr
#                            (auto: when AccountingStorageType is accounting_storage/slurmdbd)
#   SCONTROL, SACCT, SACCTMGR the Slurm commands        (default: from PATH)
#
# Exit status: always 0 when run by Slurm (a failing EpilogSlurmctld is only logged, a failing
# Epilog drains the node); with --job, 0 done, 1 failed, 2 usage.

set -euo pipefail

# Slurm runs epilogs without a search path.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
export PATH
umask 022

prog=firstfault-epilog
job_id=""
log_override=""
by_hand=0
work=""

msg() {
    # One line on stderr (and in FIRSTFAULT_EPILOG_LOG), control characters removed.
    local line
    line="${prog}[job ${job_id:-?}]: $(printf '%s' "$*" | tr -d '\000-\037\177')"
    printf '%s\n' "$line" >&2
    if [ -n "${FIRSTFAULT_EPILOG_LOG:-}" ]; then
        printf '%s %s\n' "$(date '+%Y-%m-%dT%H:%M:%S')" "$line" >> "$FIRSTFAULT_EPILOG_LOG" 2>/dev/null || true
    fi
}

usage() {
    sed -n '2,5p' "$0" >&2
    exit 2
}

# shellcheck disable=SC2317  # called by the EXIT trap
on_exit() {
    local rc=$?
    if [ -n "$work" ]; then rm -rf "$work"; fi
    if [ "$rc" -ne 0 ]; then
        msg "stopped with status $rc"
    fi
    if [ "$by_hand" = 1 ]; then
        [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || rc=1
        exit "$rc"
    fi
    exit 0
}
trap on_exit EXIT

while [ $# -gt 0 ]; do
    case $1 in
        --job) [ $# -ge 2 ] || usage; job_id=$2; by_hand=1; shift 2 ;;
        --job=*) job_id=${1#--job=}; by_hand=1; shift ;;
        --log) [ $# -ge 2 ] || usage; log_override=$2; shift 2 ;;
        --log=*) log_override=${1#--log=}; shift ;;
        --dry-run) FIRSTFAULT_DRY_RUN=1; shift ;;
        -h|--help) by_hand=1; usage ;;
        *) by_hand=1; msg "unknown argument: $1"; usage ;;
    esac
done

conf=${FIRSTFAULT_EPILOG_CONF:-/etc/slurm/firstfault-epilog.conf}
if [ -r "$conf" ]; then
    # shellcheck source=/dev/null
    . "$conf"
fi

: "${SCONTROL:=scontrol}" "${SACCT:=sacct}" "${SACCTMGR:=sacctmgr}"
accounting=${FIRSTFAULT_ACCOUNTING:-auto}
max_requeues=${FIRSTFAULT_MAX_REQUEUES:-3}
drain=${FIRSTFAULT_DRAIN:-0}
comment_field=${FIRSTFAULT_COMMENT_FIELD:-AdminComment}
diag_timeout=${FIRSTFAULT_TIMEOUT:-120}
dry_run=${FIRSTFAULT_DRY_RUN:-0}
trust_log_hosts=${FIRSTFAULT_TRUST_LOG_HOSTS:-0}
case $max_requeues in ''|*[!0-9]*) msg "FIRSTFAULT_MAX_REQUEUES='$max_requeues' is not a number; using 3"; max_requeues=3 ;; esac
case $diag_timeout in ''|*[!0-9]*) diag_timeout=120 ;; esac
case $comment_field in AdminComment|Comment) ;; *) msg "FIRSTFAULT_COMMENT_FIELD must be AdminComment or Comment; using AdminComment"; comment_field=AdminComment ;; esac

[ -n "$job_id" ] || job_id=${SLURM_JOB_ID:-${SLURM_JOBID:-}}
if [ -z "$job_id" ]; then
    msg "no job: not run by Slurm (SLURM_JOB_ID unset) and no --job"
    by_hand=1
    exit 2
fi
case $job_id in *[!0-9_]*|_*) msg "bad job id"; by_hand=1; exit 2 ;; esac

ff=${FIRSTFAULT:-}
if [ -z "$ff" ]; then
    if [ -x /usr/local/bin/firstfault ]; then ff=/usr/local/bin/firstfault; else ff=$(command -v firstfault || true); fi
fi
if [ -z "$ff" ] || [ ! -x "$ff" ]; then
    msg "firstfault binary not found (set FIRSTFAULT)"
    exit 1
fi

# ---------------------------------------------------------------- what Slurm knows of the job
job_line=$("$SCONTROL" show job -o "$job_id" 2>/dev/null | head -n 1 || true)
case $job_line in *JobId=*) ;; *) job_line="" ;; esac

# job_field KEY: the value of KEY= in `scontrol show job -o` (up to the next " Key=").
job_field() {
    local rest=" $job_line"
    case $rest in *" $1="*) ;; *) return 0 ;; esac
    rest=${rest#*" $1="}
    printf '%s\n' "$rest" | sed -E 's/ [A-Za-z][A-Za-z0-9:/_]*=.*$//; s/[[:space:]]+$//'
}
null_to_empty() { case $1 in '(null)'|None|Unknown) printf '' ;; *) printf '%s' "$1" ;; esac; }

# slurmd runs Epilog on every node of the job: act once, on the job's batch host.
if [ "${SLURM_SCRIPT_CONTEXT:-}" = epilog_slurmd ] && [ -n "${SLURMD_NODENAME:-}" ]; then
    batch_host=$(null_to_empty "$(job_field BatchHost)")
    if [ -n "$batch_host" ] && [ "$batch_host" != "$SLURMD_NODENAME" ]; then
        exit 0
    fi
fi

state=$(job_field JobState)
reason=$(job_field Reason)
exit_field=$(job_field ExitCode)
restarts=$(job_field Restarts)
requeue_allowed=$(job_field Requeue)
nodelist=${SLURM_JOB_NODELIST:-}
[ -n "$nodelist" ] || nodelist=$(null_to_empty "$(job_field NodeList)")
[ -n "$nodelist" ] || nodelist=$(null_to_empty "$(job_field BatchHost)")
old_exclude=$(null_to_empty "$(job_field ExcNodeList)")
job_uid=${SLURM_JOB_UID:-}
if [ -z "$job_uid" ]; then
    job_uid=$(job_field UserId | sed -nE 's/.*\(([0-9]+)\)$/\1/p')
fi
job_gid=${SLURM_JOB_GID:-}
if [ -z "$job_gid" ]; then
    job_gid=$(job_field GroupId | sed -nE 's/.*\(([0-9]+)\)$/\1/p')
fi
[ -n "${SLURM_JOB_RESTART_COUNT:-}" ] && restarts=$SLURM_JOB_RESTART_COUNT
# In the accounting database, the array task that kept the array's job id is ARRAYJOBID_TASKID
# (JobID=ARRAYJOBID would name every task of the array).
array_job=${SLURM_ARRAY_JOB_ID:-$(null_to_empty "$(job_field ArrayJobId)")}
array_task=${SLURM_ARRAY_TASK_ID:-$(null_to_empty "$(job_field ArrayTaskId)")}
db_job_id=$job_id
if [[ $array_job =~ ^[0-9]+$ && $array_task =~ ^[0-9]+$ ]] && [ "$array_job" = "$job_id" ]; then
    db_job_id=${array_job}_$array_task
fi
case $restarts in ''|*[!0-9]*) restarts=0 ;; esac

if [ -z "$job_line" ] && [ -z "${SLURM_JOB_EXIT_CODE:-}" ]; then
    # slurmctld forgot the job (MinJobAge): accounting may still know its state.
    acct=$("$SACCT" -n -X -P -j "$job_id" -o State,ExitCode 2>/dev/null | head -n 1 || true)
    state=${acct%%|*}
    exit_field=${acct#*|}
    [ -n "$acct" ] || { msg "job unknown to scontrol and sacct"; exit 1; }
fi
state=${state%% *}   # "CANCELLED by 0" -> CANCELLED

# ---------------------------------------------------------------- did it fail?
failed=0
if [ -n "${SLURM_JOB_EXIT_CODE:-}" ] && [ "$SLURM_JOB_EXIT_CODE" != 0 ]; then failed=1; fi
case ${exit_field:-} in ''|0:0) ;; *) failed=1 ;; esac
# In EpilogSlurmctld the state is still COMPLETING; the reason tells a time-out (exit code 0).
case ${reason:-} in NonZeroExitCode|RaisedSignal*|TimeLimit|NodeDown|NodeFail|OutOfMemory|DeadLine|BootFail) failed=1 ;; esac
case $state in
    FAILED|NODE_FAIL|TIMEOUT|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) failed=1 ;;
    CANCELLED|PREEMPTED|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|RESV_DEL_HOLD|PENDING|RUNNING|SUSPENDED)
        # cancelled or preempted by someone, or already requeued by Slurm: not ours to act on
        [ "$failed" = 1 ] && msg "job is $state: nothing to do"
        exit 0 ;;
esac
[ "$failed" = 1 ] || exit 0

# ---------------------------------------------------------------- the job's log
log=$log_override
if [ -z "$log" ]; then log=$(null_to_empty "$(job_field StdOut)"); fi
if [ -z "$log" ] && [ -n "${SLURM_JOB_STDOUT:-}" ]; then
    case $SLURM_JOB_STDOUT in *%*) ;; *) log=$SLURM_JOB_STDOUT ;; esac  # older Slurm: the unexpanded pattern
fi
if [ -z "$log" ]; then
    msg "failed (state ${state:-?}, exit ${exit_field:-${SLURM_JOB_EXIT_CODE:-?}}) but its output file is unknown (give --log)"
    exit 1
fi

# Files of the job are read and written as the job's user: a job cannot make a root epilog
# read /etc/shadow or overwrite a file through a symlink it planted.
as_user=()
if [ "$(id -u)" = 0 ] && [ -n "$job_uid" ] && [ "$job_uid" != 0 ] && command -v setpriv >/dev/null; then
    if [ -n "$job_gid" ]; then
        as_user=(setpriv "--reuid=$job_uid" "--regid=$job_gid" --init-groups --)
    else
        as_user=(setpriv "--reuid=$job_uid" --clear-groups --)
    fi
fi
run_as_user() { if [ ${#as_user[@]} -gt 0 ]; then "${as_user[@]}" "$@"; else "$@"; fi; }

work=$(mktemp -d "${TMPDIR:-/tmp}/firstfault-epilog.XXXXXX")
json=$work/diagnosis.json

rc=0
run_as_user timeout "$diag_timeout" "$ff" diagnose --format json --no-redact --fail-on none -- "$log" \
    > "$json" 2> "$work/stderr" || rc=$?
if [ "$rc" -ne 0 ] && [ ! -s "$json" ]; then
    msg "firstfault diagnose failed (status $rc): $(head -c 300 "$work/stderr")"
    exit 1
fi
[ "$rc" -eq 0 ] || msg "firstfault diagnose: status $rc, some input could not be read: $(head -c 300 "$work/stderr")"

report=$log.firstfault.json
# shellcheck disable=SC2016  # $1 is expanded by the inner sh
if run_as_user sh -c 'cat > "$1"' sh "$report" < "$json" 2>/dev/null; then
    :
else
    msg "cannot write $report"
    report=""
fi
if [ -n "${FIRSTFAULT_REPORT_DIR:-}" ]; then
    if mkdir -p "$FIRSTFAULT_REPORT_DIR" && cp "$json" "$FIRSTFAULT_REPORT_DIR/$job_id.firstfault.json.tmp" &&
        mv -f "$FIRSTFAULT_REPORT_DIR/$job_id.firstfault.json.tmp" "$FIRSTFAULT_REPORT_DIR/$job_id.firstfault.json"; then
        [ -n "$report" ] || report=$FIRSTFAULT_REPORT_DIR/$job_id.firstfault.json
    else
        msg "cannot write $FIRSTFAULT_REPORT_DIR/$job_id.firstfault.json"
    fi
fi

# ---------------------------------------------------------------- read the diagnosis
# One line of fields separated by US (0x1f; control characters in them become spaces), then one
# JSON-encoded host per line (a host holding a newline stays one line, and is then rejected by
# the validation below).
if command -v jq >/dev/null; then
    parsed=$(jq -r '([.verdict // "", .diagnosis.id // "", .diagnosis.title // "", .action.kind // ""]
                     | map(tostring | gsub("[[:cntrl:]]"; " ")) | join("\u001f")),
                    (.action.exclude_hosts // [] | .[] | tojson)' "$json") || { msg "diagnosis is not valid JSON"; exit 1; }
elif command -v python3 >/dev/null; then
    parsed=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
diag = d.get("diagnosis") or {}
act = d.get("action") or {}
clean = lambda s: "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in str(s or ""))
print("\x1f".join(clean(x) for x in (d.get("verdict"), diag.get("id"), diag.get("title"), act.get("kind"))))
for h in act.get("exclude_hosts") or []:
    print(json.dumps(h))
' "$json") || { msg "diagnosis is not valid JSON"; exit 1; }
else
    msg "neither jq nor python3 found: cannot read the diagnosis"
    exit 1
fi
IFS=$'\x1f' read -r verdict entry_id title kind <<< "$(printf '%s\n' "$parsed" | head -n 1)"
[ -n "$entry_id" ] || entry_id=$verdict
if [ -z "$title" ]; then
    case $verdict in
        unrecognized) title="error lines, but no known failure" ;;
        incomplete) title="training progress stopped without an error line" ;;
        clean) title="no error line in the log" ;;
        *) title="no diagnosis" ;;
    esac
fi
[ -n "$kind" ] || kind=investigate

# Only plain host names reach a command line: [A-Za-z0-9._-], not starting with '-',
# no Slurm host-list brackets or commas, at most 255 characters.
hosts=()
job_nodes=()
if [ -n "$nodelist" ]; then
    mapfile -t job_nodes < <("$SCONTROL" show hostnames "$nodelist" 2>/dev/null || true)
fi
while IFS= read -r encoded; do
    [ -n "$encoded" ] || continue
    name=""
    if [[ $encoded =~ ^\"([A-Za-z0-9._-]{1,255})\"$ ]]; then name=${BASH_REMATCH[1]}; fi
    if [ -z "$name" ] || [ "${name#-}" != "$name" ]; then
        msg "dropped host $encoded from the diagnosis: not a plain host name"
        continue
    fi
    if [ "$trust_log_hosts" != 1 ] && [ ${#job_nodes[@]} -gt 0 ]; then
        match=""
        for node in "${job_nodes[@]}"; do
            if [ "$node" = "$name" ] || [ "$node" = "${name%%.*}" ]; then match=$node; break; fi
        done
        if [ -z "$match" ]; then
            msg "dropped host $name from the diagnosis: not a node of this job ($nodelist)"
            continue
        fi
        name=$match
    fi
    case " ${hosts[*]} " in *" $name "*) ;; *) hosts+=("$name") ;; esac
done < <(printf '%s\n' "$parsed" | tail -n +2)

# ---------------------------------------------------------------- act
changes() {  # run (or, dry run, print) a command that changes Slurm state
    if [ "$dry_run" = 1 ]; then
        printf 'dry-run:' >&2; printf ' %q' "$@" >&2; printf '\n' >&2
        return 0
    fi
    "$@"
}
one_line() { printf '%s' "$*" | tr -d '\000-\037\177' | cut -c 1-240; }
# A finished job's record in slurmctld cannot be changed (scontrol: "Job has already finished");
# its AdminComment then lives in the accounting database, where sacctmgr can set it.
accounting_db() {
    case $accounting in
        1) return 0 ;;
        0) return 1 ;;
    esac
    "$SCONTROL" show config 2>/dev/null | grep -Eq '^AccountingStorageType += accounting_storage/slurmdbd'
}
comment() {
    local text
    text=$(one_line "firstfault: $*")
    if changes "$SCONTROL" update "JobId=$job_id" "$comment_field=$text"; then
        msg "$comment_field set: $text"
        return 0
    fi
    if accounting_db; then
        local try
        for try in 1 2 3; do   # the job's record may not have reached slurmdbd yet
            if changes "$SACCTMGR" -i modify job where "JobID=$db_job_id" set "$comment_field=$text" >/dev/null 2>&1; then
                msg "$comment_field set in the accounting database: $text"
                return 0
            fi
            [ "$try" = 3 ] || sleep 2
        done
        msg "could not set $comment_field with scontrol or sacctmgr"
    else
        msg "could not set $comment_field (the job has finished and there is no accounting database)"
    fi
}

where=${report:+ (diagnosis in $report)}
msg "failed: $verdict ${entry_id}: action $kind${hosts[*]:+ excluding ${hosts[*]}}$where"

if [ "$kind" = restart-excluding ] && [ ${#hosts[@]} -eq 0 ]; then
    if [ ${#job_nodes[@]} -eq 1 ]; then
        hosts=("${job_nodes[0]}")      # one-node job: the bad host is its node
    else
        msg "restart-excluding but no usable host to exclude: not requeued"
        comment "$entry_id: $title (restart excluding a host the log does not name: not requeued)"
        exit 0
    fi
fi

case $kind in
    restart|restart-excluding)
        if [ "$requeue_allowed" = 0 ]; then
            comment "$entry_id: $title (job has --no-requeue: not requeued)"
            exit 0
        fi
        if [ "$restarts" -ge "$max_requeues" ]; then
            msg "requeue cap reached ($restarts of $max_requeues restarts): not requeued"
            comment "$entry_id: $title (requeue cap $max_requeues reached: not requeued)"
            exit 0
        fi
        if [ "$kind" = restart ]; then
            if changes "$SCONTROL" requeue "$job_id"; then
                comment "$entry_id: $title (requeued, restart $((restarts + 1)) of $max_requeues)"
            else
                msg "scontrol requeue failed"
            fi
            exit 0
        fi
        # restart-excluding: ExcNodeList can only change on a pending job, so requeue it held,
        # exclude, then release: it never becomes eligible without the exclusion.
        exclude=$(IFS=,; printf '%s' "${hosts[*]}")
        if ! changes "$SCONTROL" requeuehold "$job_id"; then
            msg "scontrol requeuehold failed"
            exit 0
        fi
        if changes "$SCONTROL" update "JobId=$job_id" "ExcNodeList=${old_exclude:+$old_exclude,}$exclude"; then
            changes "$SCONTROL" release "$job_id" || msg "scontrol release failed: the job stays held"
            comment "$entry_id: $title (requeued excluding $exclude, restart $((restarts + 1)) of $max_requeues)"
        else
            msg "could not exclude $exclude: the job stays held"
            comment "$entry_id: $title (requeued held: excluding $exclude failed)"
        fi
        if [ "$drain" = 1 ]; then
            for h in "${hosts[@]}"; do
                changes "$SCONTROL" update "NodeName=$h" State=DRAIN "Reason=$(one_line "firstfault: $entry_id (job $job_id)")" ||
                    msg "could not drain $h"
            done
        fi
        ;;
    *)
        comment "$entry_id: $title"
        ;;
esac
exit 0
