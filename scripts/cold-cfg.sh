#!/bin/bash
# Cold first runs (first_s of a fresh process) and warm medians (REPS
# runs, default 3, after WARMUP untimed ones, default 1) of co-executed
# HGuided under each of CONFIGS, against the GPU alone's best solo
# configuration (dynamic:8 over the dedicated queue), PROCS interleaved
# processes each, profiles off. A config is `name|ENV=V ENV=V|--flag
# value` (either part may be empty), optionally `|binary` after it (a
# `coexec` built at another commit; default `coexec`), configs separated
# by `;`. DEVS and
# GPUDEVS name the co-executed and the GPU-alone device sets (default
# `all` and `gpu`). Results under $OUT.
# (h200 run 30's cold-cfg.sh, run there from docs/benchmarks/h200/run30/,
# is this script with its defaults.)
R=$OUT; export COEXEC_PROFILE=off
W=${WARMUP:-1}; N=${REPS:-3}
SPECS=${SPECS:-"mandelbrot:4096x4096 gather:2^23 collatz:2^23 jacobi:8192x4096 spmv:2^21"}
CONFIGS=${CONFIGS:-"def||;w13||--workers 13;ded|COEXEC_TRANSFER_QUEUE=dedicated|"}
IFS=';' read -ra CFGS <<< "$CONFIGS"
# Each row: the cold and warm times, the CPU's items, and each device's
# first start and settle in the first run (us from its start).
row() { python3 -c '
import json,sys
r=json.loads(sys.stdin.read().strip().splitlines()[-1])
d=" ".join("%s:start %.0f settled %.0f" % (x["kind"], x["first_start_s"]*1e6, x["settled_s"]*1e6) for x in r.get("first_per_device") or [])
print("first %.3f ms warm %.3f ms cpu_items %s first_cpu_items %s | %s | verified %s" % (r["first_s"]*1e3, r["time_s"]*1e3, r.get("cpu_items"), r.get("first_cpu_items"), d, r["verified"]))'; }
nproc > $R/machine.txt; nvidia-smi -L >> $R/machine.txt 2>&1
for spec in $SPECS; do
  k=${spec%%:*}; s=${spec#*:}
  for p in $(seq ${PROCS:-4}); do
    for c in "${CFGS[@]}"; do
      IFS='|' read -r name vars flags bin <<< "$c"
      echo "$k all-$name p$p $(env $vars ${bin:-coexec} bench --kernel $k --size $s --devices ${DEVS:-all} $flags --warmup $W --reps $N --json 2>>$R/stderr.txt | row)" >> $R/summary.txt
    done
    echo "$k gpu p$p $(COEXEC_TRANSFER_QUEUE=dedicated coexec bench --kernel $k --size $s --devices ${GPUDEVS:-gpu} --scheduler dynamic:8 --warmup $W --reps $N --json 2>>$R/stderr.txt | row)" >> $R/summary.txt
  done
done
