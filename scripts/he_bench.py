#!/usr/bin/env python3
"""Heterogeneous efficiency, cold and warm, each configuration in its own process.

For each `KERNEL:SIZE[:WORKERS]` given, runs `coexec bench` (every output
verified against the kernel's CPU reference) and reports:

* T_gpu, T_cpu: each device's best solo configuration, chosen by the best
  median time over hguided (one package), dynamic:8, dynamic:64 and static
  (a fresh process each; a GPU also with hguided, dynamic:4 and dynamic:8
  on the transfer-only queue, "xq", unless HE_GPU_XQ=0), then measured again in HE_PROCS fresh processes
  interleaved with the warm co-executed ones: the median of their medians
  (the best of four processes alone is biased low where a process's time
  moves between processes, as a GPU's download rate does);
* S_max = T_fastest * (1/T_cpu + 1/T_gpu); and the same from each device's
  cold solo time (its best solo scheduler, first run of a fresh process),
  the baseline of the cold figures;
* HGuided without hints, co-executed:
  - cold: the first run of a fresh process with no profile on disk
    (COEXEC_PROFILE=off), median over --cold processes;
  - cold+profile: the first run of a fresh process whose profile a previous
    process wrote (median over --cold processes);
  - warm: the median of --reps runs after 3 warm-up runs, without profile,
    in HE_PROCS processes: the median of their medians;
* Static with powers from the solo times (P_i = 1/T_i), warm;
* HE = (T_fastest / T) / S_max and S = T_fastest / T for each, balance.

Usage: he_bench.py COEXEC_BINARY OUT_JSON KERNEL:SIZE[:WORKERS] ...
Environment: HE_REPS (default 5), HE_COLD (default 3), HE_PROCS (default 3).

With HE_SWEEP=1 each spec is measured warm only (each device alone with
hguided and static, and co-executed HGuided without hints; HE_PROCS
processes per configuration, interleaved, the median of their medians;
there HE_PROCS defaults to 1, a sweep's sizes being many): the ratio to
the best single device at every size of a sweep. Unless
HE_SWEEP_CONFIRM=0, the best single-device configuration is then
measured again in HE_PROCS fresh processes interleaved with as many
co-executed ones ("again"): a ratio free of the bias of picking the
luckier of several configurations.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

SOLO = ["hguided", "dynamic:8", "dynamic:64", "static"]

# A GPU's solo configurations run with its transfers on the compute queue
# (COEXEC_TRANSFER_QUEUE=compute) and also on the transfer-only queue
# (COEXEC_TRANSFER_QUEUE=dedicated, "... xq"): a lone staged GPU whose run
# is cut in packages then brings one home while it computes the next (8-24%
# faster on an H200, run 17). Off with HE_GPU_XQ=0. The co-executed runs
# take the engine's default (or the caller's COEXEC_TRANSFER_QUEUE).
SOLO_XQ = ["hguided", "dynamic:4", "dynamic:8"]


def solo_configs(dev):
    """The solo configurations tried for `dev` ("gpu" or "cpu")."""
    if dev == "gpu" and os.environ.get("HE_GPU_XQ", "1") != "0":
        return SOLO + [f"{s} xq" for s in SOLO_XQ]
    return SOLO


def config_env(config, env):
    """A solo configuration's scheduler and environment."""
    sched, _, xq = config.partition(" ")
    e = dict(env)
    e["COEXEC_TRANSFER_QUEUE"] = "dedicated" if xq == "xq" else "compute"
    return sched, e


