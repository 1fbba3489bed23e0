#!/usr/bin/python3
"""Export models the way users export them with the PyTorch at hand, and check gpucast reads them.

usage: python3 tools/measure/export_probe.py export --out FILE.tar.gz [--budget SECONDS] [--only NAME ...]
       /usr/bin/python3 tools/measure/export_probe.py check FILE.tar.gz [--gpucast build/gpucast] [--json]

`export` (any machine with torch, torchvision; transformers optional): each model of MODELS in three
styles, in this order so that a --budget cut keeps the first:
  dynamo_train   model.train(); torch.onnx.export(model, args, f, dynamo=True, dynamic_shapes=...):
                 the exporter PyTorch >= 2.9 uses by default, in training mode
  legacy_train   torch.onnx.export(..., dynamo=False, training=TrainingMode.TRAINING,
                 do_constant_folding=False, opset_version=17): what docs/models.md asks for
  default_eval   model.eval(); torch.onnx.export(model, args, f): what a user types first
The weights are stripped (saved as external data whose file is then deleted: gpucast reads the
shapes, never the values), so the archive stays small. The archive holds each .onnx and
manifest.json: per export its style, torch's parameter count, seconds, opset and the error if it
failed. Nothing here needs a GPU; tools/measure/device_check.sh runs it after its measurements, on
the lent machine's newer PyTorch (this machine's Debian torch 1.13 has no dynamo exporter).

`check` (here): each training-style file gets tools/gpucast-export's own check (`check_analyze`:
`gpucast analyze` costs every node, counts torch's parameters, and the cost follows the batch); an
eval-mode file is only read and costed (it folds BatchNorm into its convolutions and may copy tied
weights, so its count need not be torch's); per model, the two training styles against each
other (`compare_styles`): training FLOPs, kernels and the bytes kept for backward, which must agree
(kernels equal, kept bytes within 2%: issue 37's two exports of one network; reported, not an exit
status). Exit status 0 when every
training-style export that exported was read and costed with torch's parameter count, 1 otherwise, 2
on a bad archive.
"""
import argparse
import json
import os
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
STYLES = ["dynamo_train", "legacy_train", "default_eval"]
BATCH = 4  # the example batch of every export (symbolic where the style allows)


def _gpt_small():
    """A 4-layer decoder-only transformer in plain torch (causal mask, learned positions, tied head)."""
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(0.1))

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab=8192, d=256, heads=8, layers=4, ctx=128):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
            self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            self.head.weight = self.tok.weight
            self.register_buffer("mask", torch.triu(torch.full((ctx, ctx), float("-inf")), 1), persistent=False)

        def forward(self, ids):
            t = ids.size(1)
            x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
            for b in self.blocks:
                x = b(x, self.mask[:t, :t])
            return self.head(self.ln(x))

    return GPT()


def _hf_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel  # optional: absent here, present on the lent GPUs
    cfg = GPT2Config(n_layer=4, n_embd=256, n_head=8, n_positions=128, vocab_size=8192)
    m = GPT2LMHeadModel(cfg)
    m.config.use_cache = False
    import torch.nn as nn

    class Wrap(nn.Module):  # logits only: the model's output object is not a tensor
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False).logits
    return Wrap()


def _tv(name):
    def make():
        import torchvision
        return getattr(torchvision.models, name)()
    return make


# name, factory, example inputs (dtype, shape with the batch first), the batch's dim is symbolic
MODELS = [
    ("resnet50", _tv("resnet50"), [("float32", [BATCH, 3, 224, 224])]),
    ("vit_b_16", _tv("vit_b_16"), [("float32", [BATCH, 3, 224, 224])]),
    ("swin_t", _tv("swin_t"), [("float32", [BATCH, 3, 224, 224])]),
    ("convnext_tiny", _tv("convnext_tiny"), [("float32", [BATCH, 3, 224, 224])]),
    ("gpt_small", _gpt_small, [("int64", [BATCH, 128])]),
    ("hf_gpt2_small", _hf_gpt2, [("int64", [BATCH, 128])]),
]


def _inputs(spec):
    import torch
    return tuple(torch.zeros(shape, dtype=torch.int64) if dt == "int64" else torch.randn(shape) for dt, shape in spec)


