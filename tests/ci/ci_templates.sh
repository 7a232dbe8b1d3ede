#!/usr/bin/env bash
# Runs the CI templates the way their CI systems would, on example logs, and checks what they
# produce:
#  - action.yml (the composite GitHub Action): every `run:` step in `bash --noprofile --norc -eo
#    pipefail` (what `shell: bash` means on a runner), with the env the step declares, its
#    `${{ inputs.* }}` / `${{ steps.*.outputs.* }}` evaluated as the runner does, GITHUB_OUTPUT
#    and GITHUB_STEP_SUMMARY pointing at temp files, steps after a failing one skipped; then the
#    action's outputs, the summary, the annotations, the SARIF file and the exit status per
#    fail-on.
#  - contrib/gitlab/firstfault.gitlab-ci.yml: the `.firstfault` job's after_script in `sh -e`
#    and in bash, with its variables and CI_JOB_STATUS; the Code Quality JSON and the JUnit XML
#    must parse and name the entry.
#  - docs/ci.md: its YAML blocks parse; the action and template they use have the inputs,
#    outputs and variables they name (the documented action step runs as above); a job that
#    uploads SARIF has security-events: write; each Train step that pipes into tee fails, in the
#    default `bash -e` and in `shell: bash`, when torchrun fails.
# Usage: ci_templates.sh path/to/firstfault repo-root. Exit 77 (skipped) when python3 or PyYAML
# (Debian: python3-yaml) is missing.
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$2" && pwd)
command -v python3 > /dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
python3 -c 'import yaml' 2> /dev/null || { echo "SKIP: PyYAML is not installed (Debian: python3-yaml)"; exit 77; }
command -v sh > /dev/null || { echo "SKIP: no sh"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TZ=UTC LC_ALL=C NO_COLOR=1
unset GITHUB_STEP_SUMMARY GITHUB_OUTPUT GITHUB_ENV GITHUB_PATH RUNNER_TEMP
python3 - "$bin" "$root" "$tmp" <<'PY'
import json, os, re, shutil, subprocess, sys
import xml.etree.ElementTree as ET
import yaml

BIN, ROOT, TMP = sys.argv[1:4]
OOM = os.path.join(ROOT, "testdata/kb/cuda-oom.log")
HEALTHY = os.path.join(ROOT, "testdata/healthy/megatron-gpt-pretrain.log")
failures = []


def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


# A PATH where `firstfault` is the binary under test, as on a runner where it is installed.
os.makedirs(os.path.join(TMP, "bin"))
os.symlink(BIN, os.path.join(TMP, "bin", "firstfault"))
BASE_ENV = dict(os.environ, PATH=os.path.join(TMP, "bin") + os.pathsep + os.environ["PATH"])
NO_FF_PATH = "/usr/local/bin:/usr/bin:/bin"  # a runner without firstfault installed

counter = [0]


def workspace(name, logs):
    """A fresh checkout-like directory; logs maps a relative path to a source file."""
    counter[0] += 1
    ws = os.path.join(TMP, f"ws{counter[0]}-{name}")
    for rel, src in logs.items():
        dst = os.path.join(ws, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(src, dst)
    os.makedirs(ws, exist_ok=True)
    return ws


# ---------------------------------------------------------------------------------------------
# GitHub Actions: a small runner for composite actions
# ---------------------------------------------------------------------------------------------
with open(os.path.join(ROOT, "action.yml"), encoding="utf-8") as f:
    ACTION = yaml.safe_load(f)

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(text, ctx, where):
    """Substitutes ${{ inputs.X }}, ${{ steps.ID.outputs.X }}; anything else is an error here."""
    def one(m):
        e = m.group(1)
        m2 = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+)", e)
        if m2:
            if m2.group(1) not in ctx["inputs"]:
                raise ValueError(f"{where}: undeclared input {e}")
            return ctx["inputs"][m2.group(1)]
        m2 = re.fullmatch(r"steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)", e)
        if m2:
            return ctx["steps"].get(m2.group(1), {}).get(m2.group(2), "")
        raise ValueError(f"{where}: expression this test does not evaluate: {e}")
    return EXPR.sub(one, str(text))


def parse_file_command(path):
    """GITHUB_OUTPUT syntax: name=value lines and name<<DELIM ... DELIM blocks."""
    out = {}
    if not os.path.exists(path):
        return out
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            val = []
            while i < len(lines) and lines[i] != delim:
                val.append(lines[i])
                i += 1
            i += 1
            out[name] = "\n".join(val)
        else:
            name, val = line.split("=", 1)
            out[name] = val
    return out


def static_checks():
    check(ACTION.get("runs", {}).get("using") == "composite", "action.yml: not a composite action")
    for key in ("logs", "format", "fail-on", "sarif", "binary", "version"):
        check(key in ACTION.get("inputs", {}), f"action.yml: no input {key}")
    check(ACTION["inputs"]["format"].get("default") == "github", "action.yml: format must default to github")
    for key in ("verdict", "entry", "action", "initiating-rank"):
        check(key in ACTION.get("outputs", {}), f"action.yml: no output {key}")
    for i, step in enumerate(ACTION["runs"]["steps"]):
        name = step.get("name", f"step {i}")
        unknown = set(step) - {"name", "id", "shell", "env", "run"}
        check(not unknown, f"action.yml: {name}: keys this test does not run: {sorted(unknown)}")
        check(step.get("shell") == "bash", f"action.yml: {name}: shell must be bash")
        run = step.get("run", "")
        check("${{" not in run, f"action.yml: {name}: an expression inside run: (pass it through env:)")
        check(run.lstrip().startswith("set -euo pipefail"), f"action.yml: {name}: run: must start with set -euo pipefail")


def run_action(name, inputs, logs, path=None, summary_before="## Train\n"):
    """Runs action.yml in a fresh workspace; returns a result dict."""
    ws = workspace(name, logs)
    runner = os.path.join(TMP, f"runner-{counter[0]}")
    os.makedirs(os.path.join(runner, "temp"))
    declared = ACTION["inputs"]
    for k in inputs:
        if k not in declared:
            raise ValueError(f"{name}: undeclared input {k}")
    ctx = {"inputs": {k: str(v.get("default", "")) for k, v in declared.items()}, "steps": {}}
    ctx["inputs"].update(inputs)
    for k, v in declared.items():
        if v.get("required") and not ctx["inputs"].get(k):
            raise ValueError(f"{name}: input {k} is required")
    summary = os.path.join(runner, "summary.md")
    with open(summary, "w") as f:
        f.write(summary_before)
    env_file, path_file = os.path.join(runner, "env"), os.path.join(runner, "path")
    open(env_file, "w").close()
    open(path_file, "w").close()
    stdout, rc = "", 0
    for i, step in enumerate(ACTION["runs"]["steps"]):
        out_file = os.path.join(runner, f"output-{i}")
        step_summary = os.path.join(runner, f"summary-{i}")
        open(out_file, "w").close()
        open(step_summary, "w").close()
        env = dict(BASE_ENV)
        if path is not None:
            env["PATH"] = path
        env.update(GITHUB_ACTIONS="true", CI="true", GITHUB_WORKSPACE=ws, GITHUB_ACTION_PATH=ROOT,
                   RUNNER_TEMP=os.path.join(runner, "temp"), GITHUB_OUTPUT=out_file,
                   GITHUB_STEP_SUMMARY=step_summary, GITHUB_ENV=env_file, GITHUB_PATH=path_file)
        for k, v in (step.get("env") or {}).items():
            env[k] = evaluate(v, ctx, f"{step.get('name')}: env {k}")
        script = os.path.join(runner, f"step-{i}.sh")
        with open(script, "w") as f:
            f.write(step["run"])
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", script], cwd=ws, env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=120)
        stdout += p.stdout
        if step.get("id"):
            ctx["steps"][step["id"]] = parse_file_command(out_file)
        with open(step_summary) as s, open(summary, "a") as f:  # the runner appends each step's
            f.write(s.read())
        if p.returncode != 0:
            rc = p.returncode
            break
    outputs = {k: evaluate(v["value"], ctx, f"output {k}") for k, v in ACTION["outputs"].items()}
    check(os.path.getsize(env_file) == 0 and os.path.getsize(path_file) == 0,
          f"{name}: the action wrote GITHUB_ENV or GITHUB_PATH (it leaks into the user's job)")
    return {"ws": ws, "rc": rc, "stdout": stdout, "outputs": outputs,
            "summary": open(summary, encoding="utf-8").read()}


def expect_outputs(name, r, rc, **want):
    check(r["rc"] == rc, f"{name}: exit {r['rc']}, want {rc}; log:\n{r['stdout'][-1500:]}")
    for k, v in want.items():
        k = k.replace("_", "-")
        check(r["outputs"].get(k) == v, f"{name}: output {k}={r['outputs'].get(k)!r}, want {v!r}")


static_checks()
oom = {"logs/train.log": OOM}
healthy = {"logs/train.log": HEALTHY}

# A failed job: outputs, summary (once, after what the job wrote), one annotation, SARIF.
r = run_action("gh-oom", {"logs": "logs/", "sarif": "reports/firstfault.sarif"}, oom)
expect_outputs("gh-oom", r, 0, verdict="diagnosed", entry="cuda-oom", action="stop", initiating_rank="3")
check(r["summary"].startswith("## Train\n"), "gh-oom: the summary lost what the job wrote before")
check("**Verdict:** diagnosed `cuda-oom`" in r["summary"], "gh-oom: summary lacks the verdict")
check("| Initiating rank | **3** |" in r["summary"], "gh-oom: summary lacks the initiating rank")
check("| Action | **stop** " in r["summary"], "gh-oom: summary lacks the action")
check(r["summary"].count("### firstfault:") == 1, "gh-oom: the report is in the summary more than once")
ann = [l for l in r["stdout"].splitlines() if l.startswith("::")]
check(len(ann) == 1 and ann[0].startswith("::error file=logs/train.log,line=15,title=CUDA out of memory"),
      f"gh-oom: want one ::error annotation at logs/train.log:15, got {ann}")
sarif_path = os.path.join(r["ws"], "reports/firstfault.sarif")
if check(os.path.exists(sarif_path), "gh-oom: no SARIF file"):
    sarif = json.load(open(sarif_path))
    res = sarif["runs"][0]["results"]
    check(sarif.get("version") == "2.1.0" and res and res[0]["ruleId"] == "cuda-oom",
          "gh-oom: SARIF is not 2.1.0 with a cuda-oom result")
    check(res[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "logs/train.log",
          "gh-oom: SARIF location is not logs/train.log")

# fail-on is passed through: the outputs are set whatever the exit status.
for fail_on, rc in (("none", 0), ("unrecognized", 0), ("stop", 1), ("restart,restart-excluding", 0),
                    ("stop,investigate", 1), ("high", 1), ("critical", 0), ("any", 1)):
    r = run_action(f"gh-oom-fail-on-{fail_on}", {"logs": "logs/", "fail-on": fail_on, "summary": "false"}, oom)
    expect_outputs(f"gh-oom fail-on {fail_on}", r, rc, verdict="diagnosed", entry="cuda-oom", action="stop")
    check(r["summary"] == "## Train\n", f"gh-oom fail-on {fail_on}: summary: false still wrote one")

# A healthy log: clean, and exit 1 only with fail-on unrecognized.
r = run_action("gh-healthy", {"logs": "logs/"}, healthy)
expect_outputs("gh-healthy", r, 0, verdict="clean", entry="", action="investigate", initiating_rank="")
check("**Verdict:** clean" in r["summary"], "gh-healthy: summary lacks the clean verdict")
check(any(l.startswith("::notice title=firstfault%3A no failure found") for l in r["stdout"].splitlines()),
      "gh-healthy: no ::notice annotation")
for fail_on, rc in (("unrecognized", 1), ("any", 0), ("investigate", 1), ("stop", 0)):
    r = run_action(f"gh-healthy-{fail_on}", {"logs": "logs/", "fail-on": fail_on}, healthy)
    expect_outputs(f"gh-healthy fail-on {fail_on}", r, rc, verdict="clean", action="investigate")

# Paths: one per line, bash globs with **, a name with spaces and shell syntax taken literally.
odd = "logs/node 1/$(touch pwned); `touch pwned2`.log"
r = run_action("gh-globs", {"logs": "\n  logs/**/rank*.log  \r\n\n" + odd + "\n", "format": "text"},
               {"logs/a/rank0.log": HEALTHY, "logs/b/c/rank1.log": OOM, odd: HEALTHY})
expect_outputs("gh-globs", r, 0, verdict="diagnosed", entry="cuda-oom")
check("3 input(s)" in r["stdout"], "gh-globs: want 3 inputs from the glob and the odd path")
check("CUDA out of memory on one rank  [cuda-oom]" in r["stdout"], "gh-globs: format text did not print the report")
check(not any(os.path.exists(os.path.join(r["ws"], p)) for p in ("pwned", "pwned2")),
      "gh-globs: a path was run as shell code")

# Input values are data: expressions in an input are not run (the runner does not re-evaluate).
r = run_action("gh-inject", {"logs": 'logs/\nlogs/"; touch pwned; echo "\n$(touch pwned2)', "sarif": "$(touch pwned3)"}, oom)
check(not any(os.path.exists(os.path.join(r["ws"], p)) for p in ("pwned", "pwned2", "pwned3")),
      "gh-inject: an input was run as shell code")
expect_outputs("gh-inject", r, 2, verdict="diagnosed", entry="cuda-oom")  # two missing inputs: exit 2

# A missing log directory (the job died before writing logs): exit 2, verdict error, annotated.
r = run_action("gh-missing", {"logs": "logs/"}, {})
expect_outputs("gh-missing", r, 2, verdict="error", entry="", action="", initiating_rank="")
check(any(l.startswith("::error") for l in r["stdout"].splitlines()), "gh-missing: no ::error annotation")
check("nothing to diagnose" in r["summary"].lower(), "gh-missing: the summary does not say nothing to diagnose")

# The binary: the binary input, PATH, none; version pin; bad format and fail-on values.
version = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.split()[1]
r = run_action("gh-binary", {"logs": "logs/", "binary": BIN, "version": "v" + version}, oom, path=NO_FF_PATH)
expect_outputs("gh-binary", r, 0, verdict="diagnosed", entry="cuda-oom")
r = run_action("gh-no-binary", {"logs": "logs/"}, oom, path=NO_FF_PATH)
check(r["rc"] == 1 and "::error title=firstfault::firstfault is not on PATH" in r["stdout"],
      f"gh-no-binary: want exit 1 and an error, got {r['rc']}: {r['stdout'][-300:]}")
check(r["outputs"]["verdict"] == "", "gh-no-binary: outputs set although nothing ran")
r = run_action("gh-version", {"logs": "logs/", "version": "99.0.0"}, oom)
check(r["rc"] == 1 and f"want 99.0.0, " in r["stdout"], f"gh-version: want a version error, got {r['rc']}: {r['stdout'][-300:]}")
r = run_action("gh-bad-format", {"logs": "logs/", "format": "yaml"}, oom)
check(r["rc"] == 1 and "format 'yaml'" in r["stdout"], f"gh-bad-format: got {r['rc']}: {r['stdout'][-300:]}")
check(r["summary"] == "## Train\n", "gh-bad-format: wrote a summary before failing")
r = run_action("gh-bad-fail-on", {"logs": "logs/", "fail-on": "stop;touch pwned"}, oom)
check(r["rc"] == 1 and "fail-on 'stop;touch pwned'" in r["stdout"], f"gh-bad-fail-on: got {r['rc']}: {r['stdout'][-300:]}")
check(not os.path.exists(os.path.join(r["ws"], "pwned")), "gh-bad-fail-on: an input was run as shell code")
r = run_action("gh-newline", {"logs": "logs/", "binary": "/nonexistent\n::warning::injected"}, oom)
check(r["rc"] == 1 and "::warning::injected" not in r["stdout"].splitlines(),
      "gh-newline: an input's newline started a workflow command")

# ---------------------------------------------------------------------------------------------
# GitLab CI: the .firstfault job's after_script
# ---------------------------------------------------------------------------------------------
with open(os.path.join(ROOT, "contrib/gitlab/firstfault.gitlab-ci.yml"), encoding="utf-8") as f:
    GITLAB = yaml.safe_load(f)
job = GITLAB.get(".firstfault") or {}
check(list(GITLAB) == [".firstfault"], f"gitlab: want only the hidden job .firstfault, got {list(GITLAB)}")
arts = job.get("artifacts") or {}
reports = arts.get("reports") or {}
check(arts.get("when") == "always", "gitlab: artifacts must be uploaded when the job failed (when: always)")
cq, junit = reports.get("codequality"), reports.get("junit")
check(cq and junit, "gitlab: artifacts:reports needs codequality and junit")
for v in ("FIRSTFAULT_LOGS", "FIRSTFAULT_BIN"):
    check(v in (job.get("variables") or {}), f"gitlab: no variable {v}")


def run_gitlab(name, logs, status, shell=("sh", "-e"), **variables):
    ws = workspace(name, logs)
    env = dict(BASE_ENV, GITLAB_CI="true", CI="true", CI_PROJECT_DIR=ws, CI_JOB_STATUS=status)
    env.update({k: str(v) for k, v in (job.get("variables") or {}).items()})
    env.update(variables)
    script = "\n".join(job.get("after_script") or [])
    p = subprocess.run(list(shell) + ["-c", script], cwd=ws, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return ws, p


def read_reports(name, ws):
    try:
        issues = json.load(open(os.path.join(ws, cq)))
    except (OSError, ValueError) as e:
        fail(f"{name}: {cq}: {e}")
        issues = None
    try:
        suite = ET.parse(os.path.join(ws, junit)).getroot()
    except (OSError, ET.ParseError) as e:
        fail(f"{name}: {junit}: {e}")
        suite = None
    return issues, suite


# sh (a runner image without bash) and bash as GitLab runs it (set -eo pipefail).
for shell in (("sh", "-e"), ("bash", "-eo", "pipefail")):
    name = "gl-oom " + shell[0]
    ws, p = run_gitlab(name, oom, "failed", shell=shell)
    check(p.returncode == 0, f"{name}: after_script exit {p.returncode}: {p.stdout[-500:]}")
    check("CUDA out of memory on one rank  [cuda-oom]" in p.stdout, f"{name}: no text report in the job log")
    issues, suite = read_reports(name, ws)
    if issues is not None:
        check(len(issues) == 1 and issues[0]["check_name"] == "cuda-oom" and issues[0]["severity"] == "major"
              and issues[0]["location"] == {"path": "logs/train.log", "lines": {"begin": 15}}
              and re.fullmatch(r"[0-9a-f]{64}", issues[0]["fingerprint"]),
              f"{name}: Code Quality report: {issues}")
    if suite is not None:
        f = suite.findall(".//testcase/failure")
        check(suite.get("failures") == "1" and len(f) == 1 and f[0].get("type") == "cuda-oom",
              f"{name}: JUnit report lacks one cuda-oom failure")

ws, p = run_gitlab("gl-healthy", healthy, "failed", FIRSTFAULT_LOGS="logs/*.log")
check(p.returncode == 0, f"gl-healthy: after_script exit {p.returncode}: {p.stdout[-500:]}")
issues, suite = read_reports("gl-healthy", ws)
check(issues == [], f"gl-healthy: want an empty Code Quality report, got {issues}")
if suite is not None:
    check(suite.get("tests") == "1" and suite.get("failures") == "0" and suite.get("errors") == "0",
          "gl-healthy: JUnit report is not one passing test case")

ws, p = run_gitlab("gl-missing", {}, "failed")
check(p.returncode == 0, f"gl-missing: after_script must not fail, exit {p.returncode}")
issues, suite = read_reports("gl-missing", ws)
check(issues and issues[0]["check_name"] == "firstfault.input-error", f"gl-missing: {issues}")
if suite is not None:
    check(suite.get("errors") == "1", "gl-missing: JUnit report lacks the input error")

ws, p = run_gitlab("gl-success", oom, "success")
check(p.returncode == 0 and not os.path.exists(os.path.join(ws, cq)), "gl-success: a successful job was diagnosed")
ws, p = run_gitlab("gl-always", oom, "success", FIRSTFAULT_WHEN="failed success")
check(os.path.exists(os.path.join(ws, cq)), "gl-always: FIRSTFAULT_WHEN=\"failed success\" did not diagnose")
ws, p = run_gitlab("gl-no-binary", oom, "failed", PATH=NO_FF_PATH)
check(p.returncode == 0 and "firstfault not found" in p.stdout, f"gl-no-binary: {p.returncode}: {p.stdout[-300:]}")
ws, p = run_gitlab("gl-inject", oom, "failed", FIRSTFAULT_LOGS="logs/ $(touch${IFS}pwned) ;touch${IFS}pwned2")
check(not any(os.path.exists(os.path.join(ws, x)) for x in ("pwned", "pwned2")), "gl-inject: FIRSTFAULT_LOGS was run as code")

# ---------------------------------------------------------------------------------------------
# docs/ci.md: its YAML blocks parse, use the templates as they are, and its Train step fails
# when training fails
# ---------------------------------------------------------------------------------------------
doc = open(os.path.join(ROOT, "docs/ci.md"), encoding="utf-8").read()
blocks = re.findall(r"^```yaml\n(.*?)^```", doc, re.S | re.M)
check(len(blocks) >= 4, f"docs/ci.md: found {len(blocks)} yaml blocks")
used_action = used_template = False
trains = []
for n, text in enumerate(blocks, 1):
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        fail(f"docs/ci.md yaml block {n} does not parse: {e}")
        continue
    for jname, jobdef in ((data or {}).get("jobs") or {}).items():  # GitHub Actions
        steps = jobdef.get("steps") or []
        for st in steps:
            uses = st.get("uses", "")
            if uses == "./" or uses.startswith("OWNER/firstfault@"):
                used_action = True
                for k in st.get("with") or {}:
                    check(k in ACTION["inputs"], f"docs/ci.md block {n}: the action has no input {k}")
                for o in re.findall(r"steps\.%s\.outputs\.([A-Za-z0-9_-]+)" % re.escape(st.get("id", "-")), text):
                    check(o in ACTION["outputs"], f"docs/ci.md block {n}: the action has no output {o}")
                if not all(k in ACTION["inputs"] for k in st.get("with") or {}):
                    continue
                r = run_action(f"doc-block-{n}", {k: str(v) for k, v in (st.get("with") or {}).items()}, oom)
                expect_outputs(f"docs/ci.md block {n}", r, 0, verdict="diagnosed", entry="cuda-oom", action="stop")
                sarif = (st.get("with") or {}).get("sarif")
                if sarif:
                    check(os.path.exists(os.path.join(r["ws"], sarif)), f"docs/ci.md block {n}: no {sarif}")
            if uses.startswith("github/codeql-action/upload-sarif@"):
                check((jobdef.get("permissions") or {}).get("security-events") == "write",
                      f"docs/ci.md block {n}: job {jname} uploads SARIF without security-events: write")
            if "| tee" in st.get("run", ""):
                check(st.get("shell") == "bash", f"docs/ci.md block {n}: step {st.get('name')} pipes into tee without shell: bash")
                trains.append((n, st["run"]))
    for jname, jobdef in (data or {}).items():  # GitLab CI
        if isinstance(jobdef, dict) and jobdef.get("extends") == ".firstfault":
            used_template = True
            for k in jobdef.get("variables") or {}:
                check(k in (job.get("variables") or {}), f"docs/ci.md block {n}: the template has no variable {k}")
            for inc in data.get("include") or []:
                check(os.path.exists(os.path.join(ROOT, inc.get("local", "-"))), f"docs/ci.md block {n}: include {inc}")
check(used_action, "docs/ci.md: no block uses the action (uses: OWNER/firstfault@vX)")
check(used_template, "docs/ci.md: no block extends .firstfault")
check(trains, "docs/ci.md: no Train step found")

# The Train step, with a torchrun that prints a failing rank's log and exits 1, must fail in the
# default shell (bash -e {0}) as well as in `shell: bash`; a bare pipe into tee would succeed.
fake = os.path.join(TMP, "fakebin")
os.makedirs(fake)
with open(os.path.join(fake, "torchrun"), "w") as f:
    f.write('#!/bin/sh\ncat "$FAKE_LOG"\nexit 1\n')
os.chmod(os.path.join(fake, "torchrun"), 0o755)
for n, run in trains:
    for shell in (["bash", "-e"], ["bash", "--noprofile", "--norc", "-eo", "pipefail"]):
        ws = workspace(f"doc-train-{n}", {})
        script = os.path.join(ws, "step.sh")
        with open(script, "w") as f:
            f.write(run)
        p = subprocess.run(shell + [script], cwd=ws, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           env=dict(BASE_ENV, PATH=fake + os.pathsep + BASE_ENV["PATH"], FAKE_LOG=OOM))
        check(p.returncode != 0, f"docs/ci.md block {n}: the Train step succeeds in {' '.join(shell)} when torchrun fails")
        check(os.path.exists(os.path.join(ws, "logs/train.log")) and
              open(os.path.join(ws, "logs/train.log")).read() == open(OOM).read(),
              f"docs/ci.md block {n}: the Train step did not write logs/train.log")

if failures:
    sys.exit(1)
print("action.yml and contrib/gitlab/firstfault.gitlab-ci.yml work (%d runs)" % counter[0])
PY
