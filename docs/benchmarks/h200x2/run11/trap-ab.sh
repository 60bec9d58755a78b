#!/bin/bash
# spmv's trap (h200x2 run 10) with and without the extrapolation doubt:
# `--devices cpu,gpu0` on the two-GPU engine (30 CPU workers, one H200),
# fresh processes alternating between the binaries (new: .device/bin/coexec,
# base: .device/bin/coexec-base), the learner's lines, 3 warm-ups and the
# median of 5, profiles off; then histogram the same way (the trap's other
# kernel, fixed in run 10), and spmv on every device.
R=$OUT; export COEXEC_PROFILE=off COEXEC_LOG=coexec_engine::learn=debug
run() { # kernel size devices procs
  for p in $(seq 1 $4); do
    for b in new base; do
      bin=coexec; [ $b = base ] && bin=coexec-base
      f=$R/$1-$3-$b-$p.log
      timeout 60 $bin bench --kernel $1 --size $2 --devices $3 --warmup 3 --reps 5 > $f 2>&1
      modes=$(grep -o 'chosen=[A-Za-z]*([0-9]*)\|chosen=Together\|chosen=Without([0-9]*)' $f | sed 's/chosen=//' | tr '\n' ' ')
      echo "$1 $3 $b p$p $(grep -E 'median of' $f | tail -1 | cut -c1-60) | $modes" >> $R/summary.txt
    done
  done
}
run spmv 2^21 cpu,gpu0 6
run histogram 2^22 cpu,gpu0 3
run spmv 2^21 cpu,gpu0,gpu1 3
(cd $R && tar czf logs.tgz *.log && rm -f *.log)
