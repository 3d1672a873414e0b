// Rank resolution from the environment (Note [Rank sources] in distributed/env.h).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <optional>

#include "distributed/env.h"
#include "distributed/error.h"
#include "distributed/tcp_store.h"
#include "harness.h"

using namespace ember;
using namespace std::chrono_literals;

namespace {

const char* const kVars[] = {"RANK",
                             "WORLD_SIZE",
                             "LOCAL_RANK",
                             "LOCAL_WORLD_SIZE",
                             "MASTER_ADDR",
                             "MASTER_PORT",
                             "OMPI_COMM_WORLD_RANK",
                             "OMPI_COMM_WORLD_SIZE",
                             "OMPI_COMM_WORLD_LOCAL_RANK",
                             "OMPI_COMM_WORLD_LOCAL_SIZE",
                             "PMI_RANK",
                             "PMI_SIZE",
                             "MPI_LOCALRANKID",
                             "MPI_LOCALNRANKS",
                             "SLURM_PROCID",
                             "SLURM_NTASKS",
                             "SLURM_LOCALID",
                             "SLURM_NTASKS_PER_NODE",
                             "SLURM_STEP_TASKS_PER_NODE",
                             "SLURM_NODEID",
                             "SLURM_JOB_NODELIST",
                             "SLURM_NODELIST",
                             "EMBER_RESTART_COUNT",
                             "EMBER_STORE_HOSTED"};

// Clears every variable rank resolution reads, sets the given ones, and restores all at exit.
class EnvGuard {
 public:
  explicit EnvGuard(const std::map<std::string, std::string>& vars) {
    for (const char* v : kVars) {
      const char* old = std::getenv(v);
      saved_[v] = old ? std::optional<std::string>(old) : std::nullopt;
      ::unsetenv(v);
    }
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~EnvGuard() {
    for (const auto& [k, v] : saved_) {
      if (v) {
        ::setenv(k.c_str(), v->c_str(), 1);
      } else {
        ::unsetenv(k.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace

TEST_CASE("env: no variables is a world of 1", "[dist][env]") {
  EnvGuard g({});
  const auto i = dist::rank_info_from_env();
  CHECK(i.source == "none");
  CHECK(i.rank == 0);
  CHECK(i.world_size == 1);
  CHECK(i.local_world_size == 1);
  CHECK(i.master_port == 29500);
  CHECK_FALSE(i.store_hosted);
}

TEST_CASE("env: torchrun / ember-run variables", "[dist][env]") {
  EnvGuard g({{"RANK", "3"},
              {"WORLD_SIZE", "4"},
              {"LOCAL_RANK", "1"},
              {"LOCAL_WORLD_SIZE", "2"},
              {"MASTER_ADDR", "10.1.2.3"},
              {"MASTER_PORT", "1234"},
              {"EMBER_RESTART_COUNT", "2"},
              {"EMBER_STORE_HOSTED", "1"},
              // lower-priority sources are ignored
              {"SLURM_PROCID", "0"},
              {"SLURM_NTASKS", "8"},
              {"OMPI_COMM_WORLD_RANK", "0"}});
  const auto i = dist::rank_info_from_env();
  CHECK(i.source == "env");
  CHECK(i.rank == 3);
  CHECK(i.world_size == 4);
  CHECK(i.local_rank == 1);
  CHECK(i.local_world_size == 2);
  CHECK(i.master_addr == "10.1.2.3");
  CHECK(i.master_port == 1234);
  CHECK(i.restart_count == 2);
  CHECK(i.store_hosted);
}

TEST_CASE("env: Open MPI and PMI", "[dist][env]") {
  {
    EnvGuard g({{"OMPI_COMM_WORLD_RANK", "5"},
                {"OMPI_COMM_WORLD_SIZE", "8"},
                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                {"MASTER_ADDR", "head"},
                {"PMI_RANK", "0"}});
    const auto i = dist::rank_info_from_env();
    CHECK(i.source == "ompi");
    CHECK(i.rank == 5);
    CHECK(i.world_size == 8);
    CHECK(i.local_rank == 1);
    CHECK(i.local_world_size == 4);
    CHECK(i.master_addr == "head");
  }
  {
    EnvGuard g({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
    const auto i = dist::rank_info_from_env();
    CHECK(i.source == "pmi");
    CHECK(i.rank == 1);
    CHECK(i.world_size == 2);
    CHECK(i.local_rank == 1);
    CHECK(i.local_world_size == 2);
    CHECK(i.master_addr == "127.0.0.1");
  }
}

TEST_CASE("env: Slurm, with MASTER_ADDR from the node list", "[dist][env]") {
  SECTION("ntasks-per-node") {
    EnvGuard g({{"SLURM_PROCID", "3"},
                {"SLURM_NTASKS", "4"},
                {"SLURM_LOCALID", "1"},
                {"SLURM_NTASKS_PER_NODE", "2"},
                {"SLURM_JOB_NODELIST", "node[01-04,07],gpu3"}});
    const auto i = dist::rank_info_from_env();
    CHECK(i.source == "slurm");
    CHECK(i.rank == 3);
    CHECK(i.world_size == 4);
    CHECK(i.local_rank == 1);
    CHECK(i.local_world_size == 2);
    CHECK(i.master_addr == "node01");
    CHECK(i.master_port == 29500);
  }
  SECTION("step tasks per node, uneven, and MASTER_ADDR set wins") {
    EnvGuard g({{"SLURM_PROCID", "6"},
                {"SLURM_NTASKS", "7"},
                {"SLURM_LOCALID", "0"},
                {"SLURM_NODEID", "3"},
                {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"},
                {"SLURM_JOB_NODELIST", "a[1-4]"},
                {"MASTER_ADDR", "explicit"}});
    const auto i = dist::rank_info_from_env();
    CHECK(i.local_world_size == 1);
    CHECK(i.master_addr == "explicit");
  }
}

TEST_CASE("env: Slurm node lists and task lists", "[dist][env]") {
  CHECK(dist::slurm_first_host("node[01-04,07],gpu3", "V") == "node01");
  CHECK(dist::slurm_first_host("gpu3,node[1-2]", "V") == "gpu3");
  CHECK(dist::slurm_first_host("solo", "V") == "solo");
  CHECK(dist::slurm_first_host("n[007,9]", "V") == "n007");
  CHECK(dist::slurm_first_host("rack[2-3]-n[5,7]", "V") == "rack2-n5");
  CHECK_THROWS_WITH(dist::slurm_first_host("node[01-04", "SLURM_JOB_NODELIST"),
                    Catch::Contains("SLURM_JOB_NODELIST='node[01-04'"));
  CHECK_THROWS_AS(dist::slurm_first_host("", "V"), dist::Error);
  CHECK_THROWS_AS(dist::slurm_first_host("n[]", "V"), dist::Error);
  CHECK_THROWS_AS(dist::slurm_first_host("n[a-b]", "V"), dist::Error);
  CHECK(dist::slurm_tasks_per_node("2(x3),1", "V") == std::vector<int>{2, 2, 2, 1});
  CHECK(dist::slurm_tasks_per_node("4", "V") == std::vector<int>{4});
  CHECK_THROWS_WITH(dist::slurm_tasks_per_node("2(x", "SLURM_STEP_TASKS_PER_NODE"),
                    Catch::Contains("SLURM_STEP_TASKS_PER_NODE='2(x'"));
  CHECK_THROWS_AS(dist::slurm_tasks_per_node("", "V"), dist::Error);
  CHECK_THROWS_AS(dist::slurm_tasks_per_node("0", "V"), dist::Error);
  CHECK_THROWS_AS(dist::slurm_tasks_per_node("2,", "V"), dist::Error);
}

TEST_CASE("env: garbage values are errors naming the variable", "[dist][env]") {
  auto error_of = [](const std::map<std::string, std::string>& vars) -> std::string {
    EnvGuard g(vars);
    try {
      dist::rank_info_from_env();
    } catch (const dist::Error& e) {
      CHECK(e.kind() == dist::ErrorKind::Usage);
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(error_of({{"RANK", "abc"}, {"WORLD_SIZE", "2"}}),
             Catch::Contains("RANK='abc' is not an integer"));
  CHECK_THAT(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2x"}}), Catch::Contains("WORLD_SIZE='2x'"));
  CHECK_THAT(error_of({{"RANK", "0"}}), Catch::Contains("WORLD_SIZE is not set"));
  CHECK_THAT(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
             Catch::Contains("the rank 2 is not below the world size 2"));
  CHECK_THAT(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), Catch::Contains("WORLD_SIZE=0"));
  CHECK_THAT(error_of({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}), Catch::Contains("RANK=-1"));
  CHECK_THAT(error_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "99999"}}),
             Catch::Contains("MASTER_PORT=99999 is out of range"));
  CHECK_THAT(error_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", ""}}),
             Catch::Contains("MASTER_PORT=''"));
  CHECK_THAT(
      error_of(
          {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}}),
      Catch::Contains("MASTER_ADDR is not set"));
  CHECK_THAT(error_of({{"OMPI_COMM_WORLD_RANK", "1"},
                       {"OMPI_COMM_WORLD_SIZE", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "5"}}),
             Catch::Contains("the local rank 5"));
  CHECK_THAT(error_of({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}}),
             Catch::Contains("SLURM_PROCID='x'"));
  CHECK_THAT(
      error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-2"}}),
      Catch::Contains("SLURM_JOB_NODELIST"));
}

TEST_CASE("env: store_from_env gives a world of 1 an in-process store", "[dist][env]") {
  EnvGuard g({});
  auto store = dist::store_from_env(dist::rank_info_from_env(), 1s);
  store->set("k", "v");
  CHECK(store->get_string("k") == "v");
}

// Each rank resolves itself from the variables and meets the others in the store rank 0 hosts.
DIST_WORKER(env_store) {
  ::setenv("RANK", std::to_string(args.rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(args.world_size).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", args.param("port").c_str(), 1);
  const auto info = dist::rank_info_from_env();
  DIST_EXPECT(info.rank == args.rank, "rank ", info.rank);
  auto store = dist::store_from_env(info, 20s);
  dist::store_barrier(*store, "met", info.world_size, 20s);
  store->set("bye/" + std::to_string(info.rank), "1");
  if (info.rank == 0) store->wait({"bye/0", "bye/1", "bye/2"});
  return 0;
}

TEST_CASE("env: store_from_env lets rank 0 host the store for the others", "[dist][env]") {
  dist_test::RunOptions o;
  o.params["port"] = std::to_string(dist_test::free_port());
  o.timeout = 40s;
  auto r = dist_test::run_workers("env_store", 3, o);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}
