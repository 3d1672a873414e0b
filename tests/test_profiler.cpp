// The profiler (core/profiler.h): what it records and how it nests, self times, memory charged
// to ranges, key_averages and the table, the Chrome trace, the schedule, threads, ranges cut by
// stop(), and CUDA kernels timed on the (simulated) device.

#include <ember/ember.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;
using profiler::Category;
using profiler::FunctionEvent;

namespace {

// The events of `r` named `name` (and of `category`).
std::vector<size_t> find(const profiler::Result& r, const std::string& name, Category category) {
  std::vector<size_t> found;
  for (size_t i = 0; i < r.events().size(); ++i)
    if (r.events()[i].name == name && r.events()[i].category == category) found.push_back(i);
  return found;
}

bool is_range(Category c) { return c != Category::memory && c != Category::mark; }

// Every range's self time is its duration minus its children's, and children lie inside their
// parent on the parent's thread.
void check_tree(const profiler::Result& r) {
  const auto& ev = r.events();
  std::vector<double> children(ev.size(), 0.0);
  for (size_t i = 0; i < ev.size(); ++i) {
    const FunctionEvent& e = ev[i];
    if (e.parent < 0) continue;
    REQUIRE(static_cast<size_t>(e.parent) < i);
    const FunctionEvent& p = ev[static_cast<size_t>(e.parent)];
    CHECK(e.depth == p.depth + 1);
    if (e.category == Category::device) continue;  // on the device's clock
    CHECK(e.thread == p.thread);
    CHECK(e.start_us >= p.start_us);
    CHECK(e.start_us + e.duration_us <= p.start_us + p.duration_us + 1e-3);
    if (is_range(e.category)) children[static_cast<size_t>(e.parent)] += e.duration_us;
  }
  for (size_t i = 0; i < ev.size(); ++i) {
    if (!is_range(ev[i].category) || ev[i].category == Category::device) continue;
    CHECK(ev[i].self_us == Approx(ev[i].duration_us - children[i]).margin(1e-6));
    CHECK(ev[i].self_us >= -1e-6);
  }
}

}  // namespace

TEST_CASE("profiler: ops, their kernels and their backward nodes nest, and self times add up",
          "[profiler]") {
  manual_seed(3);
  Tensor x = randn({8, 16}).requires_grad_(), w = randn({4, 16}).requires_grad_();
  Tensor b = randn({4}).requires_grad_();
  profiler::Profiler prof;
  prof.start();
  Tensor loss = linear(x, w, b).relu().sum();
  loss.backward();
  {
    autograd::NoGradGuard no_grad;
    Tensor z = x * 2.0;
  }
  profiler::Result r = prof.stop();
  check_tree(r);

  const auto& ev = r.events();
  REQUIRE(find(r, "linear", Category::op).size() == 1);
  REQUIRE(find(r, "relu", Category::op).size() == 1);
  REQUIRE(find(r, "sum", Category::op).size() >= 1);
  // Each recorded forward op has its backward node, linked by the sequence number.
  for (const char* node : {"LinearBackward", "ReluBackward", "SumBackward"}) {
    const auto back = find(r, node, Category::backward);
    INFO(node);
    REQUIRE(back.size() == 1);
    const int64_t seq = ev[back[0]].sequence_nr;
    CHECK(seq >= 0);
    bool linked = false;
    for (const FunctionEvent& e : ev)
      linked = linked || (e.category == Category::op && e.sequence_nr == seq &&
                          e.name == forward_op_name(node));
    CHECK(linked);
  }
  // The kernels run inside their ops; the backward formulas' ops inside their nodes.
  bool kernel_in_op = false;
  for (size_t k : find(r, "cpu::sum", Category::kernel)) {
    const int64_t p = ev[k].parent;
    kernel_in_op = kernel_in_op || (p >= 0 && ev[static_cast<size_t>(p)].name == "sum");
  }
  CHECK(kernel_in_op);
  bool op_in_backward = false;
  for (const FunctionEvent& e : ev)
    if (e.category == Category::op && e.parent >= 0)
      op_in_backward =
          op_in_backward || ev[static_cast<size_t>(e.parent)].category == Category::backward;
  CHECK(op_in_backward);
  // Under no_grad the op is recorded, with no backward node to link to.
  const auto mul = find(r, "mul", Category::op);
  REQUIRE(!mul.empty());
  CHECK(ev[mul.back()].sequence_nr == -1);
  CHECK(r.num_threads() >= 1);
  CHECK(r.wall_us() > 0);
}

