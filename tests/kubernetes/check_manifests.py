"""Structural check of contrib/kubernetes/*.yaml without an API server.

  check FILE...            every document against the schema of its kind, then the recipe checks
  selftest DIR             broken copies of DIR's manifests must each be rejected
  compare FILE JSON        kubectl's reading of FILE (kubectl label --local -o json) == PyYAML's
  triage FILE OUT MOUNT=DIR...  the triage recipe's shell scripts as a pod runs them, mounts made local

The schema is JSON-Schema-like (type, const, enum, pattern, minimum, maximum, minLength,
maxLength, minItems, maxItems, uniqueItems, required, properties, additionalProperties, items)
plus `check`, a function for rules between fields. It lists the fields these manifests use and
a few common ones, and rejects unknown fields: a typo (podFailurePolicies, completionmode) is
silently dropped by an API server that does not validate strictly.
"""
import copy
import json
import re
import sys

import yaml

# ---------------------------------------------------------------------------------- loading


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; a manifest with one is a mistake."""


def _mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.load_all(f, Loader=UniqueKeyLoader) if d is not None]


# ---------------------------------------------------------------------------------- validator

TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def validate(v, s, path="$"):
    types = s.get("type")
    if types:
        types = types if isinstance(types, list) else [types]
        if not any(TYPES[t](v) for t in types):
            return [f"{path}: expected {' or '.join(types)}, got {type(v).__name__} {v!r}"]
    errs = []
    if "const" in s and v != s["const"]:
        errs.append(f"{path}: must be {s['const']!r}, not {v!r}")
    if "enum" in s and v not in s["enum"]:
        errs.append(f"{path}: {v!r} is not one of {s['enum']}")
    if isinstance(v, str):
        if "pattern" in s and not re.search(s["pattern"], v):
            errs.append(f"{path}: {v!r} does not match {s['pattern']}")
        if not s.get("minLength", 0) <= len(v) <= s.get("maxLength", 1 << 30):
            errs.append(f"{path}: length {len(v)} out of bounds")
    if TYPES["integer"](v):
        if v < s.get("minimum", -(1 << 63)) or v > s.get("maximum", 1 << 63):
            errs.append(f"{path}: {v} is out of [{s.get('minimum', '')}, {s.get('maximum', '')}]")
    if isinstance(v, list):
        if not s.get("minItems", 0) <= len(v) <= s.get("maxItems", 1 << 30):
            errs.append(f"{path}: {len(v)} items, want {s.get('minItems', 0)}..{s.get('maxItems', 'any')}")
        if s.get("uniqueItems") and len({json.dumps(x, sort_keys=True) for x in v}) != len(v):
            errs.append(f"{path}: items repeat")
        for i, x in enumerate(v):
            errs += validate(x, s.get("items", {}), f"{path}[{i}]")
    if isinstance(v, dict):
        for r in s.get("required", []):
            if r not in v:
                errs.append(f"{path}: {r} is required")
        props = s.get("properties", {})
        extra = s.get("additionalProperties", "properties" not in s)
        for k, x in v.items():
            if k in props:
                errs += validate(x, props[k], f"{path}.{k}")
            elif extra is False:
                errs.append(f"{path}: unknown field {k!r}")
            elif isinstance(extra, dict):
                errs += validate(x, extra, f"{path}.{k}")
    if "check" in s and not errs:
        errs += [f"{path}: {m}" for m in s["check"](v)]
    return errs


def S(**kw):
    return dict(type="string", **kw)


def I(**kw):
    return dict(type="integer", **kw)


def A(items, **kw):
    return dict(type="array", items=items, **kw)


def O(props, required=(), check=None):
    s = dict(type="object", properties=props, required=list(required))
    if check:
        s["check"] = check
    return s


B = dict(type="boolean")
ANY_OBJECT = dict(type="object")
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
STR_MAP = dict(type="object", additionalProperties=S())
LABELS = dict(type="object", additionalProperties=S(pattern=LABEL_VALUE, maxLength=63))
QUANTITIES = dict(type="object", additionalProperties={"type": ["string", "integer"]})

# ---------------------------------------------------------------------------------- rules between fields


def runs_something(c):
    return [] if c.get("command") or c.get("args") else [f"container {c['name']} runs nothing (no command or args)"]


def pod_checks(spec):
    errs = []
    containers = spec["containers"] + spec.get("initContainers", [])
    names = [c["name"] for c in containers]
    if len(set(names)) != len(names):
        errs.append(f"container names repeat: {names}")
    volumes = {v["name"] for v in spec.get("volumes", [])}
    for c in containers:
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                errs.append(f"container {c['name']} mounts {m['name']}, which is not a volume of the pod")
    return errs


def one_volume_source(v):
    sources = [k for k in v if k != "name"]
    return [] if len(sources) == 1 else [f"volume {v['name']} needs exactly one source, has {sources}"]


def exit_code_checks(e):
    errs, values = [], e["values"]
    if values != sorted(set(values)):
        errs.append(f"values {values} must be increasing without repeats (the API server rejects them)")
    if e["operator"] == "In" and 0 in values:
        errs.append("0 cannot be used with operator In (a pod that exits 0 succeeded)")
    if any(not 0 <= x <= 255 for x in values):
        errs.append(f"values {values}: an exit code is 0..255")
    return errs


def one_matcher(rule):
    n = ("onExitCodes" in rule) + ("onPodConditions" in rule)
    return [] if n == 1 else [f"a rule needs exactly one of onExitCodes, onPodConditions (has {n})"]


def job_checks(spec):
    errs = []
    pod = spec["template"]["spec"]
    policy = spec.get("podFailurePolicy")
    restart = pod.get("restartPolicy")
    if restart not in ("Never", "OnFailure"):
        errs.append(f"a Job's pods need restartPolicy Never or OnFailure, not {restart!r}")
    if policy and restart != "Never":
        errs.append(f"podFailurePolicy needs restartPolicy Never, not {restart!r}")
    names = {c["name"] for c in pod["containers"] + pod.get("initContainers", [])}
    for i, rule in enumerate((policy or {}).get("rules", [])):
        name = (rule.get("onExitCodes") or {}).get("containerName")
        if name is not None and name not in names:
            errs.append(f"podFailurePolicy rule {i} names container {name!r}; the pod has {sorted(names)}")
        if rule["action"] == "FailIndex" and "backoffLimitPerIndex" not in spec:
            errs.append(f"podFailurePolicy rule {i}: FailIndex needs backoffLimitPerIndex")
    if "backoffLimitPerIndex" in spec and spec.get("completionMode") != "Indexed":
        errs.append("backoffLimitPerIndex needs completionMode Indexed")
    if spec.get("completionMode") == "Indexed" and "completions" not in spec:
        errs.append("an Indexed Job needs completions")
    return errs


def jobset_checks(spec):
    errs = []
    jobs = {r["name"]: r for r in spec["replicatedJobs"]}
    if len(jobs) != len(spec["replicatedJobs"]):
        errs.append("replicatedJobs names repeat")
    rules = (spec.get("failurePolicy") or {}).get("rules", [])
    names = [r["name"] for r in rules if "name" in r]
    if len(set(names)) != len(names):
        errs.append(f"failurePolicy rule names repeat: {names}")
    for r in rules:
        targets = r.get("targetReplicatedJobs") or list(jobs)
        for t in targets:
            if t not in jobs:
                errs.append(f"failurePolicy rule {r.get('name')} targets {t!r}, not a replicatedJob")
        for p in r.get("onJobFailureMessagePatterns", []):
            try:
                re.compile(p)
            except re.error as e:
                errs.append(f"failurePolicy rule {r.get('name')}: pattern {p!r}: {e}")
                continue
            # "... matching FailJob rule at index N" is the Job controller's message: the child
            # Jobs' podFailurePolicy rule N must exist and be FailJob.
            m = re.search(r"matching (\w+) rule at index (\d+)", p)
            if not m:
                continue
            for t in targets:
                if t not in jobs:
                    continue
                pfp = jobs[t]["template"]["spec"].get("podFailurePolicy", {}).get("rules", [])
                n = int(m.group(2))
                if n >= len(pfp) or pfp[n]["action"] != m.group(1):
                    errs.append(f"failurePolicy rule {r.get('name')} expects a {m.group(1)} rule at index {n} in "
                                f"{t}'s podFailurePolicy; it has {[x['action'] for x in pfp]}")
    return errs


# ---------------------------------------------------------------------------------- schemas

METADATA = O({"name": S(pattern=DNS_SUBDOMAIN, maxLength=253), "namespace": S(pattern=DNS_LABEL),
              "labels": LABELS, "annotations": STR_MAP}, required=["name"])
TEMPLATE_METADATA = O({"labels": LABELS, "annotations": STR_MAP})
ENV_VAR = O({"name": S(pattern=r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"), "value": S(), "valueFrom": ANY_OBJECT}, required=["name"])
CONTAINER = O({
    "name": S(pattern=DNS_LABEL),
    "image": S(minLength=1),
    "command": A(S(), minItems=1),
    "args": A(S()),
    "env": A(ENV_VAR),
    "workingDir": S(),
    "imagePullPolicy": S(enum=["Always", "IfNotPresent", "Never"]),
    "resources": O({"limits": QUANTITIES, "requests": QUANTITIES}),
    "volumeMounts": A(O({"name": S(pattern=DNS_LABEL), "mountPath": S(pattern=r"^/"), "readOnly": B,
                         "subPath": S()}, required=["name", "mountPath"])),
    "ports": A(O({"name": S(pattern=DNS_LABEL, maxLength=15), "containerPort": I(minimum=1, maximum=65535),
                  "protocol": S(enum=["TCP", "UDP", "SCTP"])}, required=["containerPort"])),
    "securityContext": ANY_OBJECT,
}, required=["name", "image"], check=runs_something)
VOLUME = O({
    "name": S(pattern=DNS_LABEL),
    "persistentVolumeClaim": O({"claimName": S(pattern=DNS_SUBDOMAIN), "readOnly": B}, required=["claimName"]),
    "emptyDir": ANY_OBJECT, "configMap": ANY_OBJECT, "secret": ANY_OBJECT, "hostPath": ANY_OBJECT,
}, required=["name"], check=one_volume_source)
POD_SPEC = O({
    "containers": A(CONTAINER, minItems=1),
    "initContainers": A(CONTAINER),
    "restartPolicy": S(enum=["Always", "OnFailure", "Never"]),
    "subdomain": S(pattern=DNS_LABEL),
    "hostname": S(pattern=DNS_LABEL),
    "volumes": A(VOLUME),
    "nodeSelector": STR_MAP,
    "tolerations": A(ANY_OBJECT),
    "affinity": ANY_OBJECT,
    "serviceAccountName": S(pattern=DNS_SUBDOMAIN),
    "terminationGracePeriodSeconds": I(minimum=0),
    "priorityClassName": S(),
    "schedulerName": S(),
}, required=["containers"], check=pod_checks)
POD_FAILURE_RULE = O({
    "action": S(enum=["FailJob", "Ignore", "Count", "FailIndex"]),
    "onExitCodes": O({"containerName": S(pattern=DNS_LABEL), "operator": S(enum=["In", "NotIn"]),
                      "values": A(I(), minItems=1, maxItems=255)},
                     required=["operator", "values"], check=exit_code_checks),
    "onPodConditions": A(O({"type": S(minLength=1), "status": S(enum=["True", "False", "Unknown"])},
                           required=["type", "status"]), minItems=1),
}, required=["action"], check=one_matcher)
JOB_SPEC = O({
    "completionMode": S(enum=["NonIndexed", "Indexed"]),
    "completions": I(minimum=0),
    "parallelism": I(minimum=0),
    "backoffLimit": I(minimum=0),
    "backoffLimitPerIndex": I(minimum=0),
    "maxFailedIndexes": I(minimum=0),
    "activeDeadlineSeconds": I(minimum=1),
    "ttlSecondsAfterFinished": I(minimum=0),
    "suspend": B,
    "podReplacementPolicy": S(enum=["TerminatingOrFailed", "Failed"]),
    "podFailurePolicy": O({"rules": A(POD_FAILURE_RULE, minItems=1, maxItems=20)}, required=["rules"]),
    "template": O({"metadata": TEMPLATE_METADATA, "spec": POD_SPEC}, required=["spec"]),
}, required=["template"], check=job_checks)


def kind_schema(api_version, kind, spec, spec_required=True):
    return O({"apiVersion": S(const=api_version), "kind": S(const=kind), "metadata": METADATA, "spec": spec},
             required=["apiVersion", "kind", "metadata"] + (["spec"] if spec_required else []))


JOB_FAILURE_REASONS = ["BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes", "MaxFailedIndexesExceeded",
                       "PodFailurePolicy"]
SCHEMAS = {
    "Job": kind_schema("batch/v1", "Job", JOB_SPEC),
    "Service": kind_schema("v1", "Service", O({
        "clusterIP": S(), "type": S(enum=["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]),
        "selector": LABELS, "publishNotReadyAddresses": B,
        "ports": A(O({"name": S(pattern=DNS_LABEL), "port": I(minimum=1, maximum=65535),
                      "targetPort": {"type": ["integer", "string"]}, "protocol": S(enum=["TCP", "UDP", "SCTP"])},
                     required=["port"]), minItems=1),
    }, required=["selector", "ports"])),
    "JobSet": kind_schema("jobset.x-k8s.io/v1alpha2", "JobSet", O({
        "replicatedJobs": A(O({
            "name": S(pattern=DNS_LABEL), "groupName": S(), "replicas": I(minimum=1),
            "template": O({"metadata": TEMPLATE_METADATA, "spec": JOB_SPEC}, required=["spec"]),
            "dependsOn": A(ANY_OBJECT),
        }, required=["name", "template"]), minItems=1),
        "network": O({"enableDNSHostnames": B, "subdomain": S(pattern=DNS_LABEL), "publishNotReadyAddresses": B}),
        "failurePolicy": O({
            "maxRestarts": I(minimum=0),
            "restartStrategy": S(enum=["Recreate", "BlockingRecreate", "InPlaceRestart"]),
            "rules": A(O({
                "name": S(pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
                "action": S(enum=["FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob",
                                  "RestartJobAndIgnoreMaxRestarts"]),
                "onJobFailureReasons": A(S(enum=JOB_FAILURE_REASONS), uniqueItems=True),
                "onJobFailureMessagePatterns": A(S(minLength=1), uniqueItems=True),
                "targetReplicatedJobs": A(S(pattern=DNS_LABEL)),
            }, required=["name", "action"])),
        }),
        "successPolicy": O({"operator": S(enum=["All", "Any"]), "targetReplicatedJobs": A(S())}, required=["operator"]),
        "suspend": B, "ttlSecondsAfterFinished": I(minimum=0), "coordinator": ANY_OBJECT,
    }, required=["replicatedJobs"], check=jobset_checks)),
}


def check_schema(doc, where):
    if not isinstance(doc, dict):
        return [f"{where}: a document must be a mapping"]
    kind = doc.get("kind")
    if kind not in SCHEMAS:
        return [f"{where}: kind {kind!r} is not one the contrib manifests use (add its schema to the test)"]
    return [f"{where} ({kind} {(doc.get('metadata') or {}).get('name')}): {e}" for e in validate(doc, SCHEMAS[kind])]


# ---------------------------------------------------------------------------------- recipe checks
# What the schema cannot know: that the pieces of one file fit together.


def container_text(c):
    return " ".join(c.get("command", []) + c.get("args", []))


def flag(text, name):
    m = re.search(r"--%s[= ](\"?)([^\s\"]+)\1" % re.escape(name), text)
    return m.group(2) if m else None


def env_of(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def pod_labels(job_name, template):
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.update({"batch.kubernetes.io/job-name": job_name, "job-name": job_name})
    return labels


def check_torchrun(where, spec, nodes, master, services, job_name):
    """torchrun's --nnodes is the number of pods, its --node-rank the completion index, and
    --master-addr the DNS name of pod 0."""
    errs = []
    pod = spec["template"]["spec"]
    for c in pod["containers"]:
        text = container_text(c)
        if "torchrun" not in text:
            continue
        if flag(text, "nnodes") != str(nodes):
            errs.append(f"{where}: torchrun --nnodes={flag(text, 'nnodes')}, but the job has {nodes} pods")
        if flag(text, "node-rank") != "$JOB_COMPLETION_INDEX":
            errs.append(f"{where}: torchrun --node-rank must be the completion index ($JOB_COMPLETION_INDEX)")
        if flag(text, "master-addr") != master:
            errs.append(f"{where}: torchrun --master-addr={flag(text, 'master-addr')}, pod 0 is {master}")
        for svc in services:
            sel = svc["spec"]["selector"]
            labels = pod_labels(job_name, spec["template"])
            if any(labels.get(k) != v for k, v in sel.items()):
                errs.append(f"{where}: Service {svc['metadata']['name']} selects {sel}, which the pods' labels do not match")
            ports = [str(p["port"]) for p in svc["spec"]["ports"]]
            if flag(text, "master-port") not in ports:
                errs.append(f"{where}: torchrun --master-port={flag(text, 'master-port')} is not a port of Service "
                            f"{svc['metadata']['name']} ({ports})")
    return errs


def check_triage(where, docs):
    errs = []
    jobs = [d for d in docs if d.get("kind") == "Job" and "firstfault triage" in
            container_text(d["spec"]["template"]["spec"]["containers"][0])]
    shards = [d for d in jobs if d["spec"].get("completionMode") == "Indexed"]
    merges = [d for d in jobs if "--merge" in container_text(d["spec"]["template"]["spec"]["containers"][0])]
    if len(shards) != 1 or len(merges) != 1:
        return [f"{where}: want one Indexed triage Job and one merge Job, found {len(shards)} and {len(merges)}"]
    spec = shards[0]["spec"]
    n = spec["completions"]
    for d in (shards[0], merges[0]):
        c = d["spec"]["template"]["spec"]["containers"][0]
        if env_of(c).get("SHARDS") != str(n):
            errs.append(f"{where}: Job {d['metadata']['name']}: SHARDS={env_of(c).get('SHARDS')}, completions is {n}")
    if spec.get("parallelism", 1) > n:
        errs.append(f"{where}: parallelism {spec.get('parallelism')} > completions {n}")
    text = container_text(spec["template"]["spec"]["containers"][0])
    if '--shard "$((JOB_COMPLETION_INDEX + 1))/$SHARDS"' not in text:
        errs.append(f"{where}: the shard Job must run --shard \"$((JOB_COMPLETION_INDEX + 1))/$SHARDS\"")

    def results_claim(d):
        pod = d["spec"]["template"]["spec"]
        mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0].get("volumeMounts", [])}
        claims = {v["name"]: (v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.get("volumes", [])}
        return {(mounts[k], claims.get(k)) for k in mounts if mounts[k] == "/results"}
    if results_claim(shards[0]) != results_claim(merges[0]) or not results_claim(merges[0]):
        errs.append(f"{where}: the shard and merge Jobs must mount the same claim at /results")
    return errs


def recipe_checks(path, docs):
    where = path.rsplit("/", 1)[-1]
    errs = []
    services = [d for d in docs if d.get("kind") == "Service"]
    for d in docs:
        name = d["metadata"]["name"]
        if d.get("kind") == "Job" and "torchrun" in container_text(d["spec"]["template"]["spec"]["containers"][0]):
            spec = d["spec"]
            sub = spec["template"]["spec"].get("subdomain")
            mine = [s for s in services if s["metadata"]["name"] == sub]
            if not mine:
                errs.append(f"{where}: Job {name} has subdomain {sub!r} but no headless Service of that name")
            elif mine[0]["spec"].get("clusterIP") != "None":
                errs.append(f"{where}: Service {sub} must be headless (clusterIP: None)")
            errs += check_torchrun(where, spec, spec.get("completions"), f"{name}-0.{sub}", mine, name)
        if d.get("kind") == "JobSet":
            sub = (d["spec"].get("network") or {}).get("subdomain") or name
            for rj in d["spec"]["replicatedJobs"]:
                spec = rj["template"]["spec"]
                nodes = spec.get("completions", 1) * rj.get("replicas", 1)
                errs += check_torchrun(where, spec, nodes, f"{name}-{rj['name']}-0-0.{sub}", [], f"{name}-{rj['name']}-0")
    if any("firstfault triage" in json.dumps(d) for d in docs):
        errs += check_triage(where, docs)
    return errs


def check_docs(path, docs):
    errs = []
    for i, d in enumerate(docs):
        errs += check_schema(d, f"{path.rsplit('/', 1)[-1]} document {i + 1}")
    return errs or recipe_checks(path, docs)


def cmd_check(paths):
    bad = 0
    for p in paths:
        try:
            docs = load(p)
            errs = check_docs(p, docs) if docs else [f"{p}: no document"]
        except (OSError, yaml.YAMLError) as e:
            errs = [f"{p}: {e}"]
        for e in errs:
            print(f"  {e}")
        if errs:
            bad += 1
        else:
            print(f"  ok {p.rsplit('/', 1)[-1]}: " + ", ".join(f"{d['kind']} {d['metadata']['name']}" for d in docs))
    return 1 if bad else 0


# ---------------------------------------------------------------------------------- self-test


def find(docs, kind, pred=lambda d: True):
    return next(d for d in docs if d.get("kind") == kind and pred(d))


def job(docs):
    return find(docs, "Job")["spec"]


def pod(docs):
    return job(docs)["template"]["spec"]


def rules(docs):
    return job(docs)["podFailurePolicy"]["rules"]


def exit_rule(docs):
    return next(r for r in rules(docs) if "onExitCodes" in r)


def jobset(docs):
    return find(docs, "JobSet")["spec"]


def set_(obj, key, value):
    obj[key] = value


# (file, what is broken, how, a phrase the error must contain)
MUTATIONS = [
    ("job.yaml", "restartPolicy OnFailure with a podFailurePolicy", lambda d: set_(pod(d), "restartPolicy", "OnFailure"), "restartPolicy Never"),
    ("job.yaml", "an unknown operator", lambda d: set_(exit_rule(d)["onExitCodes"], "operator", "Within"), "'Within' is not one of"),
    ("job.yaml", "exit codes as strings", lambda d: set_(exit_rule(d)["onExitCodes"], "values", ["2"]), "expected integer"),
    ("job.yaml", "exit codes out of order", lambda d: exit_rule(d)["onExitCodes"]["values"].reverse(), "increasing"),
    ("job.yaml", "exit code 0 with In", lambda d: exit_rule(d)["onExitCodes"]["values"].insert(0, 0), "0 cannot be used"),
    ("job.yaml", "a rule naming no container of the pod", lambda d: set_(exit_rule(d)["onExitCodes"], "containerName", "nosuch"), "names container 'nosuch'"),
    ("job.yaml", "a rule with both matchers", lambda d: set_(exit_rule(d), "onPodConditions", [{"type": "DisruptionTarget", "status": "True"}]), "exactly one of"),
    ("job.yaml", "a pod condition without status", lambda d: rules(d)[0]["onPodConditions"][0].pop("status"), "status is required"),
    ("job.yaml", "an unknown action", lambda d: set_(rules(d)[0], "action", "Retry"), "'Retry' is not one of"),
    ("job.yaml", "FailIndex without backoffLimitPerIndex", lambda d: set_(exit_rule(d), "action", "FailIndex"), "needs backoffLimitPerIndex"),
    ("job.yaml", "completionMode in lower case", lambda d: set_(job(d), "completionMode", "indexed"), "'indexed' is not one of"),
    ("job.yaml", "a misspelt field", lambda d: set_(job(d), "podFailurePolicies", job(d).pop("podFailurePolicy")), "unknown field 'podFailurePolicies'"),
    ("job.yaml", "a container without an image", lambda d: pod(d)["containers"][0].pop("image"), "image is required"),
    ("job.yaml", "a container that runs nothing", lambda d: [pod(d)["containers"][0].pop(k) for k in ("command", "args")], "runs nothing"),
    ("job.yaml", "a wrong apiVersion", lambda d: set_(find(d, "Job"), "apiVersion", "batch/v2"), "must be 'batch/v1'"),
    ("job.yaml", "a negative backoffLimit", lambda d: set_(job(d), "backoffLimit", -1), "out of ["),
    ("job.yaml", "a name in upper case", lambda d: set_(find(d, "Job")["metadata"], "name", "Train"), "does not match"),
    ("job.yaml", "torchrun --nnodes other than completions", lambda d: set_(job(d), "completions", 3), "--nnodes=4, but the job has 3 pods"),
    ("job.yaml", "a Service selecting other pods", lambda d: set_(find(d, "Service")["spec"], "selector", {"batch.kubernetes.io/job-name": "other"}), "do not match"),
    ("jobset.yaml", "a replicatedJob without a template", lambda d: jobset(d)["replicatedJobs"][0].pop("template"), "template is required"),
    ("jobset.yaml", "an unknown JobSet action", lambda d: set_(jobset(d)["failurePolicy"]["rules"][0], "action", "RestartEverything"), "is not one of"),
    ("jobset.yaml", "a rule targeting no replicatedJob", lambda d: set_(jobset(d)["failurePolicy"]["rules"][0], "targetReplicatedJobs", ["nosuch"]), "not a replicatedJob"),
    ("jobset.yaml", "a message pattern for a rule the child Job lacks", lambda d: set_(jobset(d)["failurePolicy"]["rules"][1], "onJobFailureMessagePatterns", ["matching FailJob rule at index 2$"]), "expects a FailJob rule at index 2"),
    ("jobset.yaml", "an unknown Job failure reason", lambda d: set_(jobset(d)["failurePolicy"]["rules"][0], "onJobFailureReasons", ["PodFailed"]), "'PodFailed' is not one of"),
    ("jobset.yaml", "a master address that is not pod 0", lambda d: set_(jobset(d)["network"], "subdomain", "other"), "pod 0 is train-workers-0-0.other"),
    ("triage-indexed-job.yaml", "SHARDS other than completions", lambda d: set_(find(d, "Job")["spec"], "completions", 7), "completions is 7"),
    ("triage-indexed-job.yaml", "a merge reading another volume", lambda d: set_(find(d, "Job", lambda x: "merge" in x["metadata"]["name"])["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"], "claimName", "other"), "same claim"),
]


def cmd_selftest(directory):
    failures = 0
    originals = {}
    for name in sorted({m[0] for m in MUTATIONS}):
        originals[name] = load(f"{directory}/{name}")
        errs = check_docs(name, originals[name])
        if errs:
            print(f"  the unbroken {name} is rejected: {errs}")
            failures += 1
    for name, what, mutate, phrase in MUTATIONS:
        docs = copy.deepcopy(originals[name])
        mutate(docs)
        errs = check_docs(name, docs)
        if not any(phrase in e for e in errs):
            print(f"  {name} with {what}: want an error saying {phrase!r}, got {errs or 'none'}")
            failures += 1
    print(f"  {len(MUTATIONS) - failures} of {len(MUTATIONS)} broken copies rejected for the right reason")
    return 1 if failures else 0


# ---------------------------------------------------------------------------------- kubectl's reading


def cmd_compare(path, kubectl_json):
    text = open(kubectl_json, encoding="utf-8").read()
    dec, objs, i = json.JSONDecoder(), [], 0
    while text[i:].strip():
        i += len(text[i:]) - len(text[i:].lstrip())
        obj, n = dec.raw_decode(text, i)
        objs.append(obj)
        i = n
    for o in objs:  # undo the label that made kubectl print them
        labels = o["metadata"].get("labels", {})
        labels.pop("firstfault-test", None)
        if not labels:
            o["metadata"].pop("labels", None)
    mine = load(path)
    if objs != mine:
        print(f"  kubectl and PyYAML read {path} differently:\n    kubectl: {json.dumps(objs)[:600]}\n    PyYAML:  {json.dumps(mine)[:600]}")
        return 1
    return 0


# ---------------------------------------------------------------------------------- the triage recipe


def k8s_expand(text, env):
    """Kubernetes' $(VAR) expansion of command and args (third_party/forked/golang/expansion):
    $$ is a literal $, $(NAME) the variable when the container defines it, anything else stays."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                j = text.find(")", i + 2)
                if j != -1:
                    name = text[i + 2:j]
                    out.append(env[name] if name in env else text[i:j + 1])
                    i = j + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


