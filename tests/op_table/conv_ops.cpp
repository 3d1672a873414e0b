// Op-table entries for the convolution and pooling building blocks (core/ops/conv.h), with
// direct float64 references: convolution as the 7-deep loop of its definition, pooling window by
// window. Each sample's last argument is an int64 tensor of the op's integer parameters (listed
// at each entry; an integer tensor, so that gradcheck leaves it alone), so one entry covers
// stride / padding / dilation / groups variants, batches of 1 and 2, empty batches, unbatched
// and non-contiguous inputs.

#include <cmath>
#include <limits>

#include "op_table.h"

namespace ember::testing {
namespace {

// Parameter i of a sample's parameter list (params() in op_table.h makes the list).
int64_t param(const RefTensor& p, size_t i) { return static_cast<int64_t>(p.data[i]); }

// Views an (N, C, H, W) or unbatched (C, H, W) reference as batched dims.
struct Image {
  const RefTensor& t;
  int64_t n, c, h, w;
  explicit Image(const RefTensor& r)
      : t(r),
        n(r.dim() == 4 ? r.shape[0] : 1),
        c(r.shape[r.dim() - 3]),
        h(r.shape[r.dim() - 2]),
        w(r.shape[r.dim() - 1]) {}
  bool batched() const { return t.dim() == 4; }
  double at(int64_t ni, int64_t ci, int64_t hi, int64_t wi) const {
    return t.data[((ni * c + ci) * h + hi) * w + wi];
  }
};

// (N, C, H, W), dropping N for an unbatched input.
Shape image_shape(bool batched, int64_t n, int64_t c, int64_t h, int64_t w) {
  return batched ? Shape{n, c, h, w} : Shape{c, h, w};
}

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return static_cast<int64_t>(std::floor(static_cast<double>(in + 2 * p - d * (k - 1) - 1) / s)) +
         1;
}

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  double q = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / s;
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// ---- conv2d: args {input, weight, bias or undefined, {sh, sw, ph, pw, dh, dw, groups}} --------
RefTensor ref_conv2d(const RefTensor& input, const RefTensor& weight, const RefTensor& bias,
                     const RefTensor& p) {
  Image x(input);
  const int64_t sh = param(p, 0), sw = param(p, 1), ph = param(p, 2), pw = param(p, 3);
  const int64_t dh = param(p, 4), dw = param(p, 5), groups = param(p, 6);
  const int64_t O = weight.shape[0], Cg = weight.shape[1], kh = weight.shape[2],
                kw = weight.shape[3];
  const int64_t Og = O / groups;
  const int64_t oh_n = out_size(x.h, kh, sh, ph, dh), ow_n = out_size(x.w, kw, sw, pw, dw);
  RefTensor out(image_shape(x.batched(), x.n, O, oh_n, ow_n));
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double acc = bias.data.empty() ? 0.0 : bias.data[o];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t ih = oh * sh - ph + i * dh, iw = ow * sw - pw + j * dw;
                if (ih < 0 || ih >= x.h || iw < 0 || iw >= x.w) continue;
                acc += x.at(n, o / Og * Cg + c, ih, iw) *
                       weight.data[((o * Cg + c) * kh + i) * kw + j];
              }
          out.data[((n * O + o) * oh_n + oh) * ow_n + ow] = acc;
        }
  return out;
}

