#!/bin/bash
# h200 run 35: a staged GPU no longer waits for its run-closing empty transfer batch (this code,
# `coexec`) against the code before it (`coexec-base`, the
# commit before), in interleaved fresh processes (scripts/cold-cfg.sh);
# then the run steps of traced first runs with this code. Results under
# $OUT.
set -u
mkdir -p $OUT/ab $OUT/trace /tmp/base
ln -sf $(command -v coexec-base) /tmp/base/coexec
OUT=$OUT/ab PROCS=${PROCS:-5} WARMUP=3 REPS=5 \
  SPECS="${SPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23 jacobi:8192x4096 spmv:2^21 histogram:2^22}" \
  CONFIGS="idle||;base|PATH=/tmp/base:$PATH|" bash scripts/cold-cfg.sh
export COEXEC_PROFILE=off
for spec in ${TSPECS:-mandelbrot:4096x4096 gather:2^23 collatz:2^23}; do
  K=${spec%%:*}; S=${spec#*:}
  for p in $(seq ${PROCS_TRACE:-2}); do
    for b in coexec /tmp/base/coexec; do
      n=$(basename $(dirname $b)); [ "$b" = coexec ] && n=idle
      COEXEC_LOG=coexec_engine::engine::run=trace,coexec_engine::engine::phases=trace \
      timeout 60 $b bench --kernel $K --size $S --devices all --warmup 1 --reps 1 --json \
        > $OUT/trace/$K-$n-$p.log 2>&1
    done
  done
done
(cd $OUT/trace && tar czf logs.tgz *.log && rm -f *.log)
