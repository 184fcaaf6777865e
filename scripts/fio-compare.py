#!/usr/bin/env python3
# Alternate `iopath bench` and fio on one file and print medians and ratios.
# Build first: go build -o iopath ./cmd/iopath (or set IOPATH=path/to/iopath).
# Example: scripts/fio-compare.py --file /var/tmp/big --pairs "pread:psync;io_uring:io_uring" --rounds 7 --mintime 3s
# iopath bench --fio (a later issue) will do this in Go; until then this is how docs/engines.md was measured.
import argparse, json, os, statistics, subprocess

ap = argparse.ArgumentParser()
ap.add_argument('--file', required=True, help='the file both tools read (make one with: iopath gen FILE --size 4GiB)')
ap.add_argument('--rounds', type=int, default=5)
ap.add_argument('--pairs', required=True, help='ours:fio;ours:fio e.g. pread:psync')
ap.add_argument('--bs', default='128k'); ap.add_argument('--rw', default='read')
ap.add_argument('--jobs', type=int, default=1); ap.add_argument('--qd', type=int, default=32)
ap.add_argument('--cache', default='warm'); ap.add_argument('--consume', default='none')
ap.add_argument('--runtime', default='3'); ap.add_argument('--mintime', default='1s')
a = ap.parse_args()
pat = 'rand' if a.rw.startswith('rand') else 'seq'
res = {}
def fio(eng):
    args = ['fio','--name=t','--filename='+a.file,'--rw='+a.rw,'--bs='+a.bs,'--ioengine='+eng,
            '--numjobs=%d'%a.jobs,'--group_reporting','--output-format=json','--time_based','--runtime='+a.runtime]
    if a.cache == 'warm': args.append('--invalidate=0')
    if a.cache == 'direct': args.append('--direct=1')
    if eng == 'io_uring': args += ['--iodepth=%d'%a.qd,'--fixedbufs=1','--registerfiles=1']
    if a.jobs > 1 and pat == 'seq':
        pass
    j = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)['jobs'][0]
    r = j['read']
    return r['bw_bytes'], r['iops'], r['clat_ns']['percentile'].get('99.000000', 0), (j['usr_cpu']+j['sys_cpu'])/100 * (r['runtime']/1000) / (r['io_bytes']/2**30) * a.jobs
def ours(eng):
    args = [os.environ.get('IOPATH', './iopath'),'bench',a.file,'--engines',eng,'--runs','1','--cache',a.cache,'--consume',a.consume,
            '--bs',a.bs,'--pattern',pat,'--workers',str(a.jobs),'--qd',str(a.qd),'--format','json','--min-time',a.mintime]
    j = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)['results'][0]
    if j['error']: print('ERR', eng, j['error']); return 0,0,0,0
    return j['bytes_per_s'], j['iops'], j['lat_p99_ns'], j['cpu_s_per_gib']
pairs = [p.split(':') for p in a.pairs.split(';')]
for r in range(a.rounds):
    for o, f in pairs:
        res.setdefault('iopath '+o, []).append(ours(o))
        res.setdefault('fio '+f, []).append(fio(f))
print(f"# {a.cache} {a.rw} bs={a.bs} jobs={a.jobs} qd={a.qd} consume={a.consume} rounds={a.rounds} file={a.file}")
med = {}
for k, v in res.items():
    bw = statistics.median(x[0] for x in v); iops = statistics.median(x[1] for x in v)
    p99 = statistics.median(x[2] for x in v); cpu = statistics.median(x[3] for x in v)
    med[k] = (bw, iops, cpu)
    print(f"{k:18s} {bw/2**30:6.2f} GiB/s  {iops/1e3:8.1f}k IOPS  p99 {p99/1e3:8.1f}us  cpu-s/GiB {cpu:.3f}   all GiB/s: {[round(x[0]/2**30,2) for x in v]}")
for o, f in pairs:
    print(f"ratio iopath {o} / fio {f}: {med['iopath '+o][0]/med['fio '+f][0]:.3f} (throughput)  cpu/GiB ratio {med['iopath '+o][2]/max(med['fio '+f][2],1e-9):.2f}")
