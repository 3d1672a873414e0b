#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"

namespace ember {

namespace {

std::string errno_str(int err) { return std::strerror(err); }

}  // namespace

AtomicFile::AtomicFile(std::string who, std::string path)
    : who_(std::move(who)), path_(std::move(path)) {
  EMBER_CHECK(!path_.empty(), who_, ": empty path");
  // A name no other writer (thread or process) picks: pid, a counter and the clock.
  static std::atomic<uint64_t> counter{0};
  const uint64_t salt =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int attempt = 0; fd_ < 0; ++attempt) {
    tmp_ = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." +
           std::to_string(salt % 1000000);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt >= 100))
      EMBER_ERROR(who_, ": ", path_, ": cannot create the temporary file '", tmp_,
                  "': ", errno_str(errno));
  }
  struct stat old;
  if (::stat(path_.c_str(), &old) == 0 && S_ISREG(old.st_mode) &&
      ::fchmod(fd_, old.st_mode & 07777) != 0)
    abandon("setting the permissions of", errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFile::abandon(const char* step, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  EMBER_ERROR(who_, ": ", path_, ": ", step, " '", tmp_, "' failed: ", errno_str(err));
}

void AtomicFile::write(const void* data, size_t n) {
  EMBER_CHECK(fd_ >= 0, who_, ": ", path_, ": write after commit");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::write(fd_, p, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      abandon("writing", errno);
    }
    p += put;
    n -= static_cast<size_t>(put);
  }
}

void AtomicFile::commit() {
  EMBER_CHECK(fd_ >= 0, who_, ": ", path_, ": committed twice");
  if (::fsync(fd_) != 0) abandon("syncing", errno);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    EMBER_ERROR(who_, ": ", path_, ": closing '", tmp_, "' failed: ", errno_str(err));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    EMBER_ERROR(who_, ": ", path_, ": renaming onto the target '", tmp_,
                "' failed: ", errno_str(err));
  }
  // Make the rename itself durable.
  const size_t slash = path_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path_.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    EMBER_ERROR(who_, ": ", path_, ": cannot open its directory '", dir,
                "' to sync it: ", errno_str(errno));
  const bool synced = ::fsync(dfd) == 0 || errno == EINVAL;
  const int err = errno;
  ::close(dfd);
  if (!synced)
    EMBER_ERROR(who_, ": ", path_, ": syncing its directory '", dir, "' failed: ", errno_str(err));
}

void write_file_atomic(const std::string& who, const std::string& path,
                       const std::string& contents) {
  AtomicFile f(who, path);
  f.write(contents);
  f.commit();
}

}  // namespace ember
