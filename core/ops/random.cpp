#include "core/ops/random.h"

#include <cmath>
#include <limits>

#include "core/mem_overlap.h"
#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "kernels/math/philox.h"

namespace ember {

namespace math = kernels::math;

namespace {
constexpr const char* kRandomOps[] = {"rand",     "randn",   "randint",    "randperm",
                                      "uniform_", "normal_", "bernoulli_", "bernoulli"};
static_assert(sizeof(kRandomOps) / sizeof(kRandomOps[0]) == 8);
const OpFamilyRegistrar registrar("random", kRandomOps);

Generator& generator_for(Generator* gen, Device device, const char* op) {
  if (gen == nullptr) return default_generator(device);
  EMBER_CHECK(gen->device() == device, op, ": the generator is on ", gen->device(),
              " but the tensor is on ", device);
  return *gen;
}

void check_floating(DType dt, const char* op) {
  EMBER_CHECK(is_floating(dt), op, ": expected a floating-point dtype, got ", dtype_name(dt));
}

// The largest finite value of a floating dtype.
double float_max(DType dt) {
  return EMBER_DISPATCH_FLOATING(
      dt, "float_max", [&] { return static_cast<double>(std::numeric_limits<scalar_t>::max()); });
}

// The closed range of integers a dtype holds exactly: [min, max] for integers, +-2^digits for
// floats.
std::pair<double, double> exact_integer_range(DType dt) {
  switch (dt) {
    case kBool:
      return {0.0, 1.0};
    case kUInt8:
      return {0.0, 255.0};
    case kInt8:
      return {-128.0, 127.0};
    case kInt16:
      return {-32768.0, 32767.0};
    case kInt32:
      return {-2147483648.0, 2147483647.0};
    case kInt64:  // every int64 argument fits
      return {static_cast<double>(std::numeric_limits<int64_t>::lowest()),
              static_cast<double>(std::numeric_limits<int64_t>::max())};
    case kFloat16:
      return {-2048.0, 2048.0};
    case kBFloat16:
      return {-256.0, 256.0};
    case kFloat32:
      return {-16777216.0, 16777216.0};
    case kFloat64:
      return {-9007199254740992.0, 9007199254740992.0};
  }
  return {0.0, 0.0};
}

// Runs kernel(out, st) for self: reserves the Philox blocks of numel elements of `words` words
// each (Note [Philox streams]) and fills self, through a contiguous temporary when self is
// strided so that element i is always the i-th element in row-major order.
template <class Kernel>
const Tensor& fill_random(const Tensor& self, int words, Generator* gen, const char* op,
                          const Kernel& kernel) {
  assert_no_internal_overlap(self, op);  // Note [Writes over overlapping memory]
  Generator& g = generator_for(gen, self.device(), op);
  self.bump_version();
  if (self.numel() == 0) return self;
  PhiloxState st = g.reserve(math::philox_blocks(static_cast<uint64_t>(self.numel()), words));
  Tensor out = self.is_contiguous() ? self : empty(self.sizes(), self.options());
  kernel(out, st);
  if (!out.is_same(self)) native::copy_(self, out);
  return self;
}

int uniform_words(DType dt, const char* op) {
  return EMBER_DISPATCH_FLOATING(dt, op, [&] { return math::uniform_words<scalar_t>; });
}

const Tensor& uniform_impl(const Tensor& self, double from, double to, Generator* gen,
                           const char* op) {
  check_floating(self.dtype(), op);
  EMBER_CHECK(std::isfinite(from) && std::isfinite(to), op,
              ": from and to must be finite, got from=", from, " and to=", to);
  EMBER_CHECK(from <= to, op, ": expects to return a [from, to) range, but found from=", from,
              " > to=", to);
  const double max = float_max(self.dtype());
  EMBER_CHECK(from >= -max && to <= max && to - from <= max, op, ": the range [", from, ", ", to,
              ") does not fit dtype ", dtype_name(self.dtype()), " (largest value ", max, ")");
  return fill_random(self, uniform_words(self.dtype(), op), gen, op,
                     [&](const Tensor& out, PhiloxState st) {
                       uniform_stub(out.device().type, out, from, to, st);
                     });
}

const Tensor& normal_impl(const Tensor& self, double mean, double std, Generator* gen,
                          const char* op) {
  check_floating(self.dtype(), op);
  EMBER_CHECK(std::isfinite(mean) && std::isfinite(std), op,
              ": mean and std must be finite, got mean=", mean, " and std=", std);
  EMBER_CHECK(std >= 0.0, op, ": expects std >= 0.0, but found std=", std);
  return fill_random(self, uniform_words(self.dtype(), op), gen, op,
                     [&](const Tensor& out, PhiloxState st) {
                       normal_stub(out.device().type, out, mean, std, st);
                     });
}

TensorOptions like_options(const Tensor& t, const TensorOptions& options) {
  TensorOptions o = t.options();
  if (options.dtype_) o = o.dtype(*options.dtype_);
  if (options.device_ != kCPU) o = o.device(options.device_);
  return o;
}

}  // namespace

// ---- factories ---------------------------------------------------------------------------------
Tensor rand(const Shape& sizes, const TensorOptions& options, Generator* gen) {
  DType dt = options.dtype_or_default();
  check_floating(dt, "rand");
  Tensor t = empty(sizes, options.dtype(dt));
  uniform_impl(t, 0.0, 1.0, gen, "rand");
  return t;
}

Tensor randn(const Shape& sizes, const TensorOptions& options, Generator* gen) {
  DType dt = options.dtype_or_default();
  check_floating(dt, "randn");
  Tensor t = empty(sizes, options.dtype(dt));
  normal_impl(t, 0.0, 1.0, gen, "randn");
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& sizes, const TensorOptions& options,
               Generator* gen) {
  DType dt = options.dtype_ ? *options.dtype_ : kInt64;
  EMBER_CHECK(low < high, "randint: expects low < high, but got low=", low, " and high=", high);
  auto [lo, hi] = exact_integer_range(dt);
  EMBER_CHECK(static_cast<double>(low) >= lo && static_cast<double>(high - 1) <= hi,
              "randint: the range [", low, ", ", high, ") does not fit dtype ", dtype_name(dt),
              " (it holds the integers ", lo, " .. ", hi, ")");
  Tensor t = empty(sizes, options.dtype(dt));
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  fill_random(t, math::randint_words(range), gen, "randint",
              [&](const Tensor& out, PhiloxState st) {
                randint_stub(out.device().type, out, low, range, st);
              });
  return t;
}

Tensor randint(int64_t high, const Shape& sizes, const TensorOptions& options, Generator* gen) {
  return randint(0, high, sizes, options, gen);
}

Tensor randperm(int64_t n, const TensorOptions& options, Generator* gen) {
  DType dt = options.dtype_ ? *options.dtype_ : kInt64;
  EMBER_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  EMBER_CHECK(dt != kBool, "randperm: unsupported dtype bool");
  EMBER_CHECK(n == 0 || static_cast<double>(n - 1) <= exact_integer_range(dt).second,
              "randperm: n=", n, " is too large for dtype ", dtype_name(dt));
  Tensor t = empty({n}, options.dtype(dt));
  fill_random(t, math::kRandpermWords, gen, "randperm", [&](const Tensor& out, PhiloxState st) {
    randperm_stub(out.device().type, out, st);
  });
  return t;
}

Tensor rand_like(const Tensor& t, const TensorOptions& options, Generator* gen) {
  TensorOptions o = like_options(t, options);
  check_floating(*o.dtype_, "rand_like");
  Tensor out = empty(t.sizes(), o);
  uniform_impl(out, 0.0, 1.0, gen, "rand_like");
  return out;
}

Tensor randn_like(const Tensor& t, const TensorOptions& options, Generator* gen) {
  TensorOptions o = like_options(t, options);
  check_floating(*o.dtype_, "randn_like");
  Tensor out = empty(t.sizes(), o);
  normal_impl(out, 0.0, 1.0, gen, "randn_like");
  return out;
}

// ---- in place ----------------------------------------------------------------------------------
const Tensor& native::uniform_(const Tensor& self, double from, double to, Generator* gen) {
  return uniform_impl(self, from, to, gen, "uniform_");
}

const Tensor& native::normal_(const Tensor& self, double mean, double std, Generator* gen) {
  return normal_impl(self, mean, std, gen, "normal_");
}

const Tensor& native::bernoulli_(const Tensor& self, double p, Generator* gen) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "bernoulli_: expects 0 <= p <= 1, but got p=", p);
  return fill_random(self, 1, gen, "bernoulli_", [&](const Tensor& out, PhiloxState st) {
    bernoulli_scalar_stub(out.device().type, out, p, st);
  });
}

Tensor bernoulli(const Tensor& probs, Generator* gen) {
  check_floating(probs.dtype(), "bernoulli");
  Tensor p = native::contiguous(probs);
  Tensor out = empty(probs.sizes(), probs.options());
  fill_random(out, 1, gen, "bernoulli", [&](const Tensor& o, PhiloxState st) {
    bernoulli_tensor_stub(o.device().type, o, p, st);
  });
  return out;
}

}  // namespace ember
