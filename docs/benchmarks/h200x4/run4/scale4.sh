#!/bin/bash
# Scaling 1 -> 2 -> 4 GPUs (+ the CPU workers) on a 4-GPU host
# (scripts/multi_bench.py): each device's best solo configuration, then
# HGuided without hints on 2 GPUs, 2 GPUs + CPU, 4 GPUs, 4 GPUs + CPU, warm
# and cold (against each device's cold solo run), every output verified.
# Guarded by LIMIT seconds; the figures written so far come back.
R=$OUT; B=.device/bin
export PYTHONUNBUFFERED=1
$B/coexec info > $R/info.txt 2>&1
nvidia-smi -L >> $R/info.txt 2>&1; nvidia-smi topo -m >> $R/info.txt 2>&1; nproc >> $R/info.txt
DEVICES=cpu,gpu0,gpu1,gpu2,gpu3 \
CONFIGS="gpu0,gpu1;cpu,gpu0,gpu1;gpu0,gpu1,gpu2,gpu3;cpu,gpu0,gpu1,gpu2,gpu3" \
HE_REPS=3 HE_COLD=2 CPU_REPS=1 SOLO_GPU=hguided,dynamic:8 SOLO_CPU=static \
  timeout ${LIMIT:-500} python3 scripts/multi_bench.py $B/coexec $R/scale4.json \
  ${SPECS:-binomial:2^22 nbody:262144 matmul:4096x4096 taylor:16776960 gather:2^23 collatz:2^23 jacobi:8192x4096 spmv:2^21 mandelbrot:4096x4096 histogram:2^22} > $R/scale4.txt 2>&1
cp $R/scale4.txt $R/summary.txt