def export_one(name, factory, spec, style, path):
    """Exports; returns the manifest entry (error set on failure)."""
    import torch
    entry = {"model": name, "style": style, "batch": BATCH, "torch": torch.__version__}
    t0 = time.time()
    try:
        model = factory()
        entry["torch_params"] = sum(p.numel() for p in model.parameters())
        args = _inputs(spec)
        names = [f"input{i}" for i in range(len(args))]
        if style == "dynamo_train":
            model.train()
            batch = torch.export.Dim("batch", min=2, max=4096)
            torch.onnx.export(model, args, path, dynamo=True, input_names=names,
                              dynamic_shapes=tuple({0: batch} for _ in args))
        elif style == "legacy_train":
            kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
            torch.onnx.export(model, args, path, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                              opset_version=17, input_names=names, dynamic_axes={n: {0: "batch"} for n in names}, **kw)
        else:
            model.eval()
            torch.onnx.export(model, args, path)
        _strip_weights(path)
        import onnx
        entry["opset"] = max((o.version for o in onnx.load(path, load_external_data=False).opset_import
                              if o.domain in ("", "ai.onnx")), default=None)
        entry["file"] = os.path.basename(path)
    except Exception as e:  # noqa: BLE001 - every failure is a finding, recorded
        entry["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
        if os.path.exists(path):
            os.remove(path)
    entry["seconds"] = round(time.time() - t0, 2)
    return entry


def _strip_weights(path):
    """Moves every initializer's data to an external file, then deletes that file: shapes stay."""
    import onnx
    m = onnx.load(path)
    for f in os.listdir(os.path.dirname(path)):  # the dynamo exporter may write its own .data beside
        if f.startswith(os.path.basename(path)) and f != os.path.basename(path):
            os.remove(os.path.join(os.path.dirname(path), f))
    data = os.path.basename(path) + ".weights"
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location=data,
                    size_threshold=0)
    os.remove(os.path.join(os.path.dirname(path), data))


def cmd_export(a):
    entries, t0 = [], time.time()
    models = [m for m in MODELS if not a.only or m[0] in a.only]
    with tempfile.TemporaryDirectory() as d:
        for style in STYLES:
            for name, factory, spec in models:
                if a.budget and time.time() - t0 > a.budget:
                    entries.append({"model": name, "style": style, "error": "skipped: --budget spent"})
                    continue
                e = export_one(name, factory, spec, style, os.path.join(d, f"{name}.{style}.onnx"))
                entries.append(e)
                print(f"export_probe: {name} {style}: " + (e.get("error") or f"ok, opset {e['opset']}, {e['seconds']} s"),
                      flush=True)
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump({"entries": entries}, f, indent=1)
        with tarfile.open(a.out, "w:gz") as tar:
            for f in sorted(os.listdir(d)):
                tar.add(os.path.join(d, f), arcname=f)
    ok = sum(1 for e in entries if "file" in e)
    print(f"export_probe: {ok} of {len(entries)} exports written to {a.out}")
    return 0


