#!/usr/bin/env python3
"""Ratios to the best single device per spec, rule on and off, per round
(dev run 41), as a Markdown table; round 2 ran beside a build (perturbed)."""
import json, os
rounds = [r for r in (1, 2, 3, 4) if os.path.exists(f"raw/retry1-{r}.json")]
rows = {}
for r in rounds:
    for rule in (1, 0):
        for e in json.load(open(f"raw/retry{rule}-{r}.json")):
            rows.setdefault((e["kernel"], e["size"]), {}).setdefault(rule, []).append(
                "%.3f%s" % (e["ratio"], "*" if r == 2 else ""))
print("| spec | rule on: ratio per round | rule off: ratio per round |")
print("|---|---|---|")
for (k, s), v in rows.items():
    print("| %s %s | %s | %s |" % (k, s, ", ".join(v[1]), ", ".join(v[0])))
