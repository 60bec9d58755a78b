#!/bin/bash
# h200 run 40, call 1: the small-size floor with the CPU's time box on (the
# default) over run 39's sixteen sweep specs, then with it off
# (COEXEC_MEASURE_BOX=0) over the specs that fell below 0.98 in run 39;
# then the learner's lines for histogram 2^19 and spmv 2^19 (cause (2)).
set -u
mkdir -p $OUT/on $OUT/off $OUT/probe
OUT=$OUT/on LIMIT=200 bash docs/benchmarks/h200/run39/sweep10.sh > /dev/null
OUT=$OUT/off COEXEC_MEASURE_BOX=0 LIMIT=110 \
  SPECS="gather:2^10 histogram:2^10 spmv:2^10 gather:2^13 histogram:2^13 spmv:2^13 gather:2^16 spmv:2^16" \
  bash docs/benchmarks/h200/run39/sweep10.sh > /dev/null
OUT=$OUT/probe K=histogram S=2^19 P=3 timeout 60 bash docs/benchmarks/h200/run39/probe1.sh
OUT=$OUT/probe K=spmv S=2^19 P=3 timeout 60 bash docs/benchmarks/h200/run39/probe1.sh
echo "== on"; cat $OUT/on/sweep.txt | tail -16
echo "== off"; cat $OUT/off/sweep.txt | tail -8
