#!/bin/bash
# Programs (CG 4096^2 x 30 iterations, k-means 2^24 x 20; lazy and eager
# host coherence): the step (cg, kmeans) against the code before it
# (cg-old, kmeans-old) on all devices, and the GPU alone, processes
# interleaved, profiles off.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
B=.device/bin
one() { # label, coherence, program, args...
  local n=$1 coh=$2; shift 2
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-400} ] && return
  echo "$n $(COEXEC_HOST_COHERENCE=$coh timeout 60 "$@" 2>&1 | grep -E 'time per|differs|Error' | tr '\n' ' ')" >> $R/summary.txt
}
for rep in ${REPS:-1 2}; do for coh in lazy eager; do
  for b in cg cg-old; do one $b-$coh-all-$rep $coh $B/$b 4096 30 all; done
  one cg-$coh-gpu-$rep $coh $B/cg 4096 30 gpu
  for b in kmeans kmeans-old; do one $b-$coh-all-$rep $coh $B/$b 16777216 20 all; done
  one kmeans-$coh-gpu-$rep $coh $B/kmeans 16777216 20 gpu
done; done
