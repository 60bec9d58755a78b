#!/bin/bash
# Where Mandelbrot's cold first run loses against the GPU alone's: the
# first run's packages as traces, the GPU loop's and its stealing's
# lines, co-executed and on the GPU alone, three fresh processes each,
# profiles off.
R=$OUT; export COEXEC_PROFILE=off
K=${K:-mandelbrot}; S=${S:-4096x4096}
for p in 1 2 3; do
  for d in cpu,gpu gpu; do
    COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::exec::gpu_steal=trace \
    timeout 60 coexec bench --kernel $K --size $S --devices $d --warmup 0 --reps 1 \
      --trace $R/$K-$d-$p.json --trace-first > $R/$K-$d-$p.log 2>&1
    echo "$K $d p$p $(grep -o '[0-9.]* s (median' $R/$K-$d-$p.log)" >> $R/summary.txt
  done
done
(cd $R && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
