#!/bin/bash
# A/B of warm runs on all devices (HGuided, no hints, profiles off), as
# he_bench measures them: the binaries of BINS, PROCS interleaved processes
# each of 3 warm-ups and REPS (5) runs (their median, and each run's time),
# with the GPU alone (dynamic:8 on the transfer queue, he_bench's best GPU
# configuration on these kernels) in each round as the reference. Every run
# is verified by the bench.
R=$OUT; export COEXEC_PROFILE=off; START=$(date +%s)
for spec in ${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 histogram:2^22 jacobi:8192x4096 spmv:2^21}; do
  k=${spec%%:*}; s=${spec#*:}
  for i in $(seq ${PROCS:-3}); do
    [ $(( $(date +%s) - START )) -gt ${LIMIT:-400} ] && break 2
    COEXEC_TRANSFER_QUEUE=dedicated timeout 60 .device/bin/coexec bench --kernel $k --size $s --devices gpu --scheduler dynamic:8 --warmup 3 --reps ${REPS:-5} --json > /tmp/o.json 2>/tmp/o.err
    python3 -c "import json;j=json.load(open('/tmp/o.json'));print(f\"$k gpu-alone  warm {j['time_s']*1e3:7.3f} ms ok {j['verified']}\")" >> $R/summary.txt
    for b in ${BINS:-coexec coexec-old}; do
      timeout 60 .device/bin/$b bench --kernel $k --size $s --devices all --warmup 3 --reps ${REPS:-5} --json > /tmp/o.json 2>/tmp/o.err
      python3 - $k $b <<'PY' >> $R/summary.txt
import json,sys
k,b=sys.argv[1:3]
try:
    j=json.load(open('/tmp/o.json'))
except Exception:
    print(k,b,'FAILED',open('/tmp/o.err').read()[-300:]); sys.exit()
ts=' '.join(f"{t*1e3:.2f}" for t in j['times_s'])
print(f"{k:10s} {b:10s} warm {j['time_s']*1e3:7.3f} ms runs [{ts}] cpu_items {j['times_cpu_items']} first {j['first_s']*1e3:.3f} ok {j['verified']}")
PY
    done
  done
done
echo "wall $(( $(date +%s) - START )) s" >> $R/summary.txt
