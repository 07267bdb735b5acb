"""The variants the DeepSpeed reference runs: one ds_config each, with the world size, the
parameter groups and the model shape. The same ds_config goes to DeepSpeed and, through
`zerotrain train --deepspeed`, to zerotrain.

Name scheme: [x<shape>_]s<stage>_<what>[_b<bucket>][_g1][_w<W>]; g2 (two groups), W = 4 and the
shape MODEL by default; x<shape>: one of SHAPES.
"""
import copy

MODEL = dict(n_layer=2, n_head=2, n_embd=64, vocab_size=256, seq_len=128)  # 124,672 parameters
MICRO_BATCH, ACCUMULATION, STEPS = 4, 3, 3

# The largest tensors are 16384 (wte, c_fc, mlp.c_proj) and 12288 (c_attn) elements: 1e4 is
# smaller than both, 2e4 holds one, 5e8 holds the model.
BUCKETS = {"b5e8": 500000000, "b2e4": 20000, "b1e4": 10000}
PATHS = {"default": {}, "rsfalse": {"reduce_scatter": False},
         "mrbafalse": {"use_multi_rank_bucket_allreduce": False},
         "cgfalse": {"contiguous_gradients": False}}
# Stage 3 on this model: DeepSpeed's 1e5 would keep every tensor whole; 1000 keeps the biases
# and norms whole and partitions the matrices, as 1e5 does for GPT-2 124M.
S3 = {"stage": 3, "stage3_param_persistence_threshold": 1000}


def ds_config(zero, bf16=False, clip=None, comm_dtype=None):
    config = {
        "train_micro_batch_size_per_gpu": MICRO_BATCH,
        "gradient_accumulation_steps": ACCUMULATION,
        # torch_adam: torch's AdamW, so that DeepSpeed builds no C++ op on the CPU.
        "optimizer": {"type": "AdamW",
                      "params": {"lr": 1e-3, "weight_decay": 0.1, "torch_adam": True}},
        "steps_per_print": 1000000,
        "wall_clock_breakdown": False,
        "zero_optimization": copy.deepcopy(zero),
    }
    if bf16:
        config["bf16"] = {"enabled": True}
    if clip is not None:
        config["gradient_clipping"] = clip
    if comm_dtype is not None:
        config["communication_data_type"] = comm_dtype
    return config


def variant(zero, world=4, groups="two", model=None, ranks_per_node=None, **ds):
    spec = dict(world=world, groups=groups, model=dict(model or MODEL), micro_batch=MICRO_BATCH,
                accumulation=ACCUMULATION, steps=STEPS, ds_config=ds_config(zero, **ds))
    if ranks_per_node is not None:  # several nodes (MiCS's hierarchical gather reads it)
        spec["ranks_per_node"] = ranks_per_node
    return spec


VARIANTS = {}
V = VARIANTS

V["s0_g2"] = variant({"stage": 0})
V["s0_g1"] = variant({"stage": 0}, groups="one")
V["s0_clip1"] = variant({"stage": 0}, clip=1.0)
V["s0_b1e4"] = variant({"stage": 0, "reduce_bucket_size": 10000})
V["s0_w3"] = variant({"stage": 0}, world=3)