def export_tool():
    """tools/gpucast-export as a module: its checks of an exported graph are the ones used here."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("gpucast_export", os.path.join(ROOT, "tools", "gpucast-export"))
    spec = importlib.util.spec_from_loader("gpucast_export", loader)
    tool = importlib.util.module_from_spec(spec)
    loader.exec_module(tool)
    return tool


def check_file(tool, gpucast, path, entry):
    """A training-style export gets gpucast-export's check (every node costed, torch's parameter count,
    the cost follows the batch); an eval export is only read and costed (it folds BatchNorm into the
    convolutions and may copy tied weights, so its count need not be torch's). Returns the fields."""
    name = entry["file"]
    try:
        if entry["style"] == "default_eval":
            rep = tool.analyze(gpucast, path, entry["batch"], {})
            if not rep["complete"]:
                raise tool.CheckError(f"{path}: gpucast could not cost {rep['uncosted_nodes']} node(s); first: "
                                      f"{rep['first_uncosted']}")
        else:
            rep = tool.check_analyze(gpucast, path, entry.get("torch_params"), entry["batch"], {})
    except tool.CheckError as e:
        return {"check": str(e).replace(path, name)}
    t = rep["totals"]
    return {"check": "ok", "params": t["params"], "train_flops": t["forward_flops"] + t["backward_flops"],
            "kernels": int(rep["features"]["kernel_count"]), "saved_bytes": t["saved_bytes"],
            "warnings": [w.replace(path, name)[:160] for w in rep["warnings"]][:3]}


# Issue 37: two exports of one network predict memory within 2% of each other. What the graph sets
# of it is the tensors kept for backward (the weights are the same parameters).
SAVED_TOLERANCE = 0.02


def compare_styles(results):
    """Per model with both training styles read: dynamo's training FLOPs, kernels and kept bytes
    against legacy's (ratios - 1; kernels as the two counts) and whether they agree (kernels equal,
    kept bytes within SAVED_TOLERANCE)."""
    by = {}
    for r in results:
        if r.get("train_flops") and r["style"] in ("dynamo_train", "legacy_train"):
            by.setdefault(r["model"], {})[r["style"]] = r
    out = {}
    for m, v in by.items():
        if len(v) != 2:
            continue
        d, l = v["dynamo_train"], v["legacy_train"]
        saved = d["saved_bytes"] / l["saved_bytes"] - 1 if l["saved_bytes"] else None
        out[m] = {"training_flops": d["train_flops"] / l["train_flops"] - 1,
                  "kernels": [d["kernels"], l["kernels"]], "saved_bytes": saved,
                  "agree": d["kernels"] == l["kernels"] and saved is not None and abs(saved) <= SAVED_TOLERANCE}
    return out


def cmd_check(a):
    try:
        tar = tarfile.open(a.archive, "r:gz")
        members = {m.name: m for m in tar.getmembers() if m.isfile() and "/" not in m.name and m.size < 64 << 20}
        manifest = json.load(tar.extractfile(members["manifest.json"]))["entries"]
    except (OSError, tarfile.TarError, KeyError, ValueError) as e:
        print(f"export_probe: {a.archive}: not an export_probe archive ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    results, bad = [], 0
    tool = export_tool()
    with tempfile.TemporaryDirectory() as d:
        for e in manifest:
            res = dict(e)
            if "file" in e:
                if e["file"] not in members:
                    res["check"] = "file missing from the archive"
                else:
                    path = os.path.join(d, e["file"])
                    with open(path, "wb") as f:
                        f.write(tar.extractfile(members[e["file"]]).read())
                    res.update(check_file(tool, a.gpucast, path, e))
            elif e.get("error", "").startswith("skipped"):
                res["check"] = "skipped"
            else:
                res["check"] = "export failed"
            if e["style"] != "default_eval" and res["check"] not in ("ok", "export failed", "skipped"):
                bad += 1
            results.append(res)
    pairs = compare_styles(results)
    if a.json:
        print(json.dumps({"results": results, "dynamo_vs_legacy": pairs}, indent=1))
    else:
        print("| model | style | torch | opset | export | gpucast | params (torch's) | training GFLOPs at the batch |\n"
              "|---|---|---|---|---|---|---|---|")
        for r in results:
            print(f"| {r['model']} | {r['style']} | {r.get('torch', '-')} | {r.get('opset', '-')} | "
                  f"{'ok' if 'file' in r else r.get('error', '-')[:120]} | {r['check']} | "
                  f"{r.get('params', '-')} ({r.get('torch_params', '-')}) | "
                  f"{'-' if not r.get('train_flops') else format(r['train_flops'] / 1e9, '.1f')} |")
        for m, v in pairs.items():
            saved = "-" if v["saved_bytes"] is None else f"{1 + v['saved_bytes']:.4f}"
            print(f"{m}: dynamo / legacy: training FLOPs {1 + v['training_flops']:.4f}, kernels {v['kernels'][0]} / "
                  f"{v['kernels'][1]}, kept for backward {saved}: "
                  f"{'agree' if v['agree'] else 'DIFFER (kernels, or kept bytes beyond 2%)'}")
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    e.add_argument("--budget", type=float, default=0.0, help="seconds; exports not started past it are listed as skipped")
    e.add_argument("--only", nargs="*", help="model names of MODELS")
    c = sub.add_parser("check")
    c.add_argument("archive")
    c.add_argument("--gpucast", default=os.path.join(ROOT, "build", "gpucast"))
    c.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "export":
        unknown = set(a.only or []) - {m[0] for m in MODELS}
        if unknown:
            ap.error(f"unknown model(s) {sorted(unknown)}; known: {', '.join(m[0] for m in MODELS)}")
        return cmd_export(a)
    return cmd_check(a)


if __name__ == "__main__":
    sys.exit(main())
