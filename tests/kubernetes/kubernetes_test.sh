#!/bin/bash
# contrib/kubernetes, tested as far as a machine without a cluster allows:
#   (a) every manifest: `kubectl apply --dry-run=client` when an API server answers (kubectl maps
#       kinds through the server's discovery even for a client-side dry run); always kubectl's
#       own reading of the YAML (`kubectl label --local`, no server) compared with PyYAML's, and
#       a structural check against a schema of the fields used (check_manifests.py), which must
#       also reject broken copies, each for the right reason;
#   (b) diagnose-failed-job.sh end to end against a fake kubectl (fake-kubectl) that serves
#       recorded clusters made from testdata/kb logs (make_fixtures.py) and records every call:
#       PyTorchJob worker-N is rank N+1, an Xid or ECC error cordons the node the pod ran on, a
#       stop diagnosis annotates the job and exits 1, a hostile host name never reaches kubectl;
#   (c) the Indexed Job triage recipe's own shell scripts, taken from the manifest as Kubernetes
#       would expand them, run here in 8 shards over an archive of example jobs: the merge
#       equals one unsharded run.
#
#   tests/kubernetes/kubernetes_test.sh FIRSTFAULT_BINARY [SOURCE_DIR]
#
# SOURCE_DIR holds contrib/kubernetes (default: this checkout). The example logs are read from
# $TESTDATA, else SOURCE_DIR/testdata, else the testdata of the tree the binary was built in
# (build/..). REAL_KUBECTL names the kubectl for (a) (default: kubectl in PATH).
# Exits 77 (CTest SKIP) when python3 or python3-yaml is missing. FIRSTFAULT_K8S_KEEP=1 keeps the
# temporary directory.

set -euo pipefail

skip() { printf 'SKIP: %s\n' "$*"; exit 77; }
fail() { printf 'FAIL: %s\n' "$*"; failed=1; }
note() { printf '%s\n' "$*"; }
failed=0

here=$(cd "$(dirname "$0")" && pwd)
ff=${1:-}
src=${2:-$(cd "$here/../.." && pwd)}
[ -n "$ff" ] || { echo "usage: $0 FIRSTFAULT_BINARY [SOURCE_DIR]" >&2; exit 2; }
ff=$(cd "$(dirname "$ff")" && pwd)/$(basename "$ff")
src=$(cd "$src" && pwd)  # the cases run from their own directories
[ -x "$ff" ] || { echo "not an executable: $ff" >&2; exit 2; }
contrib=$src/contrib/kubernetes
script=$contrib/diagnose-failed-job.sh
[ -r "$script" ] || { echo "no $script: give the source dir" >&2; exit 2; }
testdata=${TESTDATA:-$src/testdata}
[ -d "$testdata/kb" ] || testdata=$(dirname "$(dirname "$ff")")/testdata
[ -d "$testdata/kb" ] || { echo "no testdata/kb in $src or next to $ff: set TESTDATA" >&2; exit 2; }
kb=$testdata/kb

