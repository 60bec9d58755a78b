#!/bin/bash
# A staged GPU claims its next package earlier by its upload's time
# (COEXEC_UPLOAD_LEAD): on, off, and every package claimed ahead
# (COEXEC_PREFETCH_LEAD_US=1000000), in interleaved fresh processes, one
# binary, CPU + the H200, against the GPU alone's best solo configuration
# (dynamic:8, dedicated queue); then traced cold Collatz runs with the
# rule (cold-trace.sh). Results under $OUT.
set -u
base=$OUT
mkdir -p $base/ab $base/trace
OUT=$base/ab PROCS=${PROCS:-4} WARMUP=${WARMUP:-3} REPS=${REPS:-5} \
  SPECS="${SPECS:-collatz:2^23 gather:2^23 spmv:2^21 jacobi:8192x4096 mandelbrot:4096x4096 histogram:2^22}" \
  CONFIGS="${CONFIGS:-up||;noup|COEXEC_UPLOAD_LEAD=0|;ahead|COEXEC_PREFETCH_LEAD_US=1000000|}" bash scripts/cold-cfg.sh
OUT=$base/trace SPECS="collatz:2^23" bash docs/benchmarks/h200/run34/cold-trace.sh
