#!/bin/bash
# Warm runs of kernels the GPU does nearly alone (he_bench's warm figure:
# 3 warm-ups, 5 reps), this code (coexec) against main before this session
# (coexec-old), interleaved, PROCS processes each, with every run's lone
# depth and the learner's choices (debug log, gzipped).
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off
SPECS=${SPECS:-"mandelbrot:4096x4096 collatz:2^23"}
for rep in $(seq 1 ${PROCS:-4}); do
  for spec in $SPECS; do
    k=${spec%%:*}; s=${spec#*:}
    for b in coexec coexec-old; do
      COEXEC_LOG=coexec_engine::learn=debug timeout 60 $B/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 5 > /tmp/o.log 2>/tmp/o.err
      echo "$b $k $rep $(head -1 /tmp/o.log | sed 's/.*: \([0-9.]* s\).*/\1/') depths $(grep "lone GPU's next" /tmp/o.err | sed 's/.*packages: \([0-9]*\).*/\1/' | tr '\n' ' ') modes $(grep 'configuration of the next' /tmp/o.err | sed 's/.*chosen=\([A-Za-z()0-9]*\).*/\1/' | tr '\n' ' ')" >> $R/summary.txt
      gzip -c /tmp/o.err > $R/$b-$k-$rep.err.gz
    done
  done
done
cd $R && tar czf logs.tgz *.err.gz && rm *.err.gz
