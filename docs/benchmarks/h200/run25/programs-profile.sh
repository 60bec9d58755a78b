#!/bin/bash
# CG 4096^2 x 30 (lazy host coherence) on all devices and on the GPU
# alone, each from a profile written by an earlier process of the same
# devices (profiles on, one cache directory per device set), and with
# profiles off; ROUNDS interleaved rounds. One discarded process first.
R=$OUT; B=.device/bin; export COEXEC_HOST_COHERENCE=lazy
BIN=${BIN:-cg}
line() { grep -E 'time per|steps|differs|rror' | tr '\n' ' '; }
COEXEC_PROFILE=off timeout 60 $B/$BIN 4096 30 all > /dev/null 2>&1
for d in all gpu; do
  mkdir -p /tmp/cgprof-$d
  COEXEC_CACHE_DIR=/tmp/cgprof-$d timeout 60 $B/$BIN 4096 30 $d > /dev/null 2>&1
done
for rep in $(seq ${ROUNDS:-3}); do
  for d in all gpu; do
    echo "$BIN-$d-profile-$rep $(COEXEC_CACHE_DIR=/tmp/cgprof-$d timeout 60 $B/$BIN 4096 30 $d 2>&1 | line)" >> $R/summary.txt
    echo "$BIN-$d-off-$rep $(COEXEC_PROFILE=off timeout 60 $B/$BIN 4096 30 $d 2>&1 | line)" >> $R/summary.txt
  done
done
