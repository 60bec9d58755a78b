#!/bin/bash
# A GPU's steal keeps a worker only the whole units it ends by the common
# end (COEXEC_KEEP_WHOLE): on and off in interleaved fresh processes, one
# binary, CPU + the H200, against the GPU alone's best solo configuration
# (dynamic:8, dedicated queue); cold = each process's first run, warm =
# the median of REPS after WARMUP. Results under $OUT.
set -u
PROCS=${PROCS:-5} WARMUP=${WARMUP:-3} REPS=${REPS:-5} \
  SPECS="${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 histogram:2^22 jacobi:8192x4096 spmv:2^21}" \
  CONFIGS="whole||;nearest|COEXEC_KEEP_WHOLE=0|" bash scripts/cold-cfg.sh
