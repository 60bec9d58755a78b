#!/bin/bash
# Switches' A/B on cold first runs (first_s of a fresh process) and warm
# medians (three runs after it): the co-executed run under each of
# CONFIGS (names, each `name=VAR=0,VAR=0` or `name=` for all rules on),
# against the GPU alone's best solo configuration (dynamic:8 over the
# dedicated queue; with CPU=1 also the CPU alone, static), PROCS
# interleaved processes each, profiles off,
# he_bench's command form; then one traced first run with every rule on
# per kernel.
R=$OUT; export COEXEC_PROFILE=off
SPECS=${SPECS:-"mandelbrot:4096x4096 gather:2^23 collatz:2^23"}
CONFIGS=${CONFIGS:-"on= off=COEXEC_STEAL_IN_FLIGHT=0"}
row() { python3 -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); print("first %.3f ms warm %.3f ms cpu_items %s verified %s" % (r["first_s"]*1e3, r["time_s"]*1e3, r.get("first_cpu_items"), r["verified"]))'; }
for spec in $SPECS; do
  k=${spec%%:*}; s=${spec#*:}
  for p in $(seq ${PROCS:-3}); do
    for c in $CONFIGS; do
      name=${c%%=*}; vars=${c#*=}
      echo "$k all-$name p$p $(env ${vars//,/ } coexec bench --kernel $k --size $s --devices all --warmup 1 --reps 3 --json | row)" >> $R/summary.txt
    done
    echo "$k gpu p$p $(COEXEC_TRANSFER_QUEUE=dedicated coexec bench --kernel $k --size $s --devices gpu --scheduler dynamic:8 --warmup 1 --reps 3 --json | row)" >> $R/summary.txt
    [ -n "$CPU" ] && echo "$k cpu p$p $(coexec bench --kernel $k --size $s --devices cpu --scheduler static --warmup 1 --reps 3 --json | row)" >> $R/summary.txt
  done
  COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::exec::gpu_steal=trace \
    coexec bench --kernel $k --size $s --devices all --warmup 1 --reps 1 --trace $R/$k-on.json --trace-first > $R/$k-on.log 2>&1
done
(cd $R && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
