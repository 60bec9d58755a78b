#!/bin/bash
# Programs (CG, k-means; lazy and eager host coherence) with the step under
# test (cg, kmeans) against main before it (cg-old, kmeans-old), processes
# interleaved, and each program on the GPU alone; profiles off. Then ab.sh.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
B=.device/bin
one() { # label, coherence, program, args...
  local n=$1 coh=$2; shift 2
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-200} ] && return
  echo "$n $(COEXEC_HOST_COHERENCE=$coh timeout 60 "$@" 2>&1 | grep -E 'time per|differs|Error' | tr '\n' ' ')" >> $R/summary.txt
}
for rep in ${REPS:-1 2}; do
  for v in "" -old; do
    one cg$v-lazy-all-$rep lazy $B/cg$v 4096 30 all
    one kmeans$v-lazy-all-$rep lazy $B/kmeans$v 16777216 20 all
  done
  one cg-lazy-gpu-$rep lazy $B/cg 4096 30 gpu
  one kmeans-lazy-gpu-$rep lazy $B/kmeans 16777216 20 gpu
done
for v in "" -old; do
  one cg$v-eager-all eager $B/cg$v 4096 30 all
  one kmeans$v-eager-all eager $B/kmeans$v 16777216 20 all
done
one cg-eager-gpu eager $B/cg 4096 30 gpu
one kmeans-eager-gpu eager $B/kmeans 16777216 20 gpu
