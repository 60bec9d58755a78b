#!/bin/bash
# h200 run 39, call 1: jacobi 8192x4096's warm runs, process by process:
# per run its time, and per device items, first start, settle and bytes
# moved; the learner's debug lines whole. Six processes, profiles off;
# condensed into $OUT/jacobi.txt.
export COEXEC_PROFILE=off
K=${K:-jacobi}; S=${S:-8192x4096}; P=${P:-6}
for p in $(seq 1 $P); do
  COEXEC_LOG=coexec_engine::learn=debug coexec bench --kernel $K --size $S --devices all \
    --warmup 0 --reps 12 --json > /tmp/j.out 2> /tmp/j.log
  { echo "== p$p"; python3 - /tmp/j.out <<'PY'
import json,sys
r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
for i,(t,devs) in enumerate(zip(r["times_s"], r["times_devices"])):
    d=" | ".join("%s %5.1fM start %5.0f settle %5.0f up %4.0fM down %4.0fM pk %d" % (x["kind"], x["items"]/1e6, x["first_start_s"]*1e6, x["settled_s"]*1e6, x["upload_bytes"]/2**20, x["download_bytes"]/2**20, x["packages"]) for x in devs)
    print("run %2d %6.3f ms  %s" % (i+1, t*1e3, d))
PY
    grep -v "lone GPU's next run" /tmp/j.log | sed 's/^[^ ]* *//; s/coexec_engine::learn: //; s/Some(Cost { overhead_s: \([^,]*\), rate: \([^ ]*\) })/C(\1,\2)/g; s/Share { slot: \([0-9]\), items: \([0-9]*\), start_s: \([^,]*\), finish_s: \([^ ]*\) }/S\1(\2,\3,\4)/g' | cut -c1-900 | head -40; } >> $OUT/${OUTF:-$K}.txt
done
