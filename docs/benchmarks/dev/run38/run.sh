#!/bin/bash
# dev run 38: this session's code (`new`) against the session's start
# (`base`, 9f4e3bc), he_bench in interleaved rounds (ROUNDS, default "1 2";
# run 38 used "1 2 3 4 5 6"); binaries copied
# to /tmp/devhe38/.
cd /work/main
for r in ${ROUNDS:-1 2}; do
  for b in new base; do
  HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/devhe38/coexec-$b /tmp/devhe38/$b-$r.json mandelbrot:512x512 gather:100003 blackscholes:100003 > /tmp/devhe38/$b-$r.txt 2>&1
  done
done
echo DONE > /tmp/devhe38/done
