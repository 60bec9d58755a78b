#!/bin/bash
# Ray 4096^2 co-executed, first runs of fresh processes with their traces.
R=$OUT; export COEXEC_PROFILE=off
for i in $(seq 1 ${N:-6}); do
  n=ray-$i
  # ALT=1: a GPU-alone process of the same kernel before each (as in peer.sh).
  [ -n "${ALT:-}" ] && { timeout 40 coexec bench --kernel ray --size 4096x4096 --devices gpu --scheduler static --warmup 2 --reps 3 --json > /tmp/g-$i.json 2>/dev/null; python3 -c "import json;d=json.load(open('/tmp/g-$i.json'));print('gpu-$i first',round(d['first_s']*1e3,2))" >> $R/summary.txt; }
  COEXEC_LOG=coexec_engine::exec::gpu=trace timeout 40 coexec bench --kernel ray --size 4096x4096 --devices all --warmup 1 --reps 1 --json --trace-first --trace /tmp/$n.trace > /tmp/$n.json 2>/tmp/$n.log
  python3 - $n <<'PY' >> $R/summary.txt
import json,sys
from collections import defaultdict
n=sys.argv[1]
d=json.load(open(f'/tmp/{n}.json'))
t=json.load(open(f'/tmp/{n}.trace'))
ev=[e for e in t['traceEvents'] if e.get('ph')=='X' and e['cat']=='package']
g=sorted([e for e in ev if e['pid']==1],key=lambda e:e['ts'])
c=sorted([e for e in ev if e['pid']==0],key=lambda e:e['ts'])
f=lambda e:(round(e['ts']/1e3,2),round((e['ts']+e['dur'])/1e3,2),e['args']['work_items'],int(e['args']['stolen']))
gd=[p for p in d['per_device'] if p['kind']=='gpu'][0]
print(n,'first',round(d['first_s']*1e3,2),'cpu_items',d['first_cpu_items'],'last-run gpu_busy',gd['gpu_busy_s'],'gap_med_us',gd['gpu_gap_median_us'])
print('  gpu',len(g),[f(e) for e in g[:5]],'...',[f(e) for e in g[-3:]])
import re
seen=[l for l in open(f'/tmp/{n}.log') if 'seen complete' in l][:6]
print('  seen', [tuple(round(float(v)) for _,v in re.findall(r'(host_us|gpu_us)=([0-9.]+)', l)) for l in seen])
print('  cpu',len(c),[f(e) for e in c[:4]],'... last ends',sorted(round((e['ts']+e['dur'])/1e3,2) for e in c)[-5:])
PY
done