for stage in (1, 2):
    for path, switches in PATHS.items():
        for bucket, size in BUCKETS.items():
            V[f"s{stage}_{path}_{bucket}"] = variant(
                dict({"stage": stage, "reduce_bucket_size": size}, **switches))
    V[f"s{stage}_default_b5e8_g1"] = variant({"stage": stage}, groups="one")
    V[f"s{stage}_default_b2e4_g1"] = variant({"stage": stage, "reduce_bucket_size": 20000},
                                             groups="one")
    V[f"s{stage}_clip1"] = variant({"stage": stage}, clip=1.0)
    V[f"s{stage}_overlap_b1e4"] = variant(
        {"stage": stage, "reduce_bucket_size": 10000, "overlap_comm": True})
    V[f"s{stage}_roundrobin_b2e4"] = variant(
        {"stage": stage, "reduce_bucket_size": 20000, "round_robin_gradients": True})
    V[f"s{stage}_roundrobin_mrbafalse_b2e4"] = variant(
        {"stage": stage, "reduce_bucket_size": 20000, "round_robin_gradients": True,
         "use_multi_rank_bucket_allreduce": False})
    V[f"s{stage}_bf16"] = variant({"stage": stage}, bf16=True)
    V[f"s{stage}_bf16_b2e4"] = variant({"stage": stage, "reduce_bucket_size": 20000}, bf16=True)
    V[f"s{stage}_bf16_commfp32"] = variant({"stage": stage}, bf16=True, comm_dtype="fp32")
    for world in (2, 3):
        V[f"s{stage}_default_b2e4_w{world}"] = variant(
            {"stage": stage, "reduce_bucket_size": 20000}, world=world)
        V[f"s{stage}_mrbafalse_b2e4_w{world}"] = variant(
            {"stage": stage, "reduce_bucket_size": 20000,
             "use_multi_rank_bucket_allreduce": False}, world=world)
# One rank: DeepSpeed skips the collectives of a data-parallel group of size 1 (its
# all_gather_dp_groups helpers), which a rule derived only at W > 1 would miss.
V["s0_w1"] = variant({"stage": 0}, world=1)
for stage in (1, 2):
    V[f"s{stage}_default_b2e4_w1"] = variant({"stage": stage, "reduce_bucket_size": 20000},
                                             world=1)
    V[f"s{stage}_mrbafalse_b1e4_w1"] = variant(
        {"stage": stage, "reduce_bucket_size": 10000, "use_multi_rank_bucket_allreduce": False},
        world=1)
V["s2_overlap_mrbafalse_b1e4"] = variant(
    {"stage": 2, "reduce_bucket_size": 10000, "overlap_comm": True,
     "use_multi_rank_bucket_allreduce": False})

V["s3_default"] = variant(dict(S3))
V["s3_default_g1"] = variant(dict(S3), groups="one")
V["s3_default_b2e4"] = variant(dict(S3, reduce_bucket_size=20000))
V["s3_default_b1e4"] = variant(dict(S3, reduce_bucket_size=10000))
V["s3_clip1"] = variant(dict(S3), clip=1.0)
V["s3_reuse0"] = variant(dict(S3, stage3_max_reuse_distance=0))
V["s3_prefetch0"] = variant(dict(S3, stage3_prefetch_bucket_size=0))
V["s3_prefetch0_reuse0"] = variant(dict(S3, stage3_prefetch_bucket_size=0,
                                        stage3_max_reuse_distance=0))
V["s3_prefetch2e4"] = variant(dict(S3, stage3_prefetch_bucket_size=20000))
V["s3_maxlive2e4"] = variant(dict(S3, stage3_max_live_parameters=20000))
V["s3_overlapfalse"] = variant(dict(S3, overlap_comm=False))
V["s3_persist0"] = variant(dict(S3, stage3_param_persistence_threshold=0))
V["s3_persist1e5"] = variant(dict(S3, stage3_param_persistence_threshold=100000))
V["s3_rsfalse"] = variant(dict(S3, reduce_scatter=False))
V["s3_cgfalse"] = variant(dict(S3, contiguous_gradients=False))
V["s3_bf16"] = variant(dict(S3), bf16=True)
V["s3_bf16_commfp32"] = variant(dict(S3), bf16=True, comm_dtype="fp32")
V["s3_default_w2"] = variant(dict(S3), world=2)
V["s3_default_w3"] = variant(dict(S3), world=3)
V["s3_default_w1"] = variant(dict(S3), world=1)
# MiCS: shard groups of 2 consecutive ranks, replicated twice (mics_utils.py); S = W is plain
# stage 3 over a group of the whole world.
V["s3_mics2"] = variant(dict(S3, mics_shard_size=2))
V["s3_mics2_b1e4"] = variant(dict(S3, mics_shard_size=2, reduce_bucket_size=10000))
V["s3_mics4"] = variant(dict(S3, mics_shard_size=4))
# The hierarchical gather needs the shard group to span nodes: 2 nodes of 2 ranks (S = 4), and
# 2 nodes of 1 rank (S = 2, replicated twice).
V["s3_mics4_hier_n2"] = variant(dict(S3, mics_shard_size=4, mics_hierarchical_params_gather=True),
                                ranks_per_node=2)
