"""Records every collective DeepSpeed issues through torch.distributed, in zerotrain's convention.

install() must run before deepspeed.init_distributed(): DeepSpeed's TorchBackend binds
torch.distributed.all_gather_into_tensor / reduce_scatter_tensor when it is built.

One JSON line per call, the same fields as zerotrain's RUN/comm_trace_rank<R>.jsonl:
  step, rank, op, count, dtype, bytes, root, phase, micro   (+ call, caller: for reading)
  op     all_reduce | reduce_scatter | all_gather | reduce | broadcast | all_to_all
  count  all_reduce / reduce / broadcast: the buffer's elements; reduce_scatter: the per-rank
         receive count (input / W); all_gather: the per-rank send count; all_to_all: what a rank
         sends to each peer (input / W, MPI_Alltoall's sendcount). A list call
         (all_reduce_coalesced, all_gather of a list, reduce_scatter of a list) and the calls
         inside one _coalescing_manager block are ONE call whose count is the sum.
  bytes  as zerotrain counts payload (nccl-tests): count x element size, times W for
         reduce_scatter, all_gather and all_to_all (their whole buffer).
  root   the global rank of reduce / broadcast, else -1.
  group  [size, stride] of the ranks the call runs over (zerotrain's RankGroup: `size` ranks
         `stride` apart); [W, 1] for the world. count and bytes are per that group.
  step / phase / micro  set by the runner: optimizer step (0-based, -1 before the first),
         fwd | bwd | step, micro-step.

Other torch.distributed calls (OTHERS: barriers, object collectives, point-to-point) are not
part of that trace: they go to other_rank<R>.jsonl (step, phase, micro, call, caller), so that a
DeepSpeed release issuing a collective through a primitive not in WRAPPED shows there instead of
vanishing.

gloo in torch 1.13 has no reduce_scatter, reduce_scatter_tensor, all_gather_into_tensor nor
bf16. Such a call is recorded as DeepSpeed issued it, then carried out with what gloo has
(all_reduce and slicing, all_gather into a list; bf16 widened to fp32 and narrowed back, which
is exact for sums of bf16 values only up to fp32 rounding: the schedule, not the values, is
what is recorded). The inner calls of a carried-out call are not recorded.
"""
import contextlib
import json
import os
import sys
import threading

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

DTYPES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16",
          torch.float64: "fp64", torch.int64: "i64", torch.int32: "i32", torch.uint8: "u8",
          torch.int8: "i8",
          torch.bool: "bool"}

_HERE = os.path.dirname(os.path.abspath(__file__))
state = threading.local()
where = {"step": -1, "phase": "init", "micro": 0}
_out = None
_others = None
_lock = threading.Lock()
_rank = 0
_world = 1
_real = {}


class _Done:
    """The handle of a call already carried out synchronously."""

    def wait(self, *args, **kwargs):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def exception(self):
        return None


def set_position(step, phase, micro):
    where.update(step=step, phase=phase, micro=micro)


def _depth():
    return getattr(state, "depth", 0)


def _caller():
    """The innermost DeepSpeed function outside deepspeed/comm that issued the call."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        inside = "/deepspeed/" in name and not name.startswith(_HERE)
        if inside and "/deepspeed/comm/" not in name and "/utils/nvtx" not in name:
            return f"{name.split('/deepspeed/')[-1]}:{frame.f_lineno}:{frame.f_code.co_name}"
        frame = frame.f_back
    return ""


def _tensors(x):
    return [t for t in x if torch.is_tensor(t)] if isinstance(x, (list, tuple)) else [x]


# Where each call takes its process group: (position, keyword).
GROUP_ARG = {"all_reduce": 2, "all_reduce_coalesced": 2, "reduce": 3, "broadcast": 2,
             "all_gather": 2, "all_gather_into_tensor": 2, "_all_gather_base": 2,
             "all_gather_coalesced": 2, "reduce_scatter": 3, "reduce_scatter_tensor": 3,
             "_reduce_scatter_base": 3, "all_to_all_single": 4, "all_to_all": 2}


def _group_shape(name, a, k):
    """[size, stride] of the call's process group (the world when none is given)."""
    i = GROUP_ARG[name]
    group = k.get("group", a[i] if len(a) > i else None)
    if group is None or group is c10d.GroupMember.WORLD:
        return [_world, 1]
    ranks = sorted(c10d._pg_group_ranks[group].keys())
    stride = ranks[1] - ranks[0] if len(ranks) > 1 else 1
    if ranks != [ranks[0] + j * stride for j in range(len(ranks))]:
        raise RuntimeError(f"recorder: a group of unequally spaced ranks {ranks}")
    return [len(ranks), stride]


