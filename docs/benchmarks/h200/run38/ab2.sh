#!/bin/bash
# h200 run 38, call 2: cold first runs and warm medians (warmup 3, reps 5)
# of this code (`new`), with COEXEC_STANDBY=0 (`nostandby`: every idle
# claimant stays until the run is done, as before) and with every step
# of this run off (`old`: also COEXEC_EXP_NOWARM=1 COEXEC_EXP_CLOSEWAIT=1),
# against the GPU alone (dynamic:8, dedicated queue), PROCS interleaved
# processes each, profiles off. Results under $OUT.
OUT=$OUT PROCS=${PROCS:-5} WARMUP=3 REPS=5 \
  SPECS="${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 histogram:2^22 jacobi:8192x4096 spmv:2^21}" \
  CONFIGS="new||;nostandby|COEXEC_STANDBY=0|;old|COEXEC_STANDBY=0 COEXEC_EXP_NOWARM=1 COEXEC_EXP_CLOSEWAIT=1|" \
  bash scripts/cold-cfg.sh
python3 docs/benchmarks/h200/run38/summ.py $OUT/summary.txt | sort
