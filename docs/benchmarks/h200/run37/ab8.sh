#!/bin/bash
# h200 run 37, call 8: as ab4.sh, this code against itself with
# COEXEC_GPU_INLINE_SHARED=0 (the first GPU's loop on its own thread) and
# the GPU alone, PROCS interleaved fresh processes each, profiles off.
# Results under $OUT/ab8.
R=$OUT/ab8; mkdir -p $R; export COEXEC_PROFILE=off
row() { python3 -c '
import json,sys
r=json.loads(sys.stdin.read().strip().splitlines()[-1])
d=" ".join("%s:start %.0f settled %.0f items %d" % (x["kind"], x["first_start_s"]*1e6, x["settled_s"]*1e6, x["items"]) for x in r["first_per_device"])
print("first %.3f ms warm %.3f ms | %s | verified %s" % (r["first_s"]*1e3, r["time_s"]*1e3, d, r["verified"]))'; }
b() { "$@" --warmup 3 --reps 5 --json 2>/dev/null | row; }
for k in ${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 histogram:2^22 spmv:2^21 jacobi:8192x4096}; do
  n=${k%%:*}; s=${k#*:}
  for p in $(seq ${PROCS:-5}); do
    echo "$n here p$p $(b coexec bench --kernel $n --size $s --devices all)" >> $R/summary.txt
    echo "$n thread p$p $(COEXEC_GPU_INLINE_SHARED=0 b coexec bench --kernel $n --size $s --devices all)" >> $R/summary.txt
    echo "$n gpu p$p $(COEXEC_TRANSFER_QUEUE=dedicated b coexec bench --kernel $n --size $s --devices gpu --scheduler dynamic:8)" >> $R/summary.txt
  done
done
cat $R/summary.txt
