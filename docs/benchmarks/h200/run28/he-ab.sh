#!/bin/bash
# he_bench over spmv, histogram and jacobi (the kernels where a GPU's
# packages can be far smaller than a run) with this code (new,
# .device/bin/coexec) and the session's start (base, .device/bin/coexec-base),
# one after the other on one machine: each device's best solo
# configuration, the warm co-executed run in HE_PROCS interleaved
# processes (median of their medians), cold first runs in HE_COLD = 3.
R=$OUT
for b in new base; do
  bin=coexec; [ $b = base ] && bin=coexec-base
  HE_REPS=5 HE_COLD=3 HE_PROCS=${HE_PROCS:-3} timeout 280 python3 scripts/he_bench.py $bin $R/he-$b.json $SPECS > $R/he-$b.txt 2>&1
  echo "== $b" >> $R/summary.txt; cat $R/he-$b.txt >> $R/summary.txt
done
