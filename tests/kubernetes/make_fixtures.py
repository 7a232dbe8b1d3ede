"""Recorded clusters for the fake kubectl, made from testdata/kb example logs.

  make_fixtures.py KB_DIR OUT_DIR

Each OUT_DIR/<case>/ holds what `kubectl` would answer about one failed job: namespace and
selector (the only ones it answers for), pods.json, logs/<pod>.log (lines with the RFC 3339 time
`kubectl logs --timestamps` puts first), logs/<pod>.<container>.previous.log, events.json and
node-events.json. A single-node example log of several local ranks is split into one log per
pod, one process per pod: [defaultR]: local rank R becomes a pod, its global rank renumbered, its
host (NCCL's host:pid:tid) the pod's host name, as inside a pod.
"""
import datetime as dt
import json
import os
import re
import sys

KB, OUT = sys.argv[1], sys.argv[2]
MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}


def line_time(text, year, last):
    """The time a line gives (glog, ISO, syslog), else the previous line's, 1 ms later."""
    m = re.search(r"\[[EWIF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})", text)
    if m:
        mo, d, h, mi, s, us = map(int, m.groups())
        return dt.datetime(year, mo, d, h, mi, s, us)
    m = re.search(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)", text)
    if m:
        return dt.datetime(*map(int, m.groups()))
    m = re.match(r"(\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) ", text)
    if m and m.group(1) in MONTHS:
        return dt.datetime(year, MONTHS[m.group(1)], int(m.group(2)), *map(int, m.groups()[2:]))
    return last + dt.timedelta(milliseconds=1)


def stamp(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def split(kb_log, year, start, pods, ranks, extra=None):
    """pods: local rank -> pod name; ranks: old global rank -> new rank; extra(text) -> pod name
    for an unprefixed line to keep (else dropped: the launcher's lines about all local ranks)."""
    logs, last = {p: [] for p in pods.values()}, start
    renumber = lambda m: m.group(0).replace(m.group(1), str(ranks.get(int(m.group(1)), m.group(1))))
    for raw in open(os.path.join(KB, kb_log), encoding="utf-8").read().splitlines():
        m = re.match(r"\[default(\d+)\]:(.*)$", raw)
        if m:
            pod = pods.get(int(m.group(1)))
            text = m.group(2)
        else:
            pod, text = (extra(raw) if extra else None), raw
        last = line_time(text, year, last)
        if pod is None:
            continue
        text = re.sub(r"\[rank(\d+)\]", renumber, text)
        text = re.sub(r"\bRank (\d+)\b", renumber, text)
        text = re.sub(r"\brank (\d+) nranks \d+", lambda m: renumber(m).split(" nranks")[0] + f" nranks {len(pods)}", text)
        text = re.sub(r"^[\w.-]+:\d+:\d+ \[\d+\]", lambda m: f"{pod}:1:1 [0]", text)  # NCCL host:pid:tid [dev]
        logs[pod].append(f"{stamp(last)} {text}")
    return logs


def pod(name, node, phase="Failed", index=None, hostname=None, created="2026-01-01T00:00:00Z", labels=None,
        container="trainer", exit_code=1, reason="Error", restarts=0, message=None):
    meta = {"name": name, "creationTimestamp": created, "labels": labels or {}, "annotations": {}}
    spec = {"nodeName": node, "containers": [{"name": container, "image": "nvcr.io/nvidia/pytorch:24.10-py3"}]}
    if index is not None:
        meta["annotations"]["batch.kubernetes.io/job-completion-index"] = str(index)
    if hostname:
        spec["hostname"], spec["subdomain"] = hostname, "train"
    term = {"exitCode": exit_code, "reason": reason, "startedAt": created, "finishedAt": created}
    status = {"phase": phase, "startTime": created,
              "containerStatuses": [{"name": container, "restartCount": restarts, "ready": False,
                                     "state": {"terminated": term},
                                     "lastState": {"terminated": term} if restarts else {}}]}
    if message:
        status.update(reason="Terminated", message=message)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def event(kind, name, reason, message, when, type_="Warning", namespace="default"):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"namespace": namespace},
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
            "reason": reason, "message": message, "type": type_, "lastTimestamp": when, "count": 1}


