#include "optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <tuple>
#include <utility>

#include "autograd/grad_mode.h"
#include "core/ops/binary.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/linalg.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"
#include "core/ops/unary.h"
#include "core/ops/view.h"

namespace ember::optim {

namespace {

double to_double(const Tensor& t) { return t.item<double>(); }
double abs_max(const Tensor& t) { return to_double(native::amax(native::abs(t))); }
double dot(const Tensor& a, const Tensor& b) { return to_double(native::dot(a, b)); }

// The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped to the
// bounds (default: between x1 and x2); their midpoint when the cubic has no minimiser.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  double lo = 0.0, hi = 0.0;
  if (bounds)
    std::tie(lo, hi) = *bounds;
  else if (x1 <= x2)
    lo = x1, hi = x2;
  else
    lo = x2, hi = x1;
  const double d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0.0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2.0;
}

// The loss and flat gradient at x + t d.
using Objective = std::function<std::pair<double, Tensor>(double t)>;

struct LineSearchResult {
  double f;
  Tensor g;
  double t;
  int64_t evals;
};

// PyTorch's _strong_wolfe: from the point with loss f, flat gradient g and directional
// derivative gtd along d, finds a step t satisfying the strong Wolfe conditions (sufficient
// decrease c1, curvature c2): a bracketing phase that grows t by cubic extrapolation, then a
// zoom phase that shrinks the bracket by cubic interpolation, at most max_ls evaluations.
LineSearchResult strong_wolfe(const Objective& obj, double t, const Tensor& d, double f,
                              const Tensor& g_in, double gtd, double c1 = 1e-4, double c2 = 0.9,
                              double tolerance_change = 1e-9, int64_t max_ls = 25) {
  const double d_norm = abs_max(d);
  const Tensor g = native::clone(g_in);
  double f_new = 0.0;  // not a structured binding: the lambdas below capture them
  Tensor g_new;
  std::tie(f_new, g_new) = obj(t);
  int64_t evals = 1;
  double gtd_new = dot(g_new, d);

  double t_prev = 0.0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<Tensor> bracket_g;
  while (ls_iter < max_ls) {
    const auto bracket_last_two = [&]() {
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, native::clone(g_new)};
      bracket_gtd = {gtd_prev, gtd_new};
    };
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {  // no sufficient decrease
      bracket_last_two();
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {  // the strong Wolfe conditions hold
      bracket = {t};
      bracket_f = {f_new};
      bracket_g = {g_new};
      done = true;
      break;
    }
    if (gtd_new >= 0.0) {  // the slope turned: a minimum lies in [t_prev, t]
      bracket_last_two();
      break;
    }
    // Extrapolate: the cubic's minimiser within [t + 0.01 (t - t_prev), 10 t].
    const double min_step = t + 0.01 * (t - t_prev);
    const double max_step = t * 10.0;
    const double tmp = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                          std::make_pair(min_step, max_step));
    t_prev = tmp;
    f_prev = f_new;
    g_prev = native::clone(g_new);
    gtd_prev = gtd_new;
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls) {
    bracket = {0.0, t};
    bracket_f = {f, f_new};
    bracket_g = {g, g_new};
  }

  // Zoom: shrink the bracket until the conditions hold or it is too small.
  bool insuf_progress = false;
  size_t low = bracket_f[0] <= bracket_f.back() ? 0 : 1;
  size_t high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1],
                          bracket_gtd[1]);
    // Keep t at least 10% of the bracket away from its ends, or step there when progress
    // stalled twice.
    const double b_max = std::max(bracket[0], bracket[1]);
    const double b_min = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (b_max - b_min);
    if (std::min(b_max - t, t - b_min) < eps) {
      if (insuf_progress || t >= b_max || t <= b_min) {
        t = std::abs(t - b_max) < std::abs(t - b_min) ? b_max - eps : b_min + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;

    if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
      bracket[high] = t;
      bracket_f[high] = f_new;
      bracket_g[high] = native::clone(g_new);
      bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1;
      high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0.0) {
        bracket[high] = bracket[low];
        bracket_f[high] = bracket_f[low];
        bracket_g[high] = bracket_g[low];
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t;
      bracket_f[low] = f_new;
      bracket_g[low] = native::clone(g_new);
      bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], bracket_g[low], bracket[low], evals};
}

