#!/usr/bin/env python3
"""Validates real outputs of every JSON-printing subcommand against docs/schema/*.schema.json.

Usage: validate_outputs.py BINARY REPO_ROOT

Runs `diagnose --format json` on every example log, the real logs and the healthy logs (and on
stdin, where times carry no date), `timeline --format json`, `triage --format jsonl` (with a job
that cannot be read), `watch --format jsonl` and `explain --format json` for every entry, and
checks each document against its schema: the schema files stay true to what the tool prints,
and keys keep their documented reading order.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

from jsonschema import Draft202012Validator

BIN, ROOT = sys.argv[1], sys.argv[2]
SCHEMA_DIR = os.path.join(ROOT, "docs", "schema")
ENV = dict(os.environ, TZ="UTC", LC_ALL="C", NO_COLOR="1")
ENV.pop("GITHUB_STEP_SUMMARY", None)

files = {}
for path in sorted(glob.glob(os.path.join(SCHEMA_DIR, "*.schema.json"))):
    with open(path) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    files[os.path.basename(path)] = schema


def resolve(node, file):
    """Replaces every $ref ("#/ptr" or "other.schema.json#/ptr") by what it points at, so that the
    check needs no reference resolver (their APIs differ between jsonschema 4.10 and later)."""
    if isinstance(node, list):
        return [resolve(x, file) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target, _, pointer = node["$ref"].partition("#")
        target = target or file
        doc = files[target]
        for part in filter(None, pointer.split("/")):
            doc = doc[part]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        inner = resolve(doc, target)
        inner = {k: v for k, v in inner.items() if k not in ("$id", "$schema", "$defs")}
        return {"allOf": [inner, resolve(rest, file)]} if rest else inner
    return {k: resolve(v, file) for k, v in node.items() if k != "$defs"}


validators = {}
for name, schema in files.items():
    validators[schema["title"]] = Draft202012Validator(resolve(schema, name))

failures, checked = [], {}


def check(doc, what, first_keys):
    name = doc.get("schema") if isinstance(doc, dict) else None
    if name not in validators:
        failures.append(f"{what}: no schema file for schema={name!r}")
        return
    checked[name] = checked.get(name, 0) + 1
    errors = sorted(validators[name].iter_errors(doc), key=lambda e: list(e.path))
    for e in errors[:3]:
        failures.append(f"{what}: {name}: at /{'/'.join(map(str, e.path))}: {e.message[:300]}")
    if list(doc)[: len(first_keys)] != first_keys:
        failures.append(f"{what}: keys start {list(doc)[:len(first_keys)]}, expected {first_keys}")


def run(args, stdin=None):
    with open(stdin or os.devnull, "rb") as inp:
        p = subprocess.run([BIN] + args, stdin=inp, capture_output=True, env=ENV, cwd=ROOT, timeout=120)
    return p.stdout.decode("utf-8")


def diagnose(path, stdin=False):
    out = run(["diagnose", "--format", "json", "-" if stdin else path], stdin=path if stdin else None)
    if out.strip():
        check(json.loads(out), path, ["schema", "verdict", "diagnosis", "action"])


logs = sorted(glob.glob(os.path.join(ROOT, "testdata", "kb", "*.log")))
logs += sorted(glob.glob(os.path.join(ROOT, "testdata", "real", "*", "job.log")))[::8]  # an eighth: CI time
logs += sorted(glob.glob(os.path.join(ROOT, "testdata", "healthy", "**", "*.log"), recursive=True))
for path in logs:
    diagnose(os.path.relpath(path, ROOT))
for path in logs[:: max(1, len(logs) // 40)]:  # year-less times on stdin: time of day only
    diagnose(os.path.relpath(path, ROOT), stdin=True)

for path in logs[:: max(1, len(logs) // 40)]:
    check(json.loads(run(["timeline", "--format", "json", os.path.relpath(path, ROOT)])), "timeline " + path,
          ["schema", "initiating_rank"])

with tempfile.TemporaryDirectory() as tmp:
    for path in logs[:: max(1, len(logs) // 60)]:  # one job per folder
        job = os.path.join(tmp, os.path.basename(os.path.dirname(path)) + "-" + os.path.basename(path))
        os.makedirs(job)
        shutil.copy(path, job)
    os.makedirs(os.path.join(tmp, "unreadable"))
    with open(os.path.join(tmp, "unreadable", "job.log.gz"), "wb") as f:
        f.write(b"\x1f\x8b\x08\x00broken")  # a gzip header and nothing after it
    lines = run(["triage", "--format", "jsonl", "--no-progress", "--job-depth", "1", tmp]).splitlines()
    for i, line in enumerate(lines):
        doc = json.loads(line)
        check(doc, f"triage line {i + 1}", ["schema", "type"] + (["job"] if doc.get("type") == "job" else []))
    if not any('"error"' in line and "unreadable" in line for line in lines):
        failures.append("triage: the unreadable job gave no error row")

for path in logs[:: max(1, len(logs) // 20)]:
    for line in run(["watch", "--format", "jsonl", "-"], stdin=path).splitlines():
        check(json.loads(line), "watch " + path, ["schema", "seq", "kind"])

ids = [e["id"] for e in json.loads(run(["list", "--format", "json"]))]
for entry in ids:
    check(json.loads(run(["explain", entry, "--format", "json"])), "explain " + entry, ["schema", "id"])

expected = {"firstfault.diagnosis/v1", "firstfault.timeline/v1", "firstfault.triage-job/v1",
            "firstfault.triage-summary/v1", "firstfault.alert/v1", "firstfault.entry/v1"}
for name in sorted(expected - set(checked)):
    failures.append(f"no {name} document was checked")
for name in sorted(set(validators) - expected):
    failures.append(f"schema file {name} is not exercised by this test")
print("validated: " + ", ".join(f"{n} x{c}" for n, c in sorted(checked.items())))
for f in failures[:40]:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
