#!/bin/bash
# he_bench over the comparable set with this run's code (as run 26's
# final-he.sh): each device's best solo configuration, the warm co-executed
# run measured in HE_PROCS interleaved processes (median of their medians),
# cold first runs in HE_COLD = 3 processes. SPECS: the kernel:size list.
R=$OUT
HE_REPS=5 HE_COLD=3 HE_PROCS=${HE_PROCS:-5} timeout ${HE_TIMEOUT:-570} python3 scripts/he_bench.py ${BIN:-coexec} $R/he.json $SPECS > $R/he.txt 2>&1
cat $R/he.txt > $R/summary.txt
