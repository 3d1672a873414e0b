// Op-table entries for the binary element-wise family (core/ops/binary.h).

#include "op_table.h"

namespace ember::testing {
namespace {

std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

// Keep integer results in range for uint8 (no wrap-around in the reference).
std::vector<Sample> small_binary(DType dt) { return binary_samples(dt, 0.0, 5.0, 0.0, 5.0); }

const OpTableRegistrar reg({
    OpInfo{"add", numeric_dtypes(), small_binary,
           [](const Sample& s) { return one(add(s.args[0], s.args[1], 2)); },
           [](const std::vector<RefTensor>& r) {
             return std::vector<RefTensor>{
                 ref_binary(r[0], r[1], [](double a, double b) { return a + 2 * b; })};
           }},
    OpInfo{"sub", {kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
           [](DType dt) { return binary_samples(dt); },
           [](const Sample& s) { return one(sub(s.args[0], s.args[1])); },
           [](const std::vector<RefTensor>& r) {
             return std::vector<RefTensor>{
                 ref_binary(r[0], r[1], [](double a, double b) { return a - b; })};
           }},
    OpInfo{"mul", all_dtypes(), small_binary,
           [](const Sample& s) { return one(s.args[0] * s.args[1]); },
           [](const std::vector<RefTensor>& r) {
             return std::vector<RefTensor>{
                 ref_binary(r[0], r[1], [](double a, double b) { return a * b; })};
           }},
});

}  // namespace
}  // namespace ember::testing
