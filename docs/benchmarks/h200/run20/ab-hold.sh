#!/bin/bash
# CG (lazy coherence, 4096^2 x 30): held workers park after 2 ms without
# a job (cg) against the step before it (cg-old), all devices, four
# interleaved processes each; the GPU alone; one process of each with the
# last runs' host steps.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for rep in 1 2 3 4; do
  for p in cg cg-old; do echo "$p-all-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/$p 4096 30 all 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt; done
done
echo "cg-gpu $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/cg 4096 30 gpu 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
for p in cg cg-old; do
  COEXEC_HOST_COHERENCE=lazy COEXEC_LOG=coexec_engine::engine::phases=trace timeout 60 $B/$p 4096 30 all > $R/$p.log 2>&1
  echo "$p: $(grep 'run steps' $R/$p.log | tail -8 | sed 's/.*claimants done", \([0-9]*\)).*/\1/' | tr '\n' ' ')" >> $R/summary.txt
done
