// The profiler's report: a stopped session's raw events made into Result's events (names, self
// times, memory and device time charged to ranges), key_averages(), the table and the Chrome
// trace. The recording side is core/profiler.cpp.

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/op_registry.h"
#include "core/profiler.h"
#include "core/profiler_internal.h"

namespace ember::profiler {

namespace detail {

namespace {

bool is_range(Category c) { return c != Category::memory && c != Category::mark; }

// "cpu::add" for add_stub on the cpu; "cpu->cuda::copy" for a copy between device types.
std::string kernel_name(const RawEvent& e) {
  std::string stub = e.name;
  const std::string suffix = "_stub";
  if (stub.size() > suffix.size() &&
      stub.compare(stub.size() - suffix.size(), suffix.size(), suffix) == 0)
    stub.resize(stub.size() - suffix.size());
  std::string device = device_type_name(static_cast<DeviceType>(e.device_a));
  if (e.device_b != kNoDevice && e.device_b != e.device_a)
    device = std::string(device_type_name(static_cast<DeviceType>(e.device_b))) + "->" + device;
  return device + "::" + stub;
}

}  // namespace

Result make_result(Recording&& rec) {
  Result r;
  r.wall_us_ = static_cast<double>(rec.stop_ns - rec.start_ns) / 1e3;
  r.num_threads_ = static_cast<int>(rec.threads.size());
  std::vector<FunctionEvent>& out = r.events_;
  std::unordered_map<const char*, std::string> op_names;  // node name -> forward name
  auto to_us = [&](int64_t ns) { return static_cast<double>(ns - rec.start_ns) / 1e3; };

  std::sort(rec.threads.begin(), rec.threads.end(),
            [](const ThreadEvents& a, const ThreadEvents& b) { return a.thread < b.thread; });
  std::vector<size_t> base(rec.threads.size());
  for (size_t t = 0; t < rec.threads.size(); ++t) {
    ThreadEvents& th = rec.threads[t];
    base[t] = out.size();
    for (RawEvent& e : th.events) {
      FunctionEvent ev;
      ev.category = e.category;
      if (e.name == nullptr) {
        ev.name = std::move(e.owned);
      } else if (e.category == Category::op) {
        auto it = op_names.find(e.name);
        if (it == op_names.end()) it = op_names.emplace(e.name, forward_op_name(e.name)).first;
        ev.name = it->second;
      } else if (e.category == Category::kernel) {
        ev.name = kernel_name(e);
      } else {
        ev.name = e.name;
      }
      ev.thread = th.thread;
      if (e.category == Category::kernel) ev.device = Device(static_cast<DeviceType>(e.device_a));
      if (e.category == Category::memory) ev.device = e.device;
      ev.unfinished = e.end_ns == 0;
      const int64_t end_ns = ev.unfinished ? rec.stop_ns : e.end_ns;
      ev.start_us = to_us(e.start_ns);
      ev.duration_us = is_range(e.category) ? static_cast<double>(end_ns - e.start_ns) / 1e3 : 0.0;
      ev.self_us = ev.duration_us;
      ev.parent = e.parent >= 0 ? static_cast<int64_t>(base[t]) + e.parent : -1;
      ev.depth = ev.parent >= 0 ? out[static_cast<size_t>(ev.parent)].depth + 1 : 0;
      ev.shapes = std::move(e.shapes);
      ev.sequence_nr = e.sequence_nr;
      if (e.category == Category::memory) ev.memory_bytes = ev.total_memory_bytes = e.bytes;
      out.push_back(std::move(ev));
    }
  }
  // Self times and memory, charged up the tree.
  for (size_t i = 0; i < out.size(); ++i) {
    const FunctionEvent& e = out[i];
    if (e.parent < 0) continue;
    FunctionEvent& p = out[static_cast<size_t>(e.parent)];
    if (is_range(e.category)) p.self_us -= e.duration_us;
    if (e.category == Category::memory) {
      p.memory_bytes += e.memory_bytes;
      for (int64_t a = e.parent; a >= 0; a = out[static_cast<size_t>(a)].parent)
        out[static_cast<size_t>(a)].total_memory_bytes += e.memory_bytes;
    }
  }
  // Device kernels: their times from the device's clock, aligned through the session's origin.
  const InternalWait internal;  // Note [Internal waits]
  for (size_t t = 0; t < rec.threads.size(); ++t) {
    for (const auto& d : rec.threads[t].device) {
      d->end.synchronize();
      const DeviceOrigin* origin = nullptr;
      for (const auto& o : rec.origins)
        if (o->device == d->stream.device()) origin = o.get();
      if (origin == nullptr) continue;  // a device that appeared after start()
      FunctionEvent ev;
      ev.name = d->name;
      ev.category = Category::device;
      ev.device = d->stream.device();
      ev.thread = static_cast<int>(d->stream.id());
      ev.start_us = to_us(origin->host_ns) + origin->event.elapsed_ms(d->start) * 1e3;
      ev.duration_us = ev.self_us = ev.device_us = d->start.elapsed_ms(d->end) * 1e3;
      ev.parent = d->parent >= 0 ? static_cast<int64_t>(base[t]) + d->parent : -1;
      ev.depth = ev.parent >= 0 ? out[static_cast<size_t>(ev.parent)].depth + 1 : 0;
      for (int64_t a = ev.parent; a >= 0; a = out[static_cast<size_t>(a)].parent)
        out[static_cast<size_t>(a)].device_us += ev.duration_us;
      out.push_back(std::move(ev));
    }
  }
  return r;
}

}  // namespace detail

std::vector<FunctionEvent> Result::events(Category category) const {
  std::vector<FunctionEvent> picked;
  for (const FunctionEvent& e : events_)
    if (e.category == category) picked.push_back(e);
  return picked;
}

std::vector<Average> Result::key_averages(bool group_by_shapes, SortBy sort) const {
  std::map<std::tuple<std::string, Category, std::string>, Average> rows;
  for (const FunctionEvent& e : events_) {
    if (e.category == Category::memory || e.category == Category::mark) continue;
    Average& a =
        rows[std::make_tuple(e.name, e.category, group_by_shapes ? e.shapes : std::string())];
    a.name = e.name;
    a.category = e.category;
    if (group_by_shapes) a.shapes = e.shapes;
    a.count += 1;
    a.total_us += e.duration_us;
    a.self_us += e.self_us;
    a.device_us += e.device_us;
    a.self_memory_bytes += e.memory_bytes;
    a.total_memory_bytes += e.total_memory_bytes;
  }
  std::vector<Average> list;
  list.reserve(rows.size());
  for (auto& kv : rows) list.push_back(std::move(kv.second));
  auto key = [sort](const Average& a) -> double {
    switch (sort) {
      case SortBy::self_time:
        return a.self_us;
      case SortBy::total_time:
        return a.total_us;
      case SortBy::device_time:
        return a.device_us;
      case SortBy::count:
        return static_cast<double>(a.count);
      case SortBy::self_memory:
        return static_cast<double>(a.self_memory_bytes);
    }
    return 0.0;
  };
  std::stable_sort(list.begin(), list.end(),
                   [&](const Average& a, const Average& b) { return key(a) > key(b); });
  return list;
}

namespace {

std::string format_time(double us) {
  char buf[32];
  if (us >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3)
    std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

std::string format_bytes(int64_t b) {
  char buf[32];
  const double a = static_cast<double>(b < 0 ? -b : b);
  const char* sign = b < 0 ? "-" : "";
  if (a >= 1024.0 * 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%s%.2f GiB", sign, a / (1024.0 * 1024.0 * 1024.0));
  else if (a >= 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%s%.2f MiB", sign, a / (1024.0 * 1024.0));
  else if (a >= 1024.0)
    std::snprintf(buf, sizeof buf, "%s%.2f KiB", sign, a / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%s%lld B", sign, static_cast<long long>(a));
  return buf;
}

std::string format_percent(double part, double whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

std::string fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 3) + "...";
}

void json_string(std::ostream& os, const std::string& s) {
  os << '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      os << '\\' << c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      os << buf;
    } else {
      os << c;
    }
  }
  os << '"';
}

std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

std::string Result::table(SortBy sort, size_t row_limit, bool group_by_shapes) const {
  const std::vector<Average> rows = key_averages(group_by_shapes, sort);
  double host_self = 0, device_total = 0;
  bool memory = false;
  for (const Average& a : rows) {
    if (a.category == Category::device)
      device_total += a.total_us;
    else
      host_self += a.self_us;
  }
  for (const FunctionEvent& e : events_) memory = memory || e.category == Category::memory;
  const bool device = device_total > 0;

  struct Column {
    std::string title;
    size_t width;
  };
  std::vector<Column> cols = {{"Name", 44},   {"Kind", 8},   {"Self %", 8}, {"Self", 11},
                              {"Total %", 8}, {"Total", 11}, {"Avg", 11}};
  if (device) cols.push_back({"Device total", 13});
  if (memory) {
    cols.push_back({"Self mem", 11});
    cols.push_back({"Mem", 11});
  }
  cols.push_back({"Calls", 7});
  if (group_by_shapes) cols.push_back({"Input shapes", 40});

  std::ostringstream os;
  auto line = [&] {
    for (size_t i = 0; i < cols.size(); ++i)
      os << std::string(cols[i].width, '-') << (i + 1 < cols.size() ? "  " : "\n");
  };
  auto row = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cols.size(); ++i) {
      const std::string c = fit(cells[i], cols[i].width);
      if (i == 0 || cols[i].title == "Input shapes" || cols[i].title == "Kind")
        os << c << std::string(cols[i].width - c.size(), ' ');
      else
        os << std::string(cols[i].width - c.size(), ' ') << c;
      os << (i + 1 < cols.size() ? "  " : "\n");
    }
  };
  std::vector<std::string> titles;
  titles.reserve(cols.size());
  for (const Column& c : cols) titles.push_back(c.title);
  line();
  row(titles);
  line();
  size_t shown = 0;
  for (const Average& a : rows) {
    if (row_limit > 0 && shown == row_limit) break;
    ++shown;
    const double whole = a.category == Category::device ? device_total : host_self;
    std::vector<std::string> cells = {a.name,
                                      category_name(a.category),
                                      format_percent(a.self_us, whole),
                                      format_time(a.self_us),
                                      format_percent(a.total_us, whole),
                                      format_time(a.total_us),
                                      format_time(a.avg_us())};
    if (device) cells.push_back(format_time(a.device_us));
    if (memory) {
      cells.push_back(format_bytes(a.self_memory_bytes));
      cells.push_back(format_bytes(a.total_memory_bytes));
    }
    cells.push_back(std::to_string(a.count));
    if (group_by_shapes) cells.push_back(a.shapes);
    row(cells);
  }
  line();
  os << "Self host time total: " << format_time(host_self) << "  (wall " << format_time(wall_us_)
     << ", " << num_threads_ << (num_threads_ == 1 ? " thread" : " threads") << ")\n";
  if (device) os << "Device time total: " << format_time(device_total) << "\n";
  if (rows.size() > shown) os << "(" << rows.size() - shown << " more rows)\n";
  return os.str();
}

std::string Result::tree(size_t max_lines, int max_depth) const {
  std::ostringstream os;
  size_t lines = 0, left_out = 0;
  int thread = -1;
  for (const FunctionEvent& e : events_) {
    if (!detail::is_range(e.category) || e.category == Category::device || e.depth > max_depth)
      continue;
    if (max_lines > 0 && lines == max_lines) {
      ++left_out;
      continue;
    }
    if (e.thread != thread) {
      thread = e.thread;
      os << "thread " << thread << ":\n";
      ++lines;
    }
    os << std::string(2 * static_cast<size_t>(e.depth + 1), ' ') << e.name << "  ["
       << category_name(e.category) << "] " << format_time(e.duration_us);
    if (e.device_us > 0) os << " (device " << format_time(e.device_us) << ")";
    if (!e.shapes.empty()) os << " " << e.shapes;
    if (e.unfinished) os << " (unfinished)";
    os << "\n";
    ++lines;
  }
  if (left_out > 0) os << "(" << left_out << " more ranges)\n";
  return os.str();
}

std::string Result::chrome_trace() const {
  std::ostringstream os;
  bool first = true;
  auto open = [&] {
    os << (first ? "\n" : ",\n");
    first = false;
  };
  // Process ids: 0 for the host, 1 + index for each cuda device.
  auto pid_of = [](const FunctionEvent& e) {
    return e.category == Category::device ? 1 + e.device.index : 0;
  };
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  open();
  os << R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "host"}})";
  std::map<int, std::string> devices;
  int max_thread = -1;
  for (const FunctionEvent& e : events_) {
    if (e.category == Category::device)
      devices[pid_of(e)] = e.device.str();
    else
      max_thread = std::max(max_thread, e.thread);
  }
  for (int t = 0; t <= max_thread; ++t) {
    open();
    os << R"({"name": "thread_name", "ph": "M", "pid": 0, "tid": )" << t
       << R"(, "args": {"name": "thread )" << t << "\"}}";
  }
  for (const auto& d : devices) {
    open();
    os << R"({"name": "process_name", "ph": "M", "pid": )" << d.first << R"(, "args": {"name": ")"
       << d.second << "\"}}";
  }
  std::map<std::string, int64_t> allocated;                      // per device, since start()
  std::unordered_map<int64_t, const FunctionEvent*> forward_of;  // sequence nr -> op
  for (const FunctionEvent& e : events_)
    if (e.category == Category::op && e.sequence_nr >= 0) forward_of[e.sequence_nr] = &e;
  for (size_t i = 0; i < events_.size(); ++i) {
    const FunctionEvent& e = events_[i];
    open();
    if (e.category == Category::memory) {
      const std::string dev = e.device.str();
      allocated[dev] += e.memory_bytes;
      os << R"({"name": "memory )" << dev << R"(", "ph": "C", "pid": 0, "ts": )"
         << json_number(e.start_us) << R"(, "args": {"allocated bytes": )" << allocated[dev]
         << "}}";
      continue;
    }
    os << "{\"name\": ";
    json_string(os, e.name);
    os << ", \"cat\": \"" << category_name(e.category) << "\", \"pid\": " << pid_of(e)
       << ", \"tid\": " << e.thread << ", \"ts\": " << json_number(e.start_us);
    if (e.category == Category::mark) {
      os << R"(, "ph": "i", "s": "t"})";
      continue;
    }
    os << R"(, "ph": "X", "dur": )" << json_number(e.duration_us) << ", \"args\": {";
    os << "\"self us\": " << json_number(e.self_us);
    if (!e.shapes.empty()) {
      os << ", \"input shapes\": ";
      json_string(os, e.shapes);
    }
    if (e.sequence_nr >= 0) os << ", \"sequence nr\": " << e.sequence_nr;
    if (e.device_us > 0 && e.category != Category::device)
      os << ", \"device us\": " << json_number(e.device_us);
    if (e.memory_bytes != 0) os << ", \"self memory bytes\": " << e.memory_bytes;
    if (e.unfinished) os << ", \"unfinished\": true";
    os << "}}";
    // An arrow from the op to its backward node, and from a launch to its kernel.
    if (e.category == Category::backward && e.sequence_nr >= 0) {
      auto it = forward_of.find(e.sequence_nr);
      if (it != forward_of.end()) {
        const FunctionEvent& f = *it->second;
        open();
        os << R"({"name": "forward-backward", "cat": "autograd", "ph": "s", "id": )"
           << e.sequence_nr << ", \"pid\": 0, \"tid\": " << f.thread
           << ", \"ts\": " << json_number(f.start_us) << "}";
        open();
        os << R"({"name": "forward-backward", "cat": "autograd", "ph": "f", "bp": "e", "id": )"
           << e.sequence_nr << ", \"pid\": 0, \"tid\": " << e.thread
           << ", \"ts\": " << json_number(e.start_us) << "}";
      }
    }
    if (e.category == Category::device && e.parent >= 0) {
      const FunctionEvent& launch = events_[static_cast<size_t>(e.parent)];
      open();
      os << R"({"name": "launch", "cat": "launch", "ph": "s", "id": )" << i
         << ", \"pid\": 0, \"tid\": " << launch.thread
         << ", \"ts\": " << json_number(launch.start_us) << "}";
      open();
      os << R"({"name": "launch", "cat": "launch", "ph": "f", "bp": "e", "id": )" << i
         << ", \"pid\": " << pid_of(e) << ", \"tid\": " << e.thread
         << ", \"ts\": " << json_number(e.start_us) << "}";
    }
  }
  os << "\n]}\n";
  return os.str();
}

void Result::export_chrome_trace(const std::string& path) const {
  write_file_atomic("profiler: export_chrome_trace", path, chrome_trace());
}

}  // namespace ember::profiler