def cmd_triage(path, outdir, *mounts):
    """Write the recipe's two shell scripts as a pod would run them (Kubernetes' expansion
    done) with each MOUNT=DIR's mount path replaced by a local directory: OUTDIR/shard.sh,
    OUTDIR/merge.sh, their variables OUTDIR/shard.env, OUTDIR/merge.env (NAME=VALUE lines) and
    the number of shards, OUTDIR/completions."""
    local = dict(m.split("=", 1) for m in mounts)
    for d in load(path):
        spec = d["spec"]
        c = spec["template"]["spec"]["containers"][0]
        if c.get("command") != ["/bin/sh", "-c"] or len(c.get("args", [])) != 1:
            raise SystemExit(f"{path}: Job {d['metadata']['name']}: want command [/bin/sh, -c] and one script in args")
        env = env_of(c)
        script = k8s_expand(c["args"][0], env)
        for m in c.get("volumeMounts", []):
            if m["mountPath"] not in local:
                raise SystemExit(f"{path}: no local directory given for the mount {m['mountPath']}")
            script = re.sub(r"(?<![\w/.-])%s(?=/|\s|$|\")" % re.escape(m["mountPath"]), lambda _: local[m["mountPath"]], script)
        role = "shard" if spec.get("completionMode") == "Indexed" else "merge"
        with open(f"{outdir}/{role}.sh", "w") as f:
            f.write(script)
        with open(f"{outdir}/{role}.env", "w") as f:
            f.write("".join(f"{k}={v}\n" for k, v in env.items()))
        if role == "shard":
            with open(f"{outdir}/completions", "w") as f:
                f.write(f"{spec['completions']}\n")
    return 0


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    sys.exit({"check": lambda: cmd_check(args), "selftest": lambda: cmd_selftest(*args),
              "compare": lambda: cmd_compare(*args), "triage": lambda: cmd_triage(*args)}[cmd]())
