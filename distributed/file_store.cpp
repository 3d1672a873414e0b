#include "distributed/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "distributed/error.h"
#include "distributed/store_util.h"

namespace ember::dist {

// Record layout (little-endian): u8 kind (1 set, 2 delete), u32 key length, key bytes,
// u32 value length, value bytes (absent for delete).
namespace {

constexpr uint8_t kSet = 1;
constexpr uint8_t kDelete = 2;
constexpr uint32_t kMaxLength = 1u << 30;

[[noreturn]] void io_error(const char* op, const std::string& path, const std::string& what) {
  throw Error(ErrorKind::Backend, op, -1, -1, -1,
              "file store " + path + ": " + what + ": " + std::strerror(errno));
}

void put_u32(Bytes& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

// Holds the process-local mutex and the file's exclusive lock, with data_ replayed to the end.
class FileStore::Locked {
 public:
  Locked(FileStore& s, const char* op) : s_(s), op_(op), guard_(s.mutex_) {
    while (::flock(s_.fd_, LOCK_EX) != 0) {
      if (errno != EINTR) io_error(op_, s_.path_, "flock");
    }
    try {
      replay();
    } catch (...) {
      ::flock(s_.fd_, LOCK_UN);
      throw;
    }
  }
  ~Locked() { ::flock(s_.fd_, LOCK_UN); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

  void append(uint8_t kind, const std::string& key, const Bytes& value) {
    Bytes rec;
    rec.push_back(kind);
    put_u32(rec, static_cast<uint32_t>(key.size()));
    rec.insert(rec.end(), key.begin(), key.end());
    if (kind == kSet) {
      put_u32(rec, static_cast<uint32_t>(value.size()));
      rec.insert(rec.end(), value.begin(), value.end());
    }
    size_t done = 0;
    while (done < rec.size()) {
      const ssize_t n = ::pwrite(s_.fd_, rec.data() + done, rec.size() - done,
                                 static_cast<off_t>(s_.offset_ + static_cast<int64_t>(done)));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) io_error(op_, s_.path_, "write");
      done += static_cast<size_t>(n);
    }
    s_.offset_ += static_cast<int64_t>(rec.size());
    apply(kind, key, value);
  }

 private:
  void apply(uint8_t kind, const std::string& key, const Bytes& value) {
    if (kind == kSet) {
      s_.data_[key] = value;
    } else {
      s_.data_.erase(key);
    }
  }

  void read_exact(void* dst, size_t n, int64_t at) {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(s_.fd_, static_cast<char*>(dst) + done, n - done,
                                static_cast<off_t>(at + static_cast<int64_t>(done)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) io_error(op_, s_.path_, "read");
      if (r == 0) damaged(at, "a record is cut short");
      done += static_cast<size_t>(r);
    }
  }

  uint32_t read_u32(int64_t at) {
    uint8_t b[4];
    read_exact(b, 4, at);
    return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
           static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
  }

  [[noreturn]] void damaged(int64_t at, const std::string& what) {
    throw Error(
        ErrorKind::Backend, op_, -1, -1, -1,
        "file store " + s_.path_ + " is damaged at offset " + std::to_string(at) + ": " + what);
  }

  void replay() {
    struct stat st {};
    if (::fstat(s_.fd_, &st) != 0) io_error(op_, s_.path_, "fstat");
    const int64_t end = st.st_size;
    int64_t at = s_.offset_;
    while (at < end) {
      const int64_t start = at;
      uint8_t kind = 0;
      read_exact(&kind, 1, at);
      at += 1;
      if (kind != kSet && kind != kDelete)
        damaged(start, "unknown record kind " + std::to_string(kind));
      const uint32_t klen = read_u32(at);
      at += 4;
      if (klen > kMaxLength || at + klen > end) damaged(start, "a key length past the end");
      std::string key(klen, '\0');
      read_exact(key.data(), klen, at);
      at += klen;
      Bytes value;
      if (kind == kSet) {
        const uint32_t vlen = read_u32(at);
        at += 4;
        if (vlen > kMaxLength || at + vlen > end) damaged(start, "a value length past the end");
        value.resize(vlen);
        if (vlen > 0) read_exact(value.data(), vlen, at);
        at += vlen;
      }
      apply(kind, key, value);
    }
    s_.offset_ = at;
  }

  FileStore& s_;
  const char* op_;
  std::lock_guard<std::mutex> guard_;
};

FileStore::FileStore(std::string path, std::chrono::milliseconds timeout)
    : Store(timeout), path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) io_error("FileStore", path_, "open");
}

FileStore::~FileStore() {
  if (fd_ >= 0) ::close(fd_);
}

void FileStore::set(const std::string& key, const Bytes& value) {
  Locked l(*this, "store.set");
  l.append(kSet, key, value);
}

Bytes FileStore::get(const std::string& key) {
  wait({key}, timeout());
  Locked l(*this, "store.get");
  auto it = data_.find(key);
  if (it == data_.end()) {  // deleted between the wait and now
    throw Error(ErrorKind::Timeout, "store.get", -1, -1, -1, "key '" + key + "' was deleted");
  }
  return it->second;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  Locked l(*this, "store.add");
  int64_t value = 0;
  auto it = data_.find(key);
  if (it != data_.end()) value = parse_counter("store.add", key, it->second);
  value += delta;
  l.append(kSet, key, to_bytes(std::to_string(value)));
  return value;
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Locked l(*this, "store.compare_set");
  auto it = data_.find(key);
  if (it == data_.end()) {
    if (!expected.empty()) return {};
  } else if (it->second != expected) {
    return it->second;
  }
  l.append(kSet, key, desired);
  return desired;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  auto sleep = std::chrono::milliseconds(1);
  while (true) {
    std::vector<std::string> missing;
    {
      Locked l(*this, "store.wait");
      for (const auto& k : keys)
        if (data_.count(k) == 0) missing.push_back(k);
    }
    if (missing.empty()) return;
    if (std::chrono::steady_clock::now() - start >= timeout)
      throw_wait_timeout("store.wait", missing, timeout, start);
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::milliseconds(10));
  }
}

bool FileStore::check(const std::vector<std::string>& keys) {
  Locked l(*this, "store.check");
  for (const auto& k : keys)
    if (data_.count(k) == 0) return false;
  return true;
}

bool FileStore::delete_key(const std::string& key) {
  Locked l(*this, "store.delete_key");
  if (data_.count(key) == 0) return false;
  l.append(kDelete, key, {});
  return true;
}

int64_t FileStore::num_keys() {
  Locked l(*this, "store.num_keys");
  return static_cast<int64_t>(data_.size());
}

}  // namespace ember::dist
