#!/bin/bash
# Cold first runs (first_s of a fresh process) and warm medians
# (three runs after it) of GPU-heavy kernels, co-executed on the
# compute queue (auto: co-executed runs transfer there) and on the
# dedicated transfer queue, against the GPU alone's best solo
# configuration (dynamic over the dedicated queue), three interleaved
# processes each, profiles off, he_bench's command form.
R=$OUT; export COEXEC_PROFILE=off
SPECS=${SPECS:-"mandelbrot:4096x4096 gather:2^23 collatz:2^23"}
row() { python3 -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); print("first %.3f ms warm %.3f ms cpu_items %s verified %s" % (r["first_s"]*1e3, r["time_s"]*1e3, r.get("first_cpu_items"), r["verified"]))'; }
for spec in $SPECS; do
  k=${spec%%:*}; s=${spec#*:}
  for p in 1 2 3; do
    for q in auto dedicated; do
      echo "$k all-$q p$p $(COEXEC_TRANSFER_QUEUE=$q coexec bench --kernel $k --size $s --devices all --scheduler hguided --warmup 1 --reps 3 --json | row)" >> $R/summary.txt
    done
    for sch in dynamic:4 dynamic:8; do
      echo "$k gpu-$sch-xq p$p $(COEXEC_TRANSFER_QUEUE=dedicated coexec bench --kernel $k --size $s --devices gpu --scheduler $sch --warmup 1 --reps 3 --json | row)" >> $R/summary.txt
    done
  done
done
