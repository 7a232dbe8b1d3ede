#!/usr/bin/env python3
"""Scores one first-sight accuracy round (docs/accuracy.md).

A round is a directory of cases, each `<case>/job.log` with `<case>/label.json` written by the
person who gathered it from the public thread (category, initiating rank, healthy or not). This
runs a firstfault binary on every case and prints one Markdown row per case and the totals.
Run it with the build as it was *before* any fix made for these logs: that is the first-sight
score. Usage: tools/score_round.py BINARY ROUND_DIR [--json]
"""
import json
import pathlib
import subprocess
import sys


def diagnose(binary, log):
    out = subprocess.run([binary, "diagnose", "--format", "json", str(log)], capture_output=True, text=True, timeout=120)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return {"verdict": "error", "stderr": out.stderr.strip()[:200]}


def score_case(binary, case):
    label = json.loads((case / "label.json").read_text())
    d = diagnose(binary, case / "job.log")
    verdict = d.get("verdict")
    diag = d.get("diagnosis") or {}
    got_cat = diag.get("category")
    got_id = diag.get("id")
    got_rank = diag.get("initiating_rank")
    if got_rank is None and d.get("suspect"):
        got_rank = d["suspect"].get("rank")
    row = {"case": case.name, "source": label.get("source"), "healthy": bool(label.get("healthy")),
           "verdict": verdict, "entry": got_id, "category": got_cat, "rank": got_rank,
           "want_category": label.get("category"), "want_rank": label.get("initiating_rank")}
    if row["healthy"]:
        row["ok_clean"] = verdict == "clean"
        return row
    accepted = [label.get("category")] + list(label.get("also_accept_categories") or [])
    row["ok_category"] = got_cat in accepted
    row["called_clean"] = verdict == "clean"
    if label.get("initiating_rank") is not None:
        row["ok_rank"] = got_rank == label["initiating_rank"]
    return row


def main():
    binary, round_dir = sys.argv[1], pathlib.Path(sys.argv[2])
    rows = [score_case(binary, c) for c in sorted(round_dir.iterdir()) if (c / "label.json").exists()]
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=1))
        return
    print("| case | thread | want (category, rank) | got (verdict, entry, category, rank) | category | rank |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if r["healthy"]:
            want, cat, rk = "healthy", ("ok" if r["ok_clean"] else "FALSE ALARM"), ""
        else:
            want = f"{r['want_category']}, {r['want_rank']}"
            cat = "ok" if r["ok_category"] else ("CLEAN" if r["called_clean"] else "wrong")
            rk = "" if "ok_rank" not in r else ("ok" if r["ok_rank"] else "wrong")
        got = f"{r['verdict']}, {r['entry'] or '-'}, {r['category'] or '-'}, {r['rank']}"
        print(f"| {r['case']} | {r['source']} | {want} | {got} | {cat} | {rk} |")
    failing = [r for r in rows if not r["healthy"]]
    healthy = [r for r in rows if r["healthy"]]
    ranked = [r for r in failing if "ok_rank" in r]
    print()
    print(f"category: {sum(r['ok_category'] for r in failing)}/{len(failing)}; "
          f"rank: {sum(r['ok_rank'] for r in ranked)}/{len(ranked)}; "
          f"failing called clean: {sum(r['called_clean'] for r in failing)}/{len(failing)}; "
          f"healthy called clean: {sum(r['ok_clean'] for r in healthy)}/{len(healthy)}; "
          f"multi-rank: {sum(1 for c in sorted(round_dir.iterdir()) if (c / 'label.json').exists() and json.loads((c / 'label.json').read_text()).get('multi_rank'))}/{len(rows)}")


if __name__ == "__main__":
    main()
