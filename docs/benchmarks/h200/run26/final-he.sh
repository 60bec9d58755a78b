#!/bin/bash
# he_bench over the comparable set with this run's code: each device's best
# configuration and the warm co-executed run measured in HE_PROCS = 5
# interleaved processes (median of their medians), cold first runs in
# HE_COLD = 3 processes. SPECS: the kernel:size list of this call.
R=$OUT
HE_REPS=5 HE_COLD=3 HE_PROCS=${HE_PROCS:-5} timeout 580 python3 scripts/he_bench.py coexec $R/he.json $SPECS > $R/he.txt 2>&1
cat $R/he.txt > $R/summary.txt
