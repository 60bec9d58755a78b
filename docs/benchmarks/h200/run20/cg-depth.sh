#!/bin/bash
# CG (lazy coherence, 4096^2 x 30), the GPU alone and all devices, with
# the lone GPU's depth per run and each run's host steps logged.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for d in gpu all; do
  COEXEC_HOST_COHERENCE=lazy COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::engine::phases=trace timeout 60 $B/cg 4096 30 $d > $R/cg-$d.log 2>&1
  echo "== $d $(grep -E 'time per' $R/cg-$d.log)" >> $R/summary.txt
  grep -E "lone GPU's next run|run steps" $R/cg-$d.log | tail -16 | sed -e 's/.*depth=Depth { packages: \([0-9]*\), own_queue: \([a-z]*\) }.*/depth \1 own_queue \2/' -e 's/.*claimants done", \([0-9]*\)).*/claimants done \1 us/' | paste - - >> $R/summary.txt
done
