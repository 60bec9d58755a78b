#!/bin/bash
# A/B: the broadcast wakes the thread pinned to the caller's PU last
# (coexec) against main (coexec-old). Interleaved processes; each: 3
# warm-ups, 15 timed runs, the learner's per-run line (its devices' start
# times) logged. SPECS: kernel:size list.
R=$OUT; export COEXEC_PROFILE=off; START=$(date +%s)
for spec in ${SPECS:-jacobi:8192x4096}; do
  k=${spec%%:*}; s=${spec#*:}
  for i in $(seq ${PROCS:-5}); do
    for b in coexec coexec-old; do
      [ $(( $(date +%s) - START )) -gt ${LIMIT:-400} ] && break 3
      COEXEC_LOG=coexec_engine::learn=debug timeout 60 .device/bin/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 15 > /tmp/o.log 2>/tmp/o.err
      med=$(grep -o 'hguided.*: [0-9.]* s' /tmp/o.log | grep -o '[0-9.]* s$')
      python3 - "$k" "$b" "$med" <<'PY' >> $R/summary.txt
import re,sys
k,b,med=sys.argv[1:4]
late=0; n=0; starts=[]
for l in open('/tmp/o.err'):
    if 'learner ended' not in l: continue
    n+=1
    s=[float(x) for x in re.findall(r'start_s: ([0-9.e-]+)', l)]
    if s and max(s)>3e-4: late+=1
    if s: starts.append(max(s))
print(f"{k} {b} median {med} runs {n} late(>0.3ms) {late} worst_start_ms {max(starts)*1e3 if starts else 0:.2f}")
PY
    done
  done
done
