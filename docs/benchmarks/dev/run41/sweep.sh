#!/bin/bash
# dev run 41: a short run's slow sample measured again once
# (COEXEC_SHORT_RETRY): dev run 39's sweep (every GPU's wave taken as 2^20
# units; he_bench's warm sweep, one process per configuration) with this
# rule on and off, in interleaved rounds (ROUNDS, default "1 2").
cd /work/main
OUT_DIR=docs/benchmarks/dev/run41/raw SWITCH=COEXEC_SHORT_RETRY TAG=retry \
  bash docs/benchmarks/dev/run39/sweep.sh
