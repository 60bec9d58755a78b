#!/bin/bash
# Programs (CG, k-means; lazy and eager host coherence) with transfers
# chosen per run (COEXEC_TRANSFER_QUEUE=auto, the new default) against the
# compute queue for every run (=compute), on all devices and on the GPU
# alone, processes interleaved, profiles off.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
B=.device/bin
one() { # label, coherence, queue, program, args...
  local n=$1 coh=$2 q=$3; shift 3
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-400} ] && return
  echo "$n $(COEXEC_TRANSFER_QUEUE=$q COEXEC_HOST_COHERENCE=$coh timeout 60 "$@" 2>&1 | grep -E 'time per|differs|Error' | tr '\n' ' ')" >> $R/summary.txt
}
for rep in ${REPS:-1 2}; do for coh in lazy eager; do for dev in all gpu; do for q in auto compute; do
  one cg-$coh-$dev-$q-$rep $coh $q $B/cg 4096 30 $dev
  one kmeans-$coh-$dev-$q-$rep $coh $q $B/kmeans 16777216 20 $dev
done; done; done; done