std::vector<Sample> conv2d_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 300;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  s.push_back(
      {{r({1, 3, 6, 6}), r({4, 3, 3, 3}), r({4}), params({1, 1, 0, 0, 1, 1, 1})}, "batch 1, 3x3"});
  s.push_back(
      {{r({2, 3, 7, 5}), noncontiguous(r({4, 3, 3, 2})), r({4}), params({2, 2, 1, 1, 1, 1, 1})},
       "batch 2, stride 2, padding 1, 3x2 kernel, non-contiguous weight"});
  s.push_back({{r({2, 4, 8, 8}), r({6, 2, 3, 3}), Tensor(), params({1, 1, 2, 2, 2, 2, 2})},
               "groups 2, dilation 2, padding 2, no bias"});
  s.push_back({{r({3, 5, 5}), r({2, 3, 3, 3}), r({2}), params({1, 2, 1, 0, 1, 1, 1})},
               "unbatched, stride (1, 2), padding (1, 0)"});
  s.push_back(
      {{noncontiguous(r({2, 3, 6, 5})), r({4, 3, 1, 1}), r({4}), params({1, 1, 0, 0, 1, 1, 1})},
       "non-contiguous input, 1x1 kernel"});
  s.push_back({{r({2, 6, 4, 4}), r({3, 2, 1, 1}), r({3}), params({1, 1, 0, 0, 1, 1, 3})},
               "1x1 kernel, groups 3"});
  s.push_back({{r({1, 4, 5, 5}), r({4, 1, 3, 3}), r({4}), params({1, 1, 1, 1, 1, 1, 4})},
               "depthwise (groups = channels)"});
  s.push_back({{r({1, 2, 5, 6}), r({3, 2, 2, 3}), r({3}), params({3, 2, 0, 1, 2, 1, 1})},
               "stride 3, dilation (2, 1)"});
  s.push_back(
      {{r({0, 3, 5, 5}), r({2, 3, 3, 3}), r({2}), params({1, 1, 0, 0, 1, 1, 1})}, "empty batch"});
  s.push_back({{r({1, 3, 40, 40}), r({8, 3, 3, 3}), r({8}), params({1, 1, 1, 1, 1, 1, 1})},
               "one large image (output positions split over threads)"});
  s.push_back(
      {{r({1, 1, 1, 1}), r({1, 1, 1, 1}), Tensor(), params({1, 1, 0, 0, 1, 1, 1})}, "1x1 image"});
  return s;
}

Tensor run_conv2d(const Sample& s) {
  RefTensor p = to_ref(s.args[3]);
  return conv2d(s.args[0], s.args[1], s.args[2], {param(p, 0), param(p, 1)},
                {param(p, 2), param(p, 3)}, {param(p, 4), param(p, 5)}, param(p, 6));
}

// ---- im2col: args {input, {kh, kw, dh, dw, ph, pw, sh, sw}} -------------------------------
RefTensor ref_im2col(const RefTensor& input, const RefTensor& p) {
  Image x(input);
  const int64_t kh = param(p, 0), kw = param(p, 1), dh = param(p, 2), dw = param(p, 3);
  const int64_t ph = param(p, 4), pw = param(p, 5), sh = param(p, 6), sw = param(p, 7);
  const int64_t oh_n = out_size(x.h, kh, sh, ph, dh), ow_n = out_size(x.w, kw, sw, pw, dw);
  const int64_t rows = x.c * kh * kw, L = oh_n * ow_n;
  RefTensor out(x.batched() ? Shape{x.n, rows, L} : Shape{rows, L});
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j)
          for (int64_t oh = 0; oh < oh_n; ++oh)
            for (int64_t ow = 0; ow < ow_n; ++ow) {
              int64_t ih = oh * sh - ph + i * dh, iw = ow * sw - pw + j * dw;
              bool inside = ih >= 0 && ih < x.h && iw >= 0 && iw < x.w;
              out.data[(n * rows + (c * kh + i) * kw + j) * L + oh * ow_n + ow] =
                  inside ? x.at(n, c, ih, iw) : 0.0;
            }
  return out;
}

// ---- col2im: args {input, {H, W, kh, kw, dh, dw, ph, pw, sh, sw}} -------------------------
RefTensor ref_col2im(const RefTensor& input, const RefTensor& p) {
  const bool batched = input.dim() == 3;
  const int64_t N = batched ? input.shape[0] : 1;
  const int64_t rows = input.shape[input.dim() - 2], L = input.shape[input.dim() - 1];
  const int64_t H = param(p, 0), W = param(p, 1), kh = param(p, 2), kw = param(p, 3);
  const int64_t dh = param(p, 4), dw = param(p, 5), ph = param(p, 6), pw = param(p, 7);
  const int64_t sh = param(p, 8), sw = param(p, 9);
  const int64_t C = rows / (kh * kw), ow_n = out_size(W, kw, sw, pw, dw);
  RefTensor out(image_shape(batched, N, C, H, W));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j)
          for (int64_t l = 0; l < L; ++l) {
            int64_t ih = l / ow_n * sh - ph + i * dh, iw = l % ow_n * sw - pw + j * dw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            out.data[((n * C + c) * H + ih) * W + iw] +=
                input.data[(n * rows + (c * kh + i) * kw + j) * L + l];
          }
  return out;
}