def bench(binary, kernel, size, workers, devices, scheduler, warmup, reps, env=None, cpu_power=None,
          gpus=None):
    cmd = [binary, "bench", "--kernel", kernel, "--size", size, "--devices", devices,
           "--scheduler", scheduler, "--warmup", str(warmup), "--reps", str(reps), "--json"]
    if gpus:
        cmd += ["--gpus", gpus]
    if workers:
        cmd += ["--workers", str(workers)]
    if cpu_power is not None:
        cmd += ["--cpu-power", f"{cpu_power:.6f}"]
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: rc {p.returncode}: {p.stderr[-2000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if not r["verified"]:
        raise RuntimeError(f"{' '.join(cmd)}: output not verified: {r}")
    return r


def parse_spec(spec):
    """`KERNEL:SIZE[:WORKERS]` as (kernel, size, workers or None)."""
    parts = spec.split(":")
    return parts[0], parts[1], (parts[2] if len(parts) > 2 else None)


def sweep(binary, out_path, specs, reps):
    """Warm co-executed HGuided against the best single device, per size."""
    procs = int(os.environ.get("HE_PROCS", "1"))
    off = {"COEXEC_PROFILE": "off"}
    results = []
    for spec in specs:
        kernel, size, workers = parse_spec(spec)
        row = {"kernel": kernel, "size": size}
        try:
            # HE_PROCS processes per configuration, interleaved, the median
            # of their medians: between processes a short run's time moves
            # more than between the runs of one process.
            configs = [(d, s) for d in ["gpu", "cpu"] for s in ["hguided", "static"]]
            configs.append(("all", "hguided"))
            times = {c: [] for c in configs}
            items = []
            # Each co-executed process's timed runs, as (time, CPU items):
            # whether each ran the CPU alone, the GPU alone or both.
            timed = []
            for _ in range(procs):
                for d, s in configs:
                    r = bench(binary, kernel, size, workers, d, s, 3, reps, off)
                    times[(d, s)].append(r["time_s"])
                    if d == "all":
                        items.append(r["cpu_items"])
                        timed.append(list(zip(r["times_s"], r["times_cpu_items"])))
            solo = {f"{d} {s}": statistics.median(times[(d, s)]) for d, s in configs[:-1]}
            best = min(solo, key=solo.get)
            t_co = statistics.median(times[configs[-1]])
            row.update(solo=solo, best=best, t_best=solo[best], t_co=t_co,
                       ratio=solo[best] / t_co, cpu_items=items[0] if procs == 1 else items,
                       co_each=times[configs[-1]], co_timed=timed, procs=procs)
            confirm = ""
            if os.environ.get("HE_SWEEP_CONFIRM", "1") != "0":
                # The best of several configurations, each a median of a
                # few processes, is biased low (the luckier one is picked):
                # the chosen one measured again in fresh processes,
                # interleaved with as many co-executed ones, gives a ratio
                # free of that choice.
                d, s = best.split(" ")
                again = {"best": [], "co": []}
                for _ in range(procs):
                    again["best"].append(bench(binary, kernel, size, workers, d, s, 3, reps, off)["time_s"])
                    again["co"].append(bench(binary, kernel, size, workers, "all", "hguided", 3, reps,
                                             off)["time_s"])
                t_b, t_c = statistics.median(again["best"]), statistics.median(again["co"])
                row.update(t_best_again=t_b, t_co_again=t_c, ratio_again=t_b / t_c)
                confirm = f"  again {t_b*1e3:.3f} / {t_c*1e3:.3f} ms ratio {t_b / t_c:.3f}"
            print(f"{kernel:<12} {size:<12} best {best:<12} {solo[best]*1e3:9.3f} ms  "
                  f"co {t_co*1e3:9.3f} ms  ratio {row['ratio']:.3f}  cpu items {row['cpu_items']}"
                  f"{confirm}", flush=True)
        except Exception as e:
            row["error"] = str(e)
            print(f"{kernel} {size} ERROR {e}", flush=True)
        results.append(row)
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)


def main():
    if len(sys.argv) < 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    binary, out_path, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    reps = int(os.environ.get("HE_REPS", "5"))
    if os.environ.get("HE_SWEEP") == "1":
        return sweep(binary, out_path, specs, reps)
    cold_n = int(os.environ.get("HE_COLD", "3"))
    procs = max(1, int(os.environ.get("HE_PROCS", "3")))
    off = {"COEXEC_PROFILE": "off"}
    results = []
    for spec in specs:
        kernel, size, workers = parse_spec(spec)
        row = {"kernel": kernel, "size": size, "workers": workers}
        try:
            solo = {}
            for dev in ["gpu", "cpu"]:
                times = {}
                for s in solo_configs(dev):
                    sched, env = config_env(s, off)
                    r = bench(binary, kernel, size, workers, dev, sched, 1, reps, env)
                    times[s] = r["time_s"]
                best = min(times, key=times.get)
                solo[dev] = {"best": best, "time_s": times[best], "all": times}
            # The best of four single processes is biased low: between
            # processes a GPU's download rate alone moves by 20% (run 17).
            # Each device's best configuration and the warm co-executed run
            # are measured again in HE_PROCS fresh processes, interleaved;
            # each figure is the median of their medians.
            again = {"gpu": [], "cpu": [], "all": []}
            for _ in range(procs):
                for dev in ["gpu", "cpu"]:
                    sched, env = config_env(solo[dev]["best"], off)
                    again[dev].append(bench(binary, kernel, size, workers, dev, sched, 1, reps,
                                            env)["time_s"])
                again["all"].append(bench(binary, kernel, size, workers, "all", "hguided", 3, reps, off))
            for dev in ["gpu", "cpu"]:
                solo[dev]["selected_s"] = solo[dev]["time_s"]
                solo[dev]["processes_s"] = again[dev]
                solo[dev]["time_s"] = statistics.median(again[dev])
            t_gpu, t_cpu = solo["gpu"]["time_s"], solo["cpu"]["time_s"]
            t_f = min(t_gpu, t_cpu)
            s_max = t_f * (1 / t_gpu + 1 / t_cpu)
            # Cold baselines: each device's best solo scheduler, first run
            # of a fresh process.
            for dev in ["gpu", "cpu"]:
                sched, env = config_env(solo[dev]["best"], off)
                runs = [bench(binary, kernel, size, workers, dev, sched, 1, 1, env)["first_s"]
                        for _ in range(cold_n)]
                solo[dev]["cold_s"] = statistics.median(runs)
            c_gpu, c_cpu = solo["gpu"]["cold_s"], solo["cpu"]["cold_s"]
            c_f = min(c_gpu, c_cpu)
            s_max_cold = c_f * (1 / c_gpu + 1 / c_cpu)
            row.update(solo=solo, t_fastest=t_f, s_max=s_max, t_fastest_cold=c_f, s_max_cold=s_max_cold)

            def cold_fig(t, extra):
                d = {"time_s": t, "S": c_f / t, "HE": c_f / t / s_max_cold}
                d.update(extra)
                return d

            def fig(t, extra):
                d = {"time_s": t, "S": t_f / t, "HE": t_f / t / s_max}
                d.update(extra)
                return d

            cold = [bench(binary, kernel, size, workers, "all", "hguided", 1, 1, off) for _ in range(cold_n)]
            t = statistics.median(c["first_s"] for c in cold)
            row["cold"] = cold_fig(t, {"runs": [c["first_s"] for c in cold],
                                  "balance": statistics.median(c["first_balance"] for c in cold),
                                  "cpu_items": [c["first_cpu_items"] for c in cold]})
            with tempfile.TemporaryDirectory() as cache:
                prof = {"COEXEC_CACHE_DIR": cache}
                prime = bench(binary, kernel, size, workers, "all", "hguided", 3, reps, prof)
                cp = [bench(binary, kernel, size, workers, "all", "hguided", 1, 1, prof) for _ in range(cold_n)]
            t = statistics.median(c["first_s"] for c in cp)
            row["cold_profile"] = cold_fig(t, {"runs": [c["first_s"] for c in cp],
                                          "from_profile": [c["first_from_profile"] for c in cp],
                                          "balance": statistics.median(c["first_balance"] for c in cp),
                                          "cpu_items": [c["first_cpu_items"] for c in cp]})
            row["warm_profile_process"] = fig(prime["time_s"], {"balance": prime["balance"]})
            # The warm co-executed figure: the median of the processes above,
            # with the per-device figures of the (lower) median process.
            warm_runs = sorted(again["all"], key=lambda r: r["time_s"])
            warm = dict(warm_runs[(len(warm_runs) - 1) // 2],
                        time_s=statistics.median(r["time_s"] for r in warm_runs))
            # The co-running ceiling: each device's throughput while the other
            # ran (items over busy time; a CPU's busy time is summed over its
            # workers), against its solo throughput, and the speedup both
            # would give at those throughputs.
            items = sum(d["items"] for d in warm["per_device"])
            corun = {}
            for d in warm["per_device"]:
                # A staged GPU's packages end before its downloads: it
                # counts until its results were home (as Corun::of does).
                busy = (d["busy_s"] / max(1, d["claimants"]) if d["kind"] == "cpu"
                        else max(d["busy_s"], d["settled_s"] - d["first_start_s"]))
                if d["items"] > 0 and busy > 0:
                    rate = d["items"] / busy
                    corun[d["kind"]] = {"rate": rate, "of_solo": rate * solo[d["kind"]]["time_s"] / items}
            s_ceil = (t_f * sum(c["rate"] for c in corun.values()) / items) if len(corun) == 2 else None
            row["corun"] = {"devices": corun, "S_ceiling": s_ceil}
            row["warm"] = fig(warm["time_s"], {"processes_s": [r["time_s"] for r in again["all"]],
                                               "balance": warm["balance"], "balance_raw": warm["balance_raw"],
                                               "cpu_items": warm["cpu_items"], "packages": warm["packages"],
                                               "per_device": warm["per_device"]})
            p_cpu = (1 / t_cpu) / (1 / t_cpu + 1 / t_gpu)
            st = bench(binary, kernel, size, workers, "all", "static", 1, reps, off, cpu_power=p_cpu)
            row["static_solo_powers"] = fig(st["time_s"], {"cpu_power": p_cpu, "balance": st["balance"]})
            if row["s_max"] >= 1.3:
                # The best fixed split: Static over CPU powers around the
                # solo ones. Where the devices share a resource (DRAM, cores)
                # this is what co-running reaches without any scheduling
                # loss, the yardstick HGuided's loss is told apart by.
                splits = {p_cpu: st["time_s"]}
                for f in (0.7, 0.85, 1.15, 1.3):
                    p = min(0.95, max(0.05, p_cpu * f))
                    splits[p] = bench(binary, kernel, size, workers, "all", "static", 1, reps, off,
                                      cpu_power=p)["time_s"]
                p_best = min(splits, key=splits.get)
                row["static_best"] = fig(splits[p_best], {"cpu_power": p_best,
                                                         "sweep": {str(k): v for k, v in splits.items()}})
                row["warm"]["HE_of_best_static"] = splits[p_best] / warm["time_s"]
        except Exception as e:  # keep the other kernels' figures
            row["error"] = str(e)
        results.append(row)
        print(line(row), flush=True)
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)


def line(row):
    if "error" in row:
        return f"{row['kernel']:<12} {row['size']:<12} ERROR {row['error'][:300]}"
    g = lambda k: row[k]["HE"]
    return (f"{row['kernel']:<12} {row['size']:<12} w={row['workers'] or '-':<3} "
            f"Tgpu {row['solo']['gpu']['time_s']*1e3:8.2f} ms ({row['solo']['gpu']['best']}) "
            f"Tcpu {row['solo']['cpu']['time_s']*1e3:8.2f} ms ({row['solo']['cpu']['best']}) "
            f"Smax {row['s_max']:.2f} (cold {row['s_max_cold']:.2f}) | HE cold {g('cold'):.3f} "
            f"cold+prof {g('cold_profile'):.3f} "
            f"warm {g('warm'):.3f} static(solo P) {g('static_solo_powers'):.3f} | "
            f"S warm {row['warm']['S']:.3f} bal {row['warm']['balance']:.2f} "
            f"S_ceil {row['corun']['S_ceiling'] or 0:.2f}"
            + (f" | S best static {row['static_best']['S']:.3f} (P_cpu {row['static_best']['cpu_power']:.2f})"
               f" warm/best static {row['warm']['HE_of_best_static']:.3f}" if "static_best" in row else ""))


if __name__ == "__main__":
    main()
