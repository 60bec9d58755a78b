#!/bin/bash
# h200 run 41, call 2: (a) a lone GPU's depth walk from four packages
# against the climb from one (COEXEC_DEPTH_START=1), he_bench's sweep over
# the specs where the GPU alone is best (three interleaved processes a
# configuration, medians of five after three warm-ups, profiles off);
# (b) what a run of the CPU workers alone costs, by engine and scheduler,
# at 2^10: two processes each, interleaved, warm-up 3, ten runs, then
# one traced process each (run steps, HGuided claims).
export COEXEC_PROFILE=off PATH=$PWD/.device/bin:$PATH
med() { python3 -c "import json,statistics as s;r=json.loads(open('$1').read().strip().splitlines()[-1]);t=r['times_s'];print('median %.1f min %.1f us, cpu items %s' % (s.median(t)*1e6, min(t)*1e6, r.get('cpu_items')))"; }
mkdir -p $OUT/t
for ks in gather:2^10 histogram:2^10; do
  k=${ks%%:*}; s=${ks#*:}
  for p in 1 2; do
    for cfg in "cpu static:--devices cpu --scheduler static" "cpu hguided:--devices cpu --scheduler hguided" \
               "all static p1:--devices all --scheduler static --cpu-power 1" "all hguided p1:--devices all --scheduler hguided --cpu-power 1" \
               "all learner:--devices all"; do
      coexec bench --kernel $k --size $s ${cfg#*:} --warmup 3 --reps 10 --json > /tmp/a.json 2>/dev/null
      echo "$ks ${cfg%%:*} p$p $(med /tmp/a.json)"
    done
  done
  for cfg in "cpu-hg:--devices cpu --scheduler hguided" "all-hg-p1:--devices all --scheduler hguided --cpu-power 1" "all:--devices all"; do
    COEXEC_LOG="coexec_engine::engine::phases=trace,coexec_engine::learn=debug,coexec_engine::sched::plan=trace,coexec_engine::engine::run=trace" \
      coexec bench --kernel $k --size $s ${cfg#*:} --warmup 0 --reps 8 --json > $OUT/t/$k-${cfg%%:*}.json 2> $OUT/t/$k-${cfg%%:*}.log
  done
done
(cd $OUT && tar czf t.tgz t && rm -rf t)
S="gather:2^13 histogram:2^13 mandelbrot:2^13 mandelbrot:2^10 gather:2^16 histogram:2^16 mandelbrot:2^16 gather:2^19 histogram:2^19 mandelbrot:2^19 spmv:2^19"
for sw in 4 1; do
  mkdir -p $OUT/start$sw
  COEXEC_DEPTH_START=$sw OUT=$OUT/start$sw LIMIT=${LIMIT:-140} SPECS="$S" bash docs/benchmarks/h200/run39/sweep10.sh | tail -0
  echo "== start $sw"; cat $OUT/start$sw/sweep.txt
done