command -v python3 > /dev/null || skip "python3 is not installed (the manifests' check and diagnose-failed-job.sh need it)"
python3 -c 'import yaml' 2> /dev/null || skip "python3-yaml is not installed (Debian package python3-yaml): the manifests cannot be read"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ff-k8s.XXXXXX")
cleanup() {
    local rc=$?
    if [ "${FIRSTFAULT_K8S_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
    exit "$rc"
}
trap cleanup EXIT
check() { python3 "$here/check_manifests.py" "$@"; }

# ================================================================== (a) the manifests
mapfile -t manifests < <(find "$contrib" -maxdepth 1 \( -name '*.yaml' -o -name '*.yml' \) | sort)
[ ${#manifests[@]} -ge 3 ] || fail "(a) found ${#manifests[@]} manifests in $contrib, want job.yaml, jobset.yaml, triage-indexed-job.yaml"

# kubectl needs an API server to map kinds to resources (discovery), even with
# --dry-run=client --validate=false; without one it says so, and the dry run is skipped.
kubectl_dry_run() {
    local m=$1 out
    if out=$("$real_kubectl" apply --dry-run=client --validate=false --request-timeout=10s -f "$m" 2>&1); then
        note "(a) kubectl apply --dry-run=client accepts ${m##*/}"
    elif grep -qiE "connection refused|no such host|i/o timeout|unable to connect to the server|couldn't get current server API group list|dial tcp|deadline exceeded|no configuration has been provided" <<< "$out"; then
        note "(a) no Kubernetes API server is reachable, so kubectl apply --dry-run=client cannot map the kinds: $(grep -m 1 -iE 'error|refused' <<< "$out" | cut -c 1-160)"
        note "(a) falling back to kubectl's own YAML reading (kubectl label --local) and the structural check"
        server=0
    elif grep -q 'no matches for kind' <<< "$out"; then
        note "(a) ${m##*/}: the API server does not know one of its kinds (a CRD such as JobSet not installed): $(grep -m 1 'no matches' <<< "$out" | cut -c 1-160)"
    else
        fail "(a) kubectl apply --dry-run=client rejects ${m##*/}: $out"
    fi
}

real_kubectl=${REAL_KUBECTL:-kubectl}
server=1
if command -v "$real_kubectl" > /dev/null; then
    for m in "${manifests[@]}"; do
        [ "$server" = 0 ] || kubectl_dry_run "$m"
        if "$real_kubectl" label --local -f "$m" firstfault-test=1 -o json > "$tmp/kubectl.json" 2> "$tmp/kubectl.err"; then
            check compare "$m" "$tmp/kubectl.json" || fail "(a) kubectl and PyYAML read ${m##*/} differently"
        else
            fail "(a) kubectl cannot read ${m##*/}: $(head -c 300 "$tmp/kubectl.err")"
        fi
    done
    note "(a) kubectl reads every manifest as PyYAML does"
else
    note "(a) kubectl is not installed: no dry run, structural check only"
fi

note "(a) structural check:"
check check "${manifests[@]}" || fail "(a) a manifest breaks the schema or the recipe checks (above)"
check selftest "$contrib" || fail "(a) the checker let a broken copy through (above)"
# The file-level path too: a broken file on disk, and a key written twice (PyYAML keeps the last).
sed 's/operator: In/operator: Within/' "$contrib/job.yaml" > "$tmp/broken-operator.yaml"
sed 's/^\(  *\)backoffLimit: \([0-9]*\)$/&\n\1backoffLimit: 0/' "$contrib/job.yaml" > "$tmp/broken-duplicate.yaml"
for b in broken-operator broken-duplicate; do
    if check check "$tmp/$b.yaml" > "$tmp/$b.out" 2>&1; then
        fail "(a) the checker accepts $b.yaml"
    else
        note "(a) ok, $b.yaml rejected: $(grep -m 1 -E 'Within|duplicate' "$tmp/$b.out" | cut -c 1-140)"
    fi
done

# ================================================================== (b) diagnose-failed-job.sh
fx=$tmp/clusters
python3 "$here/make_fixtures.py" "$kb" "$fx"
mkdir -p "$tmp/bin"
cp "$here/fake-kubectl" "$tmp/bin/kubectl"
chmod +x "$tmp/bin/kubectl"
[ -x "$script" ] || fail "(b) $script is not executable (README.md runs it directly)"

# run_case CASE ARGS...: run the script in $tmp/run/CASE against cluster CASE; sets rc, out
# (stdout), err (stderr), calls (the file of kubectl calls, each word %q-quoted and followed by a space).
run_case() {
    local case=$1
    shift
    rm -rf "$tmp/run/$case"
    mkdir -p "$tmp/run/$case"
    : > "$fx/$case/calls"
    rc=0
    # KUBECTL_PARALLEL=2: fewer than the pods, so fetches wait for each other.
    (cd "$tmp/run/$case" && FAKE_K8S=$fx/$case KUBECTL=$tmp/bin/kubectl FIRSTFAULT=${stub:-$ff} KUBECTL_PARALLEL=2 \
        "$script" "$@" > stdout 2> stderr) || rc=$?
    out=$(cat "$tmp/run/$case/stdout")
    err=$(cat "$tmp/run/$case/stderr")
    calls=$fx/$case/calls
}
want_rc() { [ "$rc" = "$2" ] || fail "(b) $1: exit $rc, want $2; stderr: $(tail -c 600 <<< "$err")"; }
said() { grep -qF -- "$2" <<< "$out$err" || fail "(b) $1: the output lacks '$2': $(tail -c 600 <<< "$out")"; }
called() { grep -qxF -- "$2 " "$calls" || fail "(b) $1: kubectl was not called as '$2'; calls: $(grep -vE '(^| )(get|logs) ' "$calls" | tr '\n' ';')"; }
not_called() { if grep -qE -- "$2" "$calls"; then fail "(b) $1: kubectl was called with $2: $(grep -E -- "$2" "$calls" | head -n 3)"; fi; }
has_files() {
    local name=$1 dir=$2 f
    shift 2
    for f in "$@"; do [ -s "$dir/$f" ] || fail "(b) $name: no $f in $dir (has: $(cd "$dir" && echo *))"; done
}
# json_is NAME FILE EXPR: a Python expression over the diagnosis d must be true.
json_is() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3" 2> /dev/null ||
        fail "(b) $1: in $2, not true: $3"
}

# --- a PyTorchJob whose worker-1 loses its GPU (Xid 79 on node gpu-node-7)
run_case xid -n ml --pytorchjob --apply bert
json=$tmp/run/xid/bert-logs.firstfault.json
want_rc xid 0
said xid "Initiating rank: 2 on host gpu-node-7"
json_is xid "$json" 'd["diagnosis"]["id"] == "xid-79-gpu-fell-off-bus" and d["action"]["kind"] == "restart-excluding"'
# worker-N is rank N+1: every rank's lines come from the pod the operator gave that rank.
json_is xid "$json" '{r["rank"]: r["last_file"].rsplit("/", 1)[-1].split(".")[0] for r in d["ranks"]} == {0: "bert-master-0", 1: "bert-worker-0", 2: "bert-worker-1", 3: "bert-worker-2"}'
has_files xid "$tmp/run/xid/bert-logs" bert-master-0.log bert-worker-{0,1,2}.log bert-worker-1.status.jsonl events.txt
grep -q 'BackOff  pod/bert-worker-1' "$tmp/run/xid/bert-logs/events.txt" || fail "(b) xid: events.txt lacks the pod's event"
if grep -q other-job "$tmp/run/xid/bert-logs/events.txt"; then fail "(b) xid: events.txt holds another job's event"; fi
called xid "--namespace ml get pods -l training.kubeflow.org/job-name=bert -o json"
called xid "--namespace ml logs bert-worker-1 --all-containers=true --prefix=false --timestamps=true"
called xid "cordon gpu-node-7"
called xid "--namespace ml annotate --overwrite pytorchjob bert firstfault.dev/diagnosis=xid-79-gpu-fell-off-bus firstfault.dev/action=restart-excluding"
not_called xid '^(cordon|taint) .*(gpu-node-[^7]|bert)'
[ "$failed" = 1 ] || note "(b) ok: PyTorchJob worker-1 is rank 2, its Xid 79 cordons gpu-node-7, exit 0"

# --- an Indexed Job whose index 1 hits an uncorrectable ECC error; its NCCL lines name the
# pod's host name train-1, which must become the node it ran on
run_case ecc --apply --taint train
json=$tmp/run/ecc/train-logs.firstfault.json
want_rc ecc 0
said ecc "Initiating rank: 1 on host train-1"
said ecc "host train-1 of the diagnosis ran on node gpu-node-2"
json_is ecc "$json" 'd["diagnosis"]["id"] == "cuda-uncorrectable-ecc" and d["action"]["exclude_hosts"] == ["train-1"]'
has_files ecc "$tmp/run/ecc/train-logs" rank-{0,1,2,3}.log rank-3.retry-1.log rank-0.trainer.previous.log rank-1.status.jsonl events.txt
grep -q 'waiting for the rendezvous' "$tmp/run/ecc/train-logs/rank-3.retry-1.log" || fail "(b) ecc: rank-3.retry-1.log is not the later pod of index 3"
grep -q 'NodeNotReady  node/gpu-node-2' "$tmp/run/ecc/train-logs/events.txt" || fail "(b) ecc: events.txt lacks the node's event"
if grep -q gpu-node-9 "$tmp/run/ecc/train-logs/events.txt"; then fail "(b) ecc: events.txt holds an event of a node the job did not use"; fi
called ecc "logs train-q7x2k --container trainer --previous --prefix=false --timestamps=true"
[ "$(grep -c '^logs ' "$calls")" = 6 ] || fail "(b) ecc: want 6 log fetches (5 pods, 1 previous container), got: $(grep '^logs ' "$calls" | tr '\n' ';')"
called ecc "cordon gpu-node-2"
called ecc "taint nodes gpu-node-2 --overwrite firstfault.dev/diagnosis=cuda-uncorrectable-ecc:NoSchedule"
not_called ecc '^cordon train'
[ "$failed" = 1 ] || note "(b) ok: Indexed Job files are rank-<completion index>.log; host train-1 is pod train-mm4zd on gpu-node-2, cordoned and tainted"

# --- a CUDA OOM on rank 3 (testdata/kb/cuda-oom.log split into 4 pods): stop
run_case oom -n ml --apply llm
want_rc oom 1
said oom "Initiating rank: 3"
json_is oom "$tmp/run/oom/llm-logs.firstfault.json" 'd["diagnosis"]["id"] == "cuda-oom" and d["action"]["kind"] == "stop"'
called oom "--namespace ml annotate --overwrite job llm firstfault.dev/diagnosis=cuda-oom firstfault.dev/action=stop"
not_called oom '^(cordon|taint) '
# Again without --apply, into the directory it filled: emptied and filled anew, nothing changed.
: > "$fx/oom/calls"
rc=0
(cd "$tmp/run/oom" && FAKE_K8S=$fx/oom KUBECTL=$tmp/bin/kubectl FIRSTFAULT=$ff "$script" -n ml llm > stdout 2> stderr) || rc=$?
out=$(cat "$tmp/run/oom/stdout")
want_rc "oom without --apply" 1
said "oom without --apply" "to run (or pass --apply):"
not_called "oom without --apply" 'annotate'
[ "$failed" = 1 ] || note "(b) ok: CUDA OOM on rank 3 is stop: annotated with --apply (printed without), exit 1"

# --- a spot node reclaimed under worker-1: restart
run_case preempted -n training --pytorchjob --apply llama-ft
want_rc preempted 0
said preempted "re-running the job is safe"
json_is preempted "$tmp/run/preempted/llama-ft-logs.firstfault.json" 'd["diagnosis"]["id"] == "k8s-node-preempted" and d["action"]["kind"] == "restart" and d["diagnosis"]["initiating_rank"] == 2'
not_called preempted '^(cordon|taint) '
[ "$failed" = 1 ] || note "(b) ok: a preempted worker-1 (its status JSON) is restart, exit 0"

# --- nothing known: investigate
run_case odd --apply odd
want_rc odd 1
called odd "annotate --overwrite job odd firstfault.dev/diagnosis=unrecognized firstfault.dev/action=investigate"

# --- host names: what reaches kubectl is a node of the job, never log text
# A log that puts hostile names where hosts go: firstfault takes none of them as a host, so the
# node is the one the pod holding the first evidence ran on.
cp -r "$fx/odd" "$fx/hostile"
printf '%s\n' \
    "2026-02-01T10:00:02.000000000Z May 18 19:02:39 -oProxyCommand=x kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=1, name=python, GPU has fallen off the bus." \
    "2026-02-01T10:00:03.000000000Z gpu[001-999]:4242:4242 [0] NCCL WARN Cuda failure 'unspecified launch failure'" \
    >> "$fx/hostile/logs/odd-0-k0k.log"
run_case hostile --apply odd
want_rc hostile 0
not_called hostile 'ProxyCommand|gpu\\\['
called hostile "cordon gpu-node-1"
# A diagnosis that does name hostile hosts (a stand-in for firstfault prints it): each refused.
cat > "$tmp/bin/firstfault-stub" << 'SH'
#!/bin/bash
# A stand-in for firstfault: `diagnose --format json` prints $FAKE_DIAGNOSIS, the rest a line.
case " $* " in *" --format json "*) cat "$FAKE_DIAGNOSIS" ;; *) echo "stub diagnosis" ;; esac
SH
chmod +x "$tmp/bin/firstfault-stub"
diagnosis_naming() {  # diagnosis_naming HOST...: a restart-excluding diagnosis excluding them
    python3 -c 'import json, sys; print(json.dumps({"schema": "firstfault.diagnosis/v1", "verdict": "diagnosed",
        "diagnosis": {"id": "xid-79-gpu-fell-off-bus", "title": "GPU fell off the PCIe bus (Xid 79)", "initiating_rank": 0,
                      "first_evidence": {"file": "./odd-logs/rank-0.log"}},
        "action": {"kind": "restart-excluding", "exclude_hosts": sys.argv[1:], "exclude_gpus": [], "reason": "x"}}))' "$@" \
        > "$tmp/stub.json"
}
export FAKE_DIAGNOSIS=$tmp/stub.json
stub=$tmp/bin/firstfault-stub
# shellcheck disable=SC2016  # '$(touch pwned)' is meant literally
hostile=('-oProxyCommand=x' 'gpu[001-999]' 'a b' $'node\n-x' '$(touch pwned)' '--kubeconfig=/x' '')
diagnosis_naming "${hostile[@]}" gpu-node-99 odd-1-k1k
run_case odd --apply odd
want_rc "stub, hostile and good hosts" 0
called "stub, hostile and good hosts" "cordon gpu-node-1"
not_called "stub, hostile and good hosts" "ProxyCommand|gpu\\\\\\[|a\\\\ b|\\\$'|pwned|kubeconfig|gpu-node-99"
[ "$(grep -c 'refused host' <<< "$err")" = 7 ] || fail "(b) stub: want 7 hosts refused, stderr: $err"
said "stub, hostile and good hosts" "dropped host gpu-node-99 from the diagnosis: no pod of this job ran there"
[ ! -e "$tmp/run/odd/pwned" ] || fail "(b) stub: a host name was run as code"
diagnosis_naming "${hostile[@]}"
run_case odd --apply odd
want_rc "stub, only hostile hosts" 1
not_called "stub, only hostile hosts" '^(cordon|taint) '
said "stub, only hostile hosts" "the failed node cannot be told"
diagnosis_naming "${hostile[@]}" gpu-node-99
run_case odd --apply --trust-log-hosts odd
called "stub, --trust-log-hosts" "cordon gpu-node-99"
not_called "stub, --trust-log-hosts" 'ProxyCommand|gpu\\\[|pwned|kubeconfig'
stub=""
[ "$failed" = 1 ] || note "(b) ok: hostile host names (-oProxyCommand=x, gpu[001-999], \$(...), ...) are refused and never reach kubectl"

