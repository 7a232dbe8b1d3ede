#!/usr/bin/env bash
# Runs every command line that docs/ci.md tells users to paste (GitHub Actions, GitLab CI,
# Jenkins, the Slurm epilogue) on an example log, the way each CI system would, and checks the
# files they produce. Each command must appear verbatim in docs/ci.md, so the docs cannot drift
# from what is tested. Usage: ci_docs_test.sh path/to/firstfault repo-root
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$2
doc=$root/docs/ci.md
log=$root/testdata/kb/nccl-allgather-uneven-batches.log
entry=nccl-allgather-uneven-batches
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; status=1; }
export TZ=UTC LC_ALL=C NO_COLOR=1
unset GITHUB_STEP_SUMMARY

# The documented commands call `firstfault` from PATH, as on a runner where it is installed.
mkdir -p "$tmp/bin"
ln -s "$bin" "$tmp/bin/firstfault"
export PATH="$tmp/bin:$PATH"

# A fresh checkout-like directory with the failed job's log in logs/.
workspace() {
  local w="$tmp/ws-$1"
  mkdir -p "$w/logs"
  cp "$log" "$w/logs/train.log"
  echo "$w"
}

# Runs one documented command line (which must appear in docs/ci.md) in a fresh workspace.
run_documented() {
  local name=$1 cmd=$2
  grep -qF -- "$cmd" "$doc" || fail "$name: docs/ci.md no longer contains: $cmd"
  ws=$(workspace "$name")
  (cd "$ws" && bash -o pipefail -c "$cmd" > "$ws/stdout" 2> "$ws/stderr")
  local rc=$?
  [ "$rc" = 0 ] || fail "$name: exit $rc (stderr: $(head -c 300 "$ws/stderr"))"
}

# Checks that a file exists and contains a fixed string.
expect() {
  local name=$1 file=$2 want=$3
  if [ ! -s "$file" ]; then
    fail "$name: $file is missing or empty"
  elif ! grep -qF -- "$want" "$file"; then
    fail "$name: $(basename "$file") lacks: $want"
  fi
}

# --- GitHub Actions: annotation on stdout, Markdown appended to the step summary -------------
export GITHUB_STEP_SUMMARY="$tmp/step-summary.md"
echo "## Train" > "$GITHUB_STEP_SUMMARY"
run_documented github "firstfault diagnose --format github --fail-on none logs/"
unset GITHUB_STEP_SUMMARY
expect github "$ws/stdout" "::error file=logs/train.log,line=21,title=NCCL hang on AllGather%3A"
expect github "$ws/stdout" "Initiating rank: 3%0A"
[ "$(grep -c '^::' "$ws/stdout")" = 1 ] || fail "github: expected exactly one workflow command"
expect github "$tmp/step-summary.md" "## Train"
expect github "$tmp/step-summary.md" "**Verdict:** diagnosed \`$entry\`"
expect github "$tmp/step-summary.md" "| Initiating rank | **3** |"
expect github "$tmp/step-summary.md" "| Collateral | ranks 0-2 timed out"
expect github "$tmp/step-summary.md" "**Fix:** Make every rank run the same number of steps"

run_documented github-sarif "firstfault diagnose --format sarif --fail-on none logs/ > firstfault.sarif"
expect github-sarif "$ws/firstfault.sarif" "\"version\": \"2.1.0\""
expect github-sarif "$ws/firstfault.sarif" "\"ruleId\": \"$entry\""
expect github-sarif "$ws/firstfault.sarif" "\"uri\": \"logs/train.log\""
expect github-sarif "$ws/firstfault.sarif" "\"startLine\": 21"

# --- GitLab CI: Code Quality report file and the Markdown report in the job log --------------
run_documented gitlab "firstfault diagnose --format gitlab --fail-on none logs/ > gl-code-quality-report.json"
expect gitlab "$ws/gl-code-quality-report.json" "\"check_name\": \"$entry\""
expect gitlab "$ws/gl-code-quality-report.json" "\"path\": \"logs/train.log\""
expect gitlab "$ws/gl-code-quality-report.json" "\"begin\": 21"
grep -qE '"fingerprint": "[0-9a-f]{64}"' "$ws/gl-code-quality-report.json" || fail "gitlab: no fingerprint"
run_documented gitlab-markdown "firstfault diagnose --format markdown --fail-on none logs/"
expect gitlab-markdown "$ws/stdout" "### firstfault: NCCL hang on AllGather"
expect gitlab-markdown "$ws/stdout" "| Initiating rank | **3** |"

# --- Jenkins: JUnit file with one failed test case -------------------------------------------
run_documented jenkins "firstfault diagnose --format junit --fail-on none logs/ > firstfault-junit.xml"
expect jenkins "$ws/firstfault-junit.xml" "<testsuites name=\"firstfault\" tests=\"1\" failures=\"1\" errors=\"0\">"
expect jenkins "$ws/firstfault-junit.xml" "<failure type=\"$entry\" message=\"NCCL hang on AllGather"
expect jenkins "$ws/firstfault-junit.xml" "Initiating rank: 3"
grep -qF "junit 'firstfault-junit.xml'" "$doc" || fail "jenkins: docs/ci.md no longer publishes firstfault-junit.xml"

# --- Slurm: the epilogue script, extracted from the docs and run as slurmctld would ----------
epilog="$tmp/firstfault-epilog.sh"
sed -n '/<!-- firstfault-epilog:begin -->/,/<!-- firstfault-epilog:end -->/p' "$doc" | sed '1,2d;$d' | sed '$d' > "$epilog"
head -1 "$epilog" | grep -q '^#!/bin/bash' || fail "slurm: could not extract the epilogue from docs/ci.md"
chmod +x "$epilog"
bash -n "$epilog" || fail "slurm: the epilogue does not parse"
out="$tmp/slurm-4242.out"
cp "$log" "$out"
run_epilog() {  # exit-code stdout stderr
  env -i PATH=/usr/bin:/bin FIRSTFAULT="$bin" FIRSTFAULT_REPORT_DIR="$tmp/reports" SLURM_JOB_ID=4242 \
    SLURM_JOB_EXIT_CODE="$1" SLURM_JOB_STDOUT="$2" SLURM_JOB_STDERR="$3" "$epilog"
}
run_epilog 0 "$out" "$out" || fail "slurm: epilogue exited non-zero for a successful job"
[ -e "$tmp/reports/4242.md" ] && fail "slurm: a successful job got a report"
rm -rf "$tmp/reports"
run_epilog 256 "$out" "$out" || fail "slurm: epilogue exited non-zero for a failed job"
expect slurm "$tmp/reports/4242.md" "**Verdict:** diagnosed \`$entry\`"
expect slurm "$tmp/reports/4242.md" "| Initiating rank | **3** |"
expect slurm "$tmp/reports/4242.md" "user names are masked"
rm -rf "$tmp/reports"
run_epilog 256 "$tmp/missing.out" "$tmp/missing.out" || fail "slurm: epilogue must exit 0 when the output file is gone"
[ -e "$tmp/reports/4242.md" ] && fail "slurm: a report without a readable log"

[ $status = 0 ] && echo "all documented CI command lines work"
exit $status
