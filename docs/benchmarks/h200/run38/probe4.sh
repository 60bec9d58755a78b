#!/bin/bash
# h200 run 38, call 4: as probe3.sh, with the run's steps
# (coexec_engine::engine::phases) and the standby chosen; Mandelbrot
# 4096^2, four processes; condensed into $OUT/steps.txt.
export COEXEC_PROFILE=off
for p in 1 2 3 4; do
  COEXEC_LOG=coexec_engine::engine::run=trace,coexec_engine::engine::phases=trace coexec bench --kernel mandelbrot --size 4096x4096 \
    --devices all --warmup 0 --reps 2 --json > /tmp/m.out 2> /tmp/m.log
  { echo "== p$p"; grep -h "standby\|steps\|GPU's loop\|joined\|prepared" /tmp/m.log | sed 's/.*TRACE //' | cut -c1-500;
    grep "loop ended worker" /tmp/m.log | sed 's/.*worker=//' | sort -t= -k2 -n | tail -3 | tr '\n' ' '; echo;
    python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print(r["first_s"], [(x["kind"], x["first_start_s"], x["settled_s"]) for x in r["first_per_device"]])' /tmp/m.out; } >> $OUT/steps.txt
done
cat $OUT/steps.txt