# --- options: pod names for an Indexed Job's files, one container, --help
run_case ecc --pod-names -c trainer train
has_files "--pod-names" "$tmp/run/ecc/train-logs" train-mm4zd.log train-c3c3c.log train-q7x2k.trainer.previous.log
called "-c trainer" "logs train-mm4zd --container trainer --prefix=false --timestamps=true"
run_case odd --help
want_rc --help 0
said --help "--trust-log-hosts"
[ ! -s "$calls" ] || fail "(b) --help called kubectl"

# --- errors: exit 2, and nothing done
run_case odd --apply 'odd;touch pwned'
want_rc "bad name" 2
[ ! -s "$calls" ] || fail "(b) bad name: kubectl was called: $(cat "$calls")"
run_case odd -n elsewhere odd
want_rc "no pods" 2
said "no pods" "no pods with label"
mkdir -p "$tmp/run/foreign/odd-logs" && echo keep > "$tmp/run/foreign/odd-logs/notes.md"
rc=0
(cd "$tmp/run/foreign" && FAKE_K8S=$fx/odd KUBECTL=$tmp/bin/kubectl FIRSTFAULT=$ff "$script" odd > /dev/null 2>&1) || rc=$?
if [ "$rc" != 2 ] || [ ! -f "$tmp/run/foreign/odd-logs/notes.md" ]; then
    fail "(b) an --out directory with someone's files: exit $rc, want 2 and the file kept"
