#!/bin/bash
# CG 4096^2 x 30 on all devices as a program (workers held awake), a
# program that parks them between steps, and run by run; the GPU alone as a
# program: whether held workers slow the runs the GPU makes alone. Then
# jacobi (eager coherence) with the transfers' timings.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
for rep in 1 2 3; do
  for m in "all program" "all parked" "all runs" "gpu program"; do
    echo "cg $m $rep $(timeout 60 $B/cg 4096 30 $m 2>&1 | grep -E 'time per|steps|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
  done
done
unset COEXEC_HOST_COHERENCE
for rep in 1 2; do
  COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::sched::transfers=debug timeout 60 $B/coexec bench --kernel jacobi --size 8192x4096 --devices all --warmup 12 --reps 3 > /tmp/o.log 2>/tmp/o.err
  echo "== jacobi all $rep" >> $R/summary.txt; head -3 /tmp/o.log | cut -c1-250 >> $R/summary.txt
  grep "transfer timed" /tmp/o.err | sed 's/.*way=//' | head -30 >> $R/summary.txt
  gzip -c /tmp/o.err > $R/jacobi-$rep.err.gz
done
