"""Per process of a probe1.sh / probe2.sh output file: each run's time
and configuration (T co-executed, G the GPU alone, C the CPU alone),
and the median of runs 4-12. Usage: summ-probe.py FILE..."""
import sys,re,statistics as st
for f in sys.argv[1:]:
    procs=open(f).read().split("== p")[1:]
    print("##",f)
    for p in procs:
        rows=[l for l in p.splitlines() if l.startswith("run ")]
        ts=[]; tags=[]
        for r in rows:
            t=float(r.split()[2]); ts.append(t)
            m=re.findall(r"(cpu|gpu)\s+([\d.]+)M",r)
            d={k:float(v) for k,v in m}
            tag="C" if d.get("gpu",0)==0 else ("G" if d.get("cpu",0)==0 else "T")
            tags.append(tag)
        print(" ".join("%.2f%s"%(t,g) for t,g in zip(ts,tags)), "| warm(4-12) med %.3f"%st.median(ts[3:]))