TEST_CASE("profiler: a module's forward is a range holding its ops", "[profiler]") {
  manual_seed(4);
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(6, 5), std::make_shared<nn::ReLU>()});
  Tensor x = randn({3, 6});
  profiler::Profiler prof;
  prof.start();
  Tensor y = (*net)(x);
  profiler::Result r = prof.stop();
  check_tree(r);
  const auto seq = find(r, "nn.Sequential", Category::module);
  const auto lin = find(r, "nn.Linear", Category::module);
  const auto relu = find(r, "nn.ReLU", Category::module);
  REQUIRE(seq.size() == 1);
  REQUIRE(lin.size() == 1);
  REQUIRE(relu.size() == 1);
  CHECK(r.events()[lin[0]].parent == static_cast<int64_t>(seq[0]));
  CHECK(r.events()[relu[0]].parent == static_cast<int64_t>(seq[0]));
  const auto linear = find(r, "linear", Category::op);
  REQUIRE(linear.size() == 1);
  CHECK(r.events()[linear[0]].parent == static_cast<int64_t>(lin[0]));
  CHECK_THAT(r.table(), Contains("module"));
  // The tree: each range indented under its parent.
  const std::string tree = r.tree();
  CHECK_THAT(tree, Contains("thread ") && Contains("\n  nn.Sequential  [module] ") &&
                       Contains("\n    nn.Linear  [module] ") && Contains("\n      linear  [op] "));
  const std::string shallow = r.tree(0, 1);
  CHECK_THAT(shallow, Contains("nn.Linear") && !Contains("    linear"));
  const std::string short_tree = r.tree(2);
  CHECK_THAT(short_tree, Contains("more ranges)"));
}

TEST_CASE("profiler: a range's self time excludes its children", "[profiler]") {
  using namespace std::chrono_literals;
  profiler::Profiler prof;
  prof.start();
  {
    profiler::RecordFunction outer("outer");
    std::this_thread::sleep_for(4ms);
    {
      profiler::RecordFunction inner("inner");
      std::this_thread::sleep_for(6ms);
    }
  }
  profiler::Result r = prof.stop();
  check_tree(r);
  const auto outer = find(r, "outer", Category::user), inner = find(r, "inner", Category::user);
  REQUIRE(outer.size() == 1);
  REQUIRE(inner.size() == 1);
  const FunctionEvent& o = r.events()[outer[0]];
  const FunctionEvent& i = r.events()[inner[0]];
  CHECK(i.parent == static_cast<int64_t>(outer[0]));
  CHECK(o.duration_us >= 10000);
  CHECK(i.duration_us >= 6000);
  CHECK(o.self_us >= 4000);
  CHECK(o.self_us < o.duration_us - 5000);  // the inner range's 6 ms are not its own
}

TEST_CASE("profiler: key_averages counts every call, by shape when asked, and the table shows it",
          "[profiler]") {
  Tensor a = ones({3}), b = ones({3}), c = ones({4, 4}), d = ones({4, 4});
  profiler::ProfilerOptions opt;
  opt.record_shapes = true;
  profiler::Profiler prof(opt);
  prof.start();
  for (int i = 0; i < 5; ++i) (void)(a + b);
  for (int i = 0; i < 2; ++i) (void)(c + d);
  profiler::Result r = prof.stop();

  auto rows = r.key_averages();
  int64_t adds = 0;
  for (const auto& row : rows)
    if (row.name == "add" && row.category == Category::op) adds = row.count;
  CHECK(adds == 7);
  std::map<std::string, int64_t> by_shape;
  for (const auto& row : r.key_averages(/*group_by_shapes=*/true))
    if (row.name == "add" && row.category == Category::op) by_shape[row.shapes] = row.count;
  CHECK(by_shape == std::map<std::string, int64_t>{{"[[3], [3]]", 5}, {"[[4, 4], [4, 4]]", 2}});
  // Sorted by the key asked for.
  rows = r.key_averages(false, profiler::SortBy::count);
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i - 1].count >= rows[i].count);
  rows = r.key_averages(false, profiler::SortBy::total_time);
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i - 1].total_us >= rows[i].total_us);

  const std::string table = r.table(profiler::SortBy::count, 2, true);
  CHECK_THAT(table, Contains("Name") && Contains("Self %") && Contains("Calls") &&
                        Contains("Input shapes") && Contains("[[3], [3]]") &&
                        Contains("Self host time total") && Contains("more rows"));
  // Without record_shapes nothing is formatted.
  profiler::Profiler plain;
  plain.start();
  (void)(a + b);
  const profiler::Result unshaped = plain.stop();
  for (const FunctionEvent& e : unshaped.events()) CHECK(e.shapes.empty());
}

