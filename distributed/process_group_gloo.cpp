#include "distributed/process_group_gloo.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>

#include "core/ops/factory.h"
#include "core/record_function.h"

namespace ember::dist {

const char* to_string(AllreduceAlgorithm a) {
  return a == AllreduceAlgorithm::Ring ? "ring" : "halving-doubling";
}

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

milliseconds remaining(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? left : milliseconds(1);
}

// ---- the store adapter (Note [Gloo rendezvous]) ---------------------------------------------

// Gloo's rendezvous store over ember's: every wait, whatever timeout Gloo asks for (30 s by
// default), waits for what is left of ember's rendezvous deadline.
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  StoreAdapter(dist::Store& store, std::string prefix, Clock::time_point deadline)
      : store_(store), prefix_(std::move(prefix)), deadline_(deadline) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(prefix_ + key, Bytes(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    store_.wait({prefix_ + key}, remaining(deadline_));
    const Bytes b = store_.get(prefix_ + key);
    return std::vector<char>(b.begin(), b.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait_all(keys); }
  void wait(const std::vector<std::string>& keys, const milliseconds& /*gloo's*/) override {
    wait_all(keys);
  }

 private:
  void wait_all(const std::vector<std::string>& keys) {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const auto& k : keys) full.push_back(prefix_ + k);
    store_.wait(full, remaining(deadline_));
  }

  dist::Store& store_;
  std::string prefix_;
  Clock::time_point deadline_;
};

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// The join barrier of Note [Gloo rendezvous]: names the ranks that never came.
void join(dist::Store& store, const std::string& prefix, int rank, int size, milliseconds timeout) {
  const auto start = Clock::now();
  auto key = [&](int r) { return prefix + "/join/" + std::to_string(r); };
  store.set(key(rank), "1");
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) keys.push_back(key(r));
  try {
    store.wait(keys, timeout);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    std::vector<int> missing;
    for (int r = 0; r < size; ++r) {
      if (!store.check({key(r)})) missing.push_back(r);
    }
    throw Error(ErrorKind::Timeout, "rendezvous", -1, missing.empty() ? -1 : missing[0],
                seconds_since(start),
                std::string(missing.size() == 1 ? "rank " : "ranks ") + rank_list(missing) +
                    " never joined within " + std::to_string(timeout.count()) +
                    " ms (gave up after " + fmt_seconds(seconds_since(start)) + ")",
                rank, size);
  }
}

// Whether a stream socket can be bound to `host`'s first address (port 0).
bool bindable(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return false;
  bool ok = false;
  const int fd = ::socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  if (fd >= 0) {
    ok = ::bind(fd, res->ai_addr, res->ai_addrlen) == 0;
    ::close(fd);
  }
  freeaddrinfo(res);
  return ok;
}

// The transport attributes of GlooOptions' documented choice; *what describes it for errors.
gloo::transport::tcp::attr choose_network(const GlooOptions& o, std::string* what) {
  gloo::transport::tcp::attr attr;
  const char* env = std::getenv("GLOO_SOCKET_IFNAME");
  if (!o.interface.empty()) {
    attr.iface = o.interface;
    *what = "interface '" + o.interface + "'";
  } else if (!o.hostname.empty()) {
    attr.hostname = o.hostname;
    *what = "host '" + o.hostname + "'";
  } else if (env != nullptr && *env != '\0') {
    attr.iface = env;
    *what = "interface '" + attr.iface + "' (GLOO_SOCKET_IFNAME)";
  } else {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0 && name[0] != '\0' && bindable(name)) {
      attr.hostname = name;
      *what = "host '" + attr.hostname + "' (this machine's hostname)";
    } else {
      attr.hostname = "127.0.0.1";
      *what = "loopback 127.0.0.1";
    }
  }
  return attr;
}

