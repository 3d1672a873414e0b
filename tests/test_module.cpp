// nn::Module: registration, the tree walks, modes, conversion, state_dict round trips.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::keys;
using ember::testing::values;

namespace {

struct Leaf : nn::Module {
  explicit Leaf(int64_t n) : Module("Leaf") {
    weight = register_parameter("weight", ones({n}));
    count = register_buffer("count", zeros({1}));
    scratch = register_buffer("scratch", zeros({2}), /*persistent=*/false);
  }
  std::string extra_repr() const override { return "n=" + std::to_string(weight.numel()); }
  Tensor weight, count, scratch;
};

struct Tree : nn::Module {
  Tree() : Module("Tree") {
    bias = register_parameter("bias", zeros({2}));
    left = register_module("left", std::make_shared<Leaf>(3));
    right = register_module("right", std::make_shared<Leaf>(2));
    hidden.push_back(std::make_shared<Leaf>(5));  // a plain vector: not registered
  }
  Tensor bias;
  std::shared_ptr<Leaf> left, right;
  std::vector<std::shared_ptr<Leaf>> hidden;
};

}  // namespace

TEST_CASE("Module registers parameters, buffers and children by dotted name", "[nn]") {
  Tree t;
  CHECK(keys(t.named_parameters()) ==
        std::vector<std::string>{"bias", "left.weight", "right.weight"});
  CHECK(keys(t.named_parameters(/*recurse=*/false)) == std::vector<std::string>{"bias"});
  CHECK(keys(t.named_buffers()) ==
        std::vector<std::string>{"left.count", "left.scratch", "right.count", "right.scratch"});
  CHECK(t.children().size() == 2);
  std::vector<std::string> mods;
  for (auto& m : t.named_modules()) mods.push_back(m.first);
  CHECK(mods == std::vector<std::string>{"", "left", "right"});
  // The std::vector member is invisible: 3 + 2 + 2 elements, not + 5.
  int64_t n = 0;
  for (const Tensor& p : t.parameters()) n += p.numel();
  CHECK(n == 7);
  CHECK(t.left->weight.requires_grad());
  CHECK(!t.left->count.requires_grad());
  CHECK_THROWS_WITH(t.register_parameter("bias", zeros({1})), Contains("already registered"));
  CHECK_THROWS_WITH(t.register_buffer("a.b", zeros({1})), Contains("no '.'"));
}

TEST_CASE("state_dict holds parameters and persistent buffers, round trips", "[nn]") {
  Tree a, b;
  CHECK(keys(a.state_dict()) == std::vector<std::string>{"bias", "left.weight", "left.count",
                                                         "right.weight", "right.count"});
  {
    NoGradGuard no_grad;
    a.left->weight.fill_(3.0);
    a.right->count.fill_(7.0);
  }
  nn::LoadResult r = b.load_state_dict(a.state_dict());
  CHECK(r.missing_keys.empty());
  CHECK(r.unexpected_keys.empty());
  CHECK(values(b.left->weight) == std::vector<double>{3, 3, 3});
  CHECK(values(b.right->count) == std::vector<double>{7});
  CHECK(!b.left->weight.is_alias_of(a.left->weight));  // copied, not shared
}

TEST_CASE("load_state_dict: strict lists missing and unexpected keys, shapes by key", "[nn]") {
  Tree t;
  nn::StateDict d = t.state_dict();
  d.erase(d.begin());  // drop "bias"
  d.emplace_back("extra.weight", ones({1}));
  CHECK_THROWS_WITH(t.load_state_dict(d), Contains("Missing key(s): bias") &&
                                              Contains("Unexpected key(s): extra.weight"));
  nn::LoadResult r = t.load_state_dict(d, /*strict=*/false);
  CHECK(r.missing_keys == std::vector<std::string>{"bias"});
  CHECK(r.unexpected_keys == std::vector<std::string>{"extra.weight"});
  nn::StateDict wrong = t.state_dict();
  wrong[1].second = ones({4});  // left.weight is [3]
  CHECK_THROWS_WITH(t.load_state_dict(wrong),
                    Contains("size mismatch for left.weight: checkpoint [4], model [3]"));
  // A data-parallel checkpoint's "module." prefix comes off with strip_prefix.
  nn::StateDict wrapped = nn::add_prefix(t.state_dict(), "module.");
  CHECK(wrapped[0].first == "module.bias");
  CHECK_NOTHROW(t.load_state_dict(nn::strip_prefix(wrapped, "module.")));
}

