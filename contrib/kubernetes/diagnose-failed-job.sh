#!/bin/bash
# diagnose-failed-job.sh: diagnose a failed Kubernetes training job with firstfault and act on it.
#
#   diagnose-failed-job.sh [-n NAMESPACE] [--pytorchjob] [--apply [--taint]] [--out DIR] NAME
#
# Collects what the cluster still knows of the job's pods into DIR (default ./NAME-logs): each
# pod's log (`kubectl logs --all-containers --prefix=false --timestamps`, plus the previous
# container's log when a container restarted), its status as <file>.status.jsonl (OOMKilled,
# exit codes, eviction messages are evidence too) and the events of the job, its pods and their
# nodes (events.txt). Then it runs `firstfault diagnose --format json` on DIR, writes the JSON
# next to it as DIR.firstfault.json, prints the text diagnosis, and acts on action.kind:
#
#   restart-excluding  cordon the node(s) the failure happened on (printed; run with --apply;
#                      --taint also taints them) -> exit 0: a re-run avoids them
#   restart            a transient failure: re-running is safe -> exit 0
#   stop, investigate  (and unrecognised or clean logs) -> exit 1: do not re-run blindly
# With --apply the job is annotated in every case: firstfault.dev/diagnosis=<entry id or
# verdict>, firstfault.dev/action=<kind>.
#
# File names carry firstfault's rank numbering:
#   Job (Indexed)  rank-<completion index>.log, from the pod's batch.kubernetes.io/job-completion-index
#                  annotation (a retried index: rank-<i>.retry-<k>.log); --pod-names keeps the
#                  pod names instead (no rank from the name: for pods running several processes
#                  whose lines carry their own [rankN] prefixes)
#   PyTorchJob     the pod's own name: <name>-master-0 is rank 0 and <name>-worker-N is rank N+1,
#                  as the training operator numbers them and firstfault reads them
#
# Options:
#   -n, --namespace NS   the job's namespace (default: kubectl's current one)
#   --pytorchjob         NAME is a Kubeflow PyTorchJob (pods labelled training.kubeflow.org/job-name)
#   --apply              run the kubectl commands that change the cluster (default: print them)
#   --taint              with restart-excluding, also taint the node(s)
#                        firstfault.dev/diagnosis=<id>:NoSchedule (an uncordon does not lift it)
#   --trust-log-hosts    cordon a host the log names even when no pod of this job ran there
#   -c, --container C    collect only container C of each pod (default: all containers)
#   --pod-names          name Indexed Job pod files after the pod, not rank-<index>.log
#   --out DIR            where to collect (default ./NAME-logs); a DIR this script filled before
#                        is emptied first, any other non-empty DIR is refused
#
# Environment: KUBECTL (default kubectl), FIRSTFAULT (default firstfault), FIRSTFAULT_TIMEOUT
# (seconds per diagnosis, default 300), KUBECTL_PARALLEL (log fetches at a time, default 8).
# Needs bash >= 4.4, python3 and kubectl.
# Exit status: 0 restart or restart-excluding (re-running is safe once the printed commands ran),
# 1 stop or investigate, or no node could be named to avoid, 2 usage or a tool failed.
set -euo pipefail

prog=diagnose-failed-job
KUBECTL=${KUBECTL:-kubectl}
FIRSTFAULT=${FIRSTFAULT:-firstfault}
diag_timeout=${FIRSTFAULT_TIMEOUT:-300}
case $diag_timeout in '' | *[!0-9]*) diag_timeout=300 ;; esac
parallel=${KUBECTL_PARALLEL:-8}
case $parallel in '' | 0 | *[!0-9]*) parallel=8 ;; esac

namespace=""
pytorchjob=0
apply=0
taint=0
trust_log_hosts=0
container=""
pod_names=0
out=""
name=""
work=""

msg() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { msg "$*"; exit 2; }
usage() { sed -n '4p' "$0" >&2; msg "see the comment at the top of $0"; exit 2; }
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { if [ -n "$work" ]; then rm -rf "$work"; fi; }
trap cleanup EXIT