TEST_CASE("profiler: nothing is recorded when none runs, and only one records at a time",
          "[profiler]") {
  Tensor a = ones({2});
  (void)(a * a);  // before any profiler: not in the next one's result
  profiler::Profiler p1, p2;
  CHECK_FALSE(profiler::enabled());
  p1.start();
  CHECK(profiler::enabled());
  CHECK_THROWS_WITH(p2.start(), Contains("already recording"));
  CHECK_THROWS_WITH(p1.start(), Contains("already running"));
  (void)(a + a);
  profiler::Result r = p1.stop();
  CHECK_FALSE(profiler::enabled());
  CHECK(find(r, "mul", Category::op).empty());
  CHECK(find(r, "add", Category::op).size() == 1);
  CHECK_THROWS_WITH(p1.stop(), Contains("not running"));
  CHECK_THROWS_WITH(p1.step(), Contains("not running"));
  // A profiler destroyed while recording stops it.
  {
    profiler::Profiler p3;
    p3.start();
  }
  CHECK_FALSE(profiler::enabled());
  // Without kernels.
  profiler::ProfilerOptions no_kernels;
  no_kernels.with_kernels = false;
  profiler::Profiler p4(no_kernels);
  p4.start();
  (void)(a + a);
  profiler::Result r4 = p4.stop();
  CHECK(r4.events(Category::kernel).empty());
  CHECK(r4.events(Category::op).size() == 1);
}

TEST_CASE("profiler: memory is charged to the range that allocated it", "[profiler]") {
  profiler::ProfilerOptions opt;
  opt.profile_memory = true;
  profiler::Profiler prof(opt);
  Tensor kept;
  prof.start();
  {
    profiler::RecordFunction range("keeps");
    kept = empty({1000});  // 4000 bytes that outlive the range
    {
      profiler::RecordFunction inner("scratch");
      Tensor t = empty({250});  // allocated and freed inside
    }
  }
  Tensor before = kept;
  kept = Tensor();
  before = Tensor();  // freed outside any range
  profiler::Result r = prof.stop();
  const auto keeps = find(r, "keeps", Category::user), scratch = find(r, "scratch", Category::user);
  REQUIRE(keeps.size() == 1);
  REQUIRE(scratch.size() == 1);
  CHECK(r.events()[keeps[0]].memory_bytes == 4000);
  CHECK(r.events()[keeps[0]].total_memory_bytes == 4000);  // the scratch nets to zero
  CHECK(r.events()[scratch[0]].memory_bytes == 0);
  int64_t allocs = 0, frees = 0;
  for (const FunctionEvent& e : r.events(Category::memory)) {
    if (e.memory_bytes > 0) allocs += e.memory_bytes;
    if (e.memory_bytes < 0) frees -= e.memory_bytes;
    CHECK(e.device == kCPU);
  }
  CHECK(allocs == 5000);
  CHECK(frees == 5000);
  CHECK_THAT(r.table(profiler::SortBy::self_memory), Contains("Self mem") && Contains("3.91 KiB"));
  // Without profile_memory no memory events.
  profiler::Profiler plain;
  plain.start();
  Tensor t = empty({10});
  CHECK(plain.stop().events(Category::memory).empty());
}

