#!/bin/bash
# h200 run 36: the rules of 1126f66 and 3a3e5d4 on and off, cold first runs and
# warm medians (scripts/cold-cfg.sh: PROCS interleaved processes a
# config, profiles off), with he_bench after. Run from the repository
# root on the device machine with coexec on PATH.
mkdir -p $OUT/ab $OUT/he
OUT=$OUT/ab PROCS=${PROCS:-4} WARMUP=3 REPS=5 \
  SPECS=${ABSPECS:-"mandelbrot:4096x4096 spmv:2^21 jacobi:8192x4096 gather:2^23 collatz:2^23 histogram:2^22"} \
  CONFIGS="new||;noirr|COEXEC_IRREGULAR=0|;nocome|COEXEC_STEAL_COME_BACK=0|" bash scripts/cold-cfg.sh
[ "${HE:-1}" = 1 ] && OUT=$OUT/he HE_PROCS=4 HE_TIMEOUT=400 \
  SPECS="jacobi:8192x4096 spmv:2^21 histogram:2^22 mandelbrot:4096x4096 gather:2^23 collatz:2^23" \
  bash docs/benchmarks/h200/run27/final-he.sh
true
