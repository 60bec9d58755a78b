#!/bin/bash
# Where a GPU's cold first run goes: uploads submitted, each package's
# recording, host and GPU-clock times (spmv and histogram, GPU alone and
# all devices, two processes each).
R=$OUT; export COEXEC_PROFILE=off
for spec in spmv:2^21 histogram:2^22; do
  k=${spec%%:*}; s=${spec#*:}
  for d in gpu all gpu all; do
    COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::vk::ring=trace,coexec_engine::engine::phases=trace timeout 60 coexec bench --kernel $k --size $s --devices $d --warmup 1 --reps 1 --log > /tmp/o.log 2>/tmp/o.err
    echo "== $k $d" >> $R/summary.txt
    awk '/^first run/{exit} {print}' /tmp/o.err | sed 's/^[0-9T:.-]*Z TRACE coexec_engine:://' | grep -v "^$" | head -30 | cut -c1-300 >> $R/summary.txt
    grep "^first run" /tmp/o.err >> $R/summary.txt
  done
done
