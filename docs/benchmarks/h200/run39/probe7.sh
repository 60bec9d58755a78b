#!/bin/bash
# h200 run 39, call 7: jacobi 8192x4096's cold first run traced (the
# GPU's packages, transfers and the plan's claims), three processes;
# condensed into $OUT/cold-jacobi-<p>.txt.
export COEXEC_PROFILE=off
for p in 1 2 3; do
  COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::sched::plan=trace,coexec_engine::engine::run=trace,coexec_engine::exec::gpu_steal=trace \
    coexec bench --kernel ${K:-jacobi} --size ${S:-8192x4096} --devices all --warmup 1 --reps 1 --json > /tmp/c.out 2> /tmp/c.log
  sed 's/\x1b\[[0-9;]*m//g' /tmp/c.log | awk '/a GPU.s loop woke/{n++} n==1' | grep -v "claimant=[1-9][0-9]* \|device=0 claimant=[1-9]" \
    | sed 's/^[^ ]* *TRACE coexec_engine:://' | cut -c1-260 | head -150 > $OUT/cold-${K:-jacobi}-$p.txt
  tail -1 /tmp/c.out | cut -c1-600 >> $OUT/cold-${K:-jacobi}-$p.txt
done