// Gloo's messages start with "[/path/to/file.cc:123] "; the rest is what users need.
std::string strip_location(const std::string& m) {
  if (!m.empty() && m[0] == '[') {
    const size_t end = m.find("] ");
    if (end != std::string::npos) return m.substr(end + 2);
  }
  return m;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// ---- reductions (Note [Gloo reductions]) -----------------------------------------------------

template <class T>
struct Reduce {
  // Integer sums and products wrap around (computed unsigned: no signed overflow).
  static T add(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    } else {
      return a + b;
    }
  }
  static T mul(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    } else {
      return a * b;
    }
  }
  static T lo(T a, T b) { return b < a ? b : a; }
  static T hi(T a, T b) { return a < b ? b : a; }

  template <T (*F)(T, T)>
  static void apply(void* c, const void* a, const void* b, size_t n) {
    T* out = static_cast<T*>(c);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    for (size_t i = 0; i < n; ++i) out[i] = F(x[i], y[i]);
  }
  template <T (*F)(T, T)>
  static void apply_in_place(T* a, const T* b, size_t n) {
    apply<F>(a, a, b, n);
  }

  // For gloo::allreduce (Avg is reduced as Sum, then divided).
  static gloo::AllreduceOptions::Func func(ReduceOp op) {
    switch (op) {
      case ReduceOp::Min:
        return &apply<lo>;
      case ReduceOp::Max:
        return &apply<hi>;
      case ReduceOp::Product:
        return &apply<mul>;
      default:
        return &apply<add>;
    }
  }
  // For gloo::AllreduceHalvingDoubling.
  static const gloo::ReductionFunction<T>* function(ReduceOp op) {
    static const gloo::ReductionFunction<T> sum(gloo::CUSTOM, &apply_in_place<add>);
    static const gloo::ReductionFunction<T> prod(gloo::CUSTOM, &apply_in_place<mul>);
    static const gloo::ReductionFunction<T> min(gloo::CUSTOM, &apply_in_place<lo>);
    static const gloo::ReductionFunction<T> max(gloo::CUSTOM, &apply_in_place<hi>);
    switch (op) {
      case ReduceOp::Min:
        return &min;
      case ReduceOp::Max:
        return &max;
      case ReduceOp::Product:
        return &prod;
      default:
        return &sum;
    }
  }
};

// Calls f(T*) with the tensor's data as its C++ type (the dtypes reduced natively).
template <class F>
void with_native_type(const Tensor& t, F&& f) {
  void* p = t.data_ptr();
  switch (t.dtype()) {
    case DType::UInt8:
      return f(static_cast<uint8_t*>(p));
    case DType::Int8:
      return f(static_cast<int8_t*>(p));
    case DType::Int16:
      return f(static_cast<int16_t*>(p));
    case DType::Int32:
      return f(static_cast<int32_t*>(p));
    case DType::Int64:
      return f(static_cast<int64_t*>(p));
    case DType::Float32:
      return f(static_cast<float*>(p));
    case DType::Float64:
      return f(static_cast<double*>(p));
    default:
      throw ember::Error(std::string("gloo: no native reduction for ") + dtype_name(t.dtype()));
  }
}

constexpr uint8_t kP2PSlotPrefix =
    0x7f;  // above every prefix Gloo's collectives use (gloo/types.h)

}  // namespace

// ---- the group -------------------------------------------------------------------------------

struct ProcessGroupGloo::Impl {
  struct Collective {
    Call call;
    WorkPtr work;
  };
  struct PointToPoint {
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;  // null: nothing to move
    bool is_send = true;
    int peer = -1;
    int tag = 0;
    WorkPtr work;
  };

  std::shared_ptr<Store> store;
  std::string prefix;
  std::string network;  // how the network was chosen, for errors
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::vector<std::string> peer_address;  // [r]: the address rank r's connection to us has

  std::mutex mutex;
  std::condition_variable changed;
  bool stopping = false;
  std::deque<Collective> collectives;
  std::deque<PointToPoint> p2p;
  std::thread worker;
  std::thread p2p_worker;

