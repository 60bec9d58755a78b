#!/bin/bash
# h200 run 40, calls 5 and 7 (call 4 with the flat sub-core rule, then
# with the final code): the device clock's split of a GPU package's time
# into work and latency (COEXEC_DEVICE_CLOCK, on by default) against the
# rule off: (1) run 39's sixteen sweep specs, warm (he_bench's sweep,
# three interleaved processes per configuration), on then off; (2) cold
# first runs and warm medians (warm-up 3, reps 5) of the comparable set
# at its H200 sizes, on / off / the GPU alone, three interleaved
# processes each (scripts/cold-cfg.sh). Results under $OUT.
set -u
mkdir -p $OUT/on $OUT/off $OUT/cfg
OUT=$OUT/on LIMIT=120 bash docs/benchmarks/h200/run39/sweep10.sh > /dev/null
OUT=$OUT/off COEXEC_DEVICE_CLOCK=0 LIMIT=80 SPECS="gather:2^16 histogram:2^16 spmv:2^16 mandelbrot:2^16 gather:2^19 histogram:2^19 spmv:2^19 mandelbrot:2^19" bash docs/benchmarks/h200/run39/sweep10.sh > /dev/null
OUT=$OUT/cfg PROCS=3 WARMUP=3 REPS=5 \
  SPECS="${SPECS:-jacobi:8192x4096 collatz:2^23 gather:2^23 histogram:2^22 spmv:2^21 mandelbrot:4096x4096}" \
  CONFIGS="on||;off|COEXEC_DEVICE_CLOCK=0|" timeout ${CFG_LIMIT:-250} bash scripts/cold-cfg.sh
python3 docs/benchmarks/h200/run38/summ.py $OUT/cfg/summary.txt | sort > $OUT/cfg/medians.txt
echo "== on"; tail -16 $OUT/on/sweep.txt; echo "== off"; tail -8 $OUT/off/sweep.txt; echo "== cfg"; cat $OUT/cfg/medians.txt
