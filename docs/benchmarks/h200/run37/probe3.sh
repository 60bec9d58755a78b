#!/bin/bash
# h200 run 37, call 3: cold first runs untraced, with each device's first
# start and settle times from the report: co-executed (default, and with
# COEXEC_ZERO_COPY_STEALS=0) against the GPU alone, PROCS fresh processes
# each, interleaved. Results under $OUT/probe3 (one JSON line a process).
R=$OUT/probe3; mkdir -p $R; export COEXEC_PROFILE=off
row() { python3 -c '
import json,sys
r=json.loads(sys.stdin.read().strip().splitlines()[-1])
d=" ".join("%s:start %.0f settled %.0f items %d pk %d" % (x["kind"], x["first_start_s"]*1e6, x["settled_s"]*1e6, x["items"], x["packages"]) for x in r["first_per_device"])
print("first %.0f us | %s | verified %s" % (r["first_s"]*1e6, d, r["verified"]))'; }
for k in ${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23}; do
  for p in $(seq ${PROCS:-5}); do
    echo "${k%%:*} all p$p $(coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 0 --reps 1 --json 2>/dev/null | row)" >> $R/summary.txt
    echo "${k%%:*} nozcs p$p $(COEXEC_ZERO_COPY_STEALS=0 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 0 --reps 1 --json 2>/dev/null | row)" >> $R/summary.txt
    echo "${k%%:*} gpu p$p $(COEXEC_TRANSFER_QUEUE=dedicated coexec bench --kernel ${k%%:*} --size ${k#*:} --devices gpu --scheduler dynamic:8 --warmup 0 --reps 1 --json 2>/dev/null | row)" >> $R/summary.txt
  done
done
cat $R/summary.txt