fi
FAKE_K8S_FAIL=1 run_case xid -n ml --pytorchjob --apply bert
want_rc "cordon refused" 1
# Kubernetes before 1.27 labels a Job's pods job-name= only.
cp -r "$fx/odd" "$fx/legacy" && echo "job-name=odd" > "$fx/legacy/selector"
run_case legacy odd
want_rc "legacy label" 1
called "legacy label" "get pods -l job-name=odd -o json"
[ "$failed" = 1 ] || note "(b) ok: --pod-names, -c, --help; bad names, no pods, someone's directory, a refused cordon, the legacy job-name label"

# ================================================================== (c) the triage recipe
# An archive of a dozen example jobs, one folder each, a healthy one and an unreadable one.
arch=$tmp/triage/archive
res=$tmp/triage/results
mkdir -p "$arch" "$res" "$tmp/triage/bin"
mapfile -t examples < <(cd "$kb" && printf '%s\n' *.log | awk 'NR % 47 == 1' | head -n 12)
for e in "${examples[@]}"; do mkdir -p "$arch/job-${e%.log}" && cp "$kb/$e" "$arch/job-${e%.log}/train.log"; done
mkdir -p "$arch/job-healthy" "$arch/job-truncated"
printf 'step %d loss 2.0\n' 1 2 3 > "$arch/job-healthy/train.log"
gzip -c "$kb/${examples[0]}" | head -c 60 > "$arch/job-truncated/train.log.gz"
ln -s "$ff" "$tmp/triage/bin/firstfault"

