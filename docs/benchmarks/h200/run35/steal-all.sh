#!/bin/bash
# h200 run 35: an idle GPU takes every remainder whole where what the
# workers would keep is cheap for it (COEXEC_STEAL_ALL), and where a cold
# co-executed run's end goes. 1) PROCS_TRACE traced first runs per kernel
# (the GPU loop, its steals, the run's steps), co-executed and the GPU
# alone; 2) the rule on / off in interleaved fresh processes
# (scripts/cold-cfg.sh). Results under $OUT.
set -u
D=$(dirname "$0")
mkdir -p $OUT/trace $OUT/ab
export COEXEC_PROFILE=off
for spec in ${TSPECS:-mandelbrot:4096x4096 gather:2^23 collatz:2^23}; do
  K=${spec%%:*}; S=${spec#*:}
  for p in $(seq ${PROCS_TRACE:-2}); do
    COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::exec::gpu_steal=trace,coexec_engine::engine::phases=trace \
    timeout 60 coexec bench --kernel $K --size $S --devices all --warmup 1 --reps 1 --json \
      --trace $OUT/trace/$K-all-$p.json --trace-first > $OUT/trace/$K-all-$p.log 2>&1
    COEXEC_TRANSFER_QUEUE=dedicated COEXEC_LOG=coexec_engine::engine::phases=trace \
    timeout 60 coexec bench --kernel $K --size $S --devices gpu --scheduler dynamic:8 --warmup 1 --reps 1 --json \
      --trace $OUT/trace/$K-gpu-$p.json --trace-first > $OUT/trace/$K-gpu-$p.log 2>&1
  done
done
(cd $OUT/trace && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
OUT=$OUT/ab PROCS=${PROCS:-5} WARMUP=3 REPS=5 \
  SPECS="${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 jacobi:8192x4096 spmv:2^21 histogram:2^22}" \
  CONFIGS="all||;noall|COEXEC_STEAL_ALL=0|" bash scripts/cold-cfg.sh
