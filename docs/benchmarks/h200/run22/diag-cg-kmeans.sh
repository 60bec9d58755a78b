#!/bin/bash
# CG 4096^2 x 30 on all devices and the GPU alone with each GPU package's
# times and the lone GPU's depth (one process each), then k-means 2^24 x 20
# on both, three interleaved processes (lazy coherence).
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
timeout 60 $B/cg 4096 30 all > /dev/null 2>&1
for d in all gpu; do
  COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::learn=debug,coexec_engine::engine::phases=trace timeout 60 $B/cg 4096 30 $d > /tmp/o.log 2>/tmp/o.err
  echo "== cg $d" >> $R/summary.txt; grep -E 'time per|steps|rror' /tmp/o.log >> $R/summary.txt
  gzip -c /tmp/o.err > $R/cg-$d.err.gz
done
for rep in 1 2 3; do
  for d in all gpu; do
    echo "kmeans-$d-$rep $(timeout 60 $B/kmeans 16777216 20 $d 2>&1 | grep -E 'time per|steps|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
  done
done
cd $R && tar czf logs.tgz *.err.gz && rm *.err.gz
