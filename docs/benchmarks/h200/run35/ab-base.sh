#!/bin/bash
# h200 run 35: this code (`coexec`, configuration $A) against the commit
# before it (`coexec-base`, configuration $B) in interleaved fresh
# processes (scripts/cold-cfg.sh); then the run steps of traced first runs
# of both (log filter $LOG). Results under $OUT.
# raw/02 (the bell): A=bell B=cond (the defaults);
# raw/04 (the close batch): A=idle B=base PROCS=6
#   LOG=coexec_engine::engine::run=trace,coexec_engine::engine::phases=trace
# (run then as bell.sh and close-batch.sh, this script with those values).
set -u
A=${A:-bell}; B=${B:-cond}; LOG=${LOG:-coexec_engine::engine::phases=trace}
mkdir -p $OUT/ab $OUT/trace /tmp/base
ln -sf $(command -v coexec-base) /tmp/base/coexec
OUT=$OUT/ab PROCS=${PROCS:-5} WARMUP=3 REPS=5 \
  SPECS="${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 jacobi:8192x4096 spmv:2^21 histogram:2^22}" \
  CONFIGS="$A||;$B|PATH=/tmp/base:$PATH|" bash scripts/cold-cfg.sh
export COEXEC_PROFILE=off
for spec in ${TSPECS:-mandelbrot:4096x4096 gather:2^23 collatz:2^23}; do
  K=${spec%%:*}; S=${spec#*:}
  for p in $(seq ${PROCS_TRACE:-2}); do
    for b in coexec /tmp/base/coexec; do
      n=$(basename $(dirname $b)); [ "$b" = coexec ] && n=$A
      COEXEC_LOG=$LOG \
      timeout 60 $b bench --kernel $K --size $S --devices all --warmup 1 --reps 1 --json \
        > $OUT/trace/$K-$n-$p.log 2>&1
    done
  done
done
(cd $OUT/trace && tar czf logs.tgz *.log && rm -f *.log)