  // The dist::Error of a failed Gloo call (Note [Gloo execution]).
  // about: what the op was doing, for send and recv ("to rank 1 (tag 3): "); peer: the rank it
  // is about when the caller knows it (else found from the addresses in Gloo's message).
  Error translate(const ProcessGroupGloo& pg, const char* op, int64_t seq, Clock::time_point start,
                  const std::string& raw, const std::string& about = "", int peer = -1) const {
    const std::string what = strip_location(raw);
    const double s = seconds_since(start);
    for (int r = 0; r < static_cast<int>(peer_address.size()) && peer < 0; ++r) {
      const std::string& a = peer_address[static_cast<size_t>(r)];
      if (!a.empty() && contains(what, a.c_str())) peer = r;
    }
    const std::string who = peer >= 0 ? "rank " + std::to_string(peer) : "a peer";
    if (contains(what, "imed out") || contains(what, "imeout")) {
      return pg.error(ErrorKind::Timeout, op, seq, peer, s,
                      about + "timed out after " + fmt_seconds(s) + " (timeout " +
                          std::to_string(pg.timeout().count()) + " ms; gloo: " + what + ")");
    }
    if (contains(what, "losed") || contains(what, "reset") || contains(what, "Broken pipe") ||
        contains(what, "refused") || contains(what, "EOF")) {
      return pg.error(
          ErrorKind::PeerLost, op, seq, peer, s,
          about + who + " closed the connection after " + fmt_seconds(s) + " (gloo: " + what + ")");
    }
    return pg.error(ErrorKind::Backend, op, seq, peer, s,
                    about + "gloo failed after " + fmt_seconds(s) + ": " + what);
  }

  uint32_t tag(int64_t seq, int step) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(seq) * 2 + static_cast<uint64_t>(step)) &
                                 0xffffffffu);
  }
};

namespace {
std::atomic<int> g_groups{0};
}

std::shared_ptr<ProcessGroupGloo> ProcessGroupGloo::create(std::shared_ptr<Store> store, int rank,
                                                           int size, GlooOptions options) {
  return std::shared_ptr<ProcessGroupGloo>(
      new ProcessGroupGloo(std::move(store), rank, size, std::move(options)));
}

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size,
                                   GlooOptions options)
    : ProcessGroup(rank, size, options.timeout),
      options_(std::move(options)),
      impl_(std::make_unique<Impl>()) {
  if (!store) throw error(ErrorKind::Usage, "rendezvous", -1, -1, -1, "the store is null");
  if (options_.rendezvous_timeout.count() <= 0) {
    throw error(ErrorKind::Usage, "rendezvous", -1, -1, -1,
                "the rendezvous timeout must be positive, got " +
                    std::to_string(options_.rendezvous_timeout.count()) + " ms");
  }
  Impl& m = *impl_;
  m.store = std::move(store);
  m.prefix = options_.prefix.empty() ? "gloo/" + std::to_string(g_groups++) : options_.prefix;
  const auto start = Clock::now();
  const auto deadline = start + options_.rendezvous_timeout;

  // A peer that dies while we write to it must be an error, not SIGPIPE (Gloo writes with
  // plain writev). A program that installed its own handler keeps it.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }

  join(*m.store, m.prefix, rank, size, options_.rendezvous_timeout);

  const auto attr = choose_network(options_, &m.network);
  try {
    m.device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw error(ErrorKind::Backend, "rendezvous", -1, -1, seconds_since(start),
                "cannot use " + m.network + ": " + strip_location(e.what()));
  }
  try {
    m.context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    m.context->setTimeout(options_.timeout);
    StoreAdapter adapter(*m.store, m.prefix + "/mesh/", deadline);
    m.context->connectFullMesh(adapter, m.device);
  } catch (const Error& e) {
    throw error(e.kind(), "rendezvous", -1, e.peer(), seconds_since(start),
                "connecting over " + m.network + ": " + e.what());
  } catch (const std::exception& e) {
    throw error(ErrorKind::Backend, "rendezvous", -1, -1, seconds_since(start),
                "connecting over " + m.network + ": " + strip_location(e.what()));
  }

  // Each rank publishes the address of its connection to every peer (one line per rank).
  std::string mine;
  for (int r = 0; r < size; ++r) {
    if (r != rank) mine += m.context->getPair(r)->address().str();
    mine += '\n';
  }
  m.store->set(m.prefix + "/addr/" + std::to_string(rank), mine);
  m.peer_address.assign(static_cast<size_t>(size), "");
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    const std::string key = m.prefix + "/addr/" + std::to_string(r);
    m.store->wait({key}, remaining(deadline));
    const std::string lines = m.store->get_string(key);
    size_t pos = 0;
    for (int line = 0; line < rank && pos != std::string::npos; ++line) {
      pos = lines.find('\n', pos);
      if (pos != std::string::npos) ++pos;
    }
    if (pos != std::string::npos) {
      const size_t end = lines.find('\n', pos);
      m.peer_address[static_cast<size_t>(r)] = lines.substr(pos, end - pos);
    }
  }

  m.worker = std::thread([this] { worker_loop(); });
  m.p2p_worker = std::thread([this] { p2p_loop(); });
}