TEST_CASE(
    "profiler: the Chrome trace is JSON with one complete event per range and arrows from "
    "ops to their backward nodes",
    "[profiler]") {
  Tensor x = randn({4, 4}).requires_grad_();
  profiler::ProfilerOptions opt;
  opt.profile_memory = true;
  profiler::Profiler prof(opt);
  prof.start();
  (x * x).sum().backward();
  profiler::mark("a mark with \"quotes\"");
  profiler::Result r = prof.stop();

  const nlohmann::json j = nlohmann::json::parse(r.chrome_trace());
  REQUIRE(j.contains("traceEvents"));
  size_t complete = 0, flows_out = 0, flows_in = 0, counters = 0, instants = 0;
  std::set<int64_t> out_ids, in_ids;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X") {
      ++complete;
      CHECK(e["dur"].get<double>() >= 0);
    }
    if (ph == "s") ++flows_out, out_ids.insert(e["id"].get<int64_t>());
    if (ph == "f") ++flows_in, in_ids.insert(e["id"].get<int64_t>());
    if (ph == "C") ++counters;
    if (ph == "i") {
      ++instants;
      CHECK(e["name"] == "a mark with \"quotes\"");
    }
  }
  size_t ranges = 0;
  for (const FunctionEvent& e : r.events()) ranges += is_range(e.category) ? 1 : 0;
  CHECK(complete == ranges);
  CHECK(flows_out >= 2);  // mul and sum to their backward nodes
  CHECK(flows_out == flows_in);
  CHECK(out_ids == in_ids);
  CHECK(counters == r.events(Category::memory).size());
  CHECK(instants == 1);

  // Written atomically; a bad path is an error naming it.
  const auto dir =
      std::filesystem::temp_directory_path() / ("ember_profiler_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trace.json").string();
  r.export_chrome_trace(path);
  std::ifstream in(path);
  CHECK(nlohmann::json::parse(in)["traceEvents"].size() == j["traceEvents"].size());
  size_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) files += f.is_regular_file();
  CHECK(files == 1);  // no temporary file left
  const std::string bad = (dir / "missing" / "trace.json").string();
  CHECK_THROWS_WITH(r.export_chrome_trace(bad),
                    Contains("profiler") && Contains(bad) && Contains("No such file or directory"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("profiler: a schedule hands on only the active steps", "[profiler]") {
  std::vector<profiler::Result> traces;
  profiler::Schedule s;
  s.skip_first = 1;
  s.wait = 1;
  s.warmup = 1;
  s.active = 2;
  s.repeat = 2;
  profiler::Profiler prof({}, s, [&](const profiler::Result& r) { traces.push_back(r); });
  prof.start();
  for (int i = 0; i < 12; ++i) {
    profiler::RecordFunction work("work#" + std::to_string(i));
    work.end();
    prof.step();
  }
  (void)prof.stop();
  // skip 0; cycle 1: wait 1, warm-up 2, active 3 4; cycle 2: wait 5, warm-up 6, active 7 8.
  REQUIRE(traces.size() == 2);
  auto names = [](const profiler::Result& r) {
    std::set<std::string> n;
    for (const FunctionEvent& e : r.events(Category::user)) n.insert(e.name);
    return n;
  };
  CHECK(names(traces[0]) ==
        std::set<std::string>{"ProfilerStep#3", "ProfilerStep#4", "work#3", "work#4"});
  CHECK(names(traces[1]) ==
        std::set<std::string>{"ProfilerStep#7", "ProfilerStep#8", "work#7", "work#8"});
  // The work of a step lies inside its step's range.
  for (const FunctionEvent& e : traces[0].events(Category::user))
    if (e.name == "work#3") CHECK(e.depth == 1);

  // Without a schedule stop() returns everything; back-to-back cycles are cut per cycle.
  traces.clear();
  profiler::Schedule every2;
  every2.active = 2;
  profiler::Profiler cycles({}, every2, [&](const profiler::Result& r) { traces.push_back(r); });
  cycles.start();
  for (int i = 0; i < 5; ++i) cycles.step();
  (void)cycles.stop();  // step 5 was cut short: handed on too
  CHECK(traces.size() == 3);

  profiler::Schedule bad;
  bad.wait = -1;
  bad.active = 1;
  CHECK_THROWS_WITH(profiler::Profiler({}, bad), Contains("must all be >= 0"));
  profiler::Schedule no_active;
  no_active.wait = 2;
  CHECK_THROWS_WITH(profiler::Profiler({}, no_active), Contains("need active > 0"));
}

TEST_CASE("profiler: each thread records on its own track, DataLoader workers included",
          "[profiler]") {
  Tensor data = randn({64, 3}), target = zeros({64});
  data::DataLoaderOptions opt;
  opt.batch_size = 8;
  opt.num_workers = 2;
  data::DataLoader loader(std::make_shared<data::TensorDataset>(data, target), opt);
  profiler::Profiler prof;
  prof.start();
  std::thread other([] {
    Tensor t = ones({5});
    (void)(t * t);
  });
  int batches = 0;
  for (const data::Batch& batch : loader) batches += batch.data.size(0) == 8 ? 1 : 0;
  other.join();
  profiler::Result r = prof.stop();
  CHECK(batches == 8);
  check_tree(r);
  const auto next = find(r, "DataLoader.next", Category::user);
  const auto fetch = find(r, "DataLoader.fetch", Category::user);
  CHECK(next.size() >= 8);
  CHECK(fetch.size() == 8);
  const int main_thread = r.events()[next[0]].thread;
  for (size_t i : fetch) CHECK(r.events()[i].thread != main_thread);
  const auto mul = find(r, "mul", Category::op);
  REQUIRE(mul.size() == 1);
  CHECK(r.events()[mul[0]].thread != main_thread);
  CHECK(r.num_threads() >= 3);
}

TEST_CASE("profiler: a range open at stop is unfinished, one closed in a later session is dropped",
          "[profiler]") {
  profiler::Profiler prof;
  prof.start();
  auto open = std::make_unique<profiler::RecordFunction>("still open");
  profiler::Result first = prof.stop();
  const auto found = find(first, "still open", Category::user);
  REQUIRE(found.size() == 1);
  CHECK(first.events()[found[0]].unfinished);
  CHECK(first.events()[found[0]].duration_us >= 0);
  prof.start();
  open.reset();  // ends in the second session: not the second session's range
  profiler::RecordFunction fresh("fresh");
  fresh.end();
  profiler::Result second = prof.stop();
  CHECK(find(second, "still open", Category::user).empty());
  const auto f = find(second, "fresh", Category::user);
  REQUIRE(f.size() == 1);
  CHECK(second.events()[f[0]].parent == -1);  // the dropped range is nobody's parent
  CHECK_FALSE(second.events()[f[0]].unfinished);
}

TEST_CASE("profiler: an optimizer step is a range holding its update kernels", "[profiler]") {
  Tensor p = randn({10}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9));
  (p * p).sum().backward();
  profiler::Profiler prof;
  prof.start();
  opt.step();
  opt.zero_grad();
  profiler::Result r = prof.stop();
  const auto step = find(r, "Optimizer.step#SGD", Category::user);
  REQUIRE(step.size() == 1);
  CHECK(find(r, "Optimizer.zero_grad#SGD", Category::user).size() == 1);
  bool kernel_inside = false;
  for (const FunctionEvent& e : r.events(Category::kernel))
    kernel_inside = kernel_inside || e.parent == static_cast<int64_t>(step[0]);
  CHECK(kernel_inside);
}

TEST_CASE(
    "profiler: CUDA kernels are timed on the device and charged to the op that launched "
    "them",
    "[profiler][cuda]") {
  if (!have_cuda()) return;
  Tensor x = randn({1000}).to(Device::cuda());
  synchronize(Device::cuda());
  profiler::Profiler prof;
  prof.start();
  Tensor y = x + x;
  Tensor s = y.sum();
  synchronize(Device::cuda());
  profiler::Result r = prof.stop();
  check_tree(r);
  const auto device = r.events(Category::device);
  REQUIRE(device.size() >= 2);
  for (const FunctionEvent& e : device) {
    CHECK(e.device == Device::cuda(0));
    CHECK(e.duration_us >= 0);
    CHECK(e.parent >= 0);
    CHECK(e.start_us >= 0);
  }
  const auto add = find(r, "add", Category::op);
  REQUIRE(add.size() == 1);
  CHECK(r.events()[add[0]].device_us > 0);
  const auto add_kernel = find(r, "cuda::add", Category::kernel);
  REQUIRE(add_kernel.size() == 1);
  CHECK(r.events()[add_kernel[0]].parent == static_cast<int64_t>(add[0]));
  CHECK_THAT(r.table(profiler::SortBy::device_time), Contains("Device total"));
  const nlohmann::json j = nlohmann::json::parse(r.chrome_trace());
  bool device_track = false;
  for (const auto& e : j["traceEvents"])
    device_track = device_track || (e["ph"] == "X" && e["pid"] == 1);
  CHECK(device_track);
  // Without with_cuda, no device events.
  profiler::ProfilerOptions host_only;
  host_only.with_cuda = false;
  profiler::Profiler p2(host_only);
  p2.start();
  (void)(x + x);
  CHECK(p2.stop().events(Category::device).empty());
}
