#!/usr/bin/python3
"""Golden values for ember's attention (tests/test_nn_attention.cpp).

Writes tests/golden/nn_attention.safetensors with PyTorch 1.13 (Debian's python3-torch), all
float64:

- nn.MultiheadAttention cases "<case>.*": the module's state_dict under PyTorch's own keys
  ("<case>.in_proj_weight", "<case>.out_proj.weight", ...), the inputs (query, key, value and
  the masks that the case uses), the outputs (output, and weights when need_weights), and the
  gradients of sum(output * grad_output) [+ sum(weights * grad_weights)] with respect to
  query, key, value ("grad_query", ...) and every parameter ("grad.<key>"). The parameters are
  PyTorch's default initialisation plus random biases (PyTorch zeroes them), so that every
  parameter matters. Cases:
    cross_bool    (L, N, E) sequence first, key != value, bool attn_mask (L, S) and bool
                  key_padding_mask, averaged weights
    batch_first   batch_first=True, float attn_mask (N * heads, L, S), bool key_padding_mask,
                  weights per head
    self_noweights self-attention (query = key = value), float key_padding_mask,
                  need_weights=False
    kv_dims       kdim, vdim != embed_dim (separate projection weights), add_bias_kv,
                  add_zero_attn, bool masks
    nobias        bias=False, unbatched (L, E) input, bool key_padding_mask (S)
    masked_row    a sample whose keys are all padding: PyTorch 1.13 gives NaN for it
- scaled dot-product attention "sdpa_<case>.*" (torch._C._nn._scaled_dot_product_attention,
  whose semantics ember's F::scaled_dot_product_attention follows: a bool mask is true where
  attention is allowed): q, k, v, mask, output and the gradients of sum(output * grad_output).

Regenerate from the repository root with:
    /usr/bin/python3 tests/golden/gen_nn_attention.py
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

torch.manual_seed(4321)
torch.set_default_dtype(torch.float64)
out = {}


def mha_case(name, module, query, key, value, key_padding_mask=None, attn_mask=None,
             need_weights=True, average_attn_weights=True, self_attention=False):
    with torch.no_grad():  # PyTorch zeroes the biases: make them random so they are tested
        for pname, p in module.named_parameters():
            if "bias" in pname and pname not in ("bias_k", "bias_v"):
                p.copy_(torch.randn_like(p) * 0.5)
    for k, v in module.state_dict().items():
        out[name + "." + k] = v.clone()
    query = query.clone().requires_grad_()
    if self_attention:
        key = value = query
    else:
        key = key.clone().requires_grad_()
        value = value.clone().requires_grad_()
    module.train()  # dropout is 0: train mode only keeps PyTorch off its inference fast path
    output, weights = module(query, key, value, key_padding_mask=key_padding_mask,
                             need_weights=need_weights, attn_mask=attn_mask,
                             average_attn_weights=average_attn_weights)
    grad_output = torch.randn_like(output)
    loss = (output * grad_output).sum()
    out[name + ".query"] = query.detach().clone()
    if not self_attention:
        out[name + ".key"] = key.detach().clone()
        out[name + ".value"] = value.detach().clone()
    if key_padding_mask is not None:
        out[name + ".key_padding_mask"] = key_padding_mask
    if attn_mask is not None:
        out[name + ".attn_mask"] = attn_mask
    out[name + ".output"] = output.detach().clone()
    out[name + ".grad_output"] = grad_output
    if need_weights:
        grad_weights = torch.randn_like(weights)
        loss = loss + (weights * grad_weights).sum()
        out[name + ".weights"] = weights.detach().clone()
        out[name + ".grad_weights"] = grad_weights
    if torch.isnan(output).any():
        return  # no gradients for the NaN case
    loss.backward()
    out[name + ".grad_query"] = query.grad.clone()
    if not self_attention:
        out[name + ".grad_key"] = key.grad.clone()
        out[name + ".grad_value"] = value.grad.clone()
    for pname, p in module.named_parameters():
        out[name + ".grad." + pname] = p.grad.clone()


L, S, N, E, H = 4, 5, 3, 8, 2

# Allowed pattern with at least one key per query: blocks (l + s) % 3 == 1.
bool_attn = torch.tensor([[(l + s) % 3 == 1 for s in range(S)] for l in range(L)])
bool_padding = torch.zeros(N, S, dtype=torch.bool)
bool_padding[0, 4] = True
bool_padding[2, 0] = True
bool_padding[2, 3] = True

mha_case("cross_bool", torch.nn.MultiheadAttention(E, H),
         torch.randn(L, N, E), torch.randn(S, N, E), torch.randn(S, N, E),
         key_padding_mask=bool_padding, attn_mask=bool_attn)

mha_case("batch_first", torch.nn.MultiheadAttention(E, H, batch_first=True),
         torch.randn(N, L, E), torch.randn(N, S, E), torch.randn(N, S, E),
         key_padding_mask=bool_padding, attn_mask=torch.randn(N * H, L, S),
         average_attn_weights=False)

mha_case("self_noweights", torch.nn.MultiheadAttention(E, 4),
         torch.randn(L, N, E), None, None, key_padding_mask=torch.randn(N, L), need_weights=False,
         self_attention=True)

# kdim 6 and vdim 5; bias_k / bias_v and the zero attention add two key positions, which the
# masks do not cover (PyTorch pads them).
mha_case("kv_dims", torch.nn.MultiheadAttention(E, H, add_bias_kv=True, add_zero_attn=True,
                                                kdim=6, vdim=5),
         torch.randn(L, N, E), torch.randn(S, N, 6), torch.randn(S, N, 5),
         key_padding_mask=bool_padding, attn_mask=bool_attn)

mha_case("nobias", torch.nn.MultiheadAttention(E, H, bias=False),
         torch.randn(L, E), torch.randn(S, E), torch.randn(S, E),
         key_padding_mask=torch.tensor([False, True, False, False, True]),
         average_attn_weights=False)

masked_padding = torch.zeros(N, S, dtype=torch.bool)
masked_padding[1, :] = True  # sample 1 sees no key at all
mha_case("masked_row", torch.nn.MultiheadAttention(E, H),
         torch.randn(L, N, E), torch.randn(S, N, E), torch.randn(S, N, E),
         key_padding_mask=masked_padding)
assert torch.isnan(out["masked_row.output"][:, 1]).all()
assert not torch.isnan(out["masked_row.output"][:, 0]).any()


def sdpa_case(name, q, k, v, mask=None, is_causal=False):
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
    output, _ = torch._C._nn._scaled_dot_product_attention(q, k, v, mask, 0.0, False, is_causal)
    grad_output = torch.randn_like(output)
    (output * grad_output).sum().backward()
    for key, t in (("q", q), ("k", k), ("v", v)):
        out["sdpa_%s.%s" % (name, key)] = t.detach().clone()
        out["sdpa_%s.grad_%s" % (name, key)] = t.grad.clone()
    if mask is not None:
        out["sdpa_%s.mask" % name] = mask
    out["sdpa_%s.output" % name] = output.detach().clone()
    out["sdpa_%s.grad_output" % name] = grad_output


sdpa_case("bool", torch.randn(2, 2, L, 6), torch.randn(2, 2, S, 6), torch.randn(2, 2, S, 3),
          mask=~bool_attn)
sdpa_case("float", torch.randn(3, L, 6), torch.randn(3, S, 6), torch.randn(3, S, 6),
          mask=torch.randn(3, L, S))
sdpa_case("causal", torch.randn(2, L, 6), torch.randn(2, L, 6), torch.randn(2, L, 6),
          is_causal=True)

safetensors_io.save(out, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "nn_attention.safetensors"))
print("wrote %d tensors" % len(out))
