#!/bin/bash
# CG 4096^2 x 30 (lazy host coherence, profiles off), ROUNDS rounds of all
# devices and the GPU alone: the whole line, with the first and second
# iterations' runs (each device's share, uploads, downloads).
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
timeout 60 $B/cg 4096 30 all > /dev/null 2>&1
for rep in $(seq ${ROUNDS:-2}); do
  for d in all gpu; do
    echo "== cg-$d-$rep" >> $R/summary.txt
    timeout 60 $B/cg 4096 30 $d 2>&1 | grep -E 'time per|steps|iteration.s runs|differs|rror|verified' >> $R/summary.txt
  done
done