# ---------------------------------------------------------------- arguments
need_value() { [ "$2" -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
    case $1 in
        -n | --namespace) need_value "$1" $#; namespace=$2; shift 2 ;;
        --namespace=*) namespace=${1#*=}; shift ;;
        --pytorchjob) pytorchjob=1; shift ;;
        --apply) apply=1; shift ;;
        --taint) taint=1; shift ;;
        --trust-log-hosts) trust_log_hosts=1; shift ;;
        -c | --container) need_value "$1" $#; container=$2; shift 2 ;;
        --pod-names) pod_names=1; shift ;;
        --out) need_value "$1" $#; out=$2; shift 2 ;;
        --out=*) out=${1#*=}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) msg "unknown option: $1"; usage ;;
        *) [ -z "$name" ] || usage; name=$1; shift ;;
    esac
done
[ -n "$name" ] || usage

# Names go on kubectl command lines and into file names: accept only what Kubernetes accepts.
dns_subdomain='^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$'
dns_label='^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'
[[ $name =~ $dns_subdomain ]] || die "not a Kubernetes object name: '$name'"
[ -z "$namespace" ] || [[ $namespace =~ $dns_label ]] || die "not a namespace name: '$namespace'"
[ -z "$container" ] || [[ $container =~ $dns_label ]] || die "not a container name: '$container'"

command -v "$KUBECTL" > /dev/null || die "kubectl not found (set KUBECTL)"
command -v "$FIRSTFAULT" > /dev/null || die "firstfault not found (set FIRSTFAULT)"
command -v python3 > /dev/null || die "python3 not found: it reads the JSON of kubectl and firstfault"

if [ "$pytorchjob" = 1 ]; then
    selector="training.kubeflow.org/job-name=$name"
    resource=pytorchjob
else
    selector="batch.kubernetes.io/job-name=$name"   # also set on JobSet child Jobs' pods
    resource=job
fi
ns_args=()
[ -z "$namespace" ] || ns_args=(--namespace "$namespace")
kc() { "$KUBECTL" "${ns_args[@]}" "$@"; }

out=${out:-./$name-logs}
out=${out%/}
[ -n "$out" ] || die "--out / is not a place to collect logs"
report=$out.firstfault.json
work=$(mktemp -d "${TMPDIR:-/tmp}/$prog.XXXXXX")

# ---------------------------------------------------------------- JSON helpers (python3)
# One program, several commands; it reads only JSON given to it and writes only under DIR.
read -r -d '' PY << 'PY' || true
import json, os, re, sys

PLAIN_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
PLAIN_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")

def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}

