#!/usr/bin/env python3
"""dev run 40: per spec, warm medians and first runs (ms) with the CPU's
unstarted units counted (held 1) and not (held 0), per process."""
import json, statistics
rows = [json.loads(l) for l in open("raw/ab.jsonl") if l.startswith("{")]
specs = sorted({r["spec"] for r in rows})
print("| spec | warm held=1 | warm held=0 | median 1 / 0 | first run 1 / 0 (medians) |")
print("|---|---|---|---|---|")
for s in specs:
    w = {h: [r["r"]["time_s"] * 1e3 for r in rows if r["spec"] == s and r["held"] == h] for h in (1, 0)}
    f = {h: [r["r"]["first_s"] * 1e3 for r in rows if r["spec"] == s and r["held"] == h] for h in (1, 0)}
    fmt = lambda v: ", ".join(f"{x:.3f}" for x in v)
    print(f"| {s} | {fmt(w[1])} | {fmt(w[0])} | {statistics.median(w[1]):.3f} / {statistics.median(w[0]):.3f} | "
          f"{statistics.median(f[1]):.3f} / {statistics.median(f[0]):.3f} |")