check triage "$contrib/triage-indexed-job.yaml" "$tmp/triage" "/archive=$arch" "/results=$res" ||
    fail "(c) cannot take the scripts out of triage-indexed-job.yaml"
n=$(cat "$tmp/triage/completions")
pod_env() { env -i PATH="$tmp/triage/bin:/usr/bin:/bin" HOME="$tmp" "$@"; }
mapfile -t shard_env < "$tmp/triage/shard.env"
mapfile -t merge_env < "$tmp/triage/merge.env"
statuses=""
for ((i = 0; i < n; i++)); do
    rc=0
    pod_env "${shard_env[@]}" JOB_COMPLETION_INDEX=$i sh "$tmp/triage/shard.sh" 2> "$tmp/triage/shard-$i.err" || rc=$?
    [ "$rc" = 0 ] || fail "(c) pod $i of $n failed (exit $rc): $(cat "$tmp/triage/shard-$i.err")"
    [ -f "$res/shard-$i.jsonl" ] || fail "(c) pod $i wrote no $res/shard-$i.jsonl"
    statuses+=" $(grep -c '"type":"job"' "$res/shard-$i.jsonl" || true)"
done
[ -z "$(ls "$res"/*.tmp 2> /dev/null)" ] || fail "(c) temporary shard files left: $(ls "$res")"
note "(c) $n pods done, jobs per shard:$statuses"
rc=0
pod_env "${merge_env[@]}" timeout 60 sh "$tmp/triage/merge.sh" > "$tmp/triage/merge.out" 2> "$tmp/triage/merge.err" || rc=$?
[ "$rc" = 0 ] || fail "(c) the merge pod failed (exit $rc): $(cat "$tmp/triage/merge.err")"

