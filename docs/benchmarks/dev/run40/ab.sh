#!/bin/bash
# dev run 40: a GPU's share of an even finish counting the CPU workers'
# unstarted units (COEXEC_CPU_HELD=1, the default) against not
# (COEXEC_CPU_HELD=0): interleaved fresh processes, `coexec bench` warm
# (6 untimed runs, median of 10) and each process's first run (cold),
# profiles off; one JSON line per process in raw/ab.jsonl.
cd /work/main
BIN=${BIN:-target/release/coexec}
out=${OUTF:-docs/benchmarks/dev/run40/raw/ab.jsonl}
: > $out
for round in $(seq 1 ${ROUNDS:-6}); do
  for spec in ${SPECS:-blackscholes:100003 mandelbrot:512x512 gather:100003 collatz:2^16}; do
    for held in 1 0; do
      line=$(COEXEC_PROFILE=off COEXEC_CPU_HELD=$held $BIN bench --kernel ${spec%%:*} --size ${spec##*:} --warmup 6 --reps 10 --json 2>/dev/null | tail -1)
      echo "{\"round\": $round, \"spec\": \"$spec\", \"held\": $held, \"r\": $line}" >> $out
    done
  done
done
echo DONE >> docs/benchmarks/dev/run40/raw/done
