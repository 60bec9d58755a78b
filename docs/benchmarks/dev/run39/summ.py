#!/usr/bin/env python3
"""dev run 39: per spec, the ratio to the best single device with the box
on and off, per round (raw/box{1,0}-{round}.json)."""
import glob, json, re, sys
rows = {}
for f in sorted(glob.glob("raw/box*-*.json")):
    box, rnd = re.match(r"raw/box(\d)-(\d+)\.json", f).groups()
    for r in json.load(open(f)):
        key = f"{r['kernel']} {r['size']}"
        rows.setdefault(key, {}).setdefault(box, []).append(
            r.get("ratio", float("nan")))
print("| spec | box on: ratio per round | box off: ratio per round |")
print("|---|---|---|")
for k, v in rows.items():
    on = ", ".join(f"{x:.3f}" for x in v.get("1", []))
    off = ", ".join(f"{x:.3f}" for x in v.get("0", []))
    print(f"| {k} | {on} | {off} |")
