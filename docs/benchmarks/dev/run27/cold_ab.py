import json,subprocess,statistics,sys,os
kern,size,n=sys.argv[1],sys.argv[2],int(sys.argv[3])
res={}
for i in range(n):
    for b in sys.argv[4].split(','):
        for d,s in [('gpu','hguided'),('cpu','hguided'),('all','hguided')]:
            e=dict(os.environ,COEXEC_PROFILE='off')
            p=subprocess.run([f'/tmp/coexec-{b}','bench','--kernel',kern,'--size',size,'--devices',d,'--scheduler',s,'--warmup','1','--reps','3','--json'],capture_output=True,text=True,env=e)
            r=json.loads(p.stdout.strip().splitlines()[-1])
            assert r['verified']
            res.setdefault((b,d),[]).append((r['first_s']*1e3,r['time_s']*1e3))
for k,v in sorted(res.items()):
    print(kern,k,'cold med %.3f'%statistics.median([a for a,_ in v]),'warm med %.3f'%statistics.median([b for _,b in v]), ' '.join('%.2f'%a for a,_ in v))
