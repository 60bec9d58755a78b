"""Per kernel and binary of a probe2.sh output folder: each process's
median over the learner's runs 4-8 (he_bench's warm window: three
warm-ups, five timed) and its second run. Usage: window.py DIR"""
import re,statistics as st,sys
d=sys.argv[1]
for k in ["jacobi","spmv","mandelbrot","histogram"]:
    for b in ["new","base"]:
        procs=open(f"{d}/{k}-{b}.txt").read().split("== p")[1:]
        w=[];c2=[]
        for p in procs:
            ts=[float(l.split()[2]) for l in p.splitlines() if l.startswith("run ")]
            w.append(st.median(ts[2:7])); c2.append(ts[0])
        print(f"{k:10s} {b:4s} warm(learner runs 4-8) per process {[round(x,3) for x in w]} median {st.median(w):.3f} | run2 {[round(x,2) for x in c2]}")
