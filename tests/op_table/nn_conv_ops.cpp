// Op-table entries for the ops of family nn_conv (nn/linear.h, nn/conv.h, nn/pooling.h):
// bilinear, conv1d, conv_transpose2d and adaptive_avg_pool2d, each with a float64 reference
// written as the naive loop of its definition. Integer parameters travel as the sample's last
// argument, an int64 tensor (listed at each entry), so that gradcheck leaves them alone.
// Samples stay small: the gradient suite builds full Jacobians of every float64 sample.

#include <cmath>

#include "op_table.h"

namespace ember::testing {
namespace {

namespace F = ember::nn::functional;

int64_t param_at(const RefTensor& p, size_t i) { return static_cast<int64_t>(p.data[i]); }

// ---- bilinear: args {input1 (*, in1), input2 (*, in2), weight (out, in1, in2), bias or
// undefined} -----------------------------------------------------------------------------------
RefTensor ref_bilinear(const RefTensor& x1, const RefTensor& x2, const RefTensor& w,
                       const RefTensor& b) {
  const int64_t out = w.shape[0], in1 = w.shape[1], in2 = w.shape[2];
  const int64_t rows = x1.numel() / in1;
  Shape shape(x1.shape.begin(), x1.shape.end() - 1);
  shape.push_back(out);
  RefTensor y(shape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b.data.empty() ? 0.0 : b.data[o];
      for (int64_t i = 0; i < in1; ++i)
        for (int64_t j = 0; j < in2; ++j)
          acc += x1.data[r * in1 + i] * w.data[(o * in1 + i) * in2 + j] * x2.data[r * in2 + j];
      y.data[r * out + o] = acc;
    }
  return y;
}

std::vector<Sample> bilinear_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 1100;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  s.push_back({{r({3, 2}), r({3, 4}), r({5, 2, 4}), r({5})}, "batch 3"});
  s.push_back({{r({2, 2, 3}), r({2, 2, 2}), r({2, 3, 2}), Tensor()}, "2 leading dims, no bias"});
  s.push_back({{r({3}), r({2}), r({2, 3, 2}), r({2})}, "1-D inputs"});
  s.push_back(
      {{noncontiguous(r({4, 3})), r({3, 4}).transpose(0, 1), noncontiguous(r({2, 3, 3})), r({2})},
       "non-contiguous inputs and weight"});
  s.push_back({{r({0, 2}), r({0, 3}), r({2, 2, 3}), r({2})}, "empty batch"});
  s.push_back({{r({1, 1}), r({1, 1}), r({1, 1, 1}), r({1})}, "sizes 1"});
  return s;
}

// ---- conv1d: args {input, weight, bias or undefined, {stride, padding, dilation, groups}},
// padding -1 = "same", -2 = "valid" ------------------------------------------------------------
RefTensor ref_conv1d(const RefTensor& x, const RefTensor& w, const RefTensor& b,
                     const RefTensor& p) {
  const bool batched = x.dim() == 3;
  const int64_t N = batched ? x.shape[0] : 1, C = x.shape[x.dim() - 2], L = x.shape[x.dim() - 1];
  const int64_t O = w.shape[0], Cg = w.shape[1], k = w.shape[2];
  const int64_t stride = param_at(p, 0), dilation = param_at(p, 2), groups = param_at(p, 3);
  int64_t pad = param_at(p, 1), pad_right = pad;
  if (pad == -1) {  // same: d (k - 1) in all, the odd one on the right
    pad = dilation * (k - 1) / 2;
    pad_right = dilation * (k - 1) - pad;
  } else if (pad == -2) {
    pad = pad_right = 0;
  }
  const int64_t out_l = (L + pad + pad_right - dilation * (k - 1) - 1) / stride + 1;
  const int64_t Og = O / groups;
  RefTensor y(batched ? Shape{N, O, out_l} : Shape{O, out_l});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t l = 0; l < out_l; ++l) {
        double acc = b.data.empty() ? 0.0 : b.data[o];
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t i = 0; i < k; ++i) {
            const int64_t il = l * stride - pad + i * dilation;
            if (il < 0 || il >= L) continue;
            acc += x.data[(n * C + o / Og * Cg + c) * L + il] * w.data[(o * Cg + c) * k + i];
          }
        y.data[(n * O + o) * out_l + l] = acc;
      }
  return y;
}

