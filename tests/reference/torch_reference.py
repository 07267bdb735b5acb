#!/usr/bin/python3
"""An independent PyTorch GPT-2 in float64, the reference zerotrain's CPU model is held to.

  torch_reference.py DIR         loss and gradients of DIR/model.bin on DIR/batch.bin, compared
                                 with zerotrain's DIR/zt_loss.txt and DIR/zt_grads.bin; exit 0/1
  torch_reference.py --eval DIR  prints the mean loss of DIR/model.bin on DIR/batch.bin

model.bin and zt_grads.bin are llm.c fp32 model files (header int32[256]: magic 20240326,
version 3, max_T, V, L, NH, C, Vp; then the tensors, each kind stored for all layers in turn).
batch.bin is int32 B, T, then B*T inputs and B*T targets.
"""
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# fp32 (zerotrain) against fp64 (here). Measured on this test's model over 14 seeds: loss rel
# err <= 2.1e-8, worst gradient rel err per tensor <= 6.7e-7; the tolerances sit 10x and 6x
# above, so that a wrong constant (a GELU coefficient off by 0.03%) cannot hide under them.
LOSS_TOL, GRAD_TOL = 2e-7, 4e-6


class SelfAttention(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.NH
        heads = lambda y: y.view(B, T, self.NH, hs).transpose(1, 2)  # [B, NH, T, hs]
        q, k, v = map(heads, self.c_attn(x).split(C, dim=2))
        scores = q @ k.transpose(2, 3) / math.sqrt(hs)
        future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
        probs = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        return self.c_proj((probs @ v).transpose(1, 2).reshape(B, T, C))


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(gelu_tanh(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(C, eps=1e-5), SelfAttention(C, NH)
        self.ln_2, self.mlp = nn.LayerNorm(C, eps=1e-5), MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, max_T, Vp, L, NH, C):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(Vp, C), nn.Embedding(max_T, C)
        self.h = nn.ModuleList(Block(C, NH) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, eps=1e-5)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # head tied to the token embedding
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


BLOCK_KINDS = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
               "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
               "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]


def read_llmc(path):
    """Returns (max_T, Vp, L, NH, C) and the tensors by name, in llm.c's file order."""
    raw = np.fromfile(path, dtype=np.int32)
    magic, version, max_T, V, L, NH, C, Vp = raw[:8]
    if magic != 20240326 or version != 3:
        sys.exit(f"{path}: magic {magic} version {version}, expected 20240326 and 3 (fp32)")
    shape = (int(max_T), int(Vp), int(L), int(NH), int(C))
    sizes = {n: p.shape for n, p in GPT(*shape).named_parameters()}
    names = (["wte.weight", "wpe.weight"] + [f"h.{l}.{k}" for k in BLOCK_KINDS for l in range(L)]
             + ["ln_f.weight", "ln_f.bias"])
    data = raw[256:].view(np.float32)
    if data.size != sum(math.prod(sizes[n]) for n in names):
        sys.exit(f"{path}: {data.size} floats after the header, not what the shape {shape} needs")
    tensors, at = {}, 0
    for n in names:
        count = math.prod(sizes[n])
        tensors[n] = torch.from_numpy(data[at:at + count].astype(np.float64)).view(sizes[n])
        at += count
    return shape, tensors


def reference_loss(run_dir):
    """The float64 model with model.bin's weights, and its loss on batch.bin."""
    shape, weights = read_llmc(f"{run_dir}/model.bin")
    model = GPT(*shape).double()
    model.load_state_dict(weights)
    batch = np.fromfile(f"{run_dir}/batch.bin", dtype=np.int32)
    B, T = batch[:2]
    tokens = torch.from_numpy(batch[2:].astype(np.int64)).view(2, B, T)
    return model, model(tokens[0], tokens[1])


def compare(run_dir):
    model, loss = reference_loss(run_dir)
    loss.backward()
    zt_loss = float(open(f"{run_dir}/zt_loss.txt").read())
    _, zt_grads = read_llmc(f"{run_dir}/zt_grads.bin")
    worst = (abs(zt_loss - loss.item()) / abs(loss.item()), "loss")
    failed = worst[0] >= LOSS_TOL
    print(f"loss: zerotrain {zt_loss:.9g} torch {loss.item():.9g} rel err {worst[0]:.3g}")
    for name, p in model.named_parameters():
        ref_norm = p.grad.norm().item()
        err = (zt_grads[name] - p.grad).norm().item() / (ref_norm if ref_norm > 0 else 1.0)
        failed |= err >= GRAD_TOL
        print(f"{name:24s} |g| {ref_norm:10.4g} rel err {err:.3g}{'  <-- FAIL' if err >= GRAD_TOL else ''}")
        worst = max(worst, (err, name))
    verdict = "FAIL" if failed else "PASS"
    print(f"torch_reference: {verdict} (max rel err {worst[0]:.3g} on {worst[1]}; "
          f"tolerances loss {LOSS_TOL:g}, grads {GRAD_TOL:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--eval":
        with torch.no_grad():
            print(f"loss {reference_loss(sys.argv[2])[1].item():.12g}")
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(compare(sys.argv[1]))
