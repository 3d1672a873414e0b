// ember-train's helpers (examples/): the progress bar fitted to the terminal's width, the log
// cadence when stderr is not a terminal, the strict number parsing of the command line, and
// output files whose write errors cannot go unnoticed. The program itself is tested end to end
// by the CTests ember_train_e2e and ember_train_cli (examples/*.cmake).

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "examples/cli_values.h"
#include "examples/output_file.h"
#include "examples/progress.h"

using namespace ember::examples;
using Catch::Contains;

namespace {

Progress sample(int64_t done = 312, int64_t total = 938) {
  Progress p;
  p.epoch = 1, p.epochs = 3, p.batches_done = done, p.total_batches = total;
  p.loss = 0.43214, p.samples_per_second = 5120.4, p.eta_seconds = 42.4;
  return p;
}

template <class F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("progress: the bar never reaches the terminal's last column", "[examples]") {
  const Progress p = sample();
  CHECK(bar_line(p, 100) ==
        "epoch 2/3 [=========>                    ] 312/938 loss 0.4321 5120 samples/s ETA 0:42");
  for (int width = 1; width <= 200; ++width) {
    INFO("width " << width);
    const std::string line = bar_line(p, width);
    CHECK(static_cast<int>(line.size()) <= std::max(width - 1, 0));
    CHECK(line.find('\n') == std::string::npos);
    CHECK(line.find('\r') == std::string::npos);
  }
  // Narrower terminals drop parts, the essentials last.
  CHECK(bar_line(p, 80).size() <= 79);
  CHECK_THAT(bar_line(p, 80), Contains("[") && Contains("ETA 0:42"));
  CHECK(bar_line(p, 50) == "epoch 2/3 312/938 loss 0.4321 ETA 0:42");
  CHECK(bar_line(p, 31) == "epoch 2/3 312/938 loss 0.4321");
  CHECK(bar_line(p, 10) == "epoch 2/3");
  // The bar is full at the end, empty at the start, and the large numbers of a long run fit.
  CHECK_THAT(bar_line(sample(938, 938), 120), Contains("[==============================]"));
  CHECK_THAT(bar_line(sample(0, 938), 120), Contains("[>                             ]"));
  Progress big = sample(123456789, 987654321);
  big.eta_seconds = 1e12;  // a stalled start: no overflow, a clamped duration
  CHECK(bar_line(big, 80).size() <= 79);
  CHECK(format_duration(3725) == "1:02:05");
  CHECK(format_duration(-3) == "0:00");
  CHECK(fit_line("epoch 1/3: evaluating on 10000 test images...", 20) == "epoch 1/3: evaluati");
}

TEST_CASE("progress: the terminal width comes from the tty, then COLUMNS, then 80", "[examples]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);  // not a terminal
  const char* saved = std::getenv("COLUMNS");
  const std::string old = saved ? saved : "";
  ::setenv("COLUMNS", "57", 1);
  CHECK(terminal_width(fds[0]) == 57);
  ::setenv("COLUMNS", "wide", 1);
  CHECK(terminal_width(fds[0]) == 80);
  ::setenv("COLUMNS", "-4", 1);
  CHECK(terminal_width(fds[0]) == 80);
  ::unsetenv("COLUMNS");
  CHECK(terminal_width(fds[0]) == 80);
  if (saved) ::setenv("COLUMNS", old.c_str(), 1);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("progress: log lines every tenth of an epoch and every 30 s", "[examples]") {
  LogCadence cadence;
  cadence.start(0, 1000, 0.0);
  std::vector<int64_t> logged;
  for (int64_t b = 1; b <= 1000; ++b)
    if (cadence.due(b, 0.001 * static_cast<double>(b))) logged.push_back(b);
  // At 10%, 20%, ... 90% (the epoch's summary line follows the last batch).
  CHECK(logged == std::vector<int64_t>{100, 200, 300, 400, 500, 600, 700, 800, 900});

  // A slow epoch: a line every 30 s even between the tenths.
  cadence.start(0, 1000, 0.0);
  CHECK_FALSE(cadence.due(1, 29.0));
  CHECK(cadence.due(2, 30.0));
  CHECK_FALSE(cadence.due(3, 59.0));
  CHECK(cadence.due(4, 60.5));
  CHECK(cadence.due(100, 61.0));  // the tenth still counts

  // Resumed mid-epoch: the tenths already passed do not print.
  cadence.start(550, 1000, 0.0);
  CHECK_FALSE(cadence.due(551, 0.1));
  CHECK(cadence.due(600, 0.2));
  // Tiny epochs: every batch is a tenth.
  cadence.start(0, 3, 0.0);
  CHECK(cadence.due(1, 0.0));
  CHECK(cadence.due(2, 0.0));
  CHECK_FALSE(cadence.due(3, 0.0));

  CHECK(log_line(sample()) ==
        "epoch 2/3: 312/938 batches (33%), loss 0.4321, 5120 samples/s, ETA 0:42");
}

TEST_CASE("command line: numbers are parsed strictly with short messages", "[examples]") {
  CHECK(parse_int("--epochs", "12", 1) == 12);
  CHECK(parse_int("--n", "-5", -10, 10) == -5);
  CHECK(usage_error_of([] { parse_int("--epochs", "abc", 1); }) ==
        "--epochs must be a positive integer, got 'abc'");
  for (const char* bad : {"", " 3", "3 ", "+3", "3x", "0x10", "1e3", "3.0", "-"})
    CHECK_THAT(usage_error_of([&] { parse_int("--epochs", bad, 1); }),
               Contains("--epochs must be a positive integer, got '"));
  CHECK(usage_error_of([] { parse_int("--epochs", "99999999999999999999", 1); }) ==
        "--epochs must be a positive integer, got '99999999999999999999' (too large)");
  CHECK(usage_error_of([] { parse_int("--epochs", "0", 1); }) ==
        "--epochs must be a positive integer, got '0'");
  CHECK(usage_error_of([] { parse_int("--w", "-1", 0); }) ==
        "--w must be a non-negative integer, got '-1'");
  CHECK(usage_error_of([] { parse_int("--t", "5000", 1, 4096); }) ==
        "--t must be an integer from 1 to 4096, got '5000'");

  CHECK(parse_uint64("--seed", "18446744073709551615") == 18446744073709551615ull);
  CHECK(usage_error_of([] { parse_uint64("--seed", "-1"); }) ==
        "--seed must be a non-negative integer (at most 18446744073709551615), got '-1'");
  CHECK_THAT(usage_error_of([] { parse_uint64("--seed", "18446744073709551616"); }),
             Contains("(too large)"));

  CHECK(parse_real("--lr", "1e-3", 0.0, kInf, false) == 1e-3);
  CHECK(parse_real("--lr", ".5", 0.0, kInf, false) == 0.5);
  CHECK(parse_real("--g", "0", 0.0, 1.0, true) == 0.0);
  for (const char* bad : {"nan", "inf", "-inf", "1e999", "abc", "", "0", "-1", " 1", "1 "})
    CHECK_THAT(usage_error_of([&] { parse_real("--lr", bad, 0.0, kInf, false); }),
               Contains("--lr must be a positive number, got '"));
  CHECK(usage_error_of([] { parse_real("--wd", "-0.1", 0.0, kInf, true); }) ==
        "--wd must be a non-negative number, got '-0.1'");
  CHECK(usage_error_of([] { parse_real("--g", "2", 0.0, 1.0, true); }) ==
        "--g must be a number from 0 to 1, got '2'");
}

TEST_CASE("outputs: a write that fails names the file and the reason", "[examples]") {
  OutputFile full("metrics", "/dev/full");  // opens fine; every write fails with ENOSPC
  try {
    full.write_line("epoch,step");
    FAIL("a write to /dev/full succeeded");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "cannot write metrics to /dev/full: No space left on device");
  }
  CHECK_THROWS_WITH(OutputFile("metrics", "/nonexistent-dir/m.csv"),
                    "cannot write metrics to /nonexistent-dir/m.csv: No such file or directory");

  char path[] = "/tmp/ember_output_XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  {
    OutputFile ok("metrics", path);
    ok.write_line("a,b");
    ok.write_line("1,2");
    ok.close();
    ok.close();  // once is enough
  }
  std::FILE* f = std::fopen(path, "r");
  REQUIRE(f != nullptr);
  char buf[32] = {};
  CHECK(std::fread(buf, 1, sizeof buf - 1, f) == 8);
  std::fclose(f);
  CHECK(std::string(buf) == "a,b\n1,2\n");
  ::unlink(path);
}
