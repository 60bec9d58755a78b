#!/bin/bash
# CG 4096^2 x 12, all devices and the GPU alone (lazy coherence): each GPU
# package's host and GPU-clock time and each upload batch, to tell why the
# GPU alone within a run on all devices is slower than on the GPU alone.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
for rep in 1 2; do
  for d in all gpu; do
    COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::learn=debug,coexec_engine::engine::phases=trace timeout 60 $B/cg 4096 12 $d > /tmp/o.log 2>/tmp/o.err
    echo "== cg $d $rep" >> $R/summary.txt; grep -E 'time per|steps|rror' /tmp/o.log >> $R/summary.txt
    gzip -c /tmp/o.err > $R/cg-$d-$rep.err.gz
  done
done
cd $R && tar czf logs.tgz *.err.gz && rm *.err.gz
