#!/usr/bin/env python3
"""measure_kernels.py — time the kernels the compute model predicts, on one GPU.

Times, with PyTorch on the GPU it runs on:
  - bf16 and fp8 GEMMs with the shapes of the built-in models' layers (forward,
    input-gradient and weight-gradient GEMMs of QKV, attention output, MLP up
    and down, at the tensor-parallel degrees the validation cases use);
  - fused attention (scaled_dot_product_attention, flash backend: PyTorch's
    FlashAttention-2, written as "impl": "fa2"), causal and
    not, forward and backward, over sequence lengths and head sizes;
  - memory-bound kernels: a copy and a LayerNorm.

and writes one JSON table (default platforms/measure/<device>.json) that
tests/test_compute_measured.c compares the compute model against.  Each row:
  {"kind": "gemm"|"attention"|"copy"|"layernorm", ["impl",] "dtype", "m", "n", "k",
   "batch", "causal", "phase", "flops", "bytes", "time_s"}
with the same conventions as a workload op (workload.h): GEMM flops 2 m n k
x batch; attention m = queries, n = keys, k = head dim, batch = micro-batch x
heads, flops of the unmasked part (causal: half), backward 2.5x forward.

Timing: CUDA events around back-to-back launches (as many as fill about 10 ms,
at most --iters) after --warmup launches, the median of --repeats such
measurements; the L2 cache is flushed before each measurement.  Needs PyTorch >= 2.1 with CUDA; fp8 rows need torch._scaled_mm
and a device with fp8 (sm_89/sm_90), and are skipped otherwise.

usage: python3 platforms/measure/measure_kernels.py [--out FILE] [--quick]
"""
import argparse
import json
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - reported to the user
    sys.exit("measure_kernels.py: PyTorch is not installed")

# Built-in model shapes (hidden, heads, kv_heads, ffn, swiglu) — the same as
# workloads/wl_model.c — and the tensor-parallel degrees worth measuring.
MODELS = {  # name: (hidden, heads, kv_heads, ffn, swiglu, tensor-parallel degrees)
    "llama3-8b": (4096, 32, 8, 14336, True, (1, 2, 4, 8)),
    "llama3-70b": (8192, 64, 8, 28672, True, (4, 8)),
    "gpt3-175b": (12288, 96, 96, 49152, False, (8,)),
    "megatron-1.7b": (2304, 24, 24, 9216, False, (1,)),
    "megatron-18b": (6144, 48, 48, 24576, False, (8,)),
    "megatron-1t": (25600, 160, 160, 102400, False, (8,)),
    "megatron-h100-7.1b": (4096, 32, 32, 16384, False, (2,)),
}
TOKENS = (2048, 4096, 8192)  # micro-batch x sequence
ATTN_SEQ = (512, 1024, 2048, 4096, 8192)
ATTN_HEAD_DIM = (64, 128)


