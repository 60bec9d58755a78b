#!/bin/bash
# Mandelbrot's cold first run measured the ways he_bench and the traces
# measure it, interleaved in fresh processes, profiles off: he_bench's
# (`--devices all --scheduler hguided --warmup 1 --reps 1 --json`, its
# first_s), the trace script's (`--devices cpu,gpu --warmup 0 --reps 1`,
# with and without --trace), and the GPU alone's cold baseline
# (dynamic:8 over the dedicated transfer queue).
R=$OUT; export COEXEC_PROFILE=off
K=${K:-mandelbrot}; S=${S:-4096x4096}
first() { python3 -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(r["first_s"], r.get("first_cpu_items"))'; }
for p in 1 2 3; do
  echo "p$p he-form $(coexec bench --kernel $K --size $S --devices all --scheduler hguided --warmup 1 --reps 1 --json | first)" >> $R/summary.txt
  echo "p$p he-form-w0 $(coexec bench --kernel $K --size $S --devices all --scheduler hguided --warmup 0 --reps 1 --json | first)" >> $R/summary.txt
  echo "p$p trace-form $(coexec bench --kernel $K --size $S --devices cpu,gpu --warmup 0 --reps 1 | grep -o '[0-9.]* s (median')" >> $R/summary.txt
  echo "p$p trace-form-traced $(coexec bench --kernel $K --size $S --devices cpu,gpu --warmup 0 --reps 1 --trace $R/t$p.json --trace-first | grep -o '[0-9.]* s (median')" >> $R/summary.txt
  echo "p$p gpu-cold $(COEXEC_TRANSFER_QUEUE=dedicated coexec bench --kernel $K --size $S --devices gpu --scheduler dynamic:8 --warmup 1 --reps 1 --json | first)" >> $R/summary.txt
done
rm -f $R/t*.json
