#!/bin/bash
# A GPU claims its next package as soon as it can (COEXEC_PREFETCH_LEAD_US
# = 1 s: every package claimed ahead) against the default lead, in
# interleaved fresh processes, one binary, CPU + the H200, against the GPU
# alone's best solo configuration (dynamic:8, dedicated queue). Results
# under $OUT.
set -u
PROCS=${PROCS:-4} WARMUP=${WARMUP:-3} REPS=${REPS:-5} \
  SPECS="${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 histogram:2^22 jacobi:8192x4096 spmv:2^21}" \
  CONFIGS="${CONFIGS:-def||;ahead|COEXEC_PREFETCH_LEAD_US=1000000|}" bash scripts/cold-cfg.sh
