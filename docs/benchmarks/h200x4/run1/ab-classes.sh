#!/bin/bash
# Identical GPUs as one class in the learner: this code (coexec) against
# main before (coexec-old), every device of a 4-GPU host (the CPU workers
# and 4 H200s), HGuided without hints, profiles off; two rounds,
# interleaved, 3 warm-ups and 3 timed runs a process. Then the scaling
# sweep of this code on the CPU-with-GPUs configurations, and the
# learner's choices on two kernels.
R=$OUT; B=.device/bin; export PYTHONUNBUFFERED=1
SPECS=${SPECS:-matmul:4096x4096 taylor:16776960 mandelbrot:4096x4096 jacobi:8192x4096 gather:2^23 collatz:2^23 spmv:2^21 histogram:2^22}
for spec in $SPECS; do
  k=${spec%%:*}; s=${spec#*:}
  for round in 1 2; do
    for b in coexec coexec-old; do
      t=$(COEXEC_PROFILE=off timeout 60 $B/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 3 2>&1 | grep -oE '[0-9.]+ s \(median of 3\), verified=[a-z]+')
      echo "ab $k $s $b round $round: $t" >> $R/summary.txt
    done
  done
done
DEVICES=cpu,gpu0,gpu1,gpu2,gpu3 \
CONFIGS="gpu0,gpu1,gpu2,gpu3;cpu,gpu0,gpu1,gpu2,gpu3;cpu,gpu0,gpu1" \
HE_REPS=3 HE_COLD=2 CPU_REPS=1 SOLO_GPU=hguided SOLO_CPU=static \
  timeout ${LIMIT:-300} python3 scripts/multi_bench.py $B/coexec $R/scale4b.json $SPECS > $R/scale4b.txt 2>&1
cat $R/scale4b.txt >> $R/summary.txt
for k in mandelbrot:4096x4096 jacobi:8192x4096; do
  COEXEC_PROFILE=off COEXEC_LOG=coexec_engine::learn=debug timeout 60 $B/coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 6 --reps 3 > $R/learn-${k%%:*}.log 2>&1
done
