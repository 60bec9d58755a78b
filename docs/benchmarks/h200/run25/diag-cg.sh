#!/bin/bash
# CG 4096^2 x 30 on all devices (lazy host coherence, profiles off), the
# learner's decisions logged: per run, the configuration chosen and a lone
# GPU's depth, in run order (spmv, dot, update, direction per iteration).
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
for b in ${BINS:-cg}; do
  COEXEC_LOG=coexec_engine::learn=debug timeout 60 $B/$b 4096 30 ${DEVS:-all} > /tmp/cg.out 2>/tmp/cg.err
  echo "== $b $(grep -E 'time per|steps' /tmp/cg.out | tr '\n' ' ')" >> $R/summary.txt
  grep -E "configuration of the next run|lone GPU's next run" /tmp/cg.err \
    | sed -E 's/.*(configuration of the next run|a lone GPU.s next run)/\1/; s/predicted=.*chosen=/chosen=/; s/ladder=.*//' \
    | head -${LINES_EACH:-140} | awk '{print NR": "$0}' >> $R/summary.txt
done