TEST_CASE("train/eval, zero_grad, apply, to and printing", "[nn]") {
  Tree t;
  CHECK(t.is_training());
  t.eval();
  CHECK(!t.left->is_training());
  t.train();
  CHECK(t.right->is_training());

  (t.left->weight * 2.0).sum().backward();
  CHECK(t.left->weight.grad().defined());
  t.zero_grad(/*set_to_none=*/false);
  CHECK(values(t.left->weight.grad()) == std::vector<double>{0, 0, 0});
  t.zero_grad();
  CHECK(!t.left->weight.grad().defined());

  int visited = 0;
  t.apply([&](nn::Module&) { ++visited; });
  CHECK(visited == 3);

  Tensor handle = t.left->weight;
  t.to(kFloat64);
  CHECK(handle.dtype() == kFloat64);  // members still see the parameter
  CHECK(t.left->count.dtype() == kFloat64);
  CHECK(handle.requires_grad());
  (handle * 1.0).sum().backward();  // the gradient follows the new dtype
  CHECK(handle.grad().dtype() == kFloat64);

  std::ostringstream os;
  os << t;
  CHECK(os.str() == "Tree(\n  (left): Leaf(n=3)\n  (right): Leaf(n=2)\n)");
}

namespace {
// y = x * scale, one parameter.
struct Scale : nn::Module {
  explicit Scale(double s) : Module("Scale") { scale = register_parameter("scale", full({1}, s)); }
  Tensor forward(const Tensor& x) override { return x * scale; }
  Tensor scale;
};

struct Holder : nn::Module {
  Holder() : Module("Holder") {
    for (int i = 0; i < 3; ++i) plain.push_back(std::make_shared<Scale>(1.0));  // not registered
    list = register_module("list", std::make_shared<nn::ModuleList>());
    for (int i = 0; i < 3; ++i) list->push_back(std::make_shared<Scale>(1.0));  // registered
  }
  std::vector<std::shared_ptr<Scale>> plain;
  std::shared_ptr<nn::ModuleList> list;
};
}  // namespace

TEST_CASE("ModuleList registers its modules, a std::vector of modules does not", "[nn]") {
  Holder h;
  CHECK(keys(h.named_parameters()) ==
        std::vector<std::string>{"list.0.scale", "list.1.scale", "list.2.scale"});
  CHECK(h.list->size() == 3);
  CHECK(h.list->at(-1) == (*h.list)[2]);
  CHECK_THROWS_WITH(h.list->at(3), Contains("out of range"));
}

TEST_CASE("Sequential chains forwards and trains end to end, ModuleDict by name", "[nn]") {
  nn::Sequential seq{std::make_shared<Scale>(2.0), std::make_shared<Scale>(3.0)};
  Tensor x = tensor(std::vector<float>{1, 2}, {2});
  Tensor y = seq(x);
  CHECK(values(y) == std::vector<double>{6, 12});
  y.sum().backward();
  CHECK(values(seq.named_parameters()[0].second.grad()) == std::vector<double>{9});  // 3 * (1+2)
  std::ostringstream os;
  os << seq;
  CHECK(os.str() == "Sequential(\n  (0): Scale()\n  (1): Scale()\n)");

  nn::ModuleDict d;
  d.insert("encoder", std::make_shared<Scale>(1.0));
  d.insert("decoder", std::make_shared<Scale>(1.0));
  CHECK(d.keys() == std::vector<std::string>{"encoder", "decoder"});
  CHECK(d.contains("decoder"));
  CHECK(keys(d.state_dict()) == std::vector<std::string>{"encoder.scale", "decoder.scale"});
  CHECK_THROWS_WITH(d.at("middle"), Contains("no module named \"middle\""));
  CHECK_THROWS_WITH(d.forward(x), Contains("ModuleDict has no forward(Tensor)"));
}
