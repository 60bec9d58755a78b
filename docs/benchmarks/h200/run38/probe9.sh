#!/bin/bash
# h200 run 38, call 9: where a co-executed first run of Collatz 2^23 ends
# (the run module's trace and its steps), ten processes; condensed into
# $OUT/steps$TAG.txt (first run only). BIN: the binary (default coexec); TAG:
# the file's suffix.
export COEXEC_PROFILE=off
for p in $(seq 10); do
  COEXEC_LOG=coexec_engine::engine::run=trace,coexec_engine::engine::phases=trace ${BIN:-coexec} bench --kernel collatz --size 2^23 \
    --devices all --warmup 0 --reps 1 --json > /tmp/c.out 2> /tmp/c.log
  { echo "== p$p $(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print(r["first_s"], [(x["kind"], x["first_start_s"], x["settled_s"]) for x in r["first_per_device"]])' /tmp/c.out)";
    awk '/run steps/{n++} n<1' /tmp/c.log | grep "GPU's loop woke\|GPU's run prepared\|GPU's loop ended\|joined" | sed 's/.*TRACE //' | cut -c1-200;
    grep -m1 "run steps" /tmp/c.log | sed 's/.*steps=//' | cut -c1-400;
    awk '/run steps/{n++} n<1' /tmp/c.log | grep "loop ended worker" | sed 's/.*worker=//' | sort -t= -k2 -n | tail -2 | tr '\n' ' '; echo; } >> $OUT/steps${TAG}.txt
done
cat $OUT/steps${TAG}.txt
