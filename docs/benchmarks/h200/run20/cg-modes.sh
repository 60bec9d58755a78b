#!/bin/bash
# CG (lazy coherence, 4096^2 x 30): all devices and the GPU alone, as a
# program (workers held awake between steps) and parked (workers parked
# between steps); three interleaved processes of each.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for rep in 1 2 3; do
  for d in all gpu; do for m in program parked; do
    echo "cg-$d-$m-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/cg 4096 30 $d $m 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
  done; done
done
