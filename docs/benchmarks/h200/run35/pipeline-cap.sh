#!/bin/bash
# h200 run 35: a staged GPU's packages cut to a geometric tail
# (COEXEC_PIPELINE_CAP) on and off in interleaved fresh processes
# (scripts/cold-cfg.sh); then PROCS_TRACE traced first runs per kernel
# with the rule. Results under $OUT.
set -u
mkdir -p $OUT/ab $OUT/trace
OUT=$OUT/ab PROCS=${PROCS:-5} WARMUP=3 REPS=5 \
  SPECS="${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 jacobi:8192x4096 spmv:2^21 histogram:2^22}" \
  CONFIGS="cap||;nocap|COEXEC_PIPELINE_CAP=0|" bash scripts/cold-cfg.sh
export COEXEC_PROFILE=off
for spec in ${TSPECS:-collatz:2^23 gather:2^23 mandelbrot:4096x4096 jacobi:8192x4096}; do
  K=${spec%%:*}; S=${spec#*:}
  for p in $(seq ${PROCS_TRACE:-2}); do
    COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::sched::plan=trace \
    timeout 60 coexec bench --kernel $K --size $S --devices all --warmup 3 --reps 1 --json \
      --trace $OUT/trace/$K-all-$p.json --trace-first > $OUT/trace/$K-all-$p.log 2>&1
  done
done
(cd $OUT/trace && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
