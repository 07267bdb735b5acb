"""Hides PyPI torch's triton from DeepSpeed releases before 0.16 run on that torch (releases.py
--torch): their `import deepspeed` imports its triton inference kernels whenever triton imports,
and triton's autotuner raises "0 active drivers" on a machine without a GPU. With this on the
path first, `import triton` fails as on a CPU-only torch, DeepSpeed sets HAS_TRITON = False, and
torch treats triton as absent (torch.utils._triton.has_triton)."""
raise ImportError("triton is hidden on this CPU-only reference run (cpu_stubs/no_triton)")
