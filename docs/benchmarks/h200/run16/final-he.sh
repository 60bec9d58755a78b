#!/bin/bash
# The final code of run 16: he_bench over the comparable set (with the
# best fixed split where S_max >= 1.3, and the co-running ceiling counted
# until a staged GPU's results are home). Results under $OUT.
R=$OUT
HE_REPS=5 HE_COLD=3 timeout 540 python3 scripts/he_bench.py coexec $R/he.json jacobi:8192x4096 spmv:2^21 mandelbrot:4096x4096 histogram:2^22 gather:2^23 collatz:2^23 taylor:16776960 > $R/he.txt 2>&1