def pods(pods_json, outdir, mode):
    """Name each pod's files and write <stem>.status.jsonl; print pod, stem, node, hostname,
    restarted containers (tab-separated), one pod a line."""
    items = [p for p in load(pods_json).get("items") or [] if isinstance(p, dict)]
    rows = []
    for p in items:
        meta, spec, status = p.get("metadata") or {}, p.get("spec") or {}, p.get("status") or {}
        name = str(meta.get("name") or "")
        if not PLAIN_NAME.match(name):
            print(f"skipped a pod named {name!r}: not a Kubernetes name", file=sys.stderr)
            continue
        index = str((meta.get("annotations") or {}).get("batch.kubernetes.io/job-completion-index", ""))
        node = str(spec.get("nodeName") or "")
        host = str(spec.get("hostname") or name)
        rows.append(dict(name=name, created=str(meta.get("creationTimestamp") or ""),
                         index=int(index) if index.isdigit() and mode == "rank" else None,
                         node=node if PLAIN_HOST.match(node) else "",
                         host=host if PLAIN_HOST.match(host) else name, spec=spec, status=status))
    # A retried index has several pods: the first one is rank-<i>, later ones rank-<i>.retry-<k>.
    rows.sort(key=lambda r: (r["index"] is None, r["index"] or 0, r["created"], r["name"]))
    seen = {}
    for r in rows:
        if r["index"] is None:
            r["stem"] = r["name"]
        else:
            k = seen.get(r["index"], 0)
            seen[r["index"]] = k + 1
            r["stem"] = f"rank-{r['index']}" + (f".retry-{k}" if k else "")
        st = r["status"]
        restarted = [c.get("name", "") for c in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or [])
                     if (c.get("restartCount") or 0) > 0 and PLAIN_NAME.match(str(c.get("name", "")))]
        # One JSON object a line, each a whole fact: the pod, each condition, each container
        # (`"reason": "OOMKilled"` next to its exit code, as firstfault reads it).
        facts = [dict(pod=r["name"], node=r["node"], **{k: st[k] for k in ("phase", "reason", "message", "startTime") if k in st})]
        facts += [dict(condition=c.get("type"), **{k: v for k, v in c.items() if k != "type"}) for c in st.get("conditions") or []]
        for kind in ("initContainerStatuses", "containerStatuses"):
            facts += [dict(container=c.get("name"), **{k: c[k] for k in ("restartCount", "state", "lastState") if k in c})
                      for c in st.get(kind) or []]
        with open(os.path.join(outdir, r["stem"] + ".status.jsonl"), "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in facts))
        print("\t".join([r["name"], r["stem"], r["node"] or "-", r["host"], ",".join(restarted) or "-"]))

def events(outfile, names_file, nodes_file, *event_files):
    """kubectl get events -o json (the namespace's, the nodes') -> events.txt: the events of
    the job, its pods and their nodes, oldest first, one line each."""
    names = set(open(names_file).read().split())
    nodes = set(open(nodes_file).read().split())
    lines = []
    for path in event_files:
        for e in load(path).get("items") or []:
            obj = e.get("involvedObject") or e.get("regarding") or {}
            kind, oname = obj.get("kind", ""), obj.get("name", "")
            if not ((kind == "Node" and oname in nodes) or (kind != "Node" and oname in names)):
                continue
            when = (e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp")
                    or (e.get("metadata") or {}).get("creationTimestamp") or "")
            count = e.get("count") or 1
            text = " ".join(str(e.get("message") or e.get("note") or "").split())
            lines.append((str(when), f"{when}  {e.get('type', '')}  {e.get('reason', '')}  "
                                     f"{kind.lower()}/{oname}  {text}" + (f" (x{count})" if count > 1 else "")))
    with open(outfile, "w", encoding="utf-8") as f:
        for _, line in sorted(lines):
            f.write(line + "\n")
    print(len(lines))

def diagnosis(path):
    """First line: verdict, entry id, title, action kind, initiating rank, first evidence's
    file, separated by US (control characters in them become spaces); then each host to
    exclude, JSON-encoded, one a line (a name holding a newline stays one line)."""
    d = load(path)
    diag, act = d.get("diagnosis") or {}, d.get("action") or {}
    ev = diag.get("first_evidence") or {}
    clean = lambda s: "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in ("" if s is None else str(s)))
    print("\x1f".join(clean(x) for x in (d.get("verdict"), diag.get("id"), diag.get("title"),
                                          act.get("kind"), diag.get("initiating_rank"), ev.get("file"))))
    for h in act.get("exclude_hosts") or []:
        print(json.dumps(h))

globals()[sys.argv[1]](*sys.argv[2:])
PY
py() { python3 -c "$PY" "$@"; }

# ---------------------------------------------------------------- where to collect
# Only a directory this script filled (pod logs, status files, events.txt) is emptied: --out
# must never delete someone's files.
prepare_out() {
    if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
        local f
        for f in "$out"/* "$out"/.[!.]*; do
            [ -e "$f" ] || continue
            case ${f##*/} in
                *.log | *.status.jsonl | events.txt) ;;
                *) die "$out holds files this script did not write (${f##*/}): give another --out" ;;
            esac
        done
        rm -f "$out"/*.log "$out"/*.status.jsonl "$out"/events.txt
    fi
    mkdir -p "$out"
}

# ---------------------------------------------------------------- collect
# pods.tsv: pod, stem, node, hostname, restarted containers; files.tsv: file name, pod, node.
collect() {
    local mode=rank
    if [ "$pytorchjob" = 1 ] || [ "$pod_names" = 1 ]; then mode=pod; fi
    list_pods "$selector" "$mode"
    if [ ! -s "$work/pods.tsv" ] && [ "$pytorchjob" = 0 ]; then
        selector="job-name=$name"   # Kubernetes before 1.27 sets only the legacy label
        list_pods "$selector" "$mode"
    fi
    [ -s "$work/pods.tsv" ] || die "no pods with label $selector${namespace:+ in namespace $namespace} (deleted already? see README.md)"

    local which=(--all-containers=true)
    [ -z "$container" ] || which=(--container "$container")
    : > "$work/files.tsv"
    local rows row pod stem node host restarted c running=0
    # Read the list first: background jobs must not share the loop's input (bash would re-read it).
    mapfile -t rows < "$work/pods.tsv"
    for row in "${rows[@]}"; do
        IFS=$'\t' read -r pod stem node host restarted <<< "$row"
        printf '%s\t%s\t%s\n' "$stem.status.jsonl" "$pod" "$node" >> "$work/files.tsv"
        [ "$restarted" != - ] || restarted=""
        # A restarted container's previous run is usually the one that failed.
        for c in - ${restarted//,/ }; do
            [ "$c" = - ] || [ -z "$container" ] || [ "$c" = "$container" ] || continue
            # Up to KUBECTL_PARALLEL fetches at a time: a job of hundreds of pods.
            if [ "$running" -ge "$parallel" ]; then wait -n; running=$((running - 1)); fi
            running=$((running + 1))
            if [ "$c" = - ]; then
                fetch_log "$stem.log" "$pod" "$node" "${which[@]}" &
            else
                fetch_log "$stem.$c.previous.log" "$pod" "$node" --container "$c" --previous &
            fi
        done
    done
    wait
    collect_events
    msg "collected $(wc -l < "$work/pods.tsv") pod(s) into $out"
}

list_pods() {  # list_pods SELECTOR MODE: pods.json, pods.tsv and the status files
    if ! kc get pods -l "$1" -o json > "$work/pods.json" 2> "$work/err"; then
        die "kubectl get pods -l $1 failed: $(head -c 300 "$work/err")"
    fi
    py pods "$work/pods.json" "$out" "$2" > "$work/pods.tsv"
}

fetch_log() {  # fetch_log FILE POD NODE KUBECTL-ARGS...
    local file=$1 pod=$2 node=$3
    shift 3
    if kc logs "$pod" "$@" --prefix=false --timestamps=true > "$out/$file" 2> "$work/$file.err"; then
        printf '%s\t%s\t%s\n' "$file" "$pod" "$node" >> "$work/files.tsv"
    else
        msg "no log of pod $pod ($file): $(head -c 200 "$work/$file.err" | tr -d '\000-\037')"
    fi
    [ -s "$out/$file" ] || rm -f "$out/$file"
    return 0
}

# Events expire (an hour by default), so they are taken when available and never required.
# Node events (NodeNotReady, node-problem-detector's kernel reports) live outside the job's
# namespace; reading them needs a cluster-wide permission this step may not have.
collect_events() {
    cut -f1 "$work/pods.tsv" > "$work/names"
    printf '%s\n' "$name" >> "$work/names"
    cut -f3 "$work/pods.tsv" | grep -vx -- - | sort -u > "$work/nodes" || true
    kc get events -o json > "$work/events.json" 2> /dev/null || msg "kubectl get events failed: no events.txt"
    "$KUBECTL" get events --all-namespaces --field-selector involvedObject.kind=Node -o json \
        > "$work/node-events.json" 2> /dev/null || : > "$work/node-events.json"
    local n
    n=$(py events "$out/events.txt" "$work/names" "$work/nodes" "$work/events.json" "$work/node-events.json")
    [ "$n" != 0 ] || rm -f "$out/events.txt"
}

# ---------------------------------------------------------------- diagnose
diagnose() {
    local tmo=() rc=0
    if command -v timeout > /dev/null; then tmo=(timeout "$diag_timeout"); fi
    "${tmo[@]}" "$FIRSTFAULT" diagnose --format json --no-redact --fail-on none -- "$out" \
        > "$work/diagnosis.json" 2> "$work/err" || rc=$?
    if [ "$rc" -ne 0 ] && { [ "$rc" -ne 2 ] || [ ! -s "$work/diagnosis.json" ]; }; then
        die "firstfault diagnose failed (status $rc): $(head -c 300 "$work/err")"
    fi
    [ "$rc" -eq 0 ] || msg "some input could not be read completely: $(head -c 300 "$work/err")"
    cp "$work/diagnosis.json" "$report"
    "${tmo[@]}" "$FIRSTFAULT" diagnose --fail-on none -- "$out" || true
}

# ---------------------------------------------------------------- act
# A command that changes the cluster: printed, and run with --apply.
change() {
    local shown
    shown=$(printf ' %q' "$@")
    if [ "$apply" = 1 ]; then
        printf '+%s\n' "$shown"
        "$@"
    else
        printf 'to run (or pass --apply):%s\n' "$shown"
    fi
}

# node_of HOST: the node a host of the log stands for: a node of one of the job's pods (full
# or short name), or a pod of the job (a pod's host name is its name, so NCCL's host:pid:tid
# prefix names the pod, not the node).
node_of() {
    local h=$1 pod stem node host restarted
    while IFS=$'\t' read -r pod stem node host restarted; do
        [ "$node" != - ] || continue
        if [ "$h" = "$node" ] || [ "$h" = "${node%%.*}" ] || [ "${h%%.*}" = "$node" ] ||
            [ "$h" = "$pod" ] || [ "$h" = "$host" ] || [ "${h%%.*}" = "$host" ]; then
            printf '%s\n' "$node"
            return 0
        fi
    done < "$work/pods.tsv"
    return 1
}

# The nodes to avoid: the diagnosis's exclude_hosts that are plain names and nodes (or pods) of
# this job; when the log named no host, the node of the pod whose log held the first evidence.
nodes_to_avoid() {
    local encoded h node named=0
    while IFS= read -r encoded; do
        [ -n "$encoded" ] || continue
        named=1
        h=""
        if [[ $encoded =~ ^\"([A-Za-z0-9][A-Za-z0-9._-]{0,252})\"$ ]]; then h=${BASH_REMATCH[1]}; fi
        if [ -z "$h" ]; then
            msg "refused host $encoded from the diagnosis: not a plain host name"
            continue
        fi
        if node=$(node_of "$h"); then
            [ "$node" = "$h" ] || msg "host $h of the diagnosis ran on node $node"
            printf '%s\n' "$node"
        elif [ "$trust_log_hosts" = 1 ]; then
            printf '%s\n' "$h"
        else
            msg "dropped host $h from the diagnosis: no pod of this job ran there (--trust-log-hosts to cordon it anyway)"
        fi
    done <<< "$hosts_json"
    if [ "$named" = 0 ] && [ -n "$evidence_file" ]; then
        node=$(awk -F '\t' -v f="${evidence_file##*/}" '$1 == f && $3 != "-" { print $3; exit }' "$work/files.tsv")
        [ -z "$node" ] || msg "the log names no host: ${evidence_file##*/}, which holds the first evidence, ran on node $node"
        [ -z "$node" ] || printf '%s\n' "$node"
    fi
}

