#pragma once
// ember-train's progress on stderr, as pure functions of the numbers (tests/test_progress.cpp):
//
//   bar_line(p, 80)   "epoch 2/3 [=========>           ] 312/938 loss 0.4321 5120 samples/s ETA
//   0:42" log_line(p)       "epoch 2/3: 312/938 batches (33%), loss 0.4321, 5120 samples/s, ETA
//   0:42"
//
// On a terminal the bar is redrawn in place as "\r" + bar_line(p, terminal_width(2)) + "\033[K":
// it never reaches the last column (a line that fills it wraps on some terminals, and "\r"
// then returns to the wrapped line's start, leaving the first half behind at every redraw),
// and the erase-to-end-of-line removes what a longer previous line left. Parts are dropped to
// fit a narrow terminal: the bar shrinks (10 to 30 columns), then the rate goes, then the bar,
// then the ETA and the loss; below that the line is cut. When stderr is not a terminal (a log
// file, a pipe), LogCadence says when to print a log_line: each 10% of an epoch's batches, and
// at least every 30 s, so that a log shows the run is alive.

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ember::examples {

// Where an epoch is.
struct Progress {
  int64_t epoch = 0;  // 0-based; shown 1-based
  int64_t epochs = 0;
  int64_t batches_done = 0;
  int64_t total_batches = 0;
  double loss = 0.0;  // the epoch's running mean
  double samples_per_second = 0.0;
  double eta_seconds = 0.0;
};

// "m:ss", or "h:mm:ss" from an hour on.
inline std::string format_duration(double seconds) {
  const double clamped = std::isfinite(seconds) ? std::min(std::max(seconds, 0.0), 3.6e8) : 0.0;
  const auto s = static_cast<long long>(std::llround(clamped));
  char buf[40];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

// The columns of the terminal on `fd` (TIOCGWINSZ), else $COLUMNS when it is a positive
// number, else 80.
inline int terminal_width(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0 && v <= 100000) return static_cast<int>(v);
  }
  return 80;
}

// `text` cut to at most width - 1 characters (ASCII: one column each), never into the last
// column.
inline std::string fit_line(const std::string& text, int width) {
  const size_t room = width > 1 ? static_cast<size_t>(width - 1) : 0;
  return text.size() <= room ? text : text.substr(0, room);
}

namespace detail {

inline std::string epoch_text(const Progress& p) {
  return "epoch " + std::to_string(p.epoch + 1) + "/" + std::to_string(p.epochs);
}

inline std::string fixed(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, std::isfinite(v) ? v : 0.0);
  return buf;
}

}  // namespace detail

// The bar for a terminal `width` columns wide (at most width - 1 characters).
inline std::string bar_line(const Progress& p, int width) {
  const std::string head = detail::epoch_text(p);
  const std::string counts = std::to_string(p.batches_done) + "/" + std::to_string(p.total_batches);
  const std::string loss = detail::fixed("loss %.4f", p.loss);
  const std::string rate = detail::fixed("%.0f samples/s", p.samples_per_second);
  const std::string eta = "ETA " + format_duration(p.eta_seconds);
  const std::string kBar = "\x01";  // where the bar goes
  const std::vector<std::vector<std::string>> layouts = {{head, kBar, counts, loss, rate, eta},
                                                         {head, kBar, counts, loss, eta},
                                                         {head, counts, loss, rate, eta},
                                                         {head, counts, loss, eta},
                                                         {head, counts, loss},
                                                         {head, counts}};
  const int room = std::max(width - 1, 0);
  for (const auto& parts : layouts) {
    int fixed_width = -1;  // the parts and the spaces between them, without the bar
    bool has_bar = false;
    for (const std::string& part : parts) {
      has_bar = has_bar || part == kBar;
      fixed_width += 1 + (part == kBar ? 2 : static_cast<int>(part.size()));  // "[" "]"
    }
    const int bar_width = has_bar ? std::min(30, room - fixed_width) : 0;
    if (has_bar ? bar_width < 10 : fixed_width > room) continue;
    std::string line;
    for (const std::string& part : parts) {
      if (!line.empty()) line += ' ';
      if (part != kBar) {
        line += part;
        continue;
      }
      const int64_t total = std::max<int64_t>(p.total_batches, 1);
      const auto filled = static_cast<int>(
          std::min<int64_t>(bar_width, bar_width * std::max<int64_t>(p.batches_done, 0) / total));
      std::string bar(static_cast<size_t>(filled), '=');
      if (filled < bar_width) bar += '>';
      bar.resize(static_cast<size_t>(bar_width), ' ');
      line += "[" + bar + "]";
    }
    return line;
  }
  return fit_line(head + " " + counts, width);
}

// A plain line for logs.
inline std::string log_line(const Progress& p) {
  const int64_t pct = p.total_batches > 0 ? 100 * p.batches_done / p.total_batches : 0;
  return detail::epoch_text(p) + ": " + std::to_string(p.batches_done) + "/" +
         std::to_string(p.total_batches) + " batches (" + std::to_string(pct) + "%), " +
         detail::fixed("loss %.4f", p.loss) + ", " +
         detail::fixed("%.0f samples/s", p.samples_per_second) + ", ETA " +
         format_duration(p.eta_seconds);
}

// When a log line is due: at each tenth of the epoch's batches that is crossed (not at the
// end: the epoch's summary line follows), and whenever `interval` seconds have passed since the
// last line (or the epoch's start).
class LogCadence {
 public:
  explicit LogCadence(double interval_seconds = 30.0) : interval_(interval_seconds) {}

  // An epoch of `total_batches` starts (or resumes) at `first_batch`, at time `now` (seconds).
  void start(int64_t first_batch, int64_t total_batches, double now) {
    last_batch_ = first_batch, total_ = total_batches, last_time_ = now;
  }

  // Whether to print a line now that `batches_done` are done; if so, counts it as printed.
  bool due(int64_t batches_done, double now) {
    if (total_ <= 0 || batches_done >= total_) return false;
    const bool tenth = tenth_of(batches_done) > tenth_of(last_batch_);
    if (!tenth && now - last_time_ < interval_) return false;
    last_batch_ = batches_done, last_time_ = now;
    return true;
  }

 private:
  int64_t tenth_of(int64_t batches) const { return batches * 10 / total_; }

  double interval_;
  int64_t last_batch_ = 0, total_ = 0;
  double last_time_ = 0.0;
};

}  // namespace ember::examples