std::vector<Sample> conv1d_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 1200;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  //                                                       s   p  d  g
  s.push_back({{r({2, 2, 6}), r({3, 2, 3}), r({3}), params({1, 0, 1, 1})}, "batch 2, k 3"});
  s.push_back({{r({1, 2, 7}), r({2, 2, 3}), Tensor(), params({2, 1, 1, 1})},
               "stride 2, padding 1, no bias"});
  s.push_back({{r({1, 4, 7}), r({4, 2, 2}), r({4}), params({1, 1, 2, 2})}, "groups 2, dilation 2"});
  s.push_back({{r({1, 2, 6}), r({2, 2, 4}), r({2}), params({1, -1, 1, 1})},
               "same, even kernel (asymmetric)"});
  s.push_back({{r({1, 2, 6}), r({2, 2, 3}), r({2}), params({1, -1, 2, 1})},
               "same, dilation 2 (symmetric)"});
  s.push_back({{r({2, 5}), r({3, 2, 2}), r({3}), params({1, -2, 1, 1})}, "unbatched, valid"});
  s.push_back(
      {{noncontiguous(r({1, 3, 5})), noncontiguous(r({2, 3, 2})), r({2}), params({1, 0, 1, 1})},
       "non-contiguous input and weight"});
  s.push_back({{r({0, 2, 5}), r({2, 2, 3}), r({2}), params({1, 0, 1, 1})}, "empty batch"});
  s.push_back({{r({1, 1, 1}), r({1, 1, 1}), r({1}), params({1, 0, 1, 1})}, "length 1"});
  return s;
}

Tensor run_conv1d(const Sample& s) {
  RefTensor p = to_ref(s.args[3]);
  const int64_t pad = param_at(p, 1);
  nn::ConvPadding padding = pad == -1   ? nn::ConvPadding("same")
                            : pad == -2 ? nn::ConvPadding("valid")
                                        : nn::ConvPadding(pad);
  return F::conv1d(s.args[0], s.args[1], s.args[2], {param_at(p, 0)}, padding, {param_at(p, 2)},
                   param_at(p, 3));
}

// ---- conv_transpose2d: args {input, weight (C_in, C_out / groups, kh, kw), bias or undefined,
// {sh, sw, ph, pw, oph, opw, dh, dw, groups}} ----------------------------------------------------
// Every input pixel scatters its kernel-weighted values into the output: the definition.
RefTensor ref_conv_transpose2d(const RefTensor& x, const RefTensor& w, const RefTensor& b,
                               const RefTensor& p) {
  const bool batched = x.dim() == 4;
  const int64_t N = batched ? x.shape[0] : 1, C = x.shape[x.dim() - 3], H = x.shape[x.dim() - 2],
                W = x.shape[x.dim() - 1];
  const int64_t sh = param_at(p, 0), sw = param_at(p, 1), ph = param_at(p, 2), pw = param_at(p, 3),
                oph = param_at(p, 4), opw = param_at(p, 5), dh = param_at(p, 6),
                dw = param_at(p, 7), groups = param_at(p, 8);
  const int64_t Og = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  const int64_t O = Og * groups, Cg = C / groups;
  const int64_t out_h = (H - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1;
  const int64_t out_w = (W - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1;
  RefTensor y(batched ? Shape{N, O, out_h, out_w} : Shape{O, out_h, out_w});
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < out_h * out_w; ++i)
        y.data[(n * O + o) * out_h * out_w + i] = b.data.empty() ? 0.0 : b.data[o];
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw)
          for (int64_t oc = 0; oc < Og; ++oc)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t oh = ih * sh - ph + i * dh, ow = iw * sw - pw + j * dw;
                if (oh < 0 || oh >= out_h || ow < 0 || ow >= out_w) continue;
                const int64_t o = c / Cg * Og + oc;
                y.data[((n * O + o) * out_h + oh) * out_w + ow] +=
                    x.data[((n * C + c) * H + ih) * W + iw] *
                    w.data[((c * Og + oc) * kh + i) * kw + j];
              }
  }
  return y;
}

std::vector<Sample> conv_transpose2d_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 1300;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  //                                                          sh sw ph pw oh ow dh dw g
  s.push_back({{r({2, 2, 3, 3}), r({2, 2, 2, 2}), r({2}), params({1, 1, 0, 0, 0, 0, 1, 1, 1})},
               "batch 2, 2x2 kernel"});
  s.push_back({{r({1, 2, 3, 2}), r({2, 1, 3, 3}), r({1}), params({2, 2, 1, 1, 1, 1, 1, 1, 1})},
               "stride 2, padding 1, output_padding 1"});
  s.push_back({{r({1, 4, 2, 3}), r({4, 1, 2, 3}), Tensor(), params({2, 1, 0, 1, 1, 0, 1, 1, 2})},
               "groups 2, stride (2, 1), no bias"});
  s.push_back({{r({1, 2, 3, 2}), r({2, 2, 2, 2}), r({4}), params({1, 2, 0, 0, 0, 1, 2, 1, 2})},
               "dilation (2, 1), groups 2"});
  s.push_back({{r({1, 1, 2, 3}), r({1, 2, 2, 2}), r({2}), params({1, 1, 1, 0, 1, 0, 2, 2, 1})},
               "output_padding >= stride (< dilation): the cropping path"});
  s.push_back(
      {{r({2, 3, 2}), r({2, 2, 2, 2}), r({2}), params({2, 2, 0, 0, 0, 0, 1, 1, 1})}, "unbatched"});
  s.push_back({{noncontiguous(r({1, 2, 3, 3})), noncontiguous(r({2, 1, 2, 2})), r({1}),
                params({1, 1, 0, 0, 0, 0, 1, 1, 1})},
               "non-contiguous input and weight"});
  s.push_back({{r({0, 2, 3, 3}), r({2, 2, 2, 2}), r({2}), params({1, 1, 0, 0, 0, 0, 1, 1, 1})},
               "empty batch"});
  s.push_back(
      {{r({1, 1, 1, 1}), r({1, 1, 1, 1}), Tensor(), params({1, 1, 0, 0, 0, 0, 1, 1, 1})}, "1x1"});
  return s;
}

