#!/bin/bash
# The upload lead (COEXEC_UPLOAD_LEAD) on two H200s with the CPU: on and
# off in interleaved fresh processes, one binary, against GPU 0 alone
# (dynamic:8, dedicated queue); cold = each process's first run, warm =
# the median of REPS after WARMUP. Results under $OUT/<set>/.
set -u
base=$OUT
for devs in ${SETS:-all}; do
  d=$base/${devs//,/-}; mkdir -p $d
  OUT=$d PROCS=${PROCS:-3} WARMUP=${WARMUP:-3} REPS=${REPS:-5} DEVS=$devs GPUDEVS=gpu0 \
    SPECS="${SPECS:-collatz:2^23 gather:2^23 jacobi:8192x4096 mandelbrot:4096x4096 spmv:2^21}" \
    CONFIGS="up||;noup|COEXEC_UPLOAD_LEAD=0|" bash scripts/cold-cfg.sh
done
