#!/usr/bin/env python3
"""Writes the Flight Recorder dump fixtures under testdata/flight-recorder/.

The dumps follow the layout of PyTorch's torch/csrc/distributed/c10d/FlightRecorder.hpp
(version 2.x: entries[], pg_config{}, pg_status{}), pickled as PyTorch writes them to
${TORCH_NCCL_DEBUG_INFO_TEMP_FILE}<rank>; protocol 2 and 4 both appear so the reader's opcode
subset is exercised. No torch needed. Usage: tools/make_flight_recorder_fixtures.py [OUT_DIR]
"""
import json
import os
import pickle
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "testdata", "flight-recorder")
T0 = 1_733_300_000_000_000_000


def entry(rid, seq, name, state, sizes, frames):
    return {
        "record_id": rid, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
        "p2p_seq_id": 0, "op_id": seq, "profiling_name": name, "time_created_ns": T0 + rid * 1_000_000,
        "input_sizes": sizes, "input_dtypes": ["Float"], "output_sizes": sizes, "output_dtypes": ["Float"],
        "state": state, "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
        "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False, "frames": frames,
    }


def frames(fn, line):
    return [{"name": "all_reduce", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 2501},
            {"name": fn, "filename": "/workspace/train.py", "line": line},
            {"name": "<module>", "filename": "/workspace/train.py", "line": 310}]


def dump(entries, last):
    return {
        "version": "2.4",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
        "pg_status": {"0": {"last_enqueued_collective": last[0], "last_started_collective": last[1], "last_completed_collective": last[2]}},
        "entries": entries,
    }


def history(upto):
    return [entry(i, i, "nccl:all_reduce", "completed", [[1024]], frames("train_step", 201)) for i in range(upto - 3, upto + 1)]


def write(case, rank, obj, protocol=2, as_json=False):
    d = os.path.join(OUT, case)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"nccl_trace_rank_{rank}")
    if as_json:
        with open(path, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)  # nlohmann orders keys, as _dump_nccl_trace_json does
    else:
        with open(path, "wb") as f:
            f.write(pickle.dumps(obj, protocol=protocol))


def main():
    # Ranks 0, 1 and 3 wait in collective 42 (the loss all-reduce of the next step); rank 2 left the
    # loop after 41 (one batch fewer) and never issued it.
    case = "rank2-never-issued"
    for r in (0, 1, 3):
        e = history(41) + [entry(42, 42, "nccl:all_reduce", "started", [[1]], frames("reduce_loss", 188))]
        write(case, r, dump(e, (42, 42, 41)), protocol=2 if r != 3 else 4)
    write(case, 2, dump(history(41), (41, 41, 41)), protocol=2)
    # Every rank waits in the same collective: no rank is behind (a hang inside the collective).
    case = "all-ranks-in-collective"
    for r in range(4):
        e = history(41) + [entry(42, 42, "nccl:_allgather_base", "started", [[4096]], frames("forward", 97))]
        write(case, r, dump(e, (42, 42, 41)), as_json=(r == 1))


if __name__ == "__main__":
    main()
