#!/bin/bash
# h200 run 39, call 2: probe1.sh's per-run lines for four kernels, the
# new binary and the session's start (`coexec-base`), processes
# alternating; condensed into $OUT/<kernel>-<binary>.txt.
D=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/bin-base; ln -sf "$(command -v coexec-base)" /tmp/bin-base/coexec
for spec in ${PSPECS:-jacobi:8192x4096:4 spmv:2^21:3 mandelbrot:4096x4096:3 histogram:2^22:3}; do
  IFS=: read K S P <<< "$spec"
  for p in $(seq 1 $P); do
    K=$K S=$S P=1 OUTF=$K-new bash $D/probe1.sh
    PATH=/tmp/bin-base:$PATH K=$K S=$S P=1 OUTF=$K-base bash $D/probe1.sh
  done
done
