#!/bin/bash
# CG and k-means under lazy host coherence, co-executed: the learner's
# decisions and the GPU's packages (host and GPU time), profiles off.
R=$OUT; export COEXEC_PROFILE=off COEXEC_HOST_COHERENCE=lazy
B=.device/bin
COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::exec::gpu=trace timeout 60 $B/cg 4096 30 all > $R/cg.out 2> $R/cg.log
COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::exec::gpu=trace timeout 60 $B/kmeans 16777216 20 all > $R/kmeans.out 2> $R/kmeans.log
timeout 60 $B/cg 4096 30 gpu > $R/cg-gpu.out 2>&1
cat $R/cg.out $R/kmeans.out $R/cg-gpu.out > $R/summary.txt
gzip $R/cg.log $R/kmeans.log
