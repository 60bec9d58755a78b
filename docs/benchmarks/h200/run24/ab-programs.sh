#!/bin/bash
# A/B of the programs (lazy host coherence), this code (cg) against main
# before this session (cg-old, built from 2860f50), interleaved: CG 4096^2
# x 30 (and k-means x 20 at the sizes of $KSIZES, none by default) on all
# devices and on the GPU alone. One discarded CG process first (a machine's first
# minute ran 20-50% slower).
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
KSIZES=${KSIZES:-}
timeout 60 $B/cg 4096 30 all > /dev/null 2>&1
for rep in 1 2 3; do
  for b in "" "-old"; do
    for d in all gpu; do
      echo "cg$b-$d-$rep $(timeout 60 $B/cg$b 4096 30 $d 2>&1 | grep -E 'time per|steps|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
      for n in $KSIZES; do
        echo "kmeans$b-$n-$d-$rep $(timeout 60 $B/kmeans$b $n 20 $d 2>&1 | grep -E 'time per|steps|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
      done
    done
  done
done
