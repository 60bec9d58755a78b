#!/bin/bash
# Package logs: jacobi warm (HGuided against Static 0.5, interleaved), and the
# cold first runs of spmv and histogram (GPU alone with the run's phases
# logged, CPU alone, all devices). Everything is packed in $OUT/logs.tgz.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off; L=/tmp/logs; mkdir -p $L
one() { # name, kernel, size, warmup, reps, args...
  local n=$1 k=$2 s=$3 w=$4 r=$5; shift 5
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-200} ] && return
  timeout 40 coexec bench --kernel $k --size $s --warmup $w --reps $r --log "$@" > $L/$n.log 2>$L/$n.err
  echo "$n: $(grep -E 'median of' $L/$n.log | sed 's/.*: //' | cut -c1-60) $(grep -E '^First run' $L/$n.err $L/$n.log | head -1)" >> $R/summary.txt
  grep -E '^  (cpu|gpu)' $L/$n.log >> $R/summary.txt
}
for i in 1 2; do
  one jst-$i jacobi 8192x4096 3 10 --devices all --scheduler static --cpu-power 0.5
  one jhg-$i jacobi 8192x4096 3 10 --devices all
done
for k in spmv:2^21 histogram:2^22; do
  n=${k%%:*}; s=${k#*:}
  COEXEC_LOG=coexec_engine::engine::phases=trace one $n-gpu $n $s 1 1 --devices gpu
  one $n-cpu $n $s 1 1 --devices cpu
  one $n-all-1 $n $s 1 1 --devices all
  one $n-all-2 $n $s 1 1 --devices all
done
tar czf $R/logs.tgz -C /tmp logs
