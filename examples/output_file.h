#pragma once
// ember-train's results, written so that they cannot be lost silently: every line is flushed
// at once and every write, flush and close is checked, so a full disk (`--metrics /dev/full`,
// `> /dev/full`) is an error naming the file and the reason, not an exit status 0 with the CSV
// row or the JSON line missing.
//
//   OutputFile metrics("metrics", "run.csv");   // truncates; "cannot write metrics to run.csv:
//   ..." metrics.write_line("epoch,step,...");        // written and flushed, or std::runtime_error
//   metrics.close();                             // checked too
//   write_stdout_line("{...}");                  // "cannot write the result to stdout: ..."

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace ember::examples {

class OutputFile {
 public:
  OutputFile() = default;
  // `what` names the contents in errors ("metrics").
  OutputFile(std::string what, std::string path) : what_(std::move(what)), path_(std::move(path)) {
    errno = 0;
    file_ = std::fopen(path_.c_str(), "w");
    if (file_ == nullptr) fail();
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&& o) noexcept { *this = std::move(o); }
  OutputFile& operator=(OutputFile&& o) noexcept {
    if (this != &o) {
      discard();
      what_ = std::move(o.what_), path_ = std::move(o.path_), file_ = o.file_;
      o.file_ = nullptr;
    }
    return *this;
  }
  ~OutputFile() { discard(); }

  bool is_open() const { return file_ != nullptr; }
  const std::string& path() const { return path_; }

  // Writes `line` and a newline, and flushes them to the file.
  void write_line(const std::string& line) {
    errno = 0;
    if (std::fputs(line.c_str(), file_) == EOF || std::fputc('\n', file_) == EOF ||
        std::fflush(file_) != 0 || std::ferror(file_))
      fail();
  }

  // Closes the file, checking that the last bytes made it.
  void close() {
    if (file_ == nullptr) return;
    std::FILE* f = file_;
    file_ = nullptr;
    errno = 0;
    if (std::fclose(f) != 0) fail();
  }

 private:
  [[noreturn]] void fail() const {
    const int err = errno;
    throw std::runtime_error("cannot write " + what_ + " to " + path_ + ": " +
                             (err != 0 ? std::strerror(err) : "write error"));
  }
  void discard() {
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
  }

  std::string what_, path_;
  std::FILE* file_ = nullptr;
};

// Writes `line` and a newline to stdout and flushes it; throws std::runtime_error if it cannot.
inline void write_stdout_line(const std::string& line) {
  errno = 0;
  if (std::fputs(line.c_str(), stdout) == EOF || std::fputc('\n', stdout) == EOF ||
      std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    throw std::runtime_error(std::string("cannot write the result to stdout: ") +
                             (err != 0 ? std::strerror(err) : "write error"));
  }
}

}  // namespace ember::examples
