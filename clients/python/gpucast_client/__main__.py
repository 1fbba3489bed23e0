"""python3 -m gpucast_client: the gpucast HTTP service from the command line.

The flags of `predict` are those of `gpucast predict` (--model repeated for the passes of a
network, --batch, --dim, --attr, --amp, --gpu, --mig, --gpus, --nodes, --interconnect, --level), and
it shows what `gpucast predict` shows (utilization, memory, step time, the expected error): the
service replies with the fields of `gpucast predict --json`, made by the same library function, so
both front ends take the same inputs and give the same answer. `submit` takes the same flags but
--nodes and --interconnect (POST /v1/jobs refuses them), --mig and --level included. The service is --url (default $GPUCAST_URL, else http://127.0.0.1:8080);
--token-file (default $GPUCAST_TOKEN_FILE) when it was started with one. --json prints the
service's reply as is; errors go to stderr with exit status 1 (2 for bad arguments).
"""
import argparse
import json
import os
import sys

from . import Client, GpucastError


def kv(flag, cast):
    def parse(text):
        k, sep, v = text.partition("=")
        try:
            if not sep or not k:
                raise ValueError
            return k, cast(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} '{text}': want NAME=VALUE") from None
    return parse


def attr_value(text):
    """--attr VALUE as typed: the service parses it as gpucast predict --attr does (a value sent as
    a number was cast here first: loader_workers=1e3 went as 1000.0 and was taken, nan made the
    body invalid JSON, where gpucast predict refuses both)."""
    if not text:
        raise ValueError
    return text


def once(ap, flag, pairs):
    """--dim and --attr name each key once, as gpucast predict requires (a dict kept the last)."""
    seen = set()
    for k, v in pairs:
        if k in seen:
            ap.error(f"{flag} '{k}={v}': key given twice")
        seen.add(k)


def job_flags(p, submit):
    p.add_argument("--model", "-m", action="append", help="ONNX file under the service's --model-root; repeat "
                   "for several networks (a file given k times runs k passes per step)")
    p.add_argument("--upload", metavar="FILE", help="send this ONNX file as the body instead of --model")
    p.add_argument("--batch", "-b", type=int, required=True)
    p.add_argument("--amp", action="store_true", help="mixed precision")
    p.add_argument("--dim", action="append", type=kv("--dim", int), default=[], metavar="NAME=VALUE")
    p.add_argument("--attr", action="append", type=kv("--attr", attr_value), default=[], metavar="KEY=VALUE",
                   help="any key of gpucast predict --attr (docs/features.md): loader_workers=N, data_on_gpu=0|1, "
                   "rl_env=0|1, loader_ms_per_sample=MS, env_steps_per_update=N, cpu_cores_per_gpu=N, tf32=0|1, "
                   "channels_last=0|1, optimizer=sgd|sgd_momentum|adam|adamw, activation_checkpointing=0|1, "
                   "trainable_fraction=F, "
                   "zero_stage=0-3, grad_accumulation=N, variable_shapes=0|1, cuda_module_loading=lazy|eager")
    p.add_argument("--gpu", help="GPU the job runs on (default: the service's cluster's)")
    p.add_argument("--gpus", type=int, help="data-parallel GPUs; --batch is per GPU (one rank's answer)")
    # POST /v1/jobs takes mig and level as POST /v1/predict does (docs/api.md); nodes and interconnect
    # only /v1/predict (the service places a job on the GPUs of one node).
    p.add_argument("--mig", help="MIG profile of --gpu, e.g. 3g.40gb")
    p.add_argument("--level", type=float, help="central probability of the interval (calibrated predictors)")
    if not submit:
        p.add_argument("--nodes", type=int, help="nodes the --gpus are spread on")
        p.add_argument("--interconnect", help="links instead of the GPU table's, e.g. pcie4x16,ib200")
    if submit:
        p.add_argument("--name")
        p.add_argument("--mem-mib", type=float)
        p.add_argument("--duration-s", type=float)
        p.add_argument("--idempotency-key")


def job_kwargs(a, submit):
    kw = {"amp": a.amp, "dims": dict(a.dim), "attrs": dict(a.attr), "gpu": a.gpu, "gpus": a.gpus}
    kw.update(mig=a.mig, level=a.level)
    if submit:
        kw.update(name=a.name, mem_mib=a.mem_mib, duration_s=a.duration_s)
    else:
        kw.update(nodes=a.nodes, interconnect=a.interconnect)
    return kw


def upload_query(a, submit):
    q = {}
    if a.amp:
        q["amp"] = 1
    for k, v in a.dim:
        q[f"dim.{k}"] = v
    for k, v in a.attr:
        q[f"attr.{k}"] = v
    keys = ("gpu", "gpus", "mig", "level", "name", "duration_s") if submit else ("gpu", "gpus", "mig", "nodes",
                                                                                "interconnect", "level")
    for k in keys:
        v = getattr(a, k)
        if v is not None:
            q[k] = int(v) if k == "duration_s" else v
    return q