ProcessGroupGloo::~ProcessGroupGloo() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->changed.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
  if (impl_->p2p_worker.joinable()) impl_->p2p_worker.join();
}

WorkPtr ProcessGroupGloo::run(Call call) {
  const char* op = to_string(call.kind);
  const bool reduces = call.kind == OpKind::Allreduce || call.kind == OpKind::ReduceScatter;
  if (reduces && call.tensor.dtype() == DType::Bool) {
    throw error(ErrorKind::Usage, op, call.fingerprint.seq, -1, -1,
                std::string("the gloo backend does not reduce bool tensors (") +
                    to_string(call.reduce) + "); convert them to uint8");
  }
  auto work = std::make_shared<Work>(op, call.fingerprint.seq);
  std::vector<Tensor> keep = call.tensors;
  if (call.tensor.defined()) keep.push_back(call.tensor);
  work->keep_alive(std::move(keep));
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->collectives.push_back({std::move(call), work});
  }
  impl_->changed.notify_all();
  return work;
}

void ProcessGroupGloo::worker_loop() {
  Impl& m = *impl_;
  for (;;) {
    Impl::Collective job;
    bool destroyed = false;
    {
      std::unique_lock<std::mutex> lock(m.mutex);
      m.changed.wait(lock, [&] { return m.stopping || !m.collectives.empty(); });
      if (m.collectives.empty()) return;
      job = std::move(m.collectives.front());
      m.collectives.pop_front();
      destroyed = m.stopping;
    }
    const char* op = to_string(job.call.kind);
    const int64_t seq = job.call.fingerprint.seq;
    if (destroyed) {
      job.work->finish(std::make_exception_ptr(error(
          ErrorKind::Aborted, op, seq, -1, -1, "the process group was destroyed before it ran")));
      continue;
    }
    if (const auto first = failure()) {
      std::string text;
      try {
        std::rethrow_exception(first);
      } catch (const std::exception& e) {
        text = e.what();
      }
      job.work->finish(std::make_exception_ptr(error(
          ErrorKind::Aborted, op, seq, -1, -1, "not run: the group failed earlier: " + text)));
      continue;
    }
    try {
      execute(job.call);
      job.work->finish();
    } catch (...) {
      fail(job.work, std::current_exception());
    }
  }
}

