#!/bin/bash
# Where a program's iteration goes (each step's time per iteration and what
# is left outside them), the learner's choice per kernel and each run's
# host steps: CG 4096^2 x 30 and k-means 2^24 x 20, all devices and the GPU
# alone, two processes each (lazy host coherence). Then jacobi on all
# devices with the transfers' timings.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
L=coexec_engine::learn=debug,coexec_engine::engine::phases=trace,coexec_engine::sched::transfers=debug
for rep in 1 2; do
  for d in all gpu; do
    COEXEC_LOG=$L timeout 60 $B/cg 4096 30 $d > /tmp/o.log 2>/tmp/o.err
    echo "== cg $d $rep" >> $R/summary.txt; grep -E 'time per|steps|rror' /tmp/o.log >> $R/summary.txt
    gzip -c /tmp/o.err > $R/cg-$d-$rep.err.gz
    COEXEC_LOG=$L timeout 60 $B/kmeans 16777216 20 $d > /tmp/o.log 2>/tmp/o.err
    echo "== kmeans $d $rep" >> $R/summary.txt; grep -E 'time per|steps|rror' /tmp/o.log >> $R/summary.txt
    gzip -c /tmp/o.err > $R/kmeans-$d-$rep.err.gz
  done
done
for rep in 1 2; do
  COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::sched::transfers=debug timeout 60 $B/coexec bench --kernel jacobi --size 8192x4096 --devices all --warmup 12 --reps 3 > /tmp/o.log 2>/tmp/o.err
  echo "== jacobi all $rep" >> $R/summary.txt; head -1 /tmp/o.log | cut -c1-150 >> $R/summary.txt
  grep "transfer timed" /tmp/o.err | sed 's/.*way=//' | head -40 >> $R/summary.txt
  gzip -c /tmp/o.err > $R/jacobi-$rep.err.gz
done
cd $R && tar czf logs.tgz *.err.gz && rm *.err.gz