Tensor run_conv_transpose2d(const Sample& s) {
  RefTensor p = to_ref(s.args[3]);
  auto v = [&](size_t i) { return param_at(p, i); };
  return F::conv_transpose2d(s.args[0], s.args[1], s.args[2], {v(0), v(1)}, {v(2), v(3)},
                             {v(4), v(5)}, v(8), {v(6), v(7)});
}

// ---- adaptive_avg_pool2d: args {input, {out_h, out_w}} -----------------------------------------
RefTensor ref_adaptive_avg_pool2d(const RefTensor& x, const RefTensor& p) {
  const bool batched = x.dim() == 4;
  const int64_t N = batched ? x.shape[0] : 1, C = x.shape[x.dim() - 3], H = x.shape[x.dim() - 2],
                W = x.shape[x.dim() - 1];
  const int64_t OH = param_at(p, 0), OW = param_at(p, 1);
  RefTensor y(batched ? Shape{N, C, OH, OW} : Shape{C, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          // PyTorch's windows: [floor(i * in / out), ceil((i + 1) * in / out)).
          const int64_t h0 = static_cast<int64_t>(std::floor(double(oh * H) / OH));
          const int64_t h1 = static_cast<int64_t>(std::ceil(double((oh + 1) * H) / OH));
          const int64_t w0 = static_cast<int64_t>(std::floor(double(ow * W) / OW));
          const int64_t w1 = static_cast<int64_t>(std::ceil(double((ow + 1) * W) / OW));
          double sum = 0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) sum += x.data[((n * C + c) * H + h) * W + w];
          y.data[((n * C + c) * OH + oh) * OW + ow] = sum / double((h1 - h0) * (w1 - w0));
        }
  return y;
}

std::vector<Sample> adaptive_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 1400;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  s.push_back({{r({2, 2, 7, 5}), params({3, 2})}, "7x5 -> 3x2 (overlapping windows)"});
  s.push_back({{r({1, 2, 6, 4}), params({3, 2})}, "6x4 -> 3x2 (divisible: avg_pool2d)"});
  s.push_back({{r({1, 2, 3, 2}), params({5, 4})}, "3x2 -> 5x4 (more outputs than inputs)"});
  s.push_back({{r({1, 3, 4, 5}), params({1, 1})}, "global average"});
  s.push_back({{r({2, 5, 6}), params({4, 6})}, "unbatched, one dim divisible"});
  s.push_back({{noncontiguous(r({1, 2, 5, 4})), params({2, 3})}, "non-contiguous"});
  s.push_back({{r({0, 2, 5, 5}), params({2, 2})}, "empty batch"});
  s.push_back({{r({1, 1, 1, 1}), params({2, 3})}, "1x1 input"});
  return s;
}

const OpTableRegistrar reg({
    OpInfo{"bilinear", floating_dtypes(), bilinear_samples,
           [](const Sample& s) {
             return one(F::bilinear(s.args[0], s.args[1], s.args[2], s.args[3]));
           },
           [](const Refs& r) { return Refs{ref_bilinear(r[0], r[1], r[2], r[3])}; },
           /*tol_scale=*/32, [](DType dt) { return dt; }},
    OpInfo{"conv1d", floating_dtypes(), conv1d_samples,
           [](const Sample& s) { return one(run_conv1d(s)); },
           [](const Refs& r) { return Refs{ref_conv1d(r[0], r[1], r[2], r[3])}; },
           /*tol_scale=*/32, [](DType dt) { return dt; }},
    OpInfo{"conv_transpose2d", floating_dtypes(), conv_transpose2d_samples,
           [](const Sample& s) { return one(run_conv_transpose2d(s)); },
           [](const Refs& r) { return Refs{ref_conv_transpose2d(r[0], r[1], r[2], r[3])}; },
           /*tol_scale=*/32, [](DType dt) { return dt; }},
    OpInfo{"adaptive_avg_pool2d", floating_dtypes(), adaptive_samples,
           [](const Sample& s) {
             RefTensor p = to_ref(s.args[1]);
             return one(F::adaptive_avg_pool2d(s.args[0], {param_at(p, 0), param_at(p, 1)}));
           },
           [](const Refs& r) { return Refs{ref_adaptive_avg_pool2d(r[0], r[1])}; },
           /*tol_scale=*/8, [](DType dt) { return dt; }},
});

}  // namespace
}  // namespace ember::testing
