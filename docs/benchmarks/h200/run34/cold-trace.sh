#!/bin/bash
# Where a GPU-heavy kernel's cold first run loses against the GPU alone's
# best solo configuration: the first run's packages as traces and the GPU
# loop's and its stealing's lines, co-executed (HGuided, CPU + GPU) and
# the GPU alone (dynamic:8 over the dedicated queue), PROCS fresh
# processes each, profiles off. Results under $OUT.
R=$OUT; export COEXEC_PROFILE=off
for spec in ${SPECS:-collatz:2^23 gather:2^23}; do
  K=${spec%%:*}; S=${spec#*:}
  for p in $(seq ${PROCS:-3}); do
    COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::exec::gpu_steal=trace,coexec_engine::engine::run=debug \
    timeout 60 coexec bench --kernel $K --size $S --devices all --warmup 1 --reps 1 --json \
      --trace $R/$K-all-$p.json --trace-first > $R/$K-all-$p.log 2>&1
    COEXEC_TRANSFER_QUEUE=dedicated COEXEC_LOG=coexec_engine::exec::gpu=trace \
    timeout 60 coexec bench --kernel $K --size $S --devices gpu --scheduler dynamic:8 --warmup 1 --reps 1 --json \
      --trace $R/$K-gpu-$p.json --trace-first > $R/$K-gpu-$p.log 2>&1
  done
done
(cd $R && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
