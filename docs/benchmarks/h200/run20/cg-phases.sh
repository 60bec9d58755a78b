#!/bin/bash
# CG (lazy coherence, 4096^2 x 30) with each run's host steps traced, all
# devices and the GPU alone: the last 12 runs' steps of each.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for d in all gpu; do
  COEXEC_HOST_COHERENCE=lazy COEXEC_LOG=coexec_engine::engine::phases=trace timeout 60 $B/cg 4096 30 $d > $R/cg-$d.log 2>&1
  echo "== $d $(grep -E 'time per' $R/cg-$d.log)" >> $R/summary.txt
  grep "run steps" $R/cg-$d.log | tail -12 | sed 's/.*steps=//' >> $R/summary.txt
done