def gemm_shapes(quick):
    """(m, n, k) of forward, dgrad and wgrad GEMMs, deduplicated, sorted."""
    shapes = set()
    for hidden, heads, kv, ffn, swiglu, tps in MODELS.values():
        hd = hidden // heads
        for tp in tps:
            qkv = (heads + 2 * kv) * hd // tp
            up = (2 if swiglu else 1) * ffn // tp
            for T in TOKENS:
                for n, k in ((qkv, hidden), (hidden, heads * hd // tp), (up, hidden), (hidden, ffn // tp)):
                    shapes.add((T, n, k))       # forward  [T,k] x [k,n]
                    shapes.add((T, k, n))       # dgrad    [T,n] x [n,k]
                    shapes.add((k, n, T))       # wgrad    [k,T] x [T,n]
    shapes = sorted(shapes)
    if quick:
        shapes = shapes[:: max(1, len(shapes) // 24)]
    return shapes


class Timer:
    def __init__(self, warmup, iters, repeats):
        self.warmup, self.iters, self.repeats = warmup, iters, repeats
        self.flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")

    def once(self, fn, iters):
        self.flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / iters

    def __call__(self, fn):
        for _ in range(self.warmup):
            fn()
        torch.cuda.synchronize()
        # about 10 ms per measurement, at most `iters` launches
        t = self.once(fn, 1)
        iters = max(1, min(self.iters, int(0.01 / max(t, 1e-7))))
        return statistics.median(self.once(fn, iters) for _ in range(self.repeats))


def time_gemm(timer, m, n, k, dtype):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    if dtype == "bf16":
        return timer(lambda: torch.matmul(a, b))
    if not hasattr(torch, "_scaled_mm"):
        return None
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt wants
    one = torch.ones((), device="cuda", dtype=torch.float32)
    try:
        torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    except (RuntimeError, TypeError):
        return None
    return timer(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))


def time_attention(timer, s, hd, heads, causal, backward):
    b = 1
    q, k, v = (torch.randn(b, heads, s, hd, device="cuda", dtype=torch.bfloat16, requires_grad=backward)
               for _ in range(3))
    ctx = torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION) \
        if hasattr(torch.nn, "attention") else torch.backends.cuda.sdp_kernel(
            enable_flash=True, enable_math=False, enable_mem_efficient=False)
    with ctx:
        if not backward:
            return timer(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        g = torch.randn_like(o)
        fwd = timer(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))

        def step():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.autograd.grad(out, (q, k, v), g)
        return max(timer(step) - fwd, 0.0)  # backward alone


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output JSON (default platforms/measure/<device>.json)")
    ap.add_argument("--quick", action="store_true", help="a subset of the GEMM shapes (a few minutes)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("measure_kernels.py: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    name = props.name
    device = "H200" if "H200" in name else "H100-SXM" if "H100" in name else \
        "A100-SXM4-80GB" if "A100" in name else name.replace(" ", "-")
    here = os.path.dirname(os.path.abspath(__file__))
    out = args.out or os.path.join(here, device + ".json")
    timer = Timer(args.warmup, args.iters, args.repeats)
    rows = []
    t0 = time.time()
    fp8_ok = props.major * 10 + props.minor >= 89
    for (m, n, k) in gemm_shapes(args.quick):
        for dtype in ("bf16", "fp8") if fp8_ok else ("bf16",):
            t = time_gemm(timer, m, n, k, dtype)
            if t is None:
                continue
            el = 1 if dtype == "fp8" else 2
            rows.append({"kind": "gemm", "dtype": dtype, "m": m, "n": n, "k": k, "batch": 1,
                         "causal": False, "phase": "forward", "flops": 2.0 * m * n * k,
                         "bytes": float((m * k + k * n) * el + m * n * 2), "time_s": t})
    for s in ATTN_SEQ:
        for hd in ATTN_HEAD_DIM:
            heads = 4096 // hd
            for causal in (True, False):
                for bwd in (False, True):
                    t = time_attention(timer, s, hd, heads, causal, bwd)
                    full = 4.0 * s * s * hd * heads
                    fl = full * (0.5 if causal else 1.0) * (2.5 if bwd else 1.0)
                    rows.append({"kind": "attention", "impl": "fa2", "dtype": "bf16",
                                 "m": s, "n": s, "k": hd, "batch": heads, "causal": causal,
                                 "phase": "backward" if bwd else "forward", "flops": fl,
                                 "bytes": float(4 * s * hd * heads * 2 * (2 if bwd else 1)),
                                 "time_s": t})
    for mib in (16, 256, 2048):
        n_el = mib * 1024 * 1024 // 2
        x = torch.empty(n_el, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        rows.append({"kind": "copy", "dtype": "bf16", "m": 0, "n": 0, "k": 0, "batch": 1,
                     "causal": False, "phase": "forward", "flops": 0.0, "bytes": 4.0 * n_el,
                     "time_s": timer(lambda: y.copy_(x))})
    for T, h in ((8192, 4096), (8192, 8192), (4096, 12288)):
        x = torch.randn(T, h, device="cuda", dtype=torch.bfloat16)
        ln = torch.nn.LayerNorm(h, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            rows.append({"kind": "layernorm", "dtype": "bf16", "m": T, "n": h, "k": 0, "batch": 1,
                         "causal": False, "phase": "forward", "flops": 8.0 * T * h,
                         "bytes": 4.0 * T * h, "time_s": timer(lambda: ln(x))})
    table = {
        "device": device,
        "gpu_name": name,
        "sms": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "method": "CUDA events, median of %d measurements of up to %d launches (about 10 ms) "
                  "after %d warm-up, L2 flushed" % (args.repeats, args.iters, args.warmup),
        "seconds_to_measure": round(time.time() - t0, 1),
        "rows": rows,
    }
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)
    print("measure_kernels.py: %d rows in %.0f s -> %s" % (len(rows), time.time() - t0, out))


if __name__ == "__main__":
    main()
