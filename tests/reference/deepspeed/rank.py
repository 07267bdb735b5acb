"""One rank of a DeepSpeed reference run:  rank.py VARIANT.json OUT_DIR
(env: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_SIZE, MASTER_ADDR, MASTER_PORT; set by launch.py).

Trains the variant's GPT-2 for its steps (micro-steps of gradient accumulation each) on random
tokens and writes OUT_DIR/trace_rank<R>.jsonl (recorder.py) and OUT_DIR/info_rank<R>.json.
"""
import importlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("DS_ACCELERATOR", "cpu")

import torch  # noqa: E402

import recorder  # noqa: E402


def patch_cpu_accelerator():
    """Two things DeepSpeed 0.14.4 gets wrong on its CPU accelerator, neither of which changes
    which collective it issues or its size on a GPU:
    - stage_1_and_2.split_half_float_double keys gradients on t.type() == 'torch.cpu.FloatTensor',
      but CPU tensors say 'torch.FloatTensor': with contiguous_gradients: false every gradient
      is dropped and nothing is reduced. Bucketed by dtype instead, in DeepSpeed's order
      (half, float, double, bfloat16), as the CUDA path buckets them.
    - TorchBackend JIT-builds a shared-memory op used only for inference all-reduce (g++, ~40 s,
      files in ~/.cache and /dev/shm): not built.
    And two for older releases (tests/reference/deepspeed/releases.py):
    - before 0.14 the CPU accelerator names "ccl" as its backend unconditionally, and
      deepspeed.init_distributed then JIT-builds DeepSpeed's own oneCCL backend (needs CCL_ROOT).
      0.14 names "gloo" when oneCCL does not import; the same is done here, so init_distributed
      makes its TorchBackend on gloo.
    - before 0.13 engine.split_half_float_double_sparse (stage 0's gradient all-reduce) has the
      type-string test above, as an assertion: every stage-0 run fails on a CPU. Bucketed by
      dtype, as 0.13 does, keeping its (type, bucket) pairs."""
    # import_module, not "import a.b as m": deepspeed.comm's attribute "torch" is torch itself.
    ds_torch = importlib.import_module("deepspeed.comm.torch")
    stage12 = importlib.import_module("deepspeed.runtime.zero.stage_1_and_2")

    def split_by_dtype(tensors):
        order = (torch.float16, torch.float32, torch.float64, torch.bfloat16)
        return [b for b in ([t for t in tensors if t.dtype == d] for d in order) if b]

    stage12.split_half_float_double = split_by_dtype
    ds_torch.build_shm_op = lambda: None
    import deepspeed
    version = tuple(int(x) for x in deepspeed.__version__.split(".")[:2])
    if version < (0, 13):
        engine = importlib.import_module("deepspeed.runtime.engine")
        engine.split_half_float_double_sparse = lambda tensors: [
            (str(b[0].dtype), b) for b in split_by_dtype(tensors)]
    from deepspeed.accelerator import get_accelerator
    accelerator = get_accelerator()
    if accelerator.communication_backend_name() == "ccl":
        accelerator._communication_backend_name = "gloo"


def main():
    spec_path, out = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    recorder.install(os.path.join(out, f"trace_rank{rank}.jsonl"), rank, world)

    import deepspeed
    from gpt2 import GPT2, expected_names, param_groups

    patch_cpu_accelerator()
    zero = spec["ds_config"]["zero_optimization"]
    if zero.get("zero_quantized_weights") or zero.get("zero_quantized_gradients"):
        import cpu_quantizer
        cpu_quantizer.install()
    deepspeed.init_distributed(dist_backend="gloo")
    torch.manual_seed(1234)
    m = spec["model"]
    model = GPT2(m["n_layer"], m["n_head"], m["n_embd"], m["vocab_size"], m["seq_len"])
    names = [n for n, _ in model.named_parameters()]
    if names != expected_names(m["n_layer"]):
        raise SystemExit(f"rank.py: parameter order {names} is not zerotrain's layout")
    groups = param_groups(model, spec["groups"], spec["ds_config"]["optimizer"]["params"].get(
        "weight_decay", 0.0))
    group_numels = [sum(p.numel() for p in g["params"]) for g in groups]
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=groups,
                                           config=spec["ds_config"])

    tokens = torch.Generator().manual_seed(100 + rank)
    B, T, V = spec["micro_batch"], m["seq_len"], m["vocab_size"]
    losses = []
    for step in range(spec["steps"]):
        for micro in range(spec["accumulation"]):
            batch = torch.randint(0, V, (B, T + 1), generator=tokens)
            recorder.set_position(step, "fwd", micro)
            loss = engine(batch[:, :-1], batch[:, 1:])
            recorder.set_position(step, "bwd", micro)
            engine.backward(loss)
            recorder.set_position(step, "step", micro)
            engine.step()
            losses.append(float(loss.item()))
    recorder.set_position(spec["steps"], "end", 0)
    optimizer = engine.optimizer
    info = dict(rank=rank, world=world, deepspeed=deepspeed.__version__, torch=torch.__version__,
                optimizer=type(optimizer).__name__, group_numels=group_numels, losses=losses,
                global_steps=engine.global_steps)
    for attr in ("reduce_scatter", "use_multi_rank_bucket_allreduce", "contiguous_gradients",
                 "overlap_comm", "reduce_bucket_size", "round_robin_gradients",
                 "communication_data_type", "partition_gradients"):
        if hasattr(optimizer, attr):
            value = getattr(optimizer, attr)
            info[attr] = value if isinstance(value, (bool, int, float, str)) else str(value)
    with open(os.path.join(out, f"info_rank{rank}.json"), "w") as f:
        json.dump(info, f, indent=1)
    recorder.close()


if __name__ == "__main__":
    main()