annotate_job() {
    [ "$apply" = 1 ] || [ "${1:-}" = print ] || return 0
    change "$KUBECTL" "${ns_args[@]}" annotate --overwrite "$resource" "$name" \
        "firstfault.dev/diagnosis=$entry" "firstfault.dev/action=$kind" ||
        msg "could not annotate $resource $name"
}

act() {
    local parsed
    parsed=$(py diagnosis "$report") || die "cannot read $report"
    IFS=$'\x1f' read -r verdict entry title kind rank evidence_file <<< "$(head -n 1 <<< "$parsed")"
    hosts_json=$(tail -n +2 <<< "$parsed")
    [ -n "$entry" ] || entry=${verdict:-none}
    [ -n "$kind" ] || kind=investigate
    echo
    echo "firstfault: $entry${title:+ ($title)}: action $kind${rank:+, initiating rank $rank}; diagnosis in $report"
    case $kind in
        restart-excluding)
            local nodes=() n
            mapfile -t nodes < <(nodes_to_avoid | awk '!seen[$0]++')
            if [ ${#nodes[@]} -eq 0 ]; then
                echo "the failed node cannot be told from the logs and the pods: a re-run may land on it again"
                annotate_job
                return 1
            fi
            for n in "${nodes[@]}"; do
                change "$KUBECTL" cordon "$n" || { msg "could not cordon $n"; return 1; }
                if [ "$taint" = 1 ]; then
                    change "$KUBECTL" taint nodes "$n" --overwrite "firstfault.dev/diagnosis=$(label_value "$entry"):NoSchedule" ||
                        { msg "could not taint $n"; return 1; }
                fi
            done
            annotate_job
            if [ "$apply" = 1 ]; then
                echo "re-run the job: its pods will not be scheduled on ${nodes[*]}"
            else
                echo "once ${nodes[*]} is cordoned, re-running the job is safe"
            fi
            return 0 ;;
        restart)
            annotate_job
            echo "a transient failure: re-running the job is safe"
            return 0 ;;
        *)
            annotate_job print
            echo "do not re-run as is: $kind (see the diagnosis above)"
            return 1 ;;
    esac
}

# A taint value is a label value: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends.
label_value() {
    local v
    v=$(printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '-' | cut -c 1-63 | sed -E 's/^[^A-Za-z0-9]+//; s/[^A-Za-z0-9]+$//')
    printf '%s' "${v:-unknown}"
}

prepare_out
collect
diagnose
rc=0
act || rc=$?
exit "$rc"
