#!/bin/bash
# h200 run 38, call 3: where a co-executed first run's end goes, from the
# run module's trace alone (its steps, each claimant's end): Mandelbrot
# 4096^2 and Collatz 2^23, three processes each, warmup 0, one rep.
mkdir -p $OUT/trace; export COEXEC_PROFILE=off
for k in mandelbrot:4096x4096 collatz:2^23; do
  for p in 1 2 3; do
    COEXEC_LOG=coexec_engine::engine::run=trace coexec bench --kernel ${k%%:*} --size ${k#*:} \
      --devices all --warmup 0 --reps 1 --json > $OUT/trace/${k%%:*}-$p.out 2> $OUT/trace/${k%%:*}-$p.log
    grep -h "steps\|loop ended\|joined" $OUT/trace/${k%%:*}-$p.log | sed 's/.*TRACE //' | cut -c1-400 | tail -6
    python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print(r["first_s"], [(x["kind"], x["first_start_s"], x["settled_s"]) for x in r["first_per_device"]])' $OUT/trace/${k%%:*}-$p.out
  done
done
