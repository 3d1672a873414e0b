// Op-table entries for views (core/ops/view.h), copies (core/ops/copy.h) and factories
// (core/ops/factory.h). References rebuild each result element by element from index maps.

#include <cmath>

#include "op_table.h"

namespace ember::testing {
namespace {

// out[idx] = in[map(idx)] for every index of `shape`.
RefTensor gather_ref(const RefTensor& in, const Shape& shape,
                     const std::function<Shape(const Shape&)>& map) {
  RefTensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.data[i] = in.at(map(unravel(i, shape)));
  return out;
}

RefTensor ref_permute(const RefTensor& in, const Shape& dims) {
  Shape shape(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) shape[i] = in.shape[dims[i]];
  return gather_ref(in, shape, [&](const Shape& idx) {
    Shape src(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) src[dims[i]] = idx[i];
    return src;
  });
}

RefTensor ref_reshape(const RefTensor& in, const Shape& shape) { return RefTensor(shape, in.data); }

std::vector<Sample> view_samples(DType dt) {
  return {{{random_tensor({2, 3, 4}, dt)}, "contiguous [2,3,4]"},
          {{noncontiguous(random_tensor({2, 3, 4}, dt))}, "non-contiguous [2,3,4]"}};
}

std::vector<Sample> matrix_samples(DType dt) {
  return {{{random_tensor({3, 4}, dt)}, "[3,4]"},
          {{noncontiguous(random_tensor({4, 3}, dt))}, "non-contiguous [4,3]"},
          {{random_tensor({1, 5}, dt)}, "[1,5]"},
          {{random_tensor({0, 2}, dt)}, "[0,2]"}};
}

const OpTableRegistrar reg({
    OpInfo{"view", all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{random_tensor({2, 3, 4}, dt)}, "[2,3,4]"},
                                        {{random_tensor({0, 4}, dt)}, "[0,4]"}};
           },
           [](const Sample& s) {
             return one(s.args[0].view({-1, 2}));
           },
           [](const Refs& r) {
             return Refs{ref_reshape(r[0], {r[0].numel() / 2, 2})};
           }},
    OpInfo{"reshape", all_dtypes(), view_samples,
           [](const Sample& s) {
             return one(s.args[0].reshape({4, -1}));
           },
           [](const Refs& r) {
             return Refs{ref_reshape(r[0], {4, 6})};
           }},
    OpInfo{"permute", all_dtypes(), view_samples,
           [](const Sample& s) {
             return one(s.args[0].permute({2, 0, -2}));
           },
           [](const Refs& r) {
             return Refs{ref_permute(r[0], {2, 0, 1})};
           }},
    OpInfo{"transpose", all_dtypes(), view_samples,
           [](const Sample& s) { return one(s.args[0].transpose(0, -1)); },
           [](const Refs& r) {
             return Refs{ref_permute(r[0], {2, 1, 0})};
           }},
    OpInfo{"t", all_dtypes(), matrix_samples, [](const Sample& s) { return one(s.args[0].t()); },
           [](const Refs& r) {
             return Refs{ref_permute(r[0], {1, 0})};
           }},
    OpInfo{"squeeze", all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{random_tensor({1, 3, 1, 2}, dt)}, "[1,3,1,2]"}};
           },
           [](const Sample& s) {
             return std::vector<Tensor>{s.args[0].squeeze(), s.args[0].squeeze(2),
                                        s.args[0].squeeze(1)};
           },
           [](const Refs& r) {
             return Refs{ref_reshape(r[0], {3, 2}), ref_reshape(r[0], {1, 3, 2}),
                         ref_reshape(r[0], {1, 3, 1, 2})};
           }},
    OpInfo{"unsqueeze", all_dtypes(), view_samples,
           [](const Sample& s) {
             return std::vector<Tensor>{s.args[0].unsqueeze(1), s.args[0].unsqueeze(-1)};
           },
           [](const Refs& r) {
             return Refs{ref_reshape(r[0], {2, 1, 3, 4}), ref_reshape(r[0], {2, 3, 4, 1})};
           }},
    OpInfo{
        "expand", all_dtypes(),
        [](DType dt) {
          return std::vector<Sample>{{{random_tensor({3, 1}, dt)}, "[3,1]"}};
        },
        [](const Sample& s) {
          return one(s.args[0].expand({2, -1, 4}));
        },
        [](const Refs& r) {
          return Refs{gather_ref(r[0], {2, 3, 4}, [](const Shape& i) { return Shape{i[1], 0}; })};
        }},
    OpInfo{"flatten", all_dtypes(), view_samples,
           [](const Sample& s) {
             return std::vector<Tensor>{s.args[0].flatten(), s.args[0].flatten(1)};
           },
           [](const Refs& r) {
             return Refs{ref_reshape(r[0], {24}), ref_reshape(r[0], {2, 12})};
           }},
    OpInfo{"unflatten", all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{random_tensor({2, 12}, dt)}, "[2,12]"}};
           },
           [](const Sample& s) {
             return one(s.args[0].unflatten(1, {3, -1}));
           },
           [](const Refs& r) {
             return Refs{ref_reshape(r[0], {2, 3, 4})};
           }},
    OpInfo{"narrow", all_dtypes(), view_samples,
           [](const Sample& s) { return one(s.args[0].narrow(1, 1, 2)); },
           [](const Refs& r) {
             return Refs{gather_ref(r[0], {2, 2, 4}, [](const Shape& i) {
               return Shape{i[0], i[1] + 1, i[2]};
             })};
           }},
    OpInfo{"slice", all_dtypes(), view_samples,
           [](const Sample& s) {
             return std::vector<Tensor>{s.args[0].slice(2, -3, std::nullopt, 2),
                                        s.args[0].slice(0, 5, 9)};
           },
           [](const Refs& r) {
             return Refs{gather_ref(r[0], {2, 3, 2},
                                    [](const Shape& i) {
                                      return Shape{i[0], i[1], 1 + 2 * i[2]};
                                    }),
                         RefTensor(Shape{0, 3, 4})};
           }},
    OpInfo{"select", all_dtypes(), view_samples,
           [](const Sample& s) {
             return std::vector<Tensor>{s.args[0].select(1, -1), s.args[0][1]};
           },
           [](const Refs& r) {
             return Refs{gather_ref(r[0], {2, 4},
                                    [](const Shape& i) {
                                      return Shape{i[0], 2, i[1]};
                                    }),
                         gather_ref(r[0], {3, 4}, [](const Shape& i) {
                           return Shape{1, i[0], i[1]};
                         })};
           }},
    OpInfo{"unfold", all_dtypes(), view_samples,
           [](const Sample& s) { return one(s.args[0].unfold(2, 2, 1)); },
           [](const Refs& r) {
             return Refs{gather_ref(r[0], {2, 3, 3, 2}, [](const Shape& i) {
               return Shape{i[0], i[1], i[2] + i[3]};
             })};
           }},
    OpInfo{"diagonal", all_dtypes(), matrix_samples,
           [](const Sample& s) {
             return std::vector<Tensor>{s.args[0].diagonal(), s.args[0].diagonal(1),
                                        s.args[0].diagonal(-1)};
           },
           [](const Refs& r) {
             Refs out;
             for (int64_t off : {0, 1, -1}) {
               int64_t rows = r[0].shape[0], cols = r[0].shape[1];
               int64_t len = off >= 0 ? std::min(rows, cols - off) : std::min(rows + off, cols);
               len = std::max<int64_t>(len, 0);
               out.push_back(gather_ref(r[0], {len}, [off](const Shape& i) {
                 return off >= 0 ? Shape{i[0], i[0] + off} : Shape{i[0] - off, i[0]};
               }));
             }
             return out;
           }},
    OpInfo{"as_strided", all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{random_tensor({12}, dt)}, "[12]"}};
           },
           [](const Sample& s) {
             return one(s.args[0].as_strided({3, 3}, {3, 1}, 1));
           },
           [](const Refs& r) {
             return Refs{gather_ref(r[0], {3, 3},
                                    [](const Shape& i) { return Shape{1 + 3 * i[0] + i[1]}; })};
           }},
    // ---- copies ----
    OpInfo{"contiguous", all_dtypes(), view_samples,
           [](const Sample& s) {
             Tensor c = s.args[0].contiguous();
             EMBER_CHECK(c.is_contiguous(), "contiguous() returned a non-contiguous tensor");
             return one(c);
           },
           [](const Refs& r) { return Refs{r[0]}; }},
    OpInfo{"clone", all_dtypes(), [](DType dt) { return unary_samples(dt); },
           [](const Sample& s) {
             Tensor c = s.args[0].clone();
             EMBER_CHECK(c.numel() == 0 || !c.is_alias_of(s.args[0]), "clone shares storage");
             return one(c);
           },
           [](const Refs& r) { return Refs{r[0]}; }},
    OpInfo{"copy_", all_dtypes(), [](DType dt) { return unary_samples(dt, 0.0, 100.0); },
           [](const Sample& s) {
             // Into float64 and back to the sample's dtype through a broadcast source.
             Tensor wide = empty(s.args[0].sizes(), s.args[0].options().dtype(kFloat64));
             wide.copy_(s.args[0]);
             Tensor back = empty(s.args[0].sizes(), s.args[0].options());
             back.copy_(wide);
             return std::vector<Tensor>{wide, back};
           },
           [](const Refs& r) {
             return Refs{r[0], r[0]};
           }},
    OpInfo{"to", all_dtypes(), [](DType dt) { return unary_samples(dt, 0.0, 100.0); },
           [](const Sample& s) {
             // Every conversion from this dtype to float64 and int64 is exact on these values
             // (integers in [0, 100], rounded toward zero for int64).
             return std::vector<Tensor>{s.args[0].to(kFloat64), s.args[0].to(kInt64)};
           },
           [](const Refs& r) {
             return Refs{r[0], ref_unary(r[0], [](double v) { return std::trunc(v); })};
           }},
    OpInfo{"fill_", all_dtypes(), [](DType dt) { return unary_samples(dt); },
           [](const Sample& s) {
             Tensor c = s.args[0].clone();
             c.fill_(1);
             return one(c);
           },
           [](const Refs& r) { return Refs{RefTensor(r[0].shape, 1.0)}; }},
    OpInfo{"zero_", all_dtypes(), [](DType dt) { return unary_samples(dt); },
           [](const Sample& s) {
             Tensor c = noncontiguous(s.args[0].clone());
             c.zero_();
             return one(c);
           },
           [](const Refs& r) { return Refs{RefTensor(r[0].shape, 0.0)}; }},
    // ---- factories (no inputs: the sample only carries the dtype in a 0-dim tensor; nothing to
    // differentiate, so gradcheck skips them) ----
    OpInfo{"empty",
           all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
           },
           [](const Sample& s) {
             return one(empty({2, 0, 3}, s.args[0].options()));
           },
           [](const Refs&) {
             return Refs{RefTensor(Shape{2, 0, 3})};
           },
           4.0,
           {},
           GradSupport::None},
    OpInfo{"zeros",
           all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
           },
           [](const Sample& s) {
             return one(zeros({2, 3}, s.args[0].options()));
           },
           [](const Refs&) {
             return Refs{RefTensor(Shape{2, 3}, 0.0)};
           },
           4.0,
           {},
           GradSupport::None},
    OpInfo{"ones",
           all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
           },
           [](const Sample& s) { return one(ones_like(zeros({4}, s.args[0].options()))); },
           [](const Refs&) { return Refs{RefTensor(Shape{4}, 1.0)}; },
           4.0,
           {},
           GradSupport::None},
    OpInfo{"full",
           all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
           },
           [](const Sample& s) { return one(full({3}, 1, s.args[0].options())); },
           [](const Refs&) { return Refs{RefTensor(Shape{3}, 1.0)}; },
           4.0,
           {},
           GradSupport::None},
    OpInfo{"arange",
           numeric_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
           },
           [](const Sample& s) {
             TensorOptions o = s.args[0].options();
             return std::vector<Tensor>{arange(5, o), arange(2, 11, 3, o), arange(10, 0, -4, o)};
           },
           [](const Refs&) {
             return Refs{RefTensor({5}, {0, 1, 2, 3, 4}), RefTensor({3}, {2, 5, 8}),
                         RefTensor({3}, {10, 6, 2})};
           },
           4.0,
           {},
           GradSupport::None},
    OpInfo{"linspace",
           {kFloat32, kFloat64},
           [](DType dt) {
             return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
           },
           [](const Sample& s) {
             TensorOptions o = s.args[0].options();
             return std::vector<Tensor>{linspace(-1, 1, 5, o), linspace(3, 3, 1, o),
                                        linspace(0, 1, 0, o)};
           },
           [](const Refs&) {
             return Refs{RefTensor({5}, {-1, -0.5, 0, 0.5, 1}), RefTensor({1}, {3}),
                         RefTensor(Shape{0})};
           },
           4.0,
           {},
           GradSupport::None},
    OpInfo{"eye",
           all_dtypes(),
           [](DType dt) {
             return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
           },
           [](const Sample& s) { return one(eye(2, 3, s.args[0].options())); },
           [](const Refs&) {
             return Refs{RefTensor({2, 3}, {1, 0, 0, 0, 1, 0})};
           },
           4.0,
           {},
           GradSupport::None},
    OpInfo{"tensor",
           {kFloat64},
           [](DType dt) {
             return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
           },
           [](const Sample& s) {
             // Made on the host from C++ values, then moved to the sample's device.
             const Device d = s.args[0].device();
             return std::vector<Tensor>{tensor<double>({1.5, -2, 3}).to(d),
                                        tensor(std::vector<int32_t>{1, 2, 3, 4}, {2, 2}).to(d),
                                        tensor({true, false}).to(d)};
           },
           [](const Refs&) {
             return Refs{RefTensor({3}, {1.5, -2, 3}), RefTensor({2, 2}, {1, 2, 3, 4}),
                         RefTensor({2}, {1, 0})};
           },
           4.0,
           {},
           GradSupport::None},
    OpInfo{
        "from_blob",
        {kFloat32},
        [](DType dt) {
          return std::vector<Sample>{{{zeros({}, dt)}, "dtype carrier"}};
        },
        [](const Sample& s) {
          static float data[6] = {1, 2, 3, 4, 5, 6};
          const Device d = s.args[0].device();  // host memory, copied to the sample's device
          return std::vector<Tensor>{from_blob(data, {2, 3}, kFloat32).to(d).clone(),
                                     from_blob(data, {3, 2}, kFloat32, nullptr, {1, 3}).to(d)};
        },
        [](const Refs&) {
          return Refs{RefTensor({2, 3}, {1, 2, 3, 4, 5, 6}), RefTensor({3, 2}, {1, 4, 2, 5, 3, 6})};
        },
        4.0,
        {},
        GradSupport::None},
});

}  // namespace
}  // namespace ember::testing