def _emit(call, op, tensors, count, root=-1, group=None):
    group = group or [_world, 1]
    dtype = DTYPES.get(tensors[0].dtype, str(tensors[0].dtype).replace("torch.", ""))
    size = tensors[0].element_size()
    payload = count * size * (group[0] if op in ("reduce_scatter", "all_gather", "all_to_all")
                              else 1)
    record = dict(where, rank=_rank, op=op, count=count, dtype=dtype, bytes=payload, root=root,
                  group=group, call=call, caller=_caller())
    batch = getattr(state, "coalescing", None)
    if batch is not None:  # one call for the whole block, its count the sum
        if batch and (batch[0]["op"], batch[0]["dtype"], batch[0]["group"]) != (op, dtype, group):
            raise RuntimeError(f"recorder: mixed calls in one coalescing block: {batch[0]} {record}")
        batch.append(record)
        return
    _write(record)


def _write(record):
    with _lock:
        _out.write(json.dumps(record) + "\n")
        _out.flush()


def _describe(name, a, k, group_size):
    """(op, tensors, count, root) of one torch.distributed call, zerotrain's convention."""
    arg = lambda i, key, default=None: k.get(key, a[i] if len(a) > i else default)
    if name == "all_reduce":
        t = arg(0, "tensor")
        return "all_reduce", [t], t.numel(), -1
    if name == "all_reduce_coalesced":
        ts = _tensors(arg(0, "tensors"))
        return "all_reduce", ts, sum(t.numel() for t in ts), -1
    if name == "reduce":
        t = arg(0, "tensor")
        return "reduce", [t], t.numel(), int(arg(1, "dst"))
    if name == "broadcast":
        t = arg(0, "tensor")
        return "broadcast", [t], t.numel(), int(arg(1, "src"))
    if name == "all_gather":
        t = arg(1, "tensor")
        return "all_gather", [t], t.numel(), -1
    if name in ("all_gather_into_tensor", "_all_gather_base"):
        t = arg(1, "input_tensor")
        return "all_gather", [t], t.numel(), -1
    if name == "all_gather_coalesced":
        ts = _tensors(arg(1, "input_tensor_list"))
        return "all_gather", ts, sum(t.numel() for t in ts), -1
    if name == "reduce_scatter":
        t = arg(0, "output")
        return "reduce_scatter", [t], t.numel(), -1
    if name in ("reduce_scatter_tensor", "_reduce_scatter_base"):
        t = arg(1, "input")
        return "reduce_scatter", [t], t.numel() // group_size, -1
    if name == "all_to_all_single":
        t = arg(1, "input")
        return "all_to_all", [t], t.numel() // group_size, -1
    if name == "all_to_all":
        ts = _tensors(arg(1, "input_tensor_list"))
        return "all_to_all", ts, sum(t.numel() for t in ts) // group_size, -1
    raise RuntimeError(f"recorder: no description of {name}")


def _wrap_other(name, real):
    """Notes the call and runs it; the collectives it issues inside (all_gather_object's
    all_gather, say) are recorded in the trace as before."""
    def wrapper(*a, **k):
        if _depth() == 0:
            record = dict(where, rank=_rank, call=name, caller=_caller())
            with _lock:
                _others.write(json.dumps(record) + "\n")
                _others.flush()
        return real(*a, **k)

    wrapper.__name__ = name
    return wrapper


def _widened(t):
    return t.float() if t.dtype == torch.bfloat16 else t