void ProcessGroupGloo::execute(Call& call) {
  Impl& m = *impl_;
  const auto& ctx = m.context;
  const char* op = to_string(call.kind);
  const int64_t seq = call.fingerprint.seq;
  // On the group's worker thread: its own track in a profile.
  profiler::RecordFunction range(profiler_name(call.kind, "gloo"));
  const auto start = Clock::now();
  try {
    // Step 1: the fingerprints (Note [Collective sequence numbers]). Every rank receives every
    // rank's, so this step alone is a barrier.
    std::vector<Fingerprint> all(static_cast<size_t>(size()));
    {
      gloo::AllgatherOptions o(ctx);
      o.setInput<uint8_t>(reinterpret_cast<uint8_t*>(&call.fingerprint), sizeof(Fingerprint));
      o.setOutput<uint8_t>(reinterpret_cast<uint8_t*>(all.data()),
                           sizeof(Fingerprint) * all.size());
      o.setTag(m.tag(seq, 0));
      o.setTimeout(timeout());
      gloo::allgather(o);
    }
    check_fingerprints(call.fingerprint, all);

    // Step 2: the data.
    const uint32_t tag = m.tag(seq, 1);
    auto allreduce = [&](const Tensor& t, ReduceOp reduce) {
      Tensor work_t = t;
      const bool widen = t.dtype() == DType::Float16 || t.dtype() == DType::BFloat16;
      if (widen) work_t = t.to(DType::Float32);
      const size_t n = static_cast<size_t>(work_t.numel());
      const ReduceOp base = reduce == ReduceOp::Avg ? ReduceOp::Sum : reduce;
      with_native_type(work_t, [&](auto* p) {
        using T = std::remove_pointer_t<decltype(p)>;
        if (n > 0) {
          if (options_.algorithm == AllreduceAlgorithm::HalvingDoubling &&
              n * sizeof(T) <= static_cast<size_t>(INT_MAX)) {
            gloo::AllreduceHalvingDoubling<T> hd(ctx, std::vector<T*>{p}, static_cast<int>(n),
                                                 Reduce<T>::function(base));
            hd.run();
          } else {
            gloo::AllreduceOptions o(ctx);
            o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
            o.setOutput<T>(p, n);
            o.setReduceFunction(Reduce<T>::func(base));
            o.setTag(tag);
            o.setTimeout(timeout());
            gloo::allreduce(o);
          }
        }
        if (reduce == ReduceOp::Avg) {
          const T d = static_cast<T>(size());
          for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / d);
        }
      });
      if (widen) t.copy_(work_t);
    };

    switch (call.kind) {
      case OpKind::Allreduce:
        allreduce(call.tensor, call.reduce);
        break;
      case OpKind::Broadcast: {
        const size_t bytes = call.tensor.nbytes();
        if (bytes == 0 || size() == 1) break;
        gloo::BroadcastOptions o(ctx);
        o.setOutput<uint8_t>(static_cast<uint8_t*>(call.tensor.data_ptr()), bytes);
        o.setRoot(call.root);
        o.setTag(tag);
        o.setTimeout(timeout());
        gloo::broadcast(o);
        break;
      }
      case OpKind::Allgather: {
        const size_t bytes = call.tensor.nbytes();
        if (bytes == 0) break;
        std::vector<uint8_t> flat(bytes * static_cast<size_t>(size()));
        gloo::AllgatherOptions o(ctx);
        o.setInput<uint8_t>(static_cast<uint8_t*>(call.tensor.data_ptr()), bytes);
        o.setOutput<uint8_t>(flat.data(), flat.size());
        o.setTag(tag);
        o.setTimeout(timeout());
        gloo::allgather(o);
        for (int r = 0; r < size(); ++r) {
          std::memcpy(call.tensors[static_cast<size_t>(r)].data_ptr(),
                      flat.data() + bytes * static_cast<size_t>(r), bytes);
        }
        break;
      }
      case OpKind::ReduceScatter: {
        // Note [Gloo reductions]: an allreduce of the inputs end to end, then this rank's slice.
        const size_t bytes = call.tensor.nbytes();
        if (bytes == 0) break;
        Tensor flat =
            empty({call.tensor.numel() * size()}, TensorOptions().dtype(call.tensor.dtype()));
        auto* base = static_cast<uint8_t*>(flat.data_ptr());
        for (int r = 0; r < size(); ++r) {
          std::memcpy(base + bytes * static_cast<size_t>(r),
                      call.tensors[static_cast<size_t>(r)].data_ptr(), bytes);
        }
        allreduce(flat, call.reduce);
        std::memcpy(call.tensor.data_ptr(), base + bytes * static_cast<size_t>(rank()), bytes);
        break;
      }
      case OpKind::Barrier:
        break;  // step 1 was the barrier
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw m.translate(*this, op, seq, start, e.what());
  }
}