"$ff" triage --no-progress -f jsonl "$arch" > "$tmp/triage/single.jsonl" || true
"$ff" triage --no-progress -f markdown "$arch" > "$tmp/triage/single.md" || true
"$ff" triage --no-progress "$arch" > "$tmp/triage/single.txt" 2> /dev/null || true
python3 - "$tmp/triage/single.jsonl" "$res/report.jsonl" "${#examples[@]}" << 'PY' || fail "(c) the merged shards are not one unsharded run (above)"
import json, sys
single, merged = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
rows = lambda lines: sorted(json.dumps(l, sort_keys=True) for l in lines if l["type"] == "job")
summary = lambda lines: [l for l in lines if l["type"] == "summary"]
want = int(sys.argv[3]) + 2
if len(rows(single)) != want:
    sys.exit(f"  the unsharded run has {len(rows(single))} jobs, want {want}")
if not any("error" in l for l in single if l["type"] == "job"):
    sys.exit("  the truncated job did not give an error row")
if rows(single) != rows(merged):
    sys.exit("  job rows differ: " + str(set(rows(single)) ^ set(rows(merged)))[:500])
if summary(single) != summary(merged):
    sys.exit("  summaries differ")
PY
cmp -s "$tmp/triage/single.md" "$res/report.md" || fail "(c) report.md differs from one run's markdown: $(diff "$tmp/triage/single.md" "$res/report.md" | head -n 5)"
cmp -s "$tmp/triage/single.txt" "$tmp/triage/merge.out" || fail "(c) the merge pod's table differs from one run's: $(diff "$tmp/triage/single.txt" "$tmp/triage/merge.out" | head -n 5)"
[ "$failed" = 1 ] || note "(c) ok: $n shards of $(( ${#examples[@]} + 2 )) jobs (an unreadable one too) merge into one run's jsonl, markdown and table"

