#!/bin/bash
# h200 run 39, call 8: cold first runs and warm medians (warmup 3, reps 5)
# of this run's code (`new`), with COEXEC_UPLOAD_WAITS=0 (`nowait`), and
# of the session's start (`base`, binary coexec-base, ac6572e), against
# the GPU alone (dynamic:8, dedicated queue), PROCS interleaved processes
# each, profiles off. Results under $OUT.
OUT=$OUT PROCS=${PROCS:-5} WARMUP=3 REPS=5 \
  SPECS="${SPECS:-jacobi:8192x4096 collatz:2^23 gather:2^23 histogram:2^22 spmv:2^21 mandelbrot:4096x4096}" \
  CONFIGS="new||;nowait|COEXEC_UPLOAD_WAITS=0|;base|||coexec-base" \
  bash scripts/cold-cfg.sh
python3 docs/benchmarks/h200/run38/summ.py $OUT/summary.txt | sort