// ---- send and recv (Note [Gloo execution]) ---------------------------------------------------

WorkPtr ProcessGroupGloo::run_send(const Tensor& tensor, int dst, int tag) {
  Impl& m = *impl_;
  auto work = std::make_shared<Work>("send", -1);
  work->keep_alive({tensor});
  Impl::PointToPoint p;
  p.is_send = true;
  p.peer = dst;
  p.tag = tag;
  p.work = work;
  if (tensor.nbytes() > 0) {
    p.buffer = m.context->createUnboundBuffer(tensor.data_ptr(), tensor.nbytes());
    p.buffer->send(dst, gloo::Slot::build(kP2PSlotPrefix, static_cast<uint32_t>(tag)));
  }
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.p2p.push_back(std::move(p));
  }
  m.changed.notify_all();
  return work;
}

WorkPtr ProcessGroupGloo::run_recv(const Tensor& tensor, int src, int tag) {
  Impl& m = *impl_;
  auto work = std::make_shared<Work>("recv", -1);
  work->keep_alive({tensor});
  Impl::PointToPoint p;
  p.is_send = false;
  p.peer = src;
  p.tag = tag;
  p.work = work;
  if (tensor.nbytes() > 0) {
    p.buffer = m.context->createUnboundBuffer(tensor.data_ptr(), tensor.nbytes());
    p.buffer->recv(src, gloo::Slot::build(kP2PSlotPrefix, static_cast<uint32_t>(tag)));
  }
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.p2p.push_back(std::move(p));
  }
  m.changed.notify_all();
  return work;
}

void ProcessGroupGloo::p2p_loop() {
  Impl& m = *impl_;
  for (;;) {
    Impl::PointToPoint job;
    bool destroyed = false;
    {
      std::unique_lock<std::mutex> lock(m.mutex);
      m.changed.wait(lock, [&] { return m.stopping || !m.p2p.empty(); });
      if (m.p2p.empty()) return;
      job = std::move(m.p2p.front());
      m.p2p.pop_front();
      destroyed = m.stopping;
    }
    const char* op = job.is_send ? "send" : "recv";
    const std::string what = std::string(job.is_send ? "to" : "from") + " rank " +
                             std::to_string(job.peer) + " (tag " + std::to_string(job.tag) + ")";
    if (destroyed) {
      job.work->finish(std::make_exception_ptr(error(ErrorKind::Aborted, op, -1, job.peer, -1,
                                                     what + ": the process group was destroyed")));
      continue;
    }
    if (!job.buffer) {
      job.work->finish();
      continue;
    }
    const auto start = Clock::now();
    try {
      const bool done =
          job.is_send ? job.buffer->waitSend(timeout()) : job.buffer->waitRecv(timeout());
      if (!done) {
        throw error(ErrorKind::Aborted, op, -1, job.peer, seconds_since(start),
                    what + ": aborted after " + fmt_seconds(seconds_since(start)));
      }
      job.work->finish();
    } catch (const Error&) {
      fail(job.work, std::current_exception());
    } catch (const std::exception& e) {
      // A timed out or lost send / recv is about its own peer.
      fail(job.work, std::make_exception_ptr(
                         m.translate(*this, op, -1, start, e.what(), what + ": ", job.peer)));
    }
  }
}

}  // namespace ember::dist
