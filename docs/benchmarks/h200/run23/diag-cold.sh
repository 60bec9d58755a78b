#!/bin/bash
# Where a cold first run on all devices goes (a fresh process each, profiles
# off): per device its items, packages, first start, finish, settled time,
# busy time and bytes moved; then two processes per kernel with the GPU's
# package trace (each package's host and GPU-clock time, uploads).
R=$OUT; export COEXEC_PROFILE=off
for spec in ${SPECS:-jacobi:8192x4096 spmv:2^21}; do
  k=${spec%%:*}; s=${spec#*:}
  for i in $(seq ${PROCS:-6}); do
    timeout 60 .device/bin/coexec bench --kernel $k --size $s --devices all --warmup 0 --reps 1 --json > /tmp/o.json 2>/tmp/o.err
    python3 - $k <<'PY' >> $R/summary.txt
import json,sys
j=json.load(open('/tmp/o.json'))
print(f"{sys.argv[1]} first {j['first_s']*1e3:.3f} ms ok {j['verified']}")
for d in j['first_per_device']:
    print(f"   {d['kind']:4s} items {d['items']:9d} pk {d['packages']:3d} start {d['first_start_s']*1e3:6.3f} finish {d['finish_s']*1e3:6.3f} settled {d['settled_s']*1e3:6.3f} busy {d['busy_s']*1e3:7.3f} up {d['upload_bytes']/1e6:7.1f} MB down {d['download_bytes']/1e6:7.1f} MB")
PY
  done
  for i in 1 2; do
    COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::sched::transfers=debug timeout 60 .device/bin/coexec bench --kernel $k --size $s --devices all --warmup 0 --reps 1 --log > /tmp/o.log 2>/tmp/o.err
    echo "== $k trace $i" >> $R/summary.txt
    awk '/^first run/{exit} {print}' /tmp/o.err | sed 's/^[0-9T:.-]*Z *[A-Z]* coexec_engine:://' | grep -v "^$" | head -40 | cut -c1-260 >> $R/summary.txt
    grep "^first run" /tmp/o.err >> $R/summary.txt
  done
done