// ---- pooling --------------------------------------------------------------------------------
// max_pool2d: args {input, {kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode}}; sh = 0: default stride.
struct PoolParams {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};
PoolParams max_params(const RefTensor& p) {
  PoolParams q{param(p, 0), param(p, 1), param(p, 2), param(p, 3),     param(p, 4),
               param(p, 5), param(p, 6), param(p, 7), param(p, 8) != 0};
  if (q.sh == 0) q.sh = q.kh, q.sw = q.kw;
  return q;
}

// {values, indices}: the first largest tap of each window (taps in the padding excluded).
Refs ref_max_pool(const RefTensor& input, const RefTensor& p) {
  Image x(input);
  PoolParams q = max_params(p);
  const int64_t oh_n = pool_out(x.h, q.kh, q.sh, q.ph, q.dh, q.ceil_mode);
  const int64_t ow_n = pool_out(x.w, q.kw, q.sw, q.pw, q.dw, q.ceil_mode);
  Shape shape = image_shape(x.batched(), x.n, x.c, oh_n, ow_n);
  RefTensor values(shape), indices(shape);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double best = -std::numeric_limits<double>::infinity();
          int64_t best_index = -1;
          for (int64_t i = 0; i < q.kh; ++i)
            for (int64_t j = 0; j < q.kw; ++j) {
              int64_t ih = oh * q.sh - q.ph + i * q.dh, iw = ow * q.sw - q.pw + j * q.dw;
              if (ih < 0 || ih >= x.h || iw < 0 || iw >= x.w) continue;
              if (best_index < 0 || x.at(n, c, ih, iw) > best) {
                best = x.at(n, c, ih, iw);
                best_index = ih * x.w + iw;
              }
            }
          int64_t o = ((n * x.c + c) * oh_n + oh) * ow_n + ow;
          values.data[o] = best;
          indices.data[o] = static_cast<double>(best_index);
        }
  return {values, indices};
}

std::vector<Sample> max_pool_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 400;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  //                                       kh kw sh sw ph pw dh dw ceil
  s.push_back({{r({1, 2, 6, 6}), params({2, 2, 0, 0, 0, 0, 1, 1, 0})}, "2x2, default stride"});
  s.push_back({{r({2, 3, 7, 5}), params({3, 3, 2, 2, 1, 1, 1, 1, 0})}, "3x3, stride 2, padding 1"});
  s.push_back(
      {{r({2, 2, 7, 7}), params({3, 2, 2, 1, 1, 1, 2, 3, 0})}, "dilation (2, 3), padding 1"});
  s.push_back({{r({1, 2, 7, 6}), params({2, 2, 2, 2, 0, 0, 1, 1, 1})}, "ceil_mode"});
  s.push_back({{r({1, 1, 6, 6}), params({3, 3, 2, 2, 1, 1, 1, 1, 1})}, "ceil_mode with padding"});
  s.push_back({{r({1, 1, 5, 5}), params({2, 2, 3, 3, 1, 1, 1, 1, 1})},
               "ceil_mode drops a window in the padding"});
  s.push_back({{r({3, 5, 5}), params({2, 2, 1, 1, 0, 0, 1, 1, 0})}, "unbatched, stride 1"});
  s.push_back({{noncontiguous(r({2, 3, 6, 5})), params({2, 3, 2, 1, 1, 1, 1, 1, 0})},
               "non-contiguous, 2x3"});
  s.push_back({{r({0, 2, 4, 4}), params({2, 2, 0, 0, 0, 0, 1, 1, 0})}, "empty batch"});
  return s;
}

std::tuple<Tensor, Tensor> run_max_pool(const Sample& s) {
  RefTensor p = to_ref(s.args[1]);
  Shape stride = param(p, 2) == 0 ? Shape{} : Shape{param(p, 2), param(p, 3)};
  return max_pool2d_with_indices(s.args[0], {param(p, 0), param(p, 1)}, stride,
                                 {param(p, 4), param(p, 5)}, {param(p, 6), param(p, 7)},
                                 param(p, 8) != 0);
}

