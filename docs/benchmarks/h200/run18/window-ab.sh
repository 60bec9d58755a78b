#!/bin/bash
# Where the dispatch loop polls for a package's end: from the rate alone
# (coexec-rate, a980fa0), from the fixed cost with the rate (coexec-cost,
# baf10cf), from before the earlier of the two to after the later
# (coexec); warm medians of 10 after 5 warm-ups, processes interleaved,
# profiles off, default transfer queue.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for rep in 1 2; do
  for k in mandelbrot:4096x4096:all collatz:2^23:all spmv:2^21:all spmv:2^21:gpu mandelbrot:4096x4096:gpu histogram:2^22:all; do
    IFS=: read kk s dev <<< "$k"
    for b in coexec coexec-cost coexec-rate; do
      timeout 40 $B/$b bench --kernel $kk --size $s --devices $dev --warmup 5 --reps 10 --json > /tmp/w.json 2>/dev/null
      python3 -c "
import json;d=json.load(open('/tmp/w.json'))
print('$kk-$dev-$b-$rep warm',round(d['time_s']*1e3,3),'ok',d['verified'],'times',' '.join(f'{t*1e3:.2f}' for t in d['times_s']))" >> $R/summary.txt
    done
  done
done
