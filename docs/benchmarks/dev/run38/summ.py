#!/usr/bin/env python3
"""Per kernel and binary, over he_bench's rounds (DIR/{new,base}-R.json):
S_max's range and each round's HE cold, cold from a profile, and warm."""
import json, statistics as st, sys, glob
d = sys.argv[1]
for b in ['new', 'base']:
    for k in ['mandelbrot', 'blackscholes', 'gather']:
        rows = []
        for f in sorted(glob.glob(f'{d}/{b}-*.json')):
            for x in json.load(open(f)):
                if x['kernel'] == k:
                    rows.append((x['s_max'], x['cold']['HE'], x['cold_profile']['HE'], x['warm']['HE']))
        med = lambda i: st.median(r[i] for r in rows)
        print(b, k, 'S_max %.2f-%.2f' % (min(r[0] for r in rows), max(r[0] for r in rows)),
              '| HE cold', ' '.join('%.2f' % r[1] for r in rows),
              '| from profile', ' '.join('%.2f' % r[2] for r in rows),
              '| warm', ' '.join('%.2f' % r[3] for r in rows),
              '| medians %.3f / %.3f / %.3f' % (med(1), med(2), med(3)))
