#!/bin/bash
# A/B of the programs (lazy host coherence), this code (cg, kmeans) against
# main before this session (cg-old, kmeans-old), interleaved: CG 4096^2 x 30
# and k-means 2^24 and 2^22 x 20 on all devices and on the GPU alone.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
for rep in 1 2 3; do
  for b in "" "-old"; do
    for d in all gpu; do
      echo "cg$b-$d-$rep $(timeout 60 $B/cg$b 4096 30 $d 2>&1 | grep -E 'time per|steps|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
      for n in 16777216 4194304; do
        echo "kmeans$b-$n-$d-$rep $(timeout 60 $B/kmeans$b $n 20 $d 2>&1 | grep -E 'time per|steps|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
      done
    done
  done
done
