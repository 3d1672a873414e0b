// autograd::queue_callback (Note [Engine callbacks] in autograd/engine.h): callbacks queued
// during backward run in order, after the graph, on the calling thread, before backward returns.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

using namespace ember;
using Catch::Contains;

TEST_CASE("queue_callback: callbacks run in order after every gradient, before backward returns",
          "[autograd][callback]") {
  Tensor a = tensor(std::vector<double>{1.0, 2.0}, {2}, kFloat64).requires_grad_();
  Tensor b = tensor(std::vector<double>{3.0, 4.0}, {2}, kFloat64).requires_grad_();
  std::vector<std::string> log;
  const auto caller = std::this_thread::get_id();
  bool same_thread = true;
  a.register_post_accumulate_grad_hook([&](const Tensor&) {
    log.push_back("hook a");
    autograd::queue_callback([&] {
      same_thread = same_thread && std::this_thread::get_id() == caller;
      // Both leaves have their gradients by now.
      log.push_back(b.grad().defined() && a.grad().defined() ? "first: both ready"
                                                             : "first: early");
      autograd::queue_callback([&] { log.push_back("queued by a callback"); });
    });
    autograd::queue_callback([&] { log.push_back("second"); });
  });
  b.register_post_accumulate_grad_hook([&](const Tensor&) { log.push_back("hook b"); });
  ((a * 2).sum() + (b * a).sum()).backward();
  REQUIRE(log.size() == 5);
  CHECK(log[3] == "second");
  CHECK(log[2] == "first: both ready");
  CHECK(log[4] == "queued by a callback");
  CHECK(same_thread);

  // A second backward starts with an empty queue: the callbacks ran once.
  log.clear();
  (b * 3).sum().backward();
  CHECK(log == std::vector<std::string>{"hook b"});
}

TEST_CASE("queue_callback: an exception from a callback propagates out of backward",
          "[autograd][callback]") {
  Tensor a = tensor(std::vector<double>{1.0}, {1}, kFloat64).requires_grad_();
  bool later_ran = false;
  a.register_post_accumulate_grad_hook([&](const Tensor&) {
    autograd::queue_callback([] { EMBER_ERROR("callback failed on purpose"); });
    autograd::queue_callback([&] { later_ran = true; });
  });
  CHECK_THROWS_WITH((a * 2).sum().backward(), Contains("callback failed on purpose"));
  CHECK_FALSE(later_ran);
  // The engine is usable again, and autograd::grad runs callbacks too.
  Tensor x = tensor(std::vector<double>{2.0}, {1}, kFloat64).requires_grad_();
  int ran = 0;
  x.register_hook([&](const Tensor&) {
    autograd::queue_callback([&] { ++ran; });
    return Tensor();
  });
  autograd::grad({(x * x).sum()}, {x});
  CHECK(ran == 1);
}

TEST_CASE("queue_callback: outside a backward pass is an error", "[autograd][callback]") {
  CHECK_THROWS_WITH(autograd::queue_callback([] {}), Contains("no backward pass is running"));
}
