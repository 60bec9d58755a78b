#!/bin/bash
# h200 run 40, call 6: jacobi 8192x4096's learner, process by process,
# the device clock's rule on and off (COEXEC_DEVICE_CLOCK), three
# processes each, interleaved: run 39's probe1.sh (each run's time and
# devices, the learner's lines). Results under $OUT.
for p in 1 2 3; do
  for sw in 1 0; do
    COEXEC_DEVICE_CLOCK=$sw OUTF=jacobi-clock$sw P=1 timeout 60 bash docs/benchmarks/h200/run39/probe1.sh
  done
done
for sw in 1 0; do echo "== clock $sw"; grep "^run\|^==" $OUT/jacobi-clock$sw.txt | awk '{print $1,$2,$3,$4,$5,$6}' | paste -sd' ' | sed 's/== p1/\n/g'; done
