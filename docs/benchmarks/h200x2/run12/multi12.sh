#!/bin/bash
# Run 9's sweep (scripts/multi_bench.py) with this code on two H200s, over
# the seed kernels and the comparable set: scaling 1 GPU -> 2 GPUs -> 2 GPUs
# + CPU, HE warm and cold. Guarded by LIMIT seconds (the figures written so
# far come back).
R=$OUT
nproc > $R/machine.txt; nvidia-smi -L >> $R/machine.txt 2>&1
HE_REPS=3 HE_COLD=2 CPU_REPS=1 SOLO_GPU=hguided,static SOLO_CPU=static timeout ${LIMIT:-300} python3 scripts/multi_bench.py coexec $R/multi12.json ${SPECS:-nbody:262144 binomial:2^22 matmul:4096x4096 taylor:16776960} > $R/multi12.txt 2>&1
cp $R/multi12.txt $R/summary.txt
