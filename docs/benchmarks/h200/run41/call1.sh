#!/bin/bash
# h200 run 41, call 1: (a) the short-run retry (dev run 41's rule) on and
# off (COEXEC_SHORT_RETRY=0) over the 2^10 and 2^13 sweep specs (run 39's
# sweep: medians of five after three warm-ups, three interleaved processes
# a configuration, profiles off); (b) one process per tiny spec with the
# learner's lines and each run's steps, ten runs, warm-up 0; (c) CG and
# k-means (lazy coherence) on every device and on the GPU alone.
export COEXEC_PROFILE=off PATH=$PWD/.device/bin:$PATH
S="gather:2^10 histogram:2^10 spmv:2^10 mandelbrot:2^10 gather:2^13 histogram:2^13 spmv:2^13 mandelbrot:2^13"
for sw in 1 0; do
  mkdir -p $OUT/retry$sw
  COEXEC_SHORT_RETRY=$sw OUT=$OUT/retry$sw LIMIT=${LIMIT:-110} SPECS="$S" bash docs/benchmarks/h200/run39/sweep10.sh
done
mkdir -p $OUT/logs
for ks in gather:2^13 histogram:2^13 mandelbrot:2^13 gather:2^10 spmv:2^13; do
  k=${ks%%:*}; s=${ks#*:}; f=$OUT/logs/$k-${s/^/_}
  COEXEC_LOG="coexec_engine::learn=debug,coexec_engine::engine::phases=trace" \
    timeout 30 coexec bench --kernel $k --size $s --devices all --warmup 0 --reps 10 --json > $f.json 2> $f.log
  echo "$ks $(python3 -c "import json,sys;r=json.loads(open('$f.json').read().strip().splitlines()[-1]);print([round(t*1e3,3) for t in r['times_s']])")"
done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
export COEXEC_HOST_COHERENCE=lazy
for rep in 1 2; do for d in all gpu; do
  echo "cg-$d-$rep $(timeout 60 cg 4096 30 $d 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')"
  echo "kmeans-$d-$rep $(timeout 60 kmeans 16777216 20 $d 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')"
done; done