# A shard whose firstfault dies leaves no shard file and fails its pod (to be retried).
rm -f "$tmp/triage/bin/firstfault"
printf '#!/bin/sh\necho "{\\"schema\\":\\"firstfault.triage-job/v1\\",\\"type\\":\\"job\\"}"\nkill -9 $$\n' > "$tmp/triage/bin/firstfault"
chmod +x "$tmp/triage/bin/firstfault"
rm -f "$res/shard-0.jsonl"
rc=0
pod_env "${shard_env[@]}" JOB_COMPLETION_INDEX=0 sh "$tmp/triage/shard.sh" 2> /dev/null || rc=$?
if [ "$rc" = 0 ] || [ -e "$res/shard-0.jsonl" ]; then
    fail "(c) a killed triage gave pod exit $rc and left $(cd "$res" && echo *)"
fi
# The merge waits for all shards: with one missing it must still be waiting.
rm -f "$res/report.jsonl" "$res/report.md"
rc=0
pod_env "${merge_env[@]}" timeout 3 sh "$tmp/triage/merge.sh" > /dev/null 2>&1 || rc=$?
if [ "$rc" != 124 ] || [ -e "$res/report.md" ]; then
    fail "(c) the merge did not wait for the missing shard (exit $rc)"
fi
[ "$failed" = 1 ] || note "(c) ok: a killed shard fails its pod without a shard file; the merge waits for all $n"

if [ "$failed" = 0 ]; then
    echo "PASS: contrib/kubernetes manifests, diagnose-failed-job.sh, triage recipe"
else
    exit 1
fi
