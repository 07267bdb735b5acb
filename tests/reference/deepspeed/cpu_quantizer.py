"""A CPU stand-in, written for this harness, for the four kernels of DeepSpeed's QuantizerBuilder
op that ZeRO++ calls (csrc/quantization/pt_binding.cpp in 0.14.4: quantize, dequantize,
swizzle_quant, quantized_reduction). The CPU accelerator cannot build that op, so without a
stand-in qwZ and qgZ cannot be traced here.

What the trace depends on is kept exactly: every output has the kernel's shape and dtype (int8
codes, 8/bits values per byte; fp32 scales of shape [groups, 1]), so the collectives DeepSpeed
issues with them carry the same counts. The numbers are a plain symmetric quantization
(scale = max|x| / qmax per contiguous group, code = round(x / scale)), and the swizzled layout
puts, in chunk j of the output, the partitions of local rank j on every node, which is what the
two all-to-alls that follow need for each rank to end with its own partition's sum.

One deliberate difference: dequantize returns the input's working dtype (fp32 here) where the
kernel returns fp16, because the kernels read fp16 and the reference model is fp32.
"""
import torch

Symmetric = 0
Asymmetric = 1


def _qmax(bits):
    return (1 << (bits - 1)) - 1


def _quantize_groups(values, groups, bits):
    """int8 codes (two per byte for 4 bits, low nibble first) and [groups, 1] fp32 scales."""
    flat = values.detach().reshape(groups, -1).float()
    scales = flat.abs().amax(dim=1, keepdim=True) / _qmax(bits)
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    codes = torch.round(flat / safe).clamp(-_qmax(bits), _qmax(bits)).to(torch.int8).reshape(-1)
    if bits == 4:
        pairs = codes.reshape(-1, 2).to(torch.int16) & 0xF
        codes = (pairs[:, 0] | (pairs[:, 1] << 4)).to(torch.uint8).view(torch.int8)
    return codes, scales


def _dequantize_groups(codes, scales, groups, bits):
    flat = codes.reshape(-1)
    if bits == 4:
        raw = flat.view(torch.uint8).to(torch.int16)
        low, high = raw & 0xF, raw >> 4
        flat = torch.stack([low, high], dim=1).reshape(-1)
        flat = torch.where(flat > 7, flat - 16, flat)
    return (flat.float().reshape(groups, -1) * scales.reshape(groups, 1)).reshape(-1)


def quantize(values, groups, bits, quant_type):
    assert quant_type == Symmetric, "the stand-in has only DeepSpeed's Symmetric mode"
    codes, scales = _quantize_groups(values, groups, bits)
    shape = list(values.shape)
    shape[-1] //= 1 if bits == 8 else 2
    return [codes.reshape(shape), scales]


def dequantize(codes, scales, groups, bits, quant_type):
    assert quant_type == Symmetric, "the stand-in has only DeepSpeed's Symmetric mode"
    shape = list(codes.shape)
    shape[-1] *= 1 if bits == 8 else 2
    return _dequantize_groups(codes, scales, groups, bits).reshape(shape)


def swizzle_quant(values, groups, bits, quant_type, pipeline_size, nodes, devices_per_node):
    """Reorders the W = nodes x devices_per_node partitions so that chunk j holds local rank j's
    partition on every node (node order), then quantizes in that order: the intra-node
    all-to-all then hands each local rank the pieces it reduces."""
    assert pipeline_size == 1, "the stand-in has no pipelined swizzle"
    parts = values.detach().reshape(-1).chunk(nodes * devices_per_node)
    order = [parts[node * devices_per_node + local] for local in range(devices_per_node)
             for node in range(nodes)]
    return quantize(torch.cat(order), groups, bits, quant_type)


def quantized_reduction(codes, scales, in_groups, out_groups, bits, quant_type, devices_per_node):
    """Sums the devices_per_node received pieces (each a contiguous 1/devices_per_node of the
    codes, with in_groups / devices_per_node scales) and quantizes the sum into out_groups."""
    pieces = codes.reshape(-1).chunk(devices_per_node)
    piece_scales = scales.reshape(-1).chunk(devices_per_node)
    groups_per_piece = in_groups // devices_per_node
    total = sum(_dequantize_groups(c, s, groups_per_piece, bits)
                for c, s in zip(pieces, piece_scales))
    out_codes, out_scales = _quantize_groups(total, out_groups, bits)
    shape = list(codes.shape)
    shape[-1] //= devices_per_node
    return [out_codes.reshape(shape), out_scales]


class QuantizerBuilder:
    """Stands where deepspeed.ops.op_builder.QuantizerBuilder is looked up (partition_parameters'
    CUDAQuantizer, coalesced_collectives' all_to_all_quant_reduce): load() returns this module."""

    def load(self):
        import sys
        return sys.modules[__name__]


def install():
    """Makes deepspeed.ops.op_builder.QuantizerBuilder this stand-in (both callers look the name up
    on that module when they first quantize)."""
    import deepspeed.ops.op_builder as op_builder
    op_builder.QuantizerBuilder = QuantizerBuilder