def write(case, namespace, selector, pods, logs, events=(), node_events=(), previous=None):
    d = os.path.join(OUT, case)
    os.makedirs(os.path.join(d, "logs"), exist_ok=True)
    open(os.path.join(d, "namespace"), "w").write(namespace + "\n")
    open(os.path.join(d, "selector"), "w").write(selector + "\n")
    json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, open(os.path.join(d, "pods.json"), "w"), indent=1)
    json.dump({"apiVersion": "v1", "kind": "List", "items": list(events)}, open(os.path.join(d, "events.json"), "w"))
    json.dump({"apiVersion": "v1", "kind": "List", "items": list(node_events)}, open(os.path.join(d, "node-events.json"), "w"))
    for name, lines in logs.items():
        open(os.path.join(d, "logs", name + ".log"), "w").write("".join(line + "\n" for line in lines))
    for name, lines in (previous or {}).items():
        open(os.path.join(d, "logs", name + ".previous.log"), "w").write("".join(line + "\n" for line in lines))


# -- xid: a PyTorchJob (namespace ml); worker-1 (rank 2, node gpu-node-7) loses its GPU.
# testdata/kb/xid-79-gpu-fell-off-bus.log is one node of 8 local ranks; local rank 4 owns the GPU
# at 0000:9a:00 and the kernel's Xid lines (a node-log forwarder or a dmesg dump on failure puts
# them in the pod's log), here with the node's name.
names = {0: "bert-master-0", 1: "bert-worker-0", 4: "bert-worker-1", 2: "bert-worker-2"}
logs = split("xid-79-gpu-fell-off-bus.log", 2025, dt.datetime(2025, 5, 18, 18, 20), names, {0: 0, 1: 1, 4: 2, 2: 3},
             extra=lambda raw: "bert-worker-1" if " kernel: " in raw else None)
logs["bert-worker-1"] = [l.replace("gpu-a17 kernel", "gpu-node-7 kernel") for l in logs["bert-worker-1"]]
nodes = {"bert-master-0": "gpu-node-1", "bert-worker-0": "gpu-node-2", "bert-worker-1": "gpu-node-7", "bert-worker-2": "gpu-node-4"}
lab = lambda n: {"training.kubeflow.org/job-name": "bert", "training.kubeflow.org/replica-type": n.split("-")[1]}
write("xid", "ml", "training.kubeflow.org/job-name=bert",
      [pod(n, nodes[n], labels=lab(n), container="pytorch") for n in ("bert-worker-2", "bert-master-0", "bert-worker-1", "bert-worker-0")],
      logs,
      events=[event("Pod", "bert-worker-1", "BackOff", "Back-off restarting failed container pytorch", "2025-05-18T19:33:00Z", namespace="ml"),
              event("Pod", "other-job-0", "OOMKilling", "not this job's event", "2025-05-18T19:00:00Z", namespace="ml")])

# -- ecc: an Indexed Job (default namespace); completion index 1 (node gpu-node-2) hits an
# uncorrectable ECC error. Its NCCL lines name the pod's host name, train-1, not the node.
# Index 0 restarted once (its previous container's log is collected too); index 3 was retried on
# another node (rank-3.log and rank-3.retry-1.log, by creation time, not by name). Pod names hide
# the index: the annotation tells.
logs = split("cuda-uncorrectable-ecc.log", 2024, dt.datetime(2024, 8, 17, 16, 0),
             {0: "train-1", 1: "train-0", 2: "train-2", 3: "train-3"}, {12: 1, 13: 0, 14: 2, 15: 3})
by_index = {"train-q7x2k": ("train-0", 0, "gpu-node-1"), "train-mm4zd": ("train-1", 1, "gpu-node-2"),
            "train-p9s8w": ("train-2", 2, "gpu-node-3"), "train-z9z9z": ("train-3", 3, "gpu-node-4"),
            "train-c3c3c": ("train-3", 3, "gpu-node-5")}
pods = []
for name, (host, index, node) in by_index.items():
    created = "2024-08-17T15:59:00Z" if name != "train-c3c3c" else "2024-08-17T18:11:00Z"
    pods.append(pod(name, node, index=index, hostname=host, created=created, restarts=1 if index == 0 else 0,
                    labels={"batch.kubernetes.io/job-name": "train"}))
