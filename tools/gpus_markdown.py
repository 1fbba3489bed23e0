#!/usr/bin/env python3
"""The GPU table of docs/features.md from `gpucast gpus --json` (stdin): one markdown row per GPU.

Usage: build/gpucast gpus --json | python3 tools/gpus_markdown.py
"""
import json
import sys


def num(v):
    return "-" if v == 0 else f"{v:g}"


def main():
    gpus = json.load(sys.stdin)
    print("| name | class | arch | form | FP32 | FP16/BF16 tensor | TF32 | GB/s | GB | W | boost MHz "
          "| PCIe | NVLink (GB/s both ways) | also accepted | source |")
    print("|" + "---|" * 15)
    for g in gpus:
        w = g["power_w"]
        watts = num(w["max"]) if w["min"] == w["max"] else f"{w['min']:g}-{w['max']:g}"
        b = g["boost_mhz"]
        boost = num(b["max"]) if b["min"] == b["max"] else f"{b['min']:g}-{b['max']:g}"
        pcie = f"{g['pcie']['gen']}.0 x{g['pcie']['lanes']}" if g["pcie"]["gen"] else "not stated"
        nv = g["nvlink"]
        nvlink = "-"
        if nv["gen"]:
            links = f", {nv['links']} links" if nv["links"] else ""
            nvlink = f"{nv['gen']} {'bridge' if nv['bridge'] else 'fabric'}{links}, {2 * nv['gbps_per_direction']:g}"
        fp16 = num(g["fp16_tensor_tflops"])
        if g["bf16_tensor_tflops"] and g["bf16_tensor_tflops"] != g["fp16_tensor_tflops"]:
            fp16 += f" / {num(g['bf16_tensor_tflops'])}"
        print(f"| {g['name']} | {g['class']} | {g['architecture']} | {g['form_factor']} | {num(g['fp32_tflops'])} "
              f"| {fp16} | {num(g['tf32_tensor_tflops'])} | {num(g['memory_gbps'])} | {num(g['memory_gb'])} "
              f"| {watts} | {boost} | {pcie} | {nvlink} | {', '.join(g['aliases'])} | {g['source']} |")


if __name__ == "__main__":
    main()
