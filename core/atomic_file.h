#pragma once
// A file written so that it is either all there or not touched: the bytes go to a temporary file
// in the target's directory, which is synced, closed and renamed onto the target, and then the
// directory is synced so that the rename itself survives a crash. Every step is checked; a failure
// (a full disk, a missing directory, a target that is a directory) removes the temporary file and
// throws an ember::Error "<who>: <path>: <step> '<temporary>' failed: <reason>". An AtomicFile
// destroyed without commit() leaves the target as it was. Overwriting keeps the old file's
// permissions, as writing into it would.
//
//   AtomicFile f("profiler", "trace.json");
//   f.write(text.data(), text.size());
//   f.commit();

#include <cstddef>
#include <string>

namespace ember {

class AtomicFile {
 public:
  // `who` starts every error message ("safetensors", "profiler").
  AtomicFile(std::string who, std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // without commit(): removes the temporary file

  void write(const void* data, size_t n);
  void write(const std::string& s) { write(s.data(), s.size()); }
  // Syncs, closes and renames the temporary file onto the target, then syncs the directory.
  void commit();

  const std::string& temporary_path() const { return tmp_; }

 private:
  [[noreturn]] void abandon(const char* step, int err);
  std::string who_, path_, tmp_;
  int fd_ = -1;
};

// Writes `contents` to `path` through an AtomicFile.
void write_file_atomic(const std::string& who, const std::string& path,
                       const std::string& contents);

}  // namespace ember
