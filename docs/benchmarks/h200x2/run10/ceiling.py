#!/usr/bin/env python3
"""Two GPUs' co-running ceiling: each kernel on GPU 0 alone and on both
GPUs (no CPU workers) under a fixed even split (static: the GPUs share
equally), dynamic:16 and HGuided, PROCS interleaved fresh processes each
(3 warm-ups, median of 5, profiles off). If the even split of two
identical GPUs is no faster than one, the pair shares a bottleneck (the
host's memory, where every output comes down) and S_max from solo times
overstates what any schedule can reach.

CONFIGS (environment, optional): more configurations after GPU 0's two
solo ones, ';'-separated, each `DEVICES SCHEDULER [VAR=VALUE ...]` (the
variables set for that process only).

Usage: ceiling.py COEXEC OUT_JSON KERNEL:SIZE ..."""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../../scripts"))
import he_bench  # noqa: E402

SOLO = ["gpu0 hguided", "gpu0 dynamic:8"]
MORE = "gpu0,gpu1 static;gpu0,gpu1 dynamic:16;gpu0,gpu1 hguided"


def configs():
    """Each configuration as (name, devices, scheduler, environment)."""
    out = []
    for c in SOLO + os.environ.get("CONFIGS", MORE).split(";"):
        words = c.split()
        env = dict(w.split("=", 1) for w in words[2:])
        env["COEXEC_PROFILE"] = "off"
        out.append((c, words[0], words[1], env))
    return out


def main():
    binary, out = sys.argv[1], sys.argv[2]
    procs = int(os.environ.get("PROCS", "2"))
    results = []
    for spec in sys.argv[3:]:
        kernel, size = spec.split(":")[:2]
        rows = {name: [] for name, _, _, _ in configs()}
        for _ in range(procs):
            for name, d, s, env in configs():
                r = he_bench.bench(binary, kernel, size, None, d, s, 3, 5, env=env)
                rows[name].append({
                    "time_s": r["time_s"],
                    "per_device": [(p.get("items"), p.get("transfer_s"), p.get("download_bytes"),
                                    p.get("busy_s")) for p in r.get("per_device", [])
                                   if p.get("kind") == "gpu"],
                })
        one = min(statistics.median(x["time_s"] for x in rows[c]) for c in SOLO)
        line = f"{kernel:10} {size:10} one GPU {one * 1e3:7.3f} ms |"
        for name, _, _, _ in configs()[len(SOLO):]:
            t = statistics.median(x["time_s"] for x in rows[name])
            line += f" {name} {t * 1e3:7.3f} ms (S {one / t:4.2f}) |"
        print(line, flush=True)
        results.append({"kernel": kernel, "size": size, "one_gpu_s": one, "rows": rows})
        with open(out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
