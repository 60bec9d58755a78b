#!/bin/bash
# The dispatch loop expecting a package's end from its fixed cost and its
# units (coexec, cg, kmeans) against the rate alone (coexec-old, cg-old,
# kmeans-old), default transfer queue (auto), processes interleaved,
# profiles off: warm medians (5 warm-ups, 10 runs), run by run; programs
# per iteration, lazy host coherence.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for rep in 1 2 3; do
  for k in spmv:2^21:gpu spmv:2^21:all mandelbrot:4096x4096:gpu histogram:2^22:gpu jacobi:8192x4096:all; do
    IFS=: read kk s dev <<< "$k"
    for b in coexec coexec-old; do
      timeout 40 $B/$b bench --kernel $kk --size $s --devices $dev --warmup 5 --reps 10 --json > /tmp/w.json 2>/dev/null
      python3 -c "
import json;d=json.load(open('/tmp/w.json'))
print('$kk-$dev-$b-$rep warm',round(d['time_s']*1e3,3),'ok',d['verified'],'times',' '.join(f'{t*1e3:.2f}' for t in d['times_s']))" >> $R/summary.txt
    done
  done
  for v in "" -old; do for dev in gpu all; do
    echo "cg$v-lazy-$dev-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/cg$v 4096 30 $dev 2>&1 | grep -E 'time per|differs|Error' | tr '\n' ' ')" >> $R/summary.txt
    echo "kmeans$v-lazy-$dev-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/kmeans$v 16777216 20 $dev 2>&1 | grep -E 'time per|differs|Error' | tr '\n' ' ')" >> $R/summary.txt
  done; done
done