V["s3_mics2_hier_n1"] = variant(dict(S3, mics_shard_size=2, mics_hierarchical_params_gather=True),
                                ranks_per_node=1)

# Unseen shapes: other widths, depths, vocabularies and sequence lengths, at W = 2, 3 and 4, so
# that a rule fitted to the shape above (its tensor sizes against the buckets) would show.
# e48: tensors of 14400 (wte), 9216 (c_fc, mlp.c_proj), 6912 (c_attn), 3072 (wpe) elements;
# e80: 26640 (wte), 25600 (c_fc, mlp.c_proj), 19200 (c_attn), 6400 (c_proj) elements.
SHAPES = {"e48": dict(n_layer=3, n_head=3, n_embd=48, vocab_size=300, seq_len=64),
          "e80": dict(n_layer=1, n_head=5, n_embd=80, vocab_size=333, seq_len=32)}
for shape, dims in SHAPES.items():
    V[f"x{shape}_s0_w2"] = variant({"stage": 0}, world=2, model=dims)
    V[f"x{shape}_s1_default_b1e4_w3"] = variant(
        {"stage": 1, "reduce_bucket_size": 10000}, world=3, model=dims)
    V[f"x{shape}_s1_mrbafalse_b2e4_g1"] = variant(
        {"stage": 1, "reduce_bucket_size": 20000, "use_multi_rank_bucket_allreduce": False},
        groups="one", model=dims)
    V[f"x{shape}_s2_default_b2e4_w2"] = variant(
        {"stage": 2, "reduce_bucket_size": 20000}, world=2, model=dims)
    V[f"x{shape}_s2_mrbafalse_b1e4_w3"] = variant(
        {"stage": 2, "reduce_bucket_size": 10000, "use_multi_rank_bucket_allreduce": False},
        world=3, model=dims)
    V[f"x{shape}_s2_rsfalse_b1e4"] = variant(
        {"stage": 2, "reduce_bucket_size": 10000, "reduce_scatter": False}, model=dims)
    V[f"x{shape}_s2_roundrobin_mrbafalse_b2e4_w3"] = variant(
        {"stage": 2, "reduce_bucket_size": 20000, "round_robin_gradients": True,
         "use_multi_rank_bucket_allreduce": False}, world=3, model=dims)
    V[f"x{shape}_s3_default_w3"] = variant(dict(S3), world=3, model=dims)
    V[f"x{shape}_s3_prefetch2e4_w2"] = variant(dict(S3, stage3_prefetch_bucket_size=20000),
                                               world=2, model=dims)
    V[f"x{shape}_s3_maxlive2e4_b1e4"] = variant(
        dict(S3, reduce_bucket_size=10000, stage3_max_live_parameters=20000), model=dims)

# The subset a routine test run takes (about 15 s a variant on 2 cores): every stage, the four
# gradient paths, a bucket smaller than the largest tensor, W = 3, stage-3 prefetch off.
QUICK = ["s0_g2", "s1_default_b1e4", "s2_default_b5e8", "s2_rsfalse_b2e4", "s2_mrbafalse_b1e4",
         "s2_cgfalse_b2e4", "s2_roundrobin_b2e4", "s2_default_b2e4_w3", "s3_default",
         "s3_default_b1e4", "s3_prefetch0"]