bool is_list_key(const std::string& name, const std::string& list, int64_t* index) {
  if (name.size() <= list.size() + 1 || name.compare(0, list.size() + 1, list + ".") != 0)
    return false;
  int64_t i = 0;
  for (size_t k = list.size() + 1; k < name.size(); ++k) {
    if (name[k] < '0' || name[k] > '9' || i > (int64_t{1} << 40)) return false;
    i = i * 10 + (name[k] - '0');
  }
  *index = i;
  return true;
}

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, const LBFGSOptions& options)
    : LBFGS(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

LBFGS::LBFGS(std::vector<ParamGroup> groups, const LBFGSOptions& o)
    : Optimizer("LBFGS",
                {{"lr", o.lr()},
                 {"max_iter", static_cast<double>(o.max_iter())},
                 {"max_eval", static_cast<double>(o.max_eval().value_or(o.max_iter() * 5 / 4))},
                 {"tolerance_grad", o.tolerance_grad()},
                 {"tolerance_change", o.tolerance_change()},
                 {"history_size", static_cast<double>(o.history_size())},
                 {"line_search_fn", o.line_search_fn() == "strong_wolfe" ? 1.0 : 0.0}}) {
  EMBER_CHECK(o.line_search_fn().empty() || o.line_search_fn() == "strong_wolfe",
              "LBFGS: only 'strong_wolfe' is supported as line_search_fn, got '",
              o.line_search_fn(), "'");
  EMBER_CHECK(groups.size() == 1,
              "LBFGS doesn't support per-parameter options (parameter groups), got ", groups.size(),
              " groups");
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void LBFGS::check_options(const GroupOptions& o) const {
  auto positive_integer = [&](const char* key) {
    const double v = o.at(key);
    EMBER_CHECK(v >= 1.0 && v == std::floor(v) && v < 9.0e15, "LBFGS: ", key,
                " must be a positive integer, got ", v);
  };
  EMBER_CHECK(o.at("lr") >= 0.0, "LBFGS: Invalid learning rate: ", o.at("lr"));
  positive_integer("max_iter");
  positive_integer("max_eval");
  positive_integer("history_size");
  EMBER_CHECK(o.at("tolerance_grad") >= 0.0,
              "LBFGS: Invalid tolerance_grad value: ", o.at("tolerance_grad"));
  EMBER_CHECK(o.at("tolerance_change") >= 0.0,
              "LBFGS: Invalid tolerance_change value: ", o.at("tolerance_change"));
  check_flag(o, "line_search_fn");
}

bool LBFGS::state_has_param_shape(const std::string&) const { return false; }

void LBFGS::check_state(const std::string& prefix, const GroupOptions& options, const Tensor& param,
                        const ParamState& state) const {
  if (state.empty()) return;
  EMBER_CHECK(param.is_same(params()[0]), prefix,
              "*: LBFGS keeps its state on parameter 0 only (Note [LBFGS state keys])");
  const int64_t n = numel();
  auto scalar = [&](const std::string& name, bool counter) {
    const Tensor& t = state.at(name);
    EMBER_CHECK(t.numel() == 1 && t.dtype() != kBool, prefix, name,
                " must hold one number, got shape ", t.sizes());
    const double v = t.item<double>();
    if (counter)
      EMBER_CHECK(std::isfinite(v) && v >= 0.0 && v <= 9007199254740992.0 && v == std::floor(v),
                  prefix, name, " must be a non-negative integer of at most 2^53, got ", v);
    else
      EMBER_CHECK(std::isfinite(v), prefix, name, " must be finite, got ", v);
  };
  auto vector = [&](const std::string& name) {
    const Tensor& t = state.at(name);
    EMBER_CHECK(t.is_floating_point() && t.dim() == 1 && t.numel() == n, prefix, name,
                " must be a floating 1-D tensor of the parameters' ", n, " elements, got ",
                dtype_name(t.dtype()), " ", t.sizes());
  };
  int64_t counts[3] = {0, 0, 0};
  const char* lists[3] = {"old_dirs", "old_stps", "ro"};
  for (const auto& [name, t] : state.entries()) {
    int64_t index = 0;
    bool listed = false;
    for (int l = 0; l < 3; ++l) {
      if (is_list_key(name, lists[l], &index)) {
        listed = true;
        ++counts[l];
        if (l < 2)
          vector(name);
        else
          scalar(name, /*counter=*/false);
      }
    }
    if (listed) continue;
    if (name == "func_evals" || name == "n_iter")
      scalar(name, /*counter=*/true);
    else if (name == "t" || name == "H_diag" || name == "prev_loss")
      scalar(name, /*counter=*/false);
    else if (name == "d" || name == "prev_flat_grad")
      vector(name);
    else
      EMBER_ERROR(prefix, name, ": not an LBFGS state entry (Note [LBFGS state keys])");
  }
  EMBER_CHECK(counts[0] == counts[1] && counts[1] == counts[2], prefix,
              "old_dirs, old_stps and ro must have one length, got ", counts[0], ", ", counts[1],
              " and ", counts[2]);
  for (int l = 0; l < 3; ++l)
    for (int64_t i = 0; i < counts[l]; ++i)
      EMBER_CHECK(state.has(std::string(lists[l]) + "." + std::to_string(i)), prefix, lists[l], ".",
                  i, " is missing (the list keys are 0 .. ", counts[l] - 1, ")");
  EMBER_CHECK(counts[0] <= static_cast<int64_t>(options.at("history_size")), prefix,
              "old_dirs has ", counts[0], " entries, more than history_size ",
              options.at("history_size"));
  const bool has_d = state.has("d");
  for (const char* name : {"t", "H_diag", "prev_flat_grad", "prev_loss"})
    EMBER_CHECK(state.has(name) == has_d, prefix, name,
                has_d ? " is missing (d is present)" : " is present without d");
  EMBER_CHECK(counts[0] == 0 || has_d, prefix, "old_dirs is present without d");
  for (const char* name : {"func_evals", "n_iter"})
    EMBER_CHECK(state.has(name), prefix, name, " is missing");
  EMBER_CHECK(!has_d || state.at("n_iter").item<double>() >= 1.0, prefix,
              "n_iter must be at least 1 when d is present");
}

void LBFGS::update(const ParamGroup&, const Tensor&, const Tensor&, ParamState&) {
  EMBER_INTERNAL_ASSERT(false, "LBFGS::update is not used: step(closure) updates all at once");
}

const std::vector<Tensor>& LBFGS::params() const { return param_groups()[0].params; }

int64_t LBFGS::numel() const {
  int64_t n = 0;
  for (const Tensor& p : params()) n += p.numel();
  return n;
}

Tensor LBFGS::gather_flat_grad() const {
  std::vector<Tensor> views;
  for (size_t k = 0; k < params().size(); ++k) {
    const Tensor& p = params()[k];
    const Tensor g = p.grad();
    if (!g.defined()) {
      views.push_back(zeros({p.numel()}, TensorOptions().dtype(p.dtype()).device(p.device())));
      continue;
    }
    EMBER_CHECK(g.sizes() == p.sizes() && g.dtype() == p.dtype() && g.device() == p.device(),
                "LBFGS: the gradient of parameter ", k, " (", dtype_name(g.dtype()), " ", g.sizes(),
                ") does not match the parameter (", dtype_name(p.dtype()), " ", p.sizes(), ")");
    views.push_back(native::reshape(g.detach(), {-1}));
  }
  return native::cat(views, 0);
}

void LBFGS::add_grad(double step_size, const Tensor& update) const {
  int64_t offset = 0;
  for (const Tensor& p : params()) {
    const int64_t n = p.numel();
    native::add_(p, native::view(native::narrow(update, 0, offset, n), p.sizes()), step_size);
    offset += n;
  }
}

std::vector<Tensor> LBFGS::clone_params() const {
  std::vector<Tensor> out;
  for (const Tensor& p : params()) out.push_back(native::clone(p));
  return out;
}

void LBFGS::set_params(const std::vector<Tensor>& values) const {
  for (size_t k = 0; k < params().size(); ++k) native::copy_(params()[k], values[k]);
}

void LBFGS::step() {
  EMBER_ERROR("LBFGS: step() needs a closure that re-evaluates the loss: call step(closure)");
}

Tensor LBFGS::step(const std::function<Tensor()>& closure) {
  EMBER_CHECK(closure, "LBFGS: step(closure) got an empty closure");
  EMBER_CHECK(param_groups().size() == 1,
              "LBFGS doesn't support per-parameter options (parameter groups), it has ",
              param_groups().size());
  const Tensor& first = params()[0];
  for (size_t k = 1; k < params().size(); ++k)
    EMBER_CHECK(params()[k].dtype() == first.dtype() && params()[k].device() == first.device(),
                "LBFGS: all parameters must have one dtype and device; parameter ", k, " is ",
                dtype_name(params()[k].dtype()), " on ", params()[k].device().str(),
                ", parameter 0 ", dtype_name(first.dtype()), " on ", first.device().str());
  autograd::NoGradGuard no_grad;
  auto evaluate = [&]() {
    Tensor loss;
    {
      autograd::EnableGradGuard enable_grad;
      loss = closure();
    }
    EMBER_CHECK(loss.defined() && loss.numel() == 1,
                "LBFGS: the closure must return a one-element loss, got ",
                loss.defined() ? loss.sizes() : Shape{});
    return loss;
  };

  const GroupOptions& o = param_groups()[0].options;
  const double lr = o.at("lr");
  const int64_t max_iter = static_cast<int64_t>(o.at("max_iter"));
  const int64_t max_eval = static_cast<int64_t>(o.at("max_eval"));
  const double tolerance_grad = o.at("tolerance_grad");
  const double tolerance_change = o.at("tolerance_change");
  const size_t history_size = static_cast<size_t>(o.at("history_size"));
  const bool strong_wolfe_search = o.at("line_search_fn") != 0.0;

  // Note [LBFGS state keys]: read the state of parameter 0.
  ParamState& st = state(first);
  const auto as_vector = [&](const Tensor& t) { return t.to(first.device(), first.dtype()); };
  int64_t func_evals = st.has("func_evals") ? st.at("func_evals").item<int64_t>() : 0;
  int64_t state_n_iter = st.has("n_iter") ? st.at("n_iter").item<int64_t>() : 0;
  const auto save_counters = [&]() {
    st["func_evals"] = scalar_tensor(func_evals, kInt64);
    st["n_iter"] = scalar_tensor(state_n_iter, kInt64);
  };

  Tensor orig_loss = evaluate();  // not const: returned by move
  double loss = orig_loss.item<double>();
  int64_t current_evals = 1;
  ++func_evals;
  Tensor flat_grad = gather_flat_grad();
  bool opt_cond = abs_max(flat_grad) <= tolerance_grad;
  if (opt_cond) {  // already optimal: the rest of the state stays as it was
    save_counters();
    return orig_loss;
  }

  Tensor d, prev_flat_grad;
  double t = 0.0, H_diag = 1.0, prev_loss = 0.0;
  std::deque<Tensor> old_dirs, old_stps;
  std::deque<double> ro;
  if (st.has("d")) {
    d = as_vector(st.at("d"));
    t = st.at("t").item<double>();
    H_diag = st.at("H_diag").item<double>();
    prev_flat_grad = as_vector(st.at("prev_flat_grad"));
    prev_loss = st.at("prev_loss").item<double>();
    for (size_t i = 0; st.has("old_dirs." + std::to_string(i)); ++i) {
      old_dirs.push_back(as_vector(st.at("old_dirs." + std::to_string(i))));
      old_stps.push_back(as_vector(st.at("old_stps." + std::to_string(i))));
      ro.push_back(st.at("ro." + std::to_string(i)).item<double>());
    }
  }

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    ++n_iter;
    ++state_n_iter;
    if (state_n_iter == 1) {
      d = native::neg(flat_grad);
      old_dirs.clear();
      old_stps.clear();
      ro.clear();
      H_diag = 1.0;
    } else {
      // Update the history with s = t d and y = the change of the gradient.
      const Tensor y = native::sub(flat_grad, prev_flat_grad);
      const Tensor s = native::mul(d, t);
      const double ys = dot(y, s);
      if (ys > 1e-10) {
        if (old_dirs.size() == history_size) {
          old_dirs.pop_front();
          old_stps.pop_front();
          ro.pop_front();
        }
        old_dirs.push_back(y);
        old_stps.push_back(s);
        ro.push_back(1.0 / ys);
        H_diag = ys / dot(y, y);
      }
      // Two-loop recursion: d = -H g.
      const size_t num_old = old_dirs.size();
      std::vector<double> al(num_old);
      const Tensor q = native::neg(flat_grad);
      for (size_t i = num_old; i-- > 0;) {
        al[i] = dot(old_stps[i], q) * ro[i];
        native::add_(q, old_dirs[i], -al[i]);
      }
      d = native::mul(q, H_diag);
      for (size_t i = 0; i < num_old; ++i) {
        const double be_i = dot(old_dirs[i], d) * ro[i];
        native::add_(d, old_stps[i], al[i] - be_i);
      }
    }
    prev_flat_grad = native::clone(flat_grad);
    prev_loss = loss;

    t = state_n_iter == 1 ? std::min(1.0, 1.0 / to_double(native::sum(native::abs(flat_grad)))) * lr
                          : lr;
    const double gtd = dot(flat_grad, d);
    if (gtd > -tolerance_change) break;  // not a descent direction

    int64_t ls_func_evals = 0;
    if (strong_wolfe_search) {
      const std::vector<Tensor> x_init = clone_params();
      const Objective obj = [&](double step) {
        add_grad(step, d);
        const double f = evaluate().item<double>();
        Tensor g = gather_flat_grad();
        set_params(x_init);
        return std::make_pair(f, g);
      };
      LineSearchResult r = strong_wolfe(obj, t, d, loss, flat_grad, gtd);
      loss = r.f;
      flat_grad = r.g;
      t = r.t;
      ls_func_evals = r.evals;
      add_grad(t, d);
      opt_cond = abs_max(flat_grad) <= tolerance_grad;
    } else {
      add_grad(t, d);
      if (n_iter != max_iter) {
        loss = evaluate().item<double>();
        flat_grad = gather_flat_grad();
        opt_cond = abs_max(flat_grad) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    func_evals += ls_func_evals;

    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;
    if (abs_max(native::mul(d, t)) <= tolerance_change) break;  // lack of progress
    if (std::abs(loss - prev_loss) < tolerance_change) break;
  }

  // Note [LBFGS state keys]: write the state back, lists as numbered keys.
  st.clear();
  save_counters();
  st["d"] = d;
  st["t"] = scalar_tensor(t, kFloat64);
  for (size_t i = 0; i < old_dirs.size(); ++i) {
    st["old_dirs." + std::to_string(i)] = old_dirs[i];
    st["old_stps." + std::to_string(i)] = old_stps[i];
    st["ro." + std::to_string(i)] = scalar_tensor(ro[i], kFloat64);
  }
  st["H_diag"] = scalar_tensor(H_diag, kFloat64);
  st["prev_flat_grad"] = prev_flat_grad;
  st["prev_loss"] = scalar_tensor(prev_loss, kFloat64);
  return orig_loss;
}

}  // namespace ember::optim