// avg_pool2d: args {input, {kh, kw, sh, sw, ph, pw, ceil_mode, count_include_pad, divisor}};
// sh = 0: default stride, divisor = 0: none. PyTorch's divisor: the window clipped to the padded
// input, or to the input without count_include_pad.
RefTensor ref_avg_pool(const RefTensor& input, const RefTensor& p) {
  Image x(input);
  int64_t kh = param(p, 0), kw = param(p, 1), sh = param(p, 2), sw = param(p, 3);
  const int64_t ph = param(p, 4), pw = param(p, 5), divisor = param(p, 8);
  const bool ceil_mode = param(p, 6) != 0, include_pad = param(p, 7) != 0;
  if (sh == 0) sh = kh, sw = kw;
  const int64_t oh_n = pool_out(x.h, kh, sh, ph, 1, ceil_mode);
  const int64_t ow_n = pool_out(x.w, kw, sw, pw, 1, ceil_mode);
  RefTensor out(image_shape(x.batched(), x.n, x.c, oh_n, ow_n));
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double sum = 0;
          int64_t inside = 0, in_padded = 0;
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
              int64_t ih = oh * sh - ph + i, iw = ow * sw - pw + j;
              if (ih < x.h + ph && iw < x.w + pw) ++in_padded;
              if (ih < 0 || ih >= x.h || iw < 0 || iw >= x.w) continue;
              sum += x.at(n, c, ih, iw);
              ++inside;
            }
          double d = divisor != 0 ? divisor : include_pad ? in_padded : inside;
          out.data[((n * x.c + c) * oh_n + oh) * ow_n + ow] = sum / d;
        }
  return out;
}

std::vector<Sample> avg_pool_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 500;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  //                                       kh kw sh sw ph pw ceil incl div
  s.push_back({{r({1, 2, 6, 6}), params({2, 2, 0, 0, 0, 0, 0, 1, 0})}, "2x2, default stride"});
  s.push_back(
      {{r({2, 3, 7, 5}), params({3, 3, 2, 2, 1, 1, 0, 1, 0})}, "padding 1, count_include_pad"});
  s.push_back(
      {{r({2, 3, 7, 5}), params({3, 3, 2, 2, 1, 1, 0, 0, 0})}, "padding 1, !count_include_pad"});
  s.push_back(
      {{r({1, 2, 7, 6}), params({3, 3, 2, 2, 1, 1, 1, 1, 0})}, "ceil_mode, count_include_pad"});
  s.push_back(
      {{r({1, 2, 7, 6}), params({3, 2, 2, 2, 1, 1, 1, 0, 0})}, "ceil_mode, !count_include_pad"});
  s.push_back({{r({1, 2, 5, 5}), params({3, 3, 1, 1, 1, 1, 0, 1, 5})}, "divisor_override 5"});
  s.push_back({{r({3, 5, 5}), params({2, 2, 1, 1, 0, 0, 0, 1, 0})}, "unbatched, stride 1"});
  s.push_back({{noncontiguous(r({2, 3, 6, 5})), params({2, 3, 2, 1, 1, 1, 0, 1, 0})},
               "non-contiguous, 2x3"});
  s.push_back({{r({0, 2, 4, 4}), params({2, 2, 0, 0, 0, 0, 0, 1, 0})}, "empty batch"});
  return s;
}

