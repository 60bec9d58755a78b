#!/bin/bash
# h200 run 36: spmv's first co-executed runs traced per package (GPU
# packages, steals, learner), PROCS fresh processes, profiles off; the
# logs of processes whose GPU ran under a third of run 2's rows are kept
# (bad/), the others summarized. Results under $OUT/spmvtr.
mkdir -p $OUT/spmvtr/bad; export COEXEC_PROFILE=off
for p in $(seq ${PROCS:-10}); do
  COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::exec::gpu=trace,coexec_engine::exec::gpu_steal=trace,coexec_engine::engine::run=trace,coexec_engine::sched::plan=trace \
    coexec bench --kernel spmv --size ${SIZE:-2^21} --devices all --warmup 0 --reps 4 --json > /tmp/p.json 2> /tmp/p.log
  items=$(python3 -c "import json;d=json.load(open('/tmp/p.json'));print(d['times_cpu_items'][0])")
  echo "p$p cpu_items_run2 $items $(python3 -c "import json;d=json.load(open('/tmp/p.json'));print([round(t*1e3,2) for t in d['times_s']], d['times_cpu_items'])")" >> $OUT/spmvtr/summary.txt
  [ "$items" -gt 1400000 ] && cp /tmp/p.log $OUT/spmvtr/bad/p$p.log && cp /tmp/p.json $OUT/spmvtr/bad/p$p.json
done
[ "$(ls $OUT/spmvtr/bad | wc -l)" -eq 0 ] && cp /tmp/p.log $OUT/spmvtr/bad/last-good.log
cd $OUT/spmvtr && tar czf bad.tgz bad && rm -rf bad
true