pod_logs = {name: logs[host] for name, (host, _, _) in by_index.items()}
pod_logs["train-c3c3c"] = ["2024-08-17T18:11:30.000000000Z [rank3]: waiting for the rendezvous at train-0.train:29500"]
write("ecc", "", "batch.kubernetes.io/job-name=train", pods[::-1], pod_logs,
      node_events=[event("Node", "gpu-node-2", "NodeNotReady", "Node gpu-node-2 status is now: NodeNotReady", "2024-08-17T18:12:00Z", type_="Normal"),
                   event("Node", "gpu-node-9", "Rebooted", "another job's node", "2024-08-17T18:00:00Z")],
      previous={"train-q7x2k.trainer": ["2024-08-17T15:58:00.000000000Z [rank0]: starting attempt 0"]})

# -- oom: an Indexed Job (namespace ml) whose rank 3 runs out of GPU memory: action stop.
# testdata/kb/cuda-oom.log prefixes each rank's lines with [rankN]: pod N gets them; the
# unprefixed lines (DeepSpeed's start, NCCL's, torchrun's) go to pod 0.
logs, last = {i: [] for i in range(4)}, dt.datetime(2024, 11, 20, 14, 30)
for raw in open(os.path.join(KB, "cuda-oom.log"), encoding="utf-8").read().splitlines():
    last = line_time(raw, 2024, last)
    m = re.search(r"\[rank(\d+)\]", raw)
    logs[int(m.group(1)) if m else 0].append(f"{stamp(last)} {raw}")
write("oom", "ml", "batch.kubernetes.io/job-name=llm",
      [pod(f"llm-{i}-x{i}z", f"gpu-node-{i + 1}", index=i, created="2024-11-20T14:29:00Z", labels={"batch.kubernetes.io/job-name": "llm"}) for i in range(4)],
      {f"llm-{i}-x{i}z": logs[i] for i in range(4)})

# -- preempted: a PyTorchJob whose worker-1 was on a spot node that was reclaimed: action restart.
# testdata/kb/k8s-node-preempted.log: worker-0's log as kubectl printed it, worker-1's status.
kb = open(os.path.join(KB, "k8s-node-preempted.log"), encoding="utf-8").read().split("\n== ")
worker0 = [l for l in kb[0].splitlines()[1:] if l.strip()]
master = ["2025-09-30T11:02:08.117021Z I0930 11:02:08.117000 1 torch/distributed/launcher/api.py:188] Starting elastic_operator with launch configs:",
          "2025-09-30T12:33:40.771904Z [rank0]:[E930 12:33:40.771802113 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5"]
lab = lambda n: {"training.kubeflow.org/job-name": "llama-ft"}
write("preempted", "training", "training.kubeflow.org/job-name=llama-ft",
      [pod("llama-ft-master-0", "gke-a3-spot-pool-0c1d", labels=lab(0), container="pytorch"),
       pod("llama-ft-worker-0", "gke-a3-spot-pool-0c1d", labels=lab(0), container="pytorch"),
       pod("llama-ft-worker-1", "gke-a3-spot-pool-77af", labels=lab(0), container="pytorch", exit_code=143,
           message="Pod was terminated in response to imminent node shutdown.")],
      {"llama-ft-master-0": master, "llama-ft-worker-0": worker0},
      events=[event("Pod", "llama-ft-worker-1", "Killing", "Stopping container pytorch", "2025-09-30T12:29:00Z", "Normal", "training")])

# -- odd: an error nobody has seen: investigate.
write("odd", "", "batch.kubernetes.io/job-name=odd",
      [pod(f"odd-{i}-k{i}k", "gpu-node-1", index=i, labels={"batch.kubernetes.io/job-name": "odd"}) for i in range(2)],
      {"odd-0-k0k": ["2026-02-01T10:00:00.000000000Z step 10 loss 2.5", "2026-02-01T10:00:01.000000000Z FATAL: frobnicator jammed in the flux capacitor (code 0x7e)"],
       "odd-1-k1k": ["2026-02-01T10:00:00.000000000Z step 10 loss 2.5"]})
