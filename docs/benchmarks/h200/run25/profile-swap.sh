#!/bin/bash
# Mandelbrot 4096^2's first run from a profile: each binary of BINS from
# its own prime process's profile and from the other binary's, PROCS
# rounds; per run the time, the GPU's packages, and each profile's lines.
R=$OUT; K=${K:-mandelbrot}; S=${S:-4096x4096}
for b in ${BINS:-coexec coexec-old}; do
  mkdir -p /tmp/sw-$b
  COEXEC_CACHE_DIR=/tmp/sw-$b timeout 60 .device/bin/$b bench --kernel $K --size $S --devices all --warmup 3 --reps 5 > /dev/null 2>&1
  echo "profile of $b: $(grep -rh '^cold\|^first\|^time\|^depth' /tmp/sw-$b | tr '\n' ';')" >> $R/summary.txt
done
for i in $(seq ${PROCS:-4}); do
  for b in ${BINS:-coexec coexec-old}; do
    for p in ${BINS:-coexec coexec-old}; do
      cp -r /tmp/sw-$p /tmp/sw-run; 
      COEXEC_CACHE_DIR=/tmp/sw-run timeout 60 .device/bin/$b bench --kernel $K --size $S --devices all --warmup 1 --reps 1 --json > /tmp/o.json 2>/dev/null
      rm -rf /tmp/sw-run
      python3 - $b $p <<'PY' >> $R/summary.txt
import json,sys
b,p=sys.argv[1:3]
j=json.load(open('/tmp/o.json'))
g=[d for d in j['per_device'] if d['kind']=='gpu'][0]
print(f"{b:10s} profile-of {p:10s} first {j['first_s']*1e3:7.3f} ms from_profile {j.get('first_from_profile')} ok {j['verified']}")
PY
    done
  done
done
