// PrefixStore: a namespace inside another store.
#include <catch2/catch.hpp>

#include "distributed/error.h"
#include "distributed/hash_store.h"
#include "distributed/prefix_store.h"

using namespace ember;
using namespace std::chrono_literals;

TEST_CASE("prefix store: keys live under the prefix, two prefixes never meet", "[dist][store]") {
  auto base = std::make_shared<dist::HashStore>(200ms);
  dist::PrefixStore a("a", base);
  dist::PrefixStore b("b", base);
  a.set("k", "1");
  b.set("k", "2");
  CHECK(a.get_string("k") == "1");
  CHECK(b.get_string("k") == "2");
  CHECK(base->get_string("a/k") == "1");
  CHECK(a.add("n", 5) == 5);
  CHECK(base->get_string("a/n") == "5");
  CHECK_FALSE(b.check({"n"}));
  CHECK(a.check({"k", "n"}));
  CHECK(dist::to_string(a.compare_set("k", dist::to_bytes("1"), dist::to_bytes("3"))) == "3");
  CHECK(base->get_string("a/k") == "3");
  CHECK(a.num_keys() == 3);  // every key of the wrapped store
  CHECK(a.delete_key("k"));
  CHECK(b.get_string("k") == "2");
  CHECK(a.timeout() == 200ms);
  CHECK_THROWS_WITH(a.wait({"never"}, 50ms), Catch::Contains("'a/never'"));
  dist::PrefixStore nested("inner", std::make_shared<dist::PrefixStore>("outer", base));
  nested.set("x", "y");
  CHECK(base->get_string("outer/inner/x") == "y");
  CHECK_THROWS_AS(dist::PrefixStore("p", nullptr), dist::Error);
}