@torch.no_grad()
def _carry_out(name, a, k):
    """Runs the call with what gloo has; returns its result (a handle when async_op). Without
    autograd: a release that broadcasts bf16 parameters themselves (0.10 at start-up) would have
    the narrowing copy refused on a leaf that requires grad."""
    arg = lambda i, key, default=None: k.get(key, a[i] if len(a) > i else default)
    group = k.get("group")
    op = k.get("op", dist.ReduceOp.SUM)
    if name in ("reduce_scatter_tensor", "_reduce_scatter_base"):
        out, inp = arg(0, "output"), arg(1, "input")
        op, group, async_op = arg(2, "op", op), arg(3, "group", group), arg(4, "async_op", False)
        full = _widened(inp.detach().clone().contiguous())
        _real["all_reduce"](full, op=op, group=group)
        out.copy_(full.view(dist.get_world_size(group), -1)[dist.get_rank(group)].view_as(out))
        return _Done() if async_op else None
    if name == "reduce_scatter":
        out, inputs = arg(0, "output"), arg(1, "input_list")
        op, group, async_op = arg(2, "op", op), arg(3, "group", group), arg(4, "async_op", False)
        full = _widened(torch.cat([t.detach().reshape(-1) for t in inputs]))
        _real["all_reduce"](full, op=op, group=group)
        start = sum(t.numel() for t in inputs[:dist.get_rank(group)])
        out.copy_(full[start:start + out.numel()].view_as(out))
        return _Done() if async_op else None
    if name in ("all_gather_into_tensor", "_all_gather_base"):
        out, inp = arg(0, "output_tensor"), arg(1, "input_tensor")
        group, async_op = arg(2, "group", group), arg(3, "async_op", False)
        piece = _widened(inp.contiguous())
        pieces = [torch.empty_like(piece) for _ in range(dist.get_world_size(group))]
        _real["all_gather"](pieces, piece, group=group)
        out.copy_(torch.cat([p.reshape(-1) for p in pieces]).view_as(out))
        return _Done() if async_op else None
    if not any(t.dtype == torch.bfloat16 for t in _all_tensors(a, k)):
        return _real[name](*a, **k)
    # bf16: the same call on fp32 copies, copied back.
    if name == "all_reduce":
        t, async_op = arg(0, "tensor"), arg(3, "async_op", False)
        wide = t.float()
        _real[name](wide, op=arg(1, "op", op), group=arg(2, "group", group))
    elif name == "reduce":
        t, async_op = arg(0, "tensor"), arg(4, "async_op", False)
        wide = t.float()
        _real[name](wide, arg(1, "dst"), op=arg(2, "op", op), group=arg(3, "group", group))
    elif name == "broadcast":
        t, async_op = arg(0, "tensor"), arg(3, "async_op", False)
        wide = t.float()
        _real[name](wide, arg(1, "src"), group=arg(2, "group", group))
    elif name == "all_gather":
        outs, t, async_op = arg(0, "tensor_list"), arg(1, "tensor"), arg(3, "async_op", False)
        wide_outs = [o.float() for o in outs]
        _real[name](wide_outs, t.float(), group=arg(2, "group", group))
        for o, w in zip(outs, wide_outs):
            o.copy_(w)
        return _Done() if async_op else None
    elif name == "all_reduce_coalesced":
        ts, async_op = arg(0, "tensors"), arg(3, "async_op", False)
        wide_ts = [x.float() for x in ts]
        _real[name](wide_ts, op=arg(1, "op", op), group=arg(2, "group", group))
        for x, w in zip(ts, wide_ts):
            x.copy_(w)
        return _Done() if async_op else None
    else:
        raise RuntimeError(f"recorder: no bf16 carry-out for {name}")
    t.copy_(wide)
    return _Done() if async_op else None


def _all_tensors(a, k):
    for x in list(a) + list(k.values()):
        for t in (x if isinstance(x, (list, tuple)) else [x]):
            if torch.is_tensor(t):
                yield t


def _wrap(name):
    def wrapper(*a, **k):
        depth = _depth()
        if depth == 0:
            group = _group_shape(name, a, k)
            op, tensors, count, root = _describe(name, a, k, group[0])
            _emit(name, op, tensors, count, root, group)
        state.depth = depth + 1
        try:
            return _carry_out(name, a, k)
        finally:
            state.depth = depth

    wrapper.__name__ = name
    return wrapper


@contextlib.contextmanager
def _coalescing(*args, **kwargs):
    """Stands in for torch's _coalescing_manager (gloo cannot coalesce): the calls inside are
    carried out one by one and recorded as one."""
    outer = getattr(state, "coalescing", None)
    if outer is not None:
        yield
        return
    state.coalescing = []
    try:
        yield
    finally:
        batch, state.coalescing = state.coalescing, None
        if batch:
            merged = dict(batch[0], count=sum(r["count"] for r in batch),
                          bytes=sum(r["bytes"] for r in batch), call=batch[0]["call"] + "[coalesced]")
            _write(merged)


WRAPPED = ["all_reduce", "all_reduce_coalesced", "reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "_all_gather_base", "all_gather_coalesced", "reduce_scatter",
           "reduce_scatter_tensor", "_reduce_scatter_base", "all_to_all_single", "all_to_all"]

OTHERS = ["barrier", "monitored_barrier", "all_gather_object", "broadcast_object_list",
          "gather", "gather_object", "scatter", "scatter_object_list", "send", "recv", "isend",
          "irecv", "batch_isend_irecv", "all_to_all_single_coalesced",
          "all_gather_into_tensor_coalesced", "reduce_scatter_tensor_coalesced"]


def install(path, rank, world):
    global _out, _others, _rank, _world
    _out, _rank, _world = open(path, "w"), rank, world
    _others = open(os.path.join(os.path.dirname(path), f"other_rank{rank}.jsonl"), "w")
    for name in OTHERS:
        if hasattr(c10d, name):
            wrapper = _wrap_other(name, getattr(c10d, name))
            setattr(c10d, name, wrapper)
            if hasattr(dist, name):
                setattr(dist, name, wrapper)
    for name in WRAPPED:
        if hasattr(c10d, name):
            _real[name] = getattr(c10d, name)
    for name in _real:
        wrapper = _wrap(name)
        setattr(c10d, name, wrapper)
        if hasattr(dist, name):
            setattr(dist, name, wrapper)
    if hasattr(c10d, "_coalescing_manager"):
        c10d._coalescing_manager = _coalescing


def close():
    for f in (_out, _others):
        if f is not None:
            f.close()
