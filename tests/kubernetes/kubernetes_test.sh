#!/usr/bin/env bash
# contrib/kubernetes, tested as far as this machine allows:
# 1. every manifest: `kubectl apply --dry-run=client` when an API server answers (kubectl needs
#    one even for a client-side dry run: it maps kinds through discovery); always a structural
#    check of the fields the manifests use (python3-yaml), which must also reject broken copies;
# 2. diagnose-failed-job.sh end to end against a fake kubectl that serves a PyTorchJob's pods and
#    records what it is asked to do: worker-N is rank N+1, a bad GPU's host is cordoned, a `stop`
#    diagnosis annotates the job and exits 1, a host that is not a node name is never passed on;
# 3. the Indexed Job triage recipe's command line, run here: shards merged equal one run.
# Usage: kubernetes_test.sh FIRSTFAULT SOURCE_DIR; exit 77 (skip) without python3-yaml.
set -euo pipefail
ff=$(realpath "$1")
src=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 -c 'import yaml' 2> /dev/null || { echo "SKIP: python3-yaml is not installed"; exit 77; }

# ---- 1. manifests -------------------------------------------------------------------------------
if kubectl version --request-timeout=3s > /dev/null 2>&1; then
  for m in "$src"/contrib/kubernetes/*.yaml; do
    kubectl apply --dry-run=client -f "$m" > /dev/null || fail "kubectl rejects $m"
  done
else
  echo "note: no Kubernetes API server reachable, so kubectl's dry run cannot map the kinds; structural check only"
fi
cat > "$work/check.py" << 'PY'
import sys, yaml
def need(cond, what):
    if not cond: raise SystemExit(f"{sys.argv[1]}: {what}")
def pod_spec(spec, pfp):
    need(isinstance(spec.get("containers"), list) and spec["containers"], "no containers")
    for c in spec["containers"]:
        need(isinstance(c.get("name"), str) and c["name"], "a container without a name")
        need(isinstance(c.get("image"), str) and c["image"], f"container {c.get('name')} without an image")
        need(c.get("command") or c.get("args"), f"container {c['name']} runs nothing")
    if pfp: need(spec.get("restartPolicy") == "Never", "podFailurePolicy needs restartPolicy Never")
    else: need(spec.get("restartPolicy") in ("Never", "OnFailure"), "a Job's pods need restartPolicy Never or OnFailure")
    return [c["name"] for c in spec["containers"]]
def job_spec(spec):
    need(isinstance(spec.get("template", {}).get("spec"), dict), "no pod template")
    if "completionMode" in spec: need(spec["completionMode"] in ("Indexed", "NonIndexed"), "bad completionMode")
    for k in ("completions", "parallelism", "backoffLimit"):
        if k in spec: need(isinstance(spec[k], int) and spec[k] >= 0, f"{k} is not a count")
    pfp = spec.get("podFailurePolicy")
    names = pod_spec(spec["template"]["spec"], pfp is not None)
    for rule in (pfp or {}).get("rules", []):
        need(rule.get("action") in ("FailJob", "Ignore", "Count", "FailIndex"), f"bad action {rule.get('action')}")
        need(("onExitCodes" in rule) != ("onPodConditions" in rule), "a rule needs exactly one of onExitCodes, onPodConditions")
        if "onExitCodes" in rule:
            e = rule["onExitCodes"]
            need(e.get("operator") in ("In", "NotIn"), "onExitCodes operator is In or NotIn")
            need(isinstance(e.get("values"), list) and e["values"] and all(isinstance(v, int) for v in e["values"]), "exit codes are integers")
            if "containerName" in e: need(e["containerName"] in names, f"no container {e['containerName']}")
        else:
            for c in rule["onPodConditions"]:
                need(isinstance(c.get("type"), str) and c.get("status") in ("True", "False", "Unknown"), "bad pod condition")
doc = yaml.safe_load(open(sys.argv[1]))
kind = doc.get("kind")
need(isinstance(doc.get("metadata", {}).get("name"), str), "no metadata.name")
if kind == "Job":
    need(doc.get("apiVersion") == "batch/v1", "a Job is batch/v1")
    job_spec(doc["spec"])
elif kind == "JobSet":
    need(doc.get("apiVersion", "").startswith("jobset.x-k8s.io/"), "a JobSet is jobset.x-k8s.io")
    rj = doc["spec"].get("replicatedJobs")
    need(isinstance(rj, list) and rj, "no replicatedJobs")
    for r in rj:
        need(isinstance(r.get("name"), str) and isinstance(r.get("replicas", 1), int), "a replicatedJob needs a name and a count")
        job_spec(r["template"]["spec"])
    fp = doc["spec"].get("failurePolicy", {})
    need(isinstance(fp.get("maxRestarts", 0), int), "failurePolicy.maxRestarts is a count")
else:
    need(False, f"unexpected kind {kind}")
PY
for m in "$src"/contrib/kubernetes/*.yaml; do python3 "$work/check.py" "$m" || fail "structure of $m"; done
# The checker is not a rubber stamp: broken copies are rejected.
sed 's/restartPolicy: Never          # podFailurePolicy requires Never/restartPolicy: OnFailure/' "$src/contrib/kubernetes/job.yaml" > "$work/bad1.yaml"
sed 's/operator: In/operator: Within/' "$src/contrib/kubernetes/job.yaml" > "$work/bad2.yaml"
sed 's/containerName: trainer/containerName: nosuch/' "$src/contrib/kubernetes/job.yaml" > "$work/bad3.yaml"
for b in bad1 bad2 bad3; do
  if python3 "$work/check.py" "$work/$b.yaml" 2> /dev/null; then fail "the checker accepts $b"; fi
done

# ---- 2. diagnose-failed-job.sh with a fake kubectl ------------------------------------------------
pods="$work/pods"
mkdir -p "$pods"
head -c 0 /dev/null > "$work/calls"
cat > "$work/kubectl" << 'SH'
#!/bin/bash
# Serves pods and logs from $FAKE_PODS (one <pod>.log each) and records every call.
echo "$*" >> "$FAKE_CALLS"
while [ "$1" = -n ]; do shift 2; done
case "$1" in
  get)
    if [ "$2" = pods ] && [[ "$*" == *jsonpath* ]]; then for f in "$FAKE_PODS"/*.log; do echo "$(basename "$f" .log) "; done
    elif [ "$2" = pods ]; then echo '{"items": []}'
    fi ;;
  logs) cat "$FAKE_PODS/$2.log" ;;
  cordon|annotate) ;;
  *) exit 1 ;;
esac
SH
chmod +x "$work/kubectl"
export KUBECTL="$work/kubectl" FIRSTFAULT="$ff" FAKE_PODS="$pods" FAKE_CALLS="$work/calls"
run_script() { (cd "$work" && "$src/contrib/kubernetes/diagnose-failed-job.sh" "$@"); }

# A PyTorchJob: master-0 (rank 0) and worker-0..2 (ranks 1..3); worker-1 (rank 2) loses its GPU.
step() { printf '[rank%s]: step 120 loss 2.31\n' "$1"; }
step 0 > "$pods/bert-master-0.log"
step 1 > "$pods/bert-worker-0.log"
{ printf '2026-11-05T10:00:00.000000+00:00 gpu-node-7 kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=4242, name=python, GPU has fallen off the bus.\n'
  printf 'RuntimeError: CUDA error: unspecified launch failure\n'; } > "$pods/bert-worker-1.log"
step 3 > "$pods/bert-worker-2.log"
rc=0; out=$(run_script --pytorchjob --apply bert) || rc=$?
[ "$rc" = 0 ] || fail "restart-excluding should exit 0 (got $rc): $out"
grep -q 'Initiating rank: 2' <<< "$out" || fail "worker-1 is rank 2 in a PyTorchJob: $out"
grep -q '^cordon -- gpu-node-7$' "$work/calls" || fail "gpu-node-7 was not cordoned: $(cat "$work/calls")"
[ -s "$work/bert-logs.firstfault.json" ] || fail "no diagnosis JSON next to the logs"

# A stop diagnosis annotates the job and exits 1.
rm -f "$pods"/*.log "$work/calls"
printf '[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB\n' > "$pods/llm-master-0.log"
step 1 > "$pods/llm-worker-0.log"
rc=0; out=$(run_script --pytorchjob --apply llm) || rc=$?
[ "$rc" = 1 ] || fail "a stop diagnosis should exit 1 (got $rc)"
grep -q '^annotate --overwrite pytorchjob llm firstfault.dev/diagnosis=cuda-oom: ' "$work/calls" || fail "not annotated: $(cat "$work/calls")"

# A host that is not a node name never reaches kubectl.
rm -f "$pods"/*.log "$work/calls"
printf 'gpu[001-999]:4242:4242 [0] NCCL WARN Cuda failure '"'"'unspecified launch failure'"'"'\n' > "$pods/x-master-0.log"
printf '2026-11-05T10:00:00.000000+00:00 -oProxyCommand=x kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=1, name=python, GPU has fallen off the bus.\n' >> "$pods/x-master-0.log"
run_script --pytorchjob --apply x > /dev/null 2>&1 || true
if grep -q '^cordon' "$work/calls" 2> /dev/null; then fail "a hostile host reached kubectl: $(cat "$work/calls")"; fi

# ---- 3. the triage recipe's command, here ---------------------------------------------------------
arch="$work/archive"
for j in a b c d e f; do mkdir -p "$arch/job-$j"; done
cp "$src/testdata/kb/cuda-oom.log" "$arch/job-a/"
cp "$src/testdata/kb/xid-79-gpu-fell-off-bus.log" "$arch/job-b/"
cp "$src/testdata/kb/host-oom-kill.log" "$arch/job-c/"
cp "$src/testdata/kb/nccl-collective-timeout.log" "$arch/job-d/"
cp "$src/testdata/kb/dataloader-shm-bus-error.log" "$arch/job-e/"
printf 'step 1 loss 2.0\n' > "$arch/job-f/out.log"
mkdir -p "$work/results"
for i in 0 1 2; do  # what each pod runs, with JOB_COMPLETION_INDEX=i ("$$" is "$" for Kubernetes)
  cmd=$(python3 -c 'import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]["args"][0])' "$src/contrib/kubernetes/triage-indexed-job.yaml")
  cmd=${cmd//\$\$/\$}; cmd=${cmd//\/8 /\/3 }; cmd=${cmd//\/archive/$arch}; cmd=${cmd//\/results/$work/results}
  PATH="$(dirname "$ff"):$PATH" JOB_COMPLETION_INDEX=$i sh -c "$cmd" || true
done
"$ff" triage --merge "$work"/results/shard-*.jsonl > "$work/merged.txt" || true
"$ff" triage --no-progress "$arch" > "$work/single.txt" || true
diff -u "$work/single.txt" "$work/merged.txt" || fail "merged shards differ from one run"
grep -q '6 job(s)' "$work/single.txt" || fail "expected 6 jobs: $(head -3 "$work/single.txt")"
echo "PASS: manifests, diagnose-failed-job.sh, triage recipe"
