#!/bin/bash
# diagnose-failed-job.sh: diagnose a failed Kubernetes training job with firstfault and act on it.
#
#   diagnose-failed-job.sh [-n NAMESPACE] [--pytorchjob] [--apply] [--out DIR] NAME
#
# Collects the logs of the job's pods (an Indexed Job or JobSet child: label job-name=NAME; a
# Kubeflow PyTorchJob with --pytorchjob: label training.kubeflow.org/job-name=NAME), one file per
# pod, plus `kubectl get events` and the pods' status JSON, into DIR (default ./NAME-logs), runs
# `firstfault diagnose --format json` on it, writes DIR.firstfault.json next to it, prints the text
# diagnosis, and acts on action.kind:
#   restart-excluding  cordon the excluded hosts (printed; done with --apply), then re-run is safe
#   restart            a re-run is safe (transient); exit 0
#   stop, investigate  annotate the job with the diagnosis (with --apply); exit 1
# Rank numbering: an Indexed Job pod's file is rank-<completion index>.log (firstfault reads the
# rank from the name); PyTorchJob pods keep their names (<name>-master-0 is rank 0, <name>-worker-N
# is rank N+1, as firstfault reads them).
#
# Variables: KUBECTL (default kubectl), FIRSTFAULT (default firstfault).
# Exit status: 0 restart or restart-excluding, 1 stop or investigate, 2 usage or tool failure.
set -euo pipefail

KUBECTL=${KUBECTL:-kubectl}
FIRSTFAULT=${FIRSTFAULT:-firstfault}
namespace=""
pytorchjob=0
apply=0
out=""
name=""

usage() { sed -n '4p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    -n|--namespace) namespace=$2; shift 2 ;;
    --pytorchjob) pytorchjob=1; shift ;;
    --apply) apply=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) usage ;;
    *) [ -z "$name" ] || usage; name=$1; shift ;;
  esac
done
[ -n "$name" ] || usage
out=${out:-./$name-logs}
ns=(); [ -z "$namespace" ] || ns=(-n "$namespace")
kc() { "$KUBECTL" "${ns[@]}" "$@"; }

# A host from the diagnosis reaches kubectl only when it is a plausible node name: letters,
# digits, '.', '_', '-', not starting with '-' (a log could name '-oProxyCommand=...' or gpu[1-9]).
valid_host() { [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$ ]]; }

# One file per pod: rank-<index>.log for an indexed pod, else the pod's own name.
collect_logs() {
  local selector="job-name=$name"
  [ "$pytorchjob" = 1 ] && selector="training.kubeflow.org/job-name=$name"
  mkdir -p "$out"
  local pods
  pods=$(kc get pods -l "$selector" -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}{"\n"}{end}')
  [ -n "$pods" ] || { echo "diagnose-failed-job: no pods with label $selector" >&2; exit 2; }
  while read -r pod index; do
    [ -n "$pod" ] || continue
    local file="$out/$pod.log"
    [ "$pytorchjob" = 0 ] && [ -n "$index" ] && file="$out/rank-$index.log"
    kc logs "$pod" --all-containers=true > "$file" 2>/dev/null || true
  done <<< "$pods"
  kc get events --field-selector "involvedObject.name=$name" > "$out/events.txt" 2>/dev/null || true
  kc get pods -l "$selector" -o json > "$out/pods.json" 2>/dev/null || true
}

# A value of the diagnosis JSON (the expressions are this script's own, never log text).
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]) or "")' "$out.firstfault.json" "$1"; }

act() {
  local kind id title hosts
  kind=$(field 'd["action"]["kind"]')
  id=$(field '(d["diagnosis"] or {}).get("id")')
  title=$(field '(d["diagnosis"] or {}).get("title")')
  hosts=$(field '" ".join(d["action"]["exclude_hosts"])')
  echo "firstfault action: $kind${id:+ ($id)}"
  case "$kind" in
    restart-excluding)
      for h in $hosts; do
        if ! valid_host "$h"; then echo "diagnose-failed-job: not a node name, left alone: $h" >&2; continue; fi
        echo "cordon: $KUBECTL cordon $h"
        [ "$apply" = 1 ] && "$KUBECTL" cordon -- "$h"
      done
      echo "re-run the job: its next pods avoid the cordoned node(s)"
      return 0 ;;
    restart)
      echo "transient failure: re-running the job is safe"
      return 0 ;;
    *)
      local kindarg="job"
      [ "$pytorchjob" = 1 ] && kindarg="pytorchjob"
      local note="${id:-unrecognized}: ${title:-see $out.firstfault.json}"
      note=$(printf '%s' "$note" | tr -d '\000-\037\177' | cut -c1-250)
      echo "annotate: $KUBECTL annotate $kindarg $name firstfault.dev/diagnosis=..."
      [ "$apply" = 1 ] && kc annotate --overwrite "$kindarg" "$name" "firstfault.dev/diagnosis=$note"
      return 1 ;;
  esac
}

collect_logs
rc=0
"$FIRSTFAULT" diagnose --format json "$out" > "$out.firstfault.json" || rc=$?
[ "$rc" -le 1 ] || { echo "diagnose-failed-job: firstfault failed (exit $rc)" >&2; exit 2; }
"$FIRSTFAULT" diagnose "$out" || true
act
