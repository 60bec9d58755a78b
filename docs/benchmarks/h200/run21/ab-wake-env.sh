#!/bin/bash
# spmv warm (3 warm-ups, 5 runs) with the broadcast's wake order by the
# caller's PU (coexec) and plain last-first (COEXEC_WAKE_PLAIN, a build of
# this code with that switch), and main before this session (coexec-old),
# processes interleaved.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for rep in 1 2 3 4; do
  for v in "coexec" "plain" "coexec-old"; do
    case $v in plain) bin=coexec; export COEXEC_WAKE_PLAIN=1;; *) bin=$v; unset COEXEC_WAKE_PLAIN;; esac
    timeout 40 $B/$bin bench --kernel ${KERNEL:-spmv} --size ${SIZE:-2^21} --devices all --warmup 3 --reps 5 --json > /tmp/a.json 2>/dev/null
    python3 -c "
import json,statistics as st;d=json.load(open('/tmp/a.json'))
t=d['times_s'];print('$v-$rep','med',round(st.median(t)*1e3,3),'reps',[round(x*1e3,3) for x in t],'cpu',d['cpu_items'],'pk',d['packages'])" >> $R/summary.txt 2>&1
  done
done
