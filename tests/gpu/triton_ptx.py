#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""triton_ptx.py OUTDIR: PTX of a few Triton kernels for tests/gpu/jit_check.

Writes OUTDIR/NAME.ptx and OUTDIR/NAME.spec (one "ooo-jit:" spec line, in the
format of tests/jit/kernels, describing the kernel's real PTX parameters) for
an elementwise add, a row softmax and a small tl.dot matmul.

The PTX comes from triton.compile(ASTSource(...), target=GPUTarget("cuda", 90,
32)) without a launch where this Triton version allows it (3.x APIs differ:
several forms are tried), else from one launch with torch tensors (the
returned compiled kernel, or Triton's cache directory). Triton appends
pointer parameters of its own (global scratch, profile scratch) after the
kernel's arguments in recent versions: they are described as `u64:0` (a null
pointer, which is what Triton's own launcher passes when the kernel needs no
scratch) or, when the kernel does need scratch memory, as a buffer of the
size Triton would allocate.

No integer argument is 1: a launch would specialise it away (a constexpr),
and the spec would no longer match the PTX.

Exit status: 0 when every kernel was written, 77 when triton cannot be
imported (SKIP), 1 when some kernel could not be written.
"""
import os
import re
import sys


def log(*a):
    print(*a, flush=True)


def main():
    if len(sys.argv) != 2:
        print("usage: triton_ptx.py OUTDIR", file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # a private cache, so the cache-directory fallback finds this run's files
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(out, "cache"))
    try:
        import triton
        import triton.language as tl
    except Exception as e:  # ImportError, or a broken install
        log(f"SKIP: no triton ({type(e).__name__}: {e})")
        return 77
    log(f"triton {getattr(triton, '__version__', '?')} from {os.path.dirname(triton.__file__)}")

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_elements
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        y = num / tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        # row-major A (M x K), B (K x N), C (M x N): unit inner strides are not arguments
        pid = tl.program_id(0)
        num_n = tl.cdiv(N, BLOCK_N)
        pid_m = pid // num_n
        pid_n = pid % num_n
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            kk = k * BLOCK_K + rk
            a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :],
                        mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :],
                        mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc,
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    n = 10000
    rows, cols = 48, 781
    mm = 128
    # each argument: (name, triton signature type, spec item, torch dtype or int value)
    kernels = [
        dict(name="add_kernel", fn=add_kernel, warps=4, stages=3, grid=((n + 1023) // 1024, 1, 1),
             args=[("x_ptr", "*fp32", f"in:f32:{n}", "float32", n),
                   ("y_ptr", "*fp32", f"in:f32:{n}", "float32", n),
                   ("out_ptr", "*fp32", f"out:f32:{n}", "float32", n),
                   ("n_elements", "i32", f"i32:{n}", None, n)],
             constexprs={"BLOCK_SIZE": 1024}),
        dict(name="softmax_kernel", fn=softmax_kernel, warps=4, stages=3, grid=(rows, 1, 1),
             args=[("out_ptr", "*fp32", f"out:f32:{rows * cols}", "float32", rows * cols),
                   ("in_ptr", "*fp32", f"in:f32:{rows * cols}", "float32", rows * cols),
                   ("in_row_stride", "i32", f"i32:{cols}", None, cols),
                   ("out_row_stride", "i32", f"i32:{cols}", None, cols),
                   ("n_cols", "i32", f"i32:{cols}", None, cols)],
             constexprs={"BLOCK_SIZE": 1024}),
        dict(name="matmul_kernel", fn=matmul_kernel, warps=4, stages=3, grid=((mm // 64) * (mm // 64), 1, 1),
             args=[("a_ptr", "*fp16", f"in:f16:{mm * mm}", "float16", mm * mm),
                   ("b_ptr", "*fp16", f"in:f16:{mm * mm}", "float16", mm * mm),
                   ("c_ptr", "*fp32", f"out:f32:{mm * mm}", "float32", mm * mm),
                   ("M", "i32", f"i32:{mm}", None, mm),
                   ("N", "i32", f"i32:{mm}", None, mm),
                   ("K", "i32", f"i32:{mm}", None, mm),
                   ("stride_am", "i32", f"i32:{mm}", None, mm),
                   ("stride_bk", "i32", f"i32:{mm}", None, mm),
                   ("stride_cm", "i32", f"i32:{mm}", None, mm)],
             constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}),
    ]
    bad = 0
    for k in kernels:
        try:
            ptx, meta, how = compile_kernel(triton, k, out)
            write_spec(k, ptx, meta, how, out)
        except Exception as e:
            bad += 1
            log(f"{k['name']}: FAILED: {type(e).__name__}: {e}")
    return 1 if bad else 0


def meta_get(meta, key, default=None):
    if meta is None:
        return default
    if isinstance(meta, dict):
        return meta.get(key, default)
    return getattr(meta, key, default)


def compile_kernel(triton, k, out):
    """(ptx text, metadata, how) by the first path that works."""
    errors = []
    fn, args, cx = k["fn"], k["args"], k["constexprs"]
    names = list(fn.arg_names) if hasattr(fn, "arg_names") else [a[0] for a in args] + list(cx)
    try:
        from triton.compiler import ASTSource
    except Exception:
        ASTSource = getattr(getattr(triton, "compiler", None), "ASTSource", None)
    try:
        from triton.backends.compiler import GPUTarget
        target = GPUTarget("cuda", 90, 32)
    except Exception as e:
        errors.append(f"GPUTarget: {e}")
        target = None
    options = {"num_warps": k["warps"], "num_stages": k["stages"]}
    sig_rt = {a[0]: a[1] for a in args}
    sig_all = dict(sig_rt)
    sig_all.update({c: "constexpr" for c in cx})
    ptr_idx = [names.index(a[0]) for a in args if a[1].startswith("*")]
    # only pointers are marked 16-byte aligned (cuMemAlloc's are); no integer is claimed divisible
    attrs_33 = {(i,): [["tt.divisibility", 16]] for i in ptr_idx}
    forms = []
    if ASTSource is not None:
        # Triton 3.3+: names, constexprs in the signature, attrs keyed by path
        forms.append(("ASTSource(signature by name with constexpr, constexprs, attrs)",
                      lambda: ASTSource(fn=fn, signature=sig_all, constexprs=cx, attrs=attrs_33)))
        forms.append(("ASTSource(signature by name with constexpr, constexprs)",
                      lambda: ASTSource(fn=fn, signature=sig_all, constexprs=cx)))
        # Triton 3.2: names, constexprs not in the signature
        forms.append(("ASTSource(signature by name, constexprs)",
                      lambda: ASTSource(fn=fn, signature=sig_rt, constexprs=cx)))
        # Triton 3.0/3.1: signature and constants by argument index
        sig_idx = {names.index(a[0]): a[1] for a in args}
        cst_idx = {names.index(c): v for c, v in cx.items()}
        forms.append(("ASTSource(signature by index, constants by index)",
                      lambda: ASTSource(fn=fn, signature=sig_idx, constants=cst_idx)))
    for how, make in forms:
        for tgt in ([target, None] if target is not None else [None]):
            try:
                src = make()
                ck = triton.compile(src, target=tgt, options=options) if tgt is not None else \
                    triton.compile(src, options=options)
                ptx = ck.asm["ptx"]
                if isinstance(ptx, bytes):
                    ptx = ptx.decode()
                meta = getattr(ck, "metadata", None)
                if meta_get(meta, "shared") is None and hasattr(ck, "shared"):
                    meta = {"shared": ck.shared, "num_warps": getattr(ck, "num_warps", k["warps"])}
                return ptx, meta, how + ("" if tgt is not None else " (target: the current device)")
            except Exception as e:
                errors.append(f"{how}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    # last resort: launch once with torch tensors
    try:
        ptx, meta = launch_kernel(triton, k)
        return ptx, meta, "one launch with torch tensors"
    except Exception as e:
        errors.append(f"launch: {type(e).__name__}: {e}")
    raise RuntimeError("no way to compile worked:\n    " + "\n    ".join(errors))


def launch_kernel(triton, k):
    import glob
    import json
    import torch
    torch.manual_seed(0)
    vals = []
    for _, _, _, dt, v in k["args"]:
        if dt is None:
            vals.append(v)
        else:
            vals.append(torch.rand(v, device="cuda", dtype=getattr(torch, dt)))
    ck = k["fn"][k["grid"]](*vals, **k["constexprs"], num_warps=k["warps"], num_stages=k["stages"])
    torch.cuda.synchronize()
    if ck is not None and hasattr(ck, "asm") and "ptx" in ck.asm:
        return ck.asm["ptx"], getattr(ck, "metadata", None)
    cache = os.environ["TRITON_CACHE_DIR"]
    ptxs = sorted(glob.glob(os.path.join(cache, "**", k["name"] + ".ptx"), recursive=True), key=os.path.getmtime)
    if not ptxs:
        raise RuntimeError(f"no {k['name']}.ptx under {cache}")
    meta = None
    js = os.path.join(os.path.dirname(ptxs[-1]), k["name"] + ".json")
    if os.path.exists(js):
        with open(js) as f:
            meta = json.load(f)
    with open(ptxs[-1]) as f:
        return f.read(), meta


PARAM_SIZES = {"u8": 1, "s8": 1, "b8": 1, "u16": 2, "s16": 2, "b16": 2, "f16": 2, "u32": 4, "s32": 4, "b32": 4,
               "f32": 4, "u64": 8, "s64": 8, "b64": 8, "f64": 8}


def ptx_params(ptx, name):
    """[(type, bytes)] of the .entry's parameters, and its .maxntid/.reqntid."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(([^)]*)\)", ptx)
    if not m:
        found = re.findall(r"\.entry\s+(\w+)", ptx)
        raise RuntimeError(f"no .entry {name} in the PTX (entries: {found})")
    params = []
    for p in m.group(1).split(","):
        p = p.strip()
        if not p:
            continue
        toks = p.split()
        ty = next((t[1:] for t in toks[1:] if t[1:] in PARAM_SIZES), None)
        if ty is None:
            raise RuntimeError(f"cannot read parameter '{p}'")
        arr = re.search(r"\[(\d+)\]\s*$", p)
        params.append((ty, PARAM_SIZES[ty] * (int(arr.group(1)) if arr else 1), ".ptr" in toks))
    tail = ptx[m.end():m.end() + 400]
    ntid = re.search(r"\.(?:reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", tail.split("{")[0])
    return params, ntid


def write_spec(k, ptx, meta, how, out):
    name = k["name"]
    entry = name if re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(", ptx) else None
    if entry is None:
        ents = re.findall(r"\.entry\s+(\w+)", ptx)
        if len(ents) != 1:
            raise RuntimeError(f"cannot tell the kernel's entry among {ents}")
        entry = ents[0]
    params, ntid = ptx_params(ptx, entry)
    args = k["args"]
    if len(params) < len(args):
        raise RuntimeError(f"the PTX has {len(params)} parameters for {len(args)} arguments "
                           f"(one was specialised away?): {params}")
    items = []
    for (aname, sig, item, _, _), (ty, size, _) in zip(args, params):
        want = 8 if sig.startswith("*") else 4
        if size != want:
            raise RuntimeError(f"argument {aname} ({sig}) is a {size}-byte .{ty} parameter in the PTX")
        items.append(item)
    nprog = k["grid"][0] * k["grid"][1] * k["grid"][2]
    scratch = [int(meta_get(meta, "global_scratch_size", 0) or 0), int(meta_get(meta, "profile_scratch_size", 0) or 0)]
    extras = params[len(args):]
    for i, (ty, size, _) in enumerate(extras):
        if size != 8:
            raise RuntimeError(f"extra parameter {len(args) + i} is .{ty} ({size} bytes), not a pointer")
        need = scratch[i] if i < len(scratch) else 0
        # scratch Triton's launcher would allocate: size per program; else a null pointer
        items.append(f"inout:u8:{need * nprog}" if need > 0 else "u64:0")
    warps = int(meta_get(meta, "num_warps", k["warps"]) or k["warps"])
    block = warps * 32
    if ntid and int(ntid.group(1)) != block:
        log(f"{name}: note: the PTX declares {ntid.group(0)}, num_warps*32 is {block}")
    shared = meta_get(meta, "shared")
    if shared is None:
        shared = 49152
        log(f"{name}: note: no shared memory size in Triton's metadata: using {shared} bytes")
    target = re.search(r"^\s*\.target\s+(\S+)", ptx, re.M)
    with open(os.path.join(out, name + ".ptx"), "w") as f:
        f.write(ptx)
    g = k["grid"]
    line = (f"// ooo-jit: kernel={entry} expect=fusible grid={g[0]},{g[1]},{g[2]} block={block} smem={int(shared)} "
            f"params={';'.join(items)}\n")
    with open(os.path.join(out, name + ".spec"), "w") as f:
        f.write(f"// {name}: Triton PTX for {target.group(1) if target else '?'}, {how}; "
                f"{len(extras)} parameter(s) added by Triton\n")
        f.write(line)
    log(f"{name}: {len(ptx)} bytes of PTX ({how}), {len(params)} parameters "
        f"({len(extras)} added by Triton), {int(shared)} bytes of shared memory")
    log("  " + line.rstrip())


if __name__ == "__main__":
    sys.exit(main())
