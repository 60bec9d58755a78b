#!/bin/bash
# h200 run 38, call 1: a co-executed first run's GPU start and end, with
# and without the dispatch loop's thread warmed at engine creation
# (COEXEC_EXP_NOWARM=1 turns it off) and with and without the wait for
# the run's empty closing transfer batch (COEXEC_EXP_CLOSEWAIT=1 waits as
# before). Traced first runs of Mandelbrot (two processes each), then
# scripts/cold-cfg.sh over five kernels. Results under $OUT.
mkdir -p $OUT/trace $OUT/ab
{ nproc; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1;
  ls /sys/devices/system/cpu/cpu0/cpuidle 2>&1; grep -m1 "model name" /proc/cpuinfo;
  grep -m1 hypervisor /proc/cpuinfo | cut -c1-20; } > $OUT/machine.txt
export COEXEC_PROFILE=off
for p in 1 2; do
  for c in warm nowarm; do
    v=; [ $c = nowarm ] && v=COEXEC_EXP_NOWARM=1
    env $v COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::engine::run=trace \
      coexec bench --kernel mandelbrot --size 4096x4096 --devices all --warmup 0 --reps 1 --json \
      > $OUT/trace/$c-$p.out 2> $OUT/trace/$c-$p.log
  done
done
OUT=$OUT/ab PROCS=${PROCS:-5} WARMUP=3 REPS=5 \
  SPECS="mandelbrot:4096x4096 collatz:2^23 gather:2^23 histogram:2^22 jacobi:8192x4096" \
  CONFIGS="new||;nowarm|COEXEC_EXP_NOWARM=1|;closewait|COEXEC_EXP_CLOSEWAIT=1|;old|COEXEC_EXP_NOWARM=1 COEXEC_EXP_CLOSEWAIT=1|" \
  bash scripts/cold-cfg.sh
cat $OUT/ab/summary.txt | cut -c1-200 | tail -5
