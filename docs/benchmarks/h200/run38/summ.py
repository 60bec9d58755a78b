#!/usr/bin/env python3
"""Medians per kernel and configuration of a cold-cfg.sh summary.txt:
cold (first) and warm ms, the GPU's first start and settle (us)."""
import re, sys, statistics as st
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) (\S+) p\d+ first ([\d.]+) ms warm ([\d.]+) ms .*?\| (.*) \| verified (\S+)", line)
    if not m:
        continue
    k, c, first, warm, devs, ok = m.groups()
    g = re.search(r"gpu:start (\d+) settled (\d+)", devs)
    rows[(k, c)].append((float(first), float(warm), int(g.group(1)) if g else 0,
                         int(g.group(2)) if g else 0, ok))
for (k, c), v in rows.items():
    med = lambda i: st.median(x[i] for x in v)
    print("%-11s %-10s n=%d cold %7.3f (%s) warm %7.3f gpu start %4.0f settled %6.0f end-settle %4.0f ok %s" % (
        k, c, len(v), med(0), "-".join("%.2f" % min(x[0] for x in v) + "/" + "%.2f" % max(x[0] for x in v) for _ in [0]),
        med(1), med(2), med(3), st.median(x[0] * 1000 - x[3] for x in v), all(x[4] == "True" for x in v)))