const OpTableRegistrar reg({
    OpInfo{"conv2d", floating_dtypes(), conv2d_samples,
           [](const Sample& s) { return one(run_conv2d(s)); },
           [](const Refs& r) { return Refs{ref_conv2d(r[0], r[1], r[2], r[3])}; },
           /*tol_scale=*/32, [](DType dt) { return dt; }},
    OpInfo{"im2col", floating_dtypes(),
           [](DType dt) {
             std::vector<Sample> s;
             uint64_t seed = 600;
             auto r = [&](const Shape& shape) {
               return random_tensor(shape, dt, -2.0, 2.0, seed++);
             };
             //                                       kh kw dh dw ph pw sh sw
             s.push_back({{r({1, 2, 5, 5}), params({3, 3, 1, 1, 0, 0, 1, 1})}, "3x3"});
             s.push_back({{r({2, 3, 6, 7}), params({2, 3, 2, 1, 1, 2, 2, 1})},
                          "dilation, padding, stride"});
             s.push_back({{r({2, 4, 4}), params({2, 2, 1, 1, 0, 0, 2, 2})}, "unbatched, stride 2"});
             s.push_back({{noncontiguous(r({2, 3, 5, 4})), params({3, 2, 1, 1, 1, 1, 1, 1})},
                          "non-contiguous, padding 1"});
             s.push_back({{r({0, 2, 4, 4}), params({2, 2, 1, 1, 0, 0, 1, 1})}, "empty batch"});
             s.push_back({{r({1, 1, 3, 3}), params({3, 3, 1, 1, 0, 0, 1, 1})}, "kernel = image"});
             // Padding wider than a tap's reach: whole kernel columns and rows read only zeros.
             s.push_back({{r({1, 2, 4, 5}), params({2, 3, 2, 2, 3, 4, 3, 2})},
                          "padding beyond the image, dilation 2, strides (3, 2)"});
             s.push_back({{r({1, 1, 9, 10}), params({3, 3, 1, 1, 1, 1, 1, 3})},
                          "stride 3 along the rows only"});
             return s;
           },
           [](const Sample& s) {
             RefTensor p = to_ref(s.args[1]);
             return one(im2col(s.args[0], {param(p, 0), param(p, 1)}, {param(p, 2), param(p, 3)},
                               {param(p, 4), param(p, 5)}, {param(p, 6), param(p, 7)}));
           },
           [](const Refs& r) { return Refs{ref_im2col(r[0], r[1])}; }, 4.0,
           [](DType dt) { return dt; }},
    OpInfo{
        "col2im", floating_dtypes(),
        [](DType dt) {
          std::vector<Sample> s;
          uint64_t seed = 700;
          auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
          //                                         H  W kh kw dh dw ph pw sh sw
          s.push_back({{r({1, 18, 9}), params({5, 5, 3, 3, 1, 1, 0, 0, 1, 1})}, "3x3 on 5x5"});
          s.push_back({{r({2, 18, 27}), params({6, 7, 2, 3, 2, 1, 1, 2, 2, 1})},
                       "dilation, padding, stride"});
          s.push_back({{r({8, 4}), params({4, 4, 2, 2, 1, 1, 0, 0, 2, 2})}, "unbatched, stride 2"});
          s.push_back({{noncontiguous(r({2, 4, 9})), params({4, 4, 2, 2, 1, 1, 0, 0, 1, 1})},
                       "non-contiguous, overlapping"});
          s.push_back({{r({1, 9, 16}), params({4, 4, 3, 3, 1, 1, 1, 1, 1, 1})},
                       "padding 1, every pixel in 9 windows"});
          s.push_back({{r({0, 4, 9}), params({4, 4, 2, 2, 1, 1, 0, 0, 1, 1})}, "empty batch"});
          return s;
        },
        [](const Sample& s) {
          RefTensor p = to_ref(s.args[1]);
          return one(col2im(s.args[0], {param(p, 0), param(p, 1)}, {param(p, 2), param(p, 3)},
                            {param(p, 4), param(p, 5)}, {param(p, 6), param(p, 7)},
                            {param(p, 8), param(p, 9)}));
        },
        [](const Refs& r) { return Refs{ref_col2im(r[0], r[1])}; }, 8.0,
        [](DType dt) { return dt; }},
    OpInfo{"max_pool2d_with_indices", floating_dtypes(), max_pool_samples,
           [](const Sample& s) {
             auto [values, indices] = run_max_pool(s);
             return std::vector<Tensor>{values, indices};
           },
           [](const Refs& r) { return ref_max_pool(r[0], r[1]); }},
    OpInfo{"max_pool2d", floating_dtypes(), max_pool_samples,
           [](const Sample& s) {
             RefTensor p = to_ref(s.args[1]);
             Shape stride = param(p, 2) == 0 ? Shape{} : Shape{param(p, 2), param(p, 3)};
             return one(max_pool2d(s.args[0], {param(p, 0), param(p, 1)}, stride,
                                   {param(p, 4), param(p, 5)}, {param(p, 6), param(p, 7)},
                                   param(p, 8) != 0));
           },
           [](const Refs& r) { return Refs{ref_max_pool(r[0], r[1])[0]}; }, 4.0,
           [](DType dt) { return dt; }},
    OpInfo{"avg_pool2d", floating_dtypes(), avg_pool_samples,
           [](const Sample& s) {
             RefTensor p = to_ref(s.args[1]);
             Shape stride = param(p, 2) == 0 ? Shape{} : Shape{param(p, 2), param(p, 3)};
             std::optional<int64_t> divisor;
             if (param(p, 8) != 0) divisor = param(p, 8);
             return one(avg_pool2d(s.args[0], {param(p, 0), param(p, 1)}, stride,
                                   {param(p, 4), param(p, 5)}, param(p, 6) != 0, param(p, 7) != 0,
                                   divisor));
           },
           [](const Refs& r) { return Refs{ref_avg_pool(r[0], r[1])}; }, 4.0,
           [](DType dt) { return dt; }},
});

}  // namespace
}  // namespace ember::testing
