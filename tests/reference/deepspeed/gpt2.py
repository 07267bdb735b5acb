"""The GPT-2 that the DeepSpeed reference runs train: shape from the command line, tensors in
zerotrain's flat-layout order (model/param_table.cpp), lm_head tied to wte.

Parameter order (named_parameters, the tied lm_head counted once):
  wte, wpe, h.i.{ln_1.weight, ln_1.bias, attn.c_attn.weight, attn.c_attn.bias,
  attn.c_proj.weight, attn.c_proj.bias, ln_2.weight, ln_2.bias, mlp.c_fc.weight, mlp.c_fc.bias,
  mlp.c_proj.weight, mlp.c_proj.bias}, ln_f.weight, ln_f.bias
The collective schedule depends only on these shapes and their order, not on the values.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        split_heads = lambda y: y.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q, k, v = map(split_heads, self.c_attn(x).split(C, dim=2))
        scores = (q @ k.transpose(2, 3)) / math.sqrt(C // self.n_head)
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=1)
        probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        return self.c_proj((probs @ v).transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, vocab_size, seq_len):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd {n_embd} is not a multiple of n_head {n_head}")
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(seq_len, n_embd)
        self.h = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)[None]
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def expected_names(n_layer):
    """zerotrain's flat layout, tensor by tensor."""
    block = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
             "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
             "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]
    names = ["wte.weight", "wpe.weight"]
    for i in range(n_layer):
        names += [f"h.{i}.{n}" for n in block]
    return names + ["ln_f.weight", "ln_f.bias"]


def param_groups(model, mode, weight_decay):
    """'two': the HF Trainer's groups (2-D weights decay, biases and norms do not); 'one'."""
    named = list(model.named_parameters())  # the tied lm_head.weight appears once, as wte
    if mode == "one":
        return [{"params": [p for _, p in named], "weight_decay": weight_decay}]
    if mode != "two":
        raise ValueError(f"param groups: expected one or two, got {mode!r}")
    return [{"params": [p for _, p in named if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for _, p in named if p.dim() < 2], "weight_decay": 0.0}]
