#!/bin/bash
# h200 run 41, call 3: k-means 2^24 x 20 (lazy coherence) on the GPU alone
# and on every device, three processes each, the whole output (steps per
# iteration) and, for one process each, the learner's lines and the GPU's
# packages and transfers; profiles off.
export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy PATH=$PWD/.device/bin:$PATH
mkdir -p $OUT/k
for rep in 1 2 3; do for d in gpu all; do
  echo "== kmeans $d $rep"; timeout 60 kmeans 16777216 20 $d 2>&1 | grep -E 'time per|steps|differs|rror'
done; done
for d in gpu all; do
  COEXEC_LOG="coexec_engine::learn=debug,coexec_engine::exec::gpu=trace,coexec_engine::engine::phases=trace" timeout 60 kmeans 16777216 20 $d > $OUT/k/kmeans-$d.log 2>&1
  grep -E 'time per|steps' $OUT/k/kmeans-$d.log
done
(cd $OUT && tar czf k.tgz k && rm -rf k)