def show_prediction(r):
    """The lines `gpucast predict` prints, from the reply's `predict --json` fields."""
    if "gpu_util" not in r:  # a job read back from the store: the prediction only
        lo, hi = r["predicted_util_interval"]
        return f"predicted GPU utilization {r['predicted_util']:.1f}%  (interval {lo:.1f}-{hi:.1f}%)"
    iv = r["interval"]
    where = r["gpu"] + (f" MIG {r['mig_profile']}" if r.get("mig_profile") else "")
    lines = [f"predicted GPU utilization on {where}: {r['gpu_util']:.1f}%  ({iv['level'] * 100:.0f}% interval "
             f"{iv['low']:.1f}-{iv['high']:.1f}%, {r['algo']}; {r['target']})"]
    if r.get("step_ms") is not None:
        si = r["step_ms_interval"]
        rank = ", one rank's" if r["gpus"] > 1 else ""
        lines.append(f"  step time: {r['step_ms']:.1f} ms ({si['level'] * 100:.0f}% interval {si['low']:.1f}-"
                     f"{si['high']:.1f} ms){rank}")
    if r.get("power_limited_clock") is False:
        lines.append("  boost clock: the model counts every GPU's compute peaks at its boost clock, not the "
                     "power-limited clock (docs/predictor.md)")
    if r.get("gpu_measured") is False:
        lines.append(f"  GPU not measured: no training row ran on {r['gpu']} (measured: "
                     f"{', '.join(r.get('measured_gpus') or [])}); the interval spans its unknown host")
    if r.get("unsure"):
        lines.append(f"  unsure: {'; '.join(r.get('unsure_reasons') or [])}")
    w = r.get("workload") or {}
    if w.get("seen"):
        lines.append(f"  measured workload: {w['measured_workload']} ({w['measured_rows']} training rows on this GPU "
                     "type); its seen-workload correction applies")
    elif w.get("measured_on"):
        lines.append(f"  unseen here: the graph and job facts are {w['same_graph_workload']}'s, measured on "
                     f"{', '.join(w['measured_on'])} only; its correction is not carried to {r['gpu']}")
    elif w.get("same_graph_workload"):
        lines.append(f"  unseen job: the graph is {w['same_graph_workload']}'s, measured with other job facts "
                     f"({'; '.join(w.get('differing_facts') or [])}); no correction")
    else:
        lines.append("  unseen workload: no measured job has this graph")
    e = r.get("expected_error_unseen")
    if e:
        lines.append(f"  expected error on an unseen workload (this model's leave-one-workload-out pass, "
                     f"{e['workloads']} workloads): RMSLE {e['rmsle']:.2f}, median |error| "
                     f"{e['median_abs_error_points']:.1f} points, mean {e['mae_points']:.1f}; the "
                     f"{e['interval_level'] * 100:.0f}% interval held {e['interval_coverage'] * 100:.0f}% of them "
                     f"(median width {e['interval_median_width_points']:.0f} points)")
    else:
        lines.append("  expected error: unknown (the model was trained without a leave-one-workload-out pass)")
    dp = r.get("data_parallel")
    if dp:
        links = dp["intra_node"]["name"]
        if r["nodes"] > 1 and "inter_node" in dp:
            inter = dp["inter_node"]
            links += ", " + inter["name"] + (" assumed" if inter.get("from") == "default" else "")
        lines.append(f"  one rank of {r['gpus']} GPUs on {r['nodes']} node{'s' if r['nodes'] != 1 else ''} ({links}): "
                     f"single GPU {dp['single_gpu_util']:.1f}%; step {dp['single_gpu_step_ms']:.1f} -> "
                     f"{dp['step_ms']:.1f} ms (scaling efficiency {dp['scaling_efficiency']:.3f}); all-reduce "
                     f"{dp['allreduce_bytes'] / 1e6:.1f} MB in {dp['buckets']} buckets, {dp['comm_ms']:.2f} ms, "
                     f"{dp['exposed_comm_ms']:.2f} ms exposed; compute share {dp['compute_util']:.1f}%")
    mi = r.get("gpu_mem_interval") or {}
    if r.get("gpu_mem_mib") is not None:
        # The low end misses what the interval may miss (1 - level) less what the high end misses
        # (1 - high_level): MemoryLowAlpha in src/predict/memory_model.h.
        level, high_level = mi.get('level', 0), mi.get('high_level', 0)
        lines.append(f"predicted GPU memory (peak): {r['gpu_mem_mib']:.0f} MiB  (interval {mi['low']:.0f}-"
                     f"{mi['high']:.0f} MiB at {level * 100:.0f}%: low end a one-sided "
                     f"{(1 + level - high_level) * 100:.1f}% bound, high end a one-sided "
                     f"{high_level * 100:.1f}% bound; optimizer {r.get('optimizer')}); "
                     f"{r['gpu_mem_fit']} the {r['gpu_mem_capacity_mib']:.0f} MiB of {where}")
    else:
        lines.append("predicted GPU memory: unknown (the predictor file has no memory model: its training rows had "
                     "no memory column)")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m gpucast_client", description=__doc__.splitlines()[0],
                                 epilog="\n".join(__doc__.splitlines()[2:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=os.environ.get("GPUCAST_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--token-file", default=os.environ.get("GPUCAST_TOKEN_FILE"))
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default 30)")
    ap.add_argument("--json", action="store_true", help="print the service's JSON reply")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    job_flags(sub.add_parser("predict", help="predict a job's GPU utilization (POST /v1/predict)"), False)
    job_flags(sub.add_parser("submit", help="submit a job (POST /v1/jobs)"), True)
    p = sub.add_parser("jobs", help="list jobs (GET /v1/jobs, every page)")
    p.add_argument("--state", choices=["queued", "running", "done", "cancelled"])
    sub.add_parser("job", help="one job (GET /v1/jobs/ID)").add_argument("id", type=int)
    sub.add_parser("cancel", help="cancel a job (DELETE /v1/jobs/ID)").add_argument("id", type=int)
    p = sub.add_parser("observe", help="report a job's measured utilization (POST /v1/jobs/ID/observations)")
    p.add_argument("id", type=int)
    p.add_argument("--gpu-util", type=float, required=True, help="percent, 0-100")
    p.add_argument("--source", required=True, choices=["nvidia-smi", "dcgm", "slurm"])
    p.add_argument("--samples", type=int, default=1)
    p.add_argument("--gpu")
    p = sub.add_parser("store-model", help="store an ONNX file by its content (POST /v1/models): prints "
                       "sha256:<hex>, which a job or a pod's gpucast.io/model annotation may name")
    p.add_argument("file")
    sub.add_parser("cluster", help="GPUs and their jobs (GET /v1/cluster)")
    sub.add_parser("health", help="GET /healthz")
    sub.add_parser("metrics", help="GET /metrics (Prometheus text)")
    sub.add_parser("reload", help="reload the predictor file (POST /v1/admin/reload)")
    a = ap.parse_args(argv)

    token = None
    if a.token_file:
        try:
            with open(a.token_file) as f:
                token = f.read().strip()
        except OSError as e:
            print(f"gpucast_client: --token-file {a.token_file}: {e.strerror}", file=sys.stderr)
            return 2
    try:
        c = Client(a.url, token, a.timeout)
        if a.command in ("predict", "submit"):
            submit = a.command == "submit"
            if bool(a.model) == bool(a.upload):
                ap.error(f"{a.command}: give --model (repeatable) or --upload FILE")
            once(ap, "--dim", a.dim)
            once(ap, "--attr", a.attr)
            if a.upload:
                with open(a.upload, "rb") as f:
                    body = f.read()
                path = "/v1/jobs" if submit else "/v1/predict"
                import urllib.parse
                q = urllib.parse.urlencode({"batch": a.batch, **upload_query(a, submit)})
                r = c.request("POST", f"{path}?{q}", body, "application/octet-stream")
            elif submit:
                r = c.submit(a.model, a.batch, idempotency_key=a.idempotency_key, **job_kwargs(a, True))
            else:
                r = c.predict(a.model, a.batch, **job_kwargs(a, False))
            text = show_prediction(r) + (f"; job {r['id']} {r['state']}" if submit else "")
        elif a.command == "jobs":
            r = list(c.jobs(a.state))
            text = "\n".join(f"{j['id']:>6} {j['state']:<9} {j['predicted_util']:6.1f}% "
                             f"{j.get('name') or j.get('model') or ''}" for j in r) or "(no jobs)"
        elif a.command == "job":
            r = c.job(a.id)
            text = json.dumps(r, indent=2)
        elif a.command == "cancel":
            r = c.cancel(a.id)
            text = f"job {r['id']} {r['state']}"
        elif a.command == "observe":
            r = c.observe(a.id, a.gpu_util, a.source, a.samples, a.gpu)
            text = f"job {r['job']}: observed {r['observed_util']:.1f}% over {r['observed_samples']} samples " \
                   f"(predicted {r['predicted_util']:.1f}%)"
        elif a.command == "store-model":
            with open(a.file, "rb") as f:
                r = c.store_model(f.read())
            text = r["model"]
        elif a.command == "cluster":
            r = c.cluster()
            text = "\n".join([f"{r['cluster']}, policy {r['policy']}, queued {len(r['queued'])}"] +
                             [f"  gpu {g['id']} ({g['type']}): jobs {[j['id'] for j in g['jobs']]}, predicted load "
                              f"{g['predicted_load']:.1f}" for g in r["gpus"]])
        elif a.command == "health":
            r = c.health()
            text = f"{r['status']}: {r['predictor']}"
        elif a.command == "metrics":
            r = c.metrics()
            text = r.rstrip("\n")
        else:  # reload
            r = c.reload()
            text = f"reloaded: {r['predictor']}"
    except GpucastError as e:
        print(f"gpucast_client: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"gpucast_client: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    if a.json and not isinstance(r, str):
        print(json.dumps(r, indent=2, sort_keys=True))
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
