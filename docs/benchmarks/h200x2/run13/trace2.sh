#!/bin/bash
# Where HGuided loses against an even split on two identical GPUs: the last
# warm run's packages as traces (Mandelbrot, histogram, collatz), HGuided
# and an even static split, with the learner's and the GPU loops' lines;
# two fresh processes per cell, profiles off.
R=$OUT; export COEXEC_PROFILE=off
nproc > $R/machine.txt; nvidia-smi -L >> $R/machine.txt 2>&1; nvidia-smi topo -m >> $R/machine.txt 2>&1
for spec in ${SPECS:-mandelbrot:4096x4096 histogram:2^22 collatz:2^23}; do
  K=${spec%%:*}; S=${spec#*:}
  for p in 1 2; do
    for sch in hguided static; do
      f=$R/$K-$sch-$p
      COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::exec::gpu=debug \
      timeout 60 coexec bench --kernel $K --size $S --devices gpu0,gpu1 --scheduler $sch \
        --warmup 6 --reps 3 --json --trace $f.json > $f.out 2> $f.log
      python3 - "$f.out" "$K $sch p$p" >> $R/summary.txt <<'PY'
import json,sys
try:
    r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    print(sys.argv[2], "first %.3f ms median %.3f ms" % (r["first_s"]*1e3, r["time_s"]*1e3),
          [(d.get("name"), d.get("items")) for d in r.get("per_device", [])])
except Exception as e:
    print(sys.argv[2], "ERR", e)
PY
    done
  done
done
(cd $R && tar czf traces.tgz *.json *.log *.out && rm -f *.json *.log *.out)
