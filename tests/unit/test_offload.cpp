// ZeRO-Offload / ZeRO-Infinity: the host AdamW against the CPU backend's adamw
// (bit for bit, 1..4 threads), the offload stores, and whole runs with the
// optimizer state (and stage 3's parameter shard) in host memory or in files:
// after 3 steps the losses, the gathered weights and every rank's master, m
// and v must be bit-identical to the in-memory optimizer's, at stages 0-3,
// with the device bytes lower and the host and file bytes exactly as
// model_states_placement says, and every gradient element reported to the
// offloaded optimizer before the step. [offload] runs on one rank, [mpi] under mpirun
// -np W for W = 1..4; [.bench] prints the host AdamW's throughput.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "zero/analysis/memory_formula.h"
#include "zero/optim/host_adamw.h"
#include "zero/optim/offload_store.h"

namespace zt {
namespace {

struct AdamInputs {
  std::vector<float> master, grad, m, v;
};

AdamInputs random_inputs(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  AdamInputs in;
  for (size_t i = 0; i < n; i++) {
    in.master.push_back(normal(rng));
    in.grad.push_back(normal(rng) * 0.1f);
    in.m.push_back(normal(rng) * 0.01f);
    in.v.push_back(std::fabs(normal(rng)) * 1e-4f);
  }
  return in;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("host AdamW is bit-identical to the CPU backend's adamw", "[offload]") {
  std::mt19937_64 rng(test_seed());
  auto ops = make_cpu_ops();
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int threads = 1; threads <= 4; threads++) {
    HostAdamW host(threads);
    for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(9), size_t(1000), size_t(40000),
                     size_t(100003)}) {
      AdamInputs a = random_inputs(n, rng), b = a;
      AdamWArgs args{1e-3f + unit(rng) * 1e-2f,
                     0.9f,
                     0.95f + unit(rng) * 0.04f,
                     1e-8f,
                     unit(rng) * 0.1f,
                     0.5f + unit(rng),
                     1 + static_cast<int>(rng() % 10)};
      std::vector<float> param_a(n), param_b(n, -1.0f);
      ops->adamw(param_a.data(), a.master.data(), a.grad.data(), a.m.data(), a.v.data(), n, args);
      host.step(b.master.data(), b.grad.data(), b.m.data(), b.v.data(), param_b.data(), n, args);
      INFO("threads " << threads << ", n " << n);
      CHECK(same_bits(a.master, b.master));
      CHECK(same_bits(a.m, b.m));
      CHECK(same_bits(a.v, b.v));
      CHECK(same_bits(param_a, param_b));
    }
  }
  HostAdamW host(1);
  AdamInputs in = random_inputs(4, rng);
  require_parts(error_of([&] {
                  host.step(in.master.data(), in.grad.data(), in.m.data(), in.v.data(), nullptr, 4,
                            AdamWArgs{1e-3f, 0.9f, 0.95f, 1e-8f, 0, 1, 0});
                }),
                {"host adamw", "expected >= 1"});
}

TEST_CASE("offload stores: aio chunks in flight round-trip; bad nvme_path is one clear line",
          "[offload]") {
  std::mt19937_64 rng(test_seed());
  TestDir dir("zt_offload");
  auto ops = make_cpu_ops();
  OffloadConfig o;
  o.device = "nvme";
  o.nvme_path = dir.path;
  const size_t bytes = 3 * 65536 + 123;
  std::vector<char> data(bytes), back(bytes, 0);
  for (char& c : data) c = static_cast<char>(rng());
  {
    std::shared_ptr<NvmeDirectory> group;
    auto store = make_offload_store(o, "zero.offload_optimizer", group, 0, "x.bin", bytes,
                                    MemCategory::Optimizer, *ops);
    CHECK(nvme_ledger().current(MemCategory::Optimizer) >= bytes);
    CHECK(store->host_data() == nullptr);
    std::vector<int> tickets;
    for (size_t off = 0; off < bytes; off += 65536)
      tickets.push_back(store->start_write(off, std::min<size_t>(65536, bytes - off), &data[off]));
    for (int t : tickets) store->wait(t);
    tickets.clear();
    for (size_t off = 0; off < bytes; off += 65536)
      tickets.push_back(store->start_read(off, std::min<size_t>(65536, bytes - off), &back[off]));
    for (int t : tickets) store->wait(t);
    CHECK(data == back);
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path),
                        std::filesystem::directory_iterator()) == 1);
  }
  // The run's directory and its file are gone with the store.
  CHECK(std::filesystem::is_empty(dir.path));

  std::shared_ptr<NvmeDirectory> none;
  o.nvme_path = dir.file("missing");
  require_parts(error_of([&] {
                  make_offload_store(o, "zero.offload_optimizer", none, 0, "x.bin", 64,
                                     MemCategory::Optimizer, *ops);
                }),
                {"zero.offload_optimizer.nvme_path", "missing", "expected an existing"});
  {
    std::FILE* f = std::fopen(dir.file("plain").c_str(), "w");
    REQUIRE(f);
    std::fclose(f);
  }
  require_parts(nvme_path_problem(dir.file("plain")), {"plain", "is not a directory"});
  CHECK(nvme_path_problem(dir.path).empty());
}

struct OffloadCase {
  int stage;
  std::string optimizer, params;  // offload devices
};

std::vector<OffloadCase> offload_cases() {
  std::vector<OffloadCase> cases;
  for (int stage = 0; stage <= 3; stage++)
    for (const char* d : {"cpu", "nvme"}) cases.push_back({stage, d, "none"});
  cases.push_back({3, "cpu", "cpu"});
  cases.push_back({3, "nvme", "nvme"});
  cases.push_back({3, "none", "cpu"});
  cases.push_back({3, "none", "nvme"});
  return cases;
}

// Every case at this world size against the same config with nothing offloaded.
void check_offload_bit_identical(bool multi_rank) {
  for (const OffloadCase& c : offload_cases()) {
    TestDir dir("zt_offload");
    ZeroConfig base;
    base.stage = c.stage;
    base.sub_group_size = 3001;  // several chunks per rank, boundaries inside tensors
    // Stage 3 gathers the matrices (the default 1e5 would keep this model
    // whole) and prefetches a few at a time, so NVMe reads ahead beyond them.
    base.stage3_param_persistence_threshold = 200;
    base.stage3_prefetch_bucket_size = 2000;
    ZeroConfig off = base;
    off.offload_optimizer.device = c.optimizer;
    off.offload_optimizer.nvme_path = dir.path;
    off.offload_optimizer.buffer_count = 2;
    off.offload_param.device = c.params;
    off.offload_param.nvme_path = dir.path;
    auto run = [&](const ZeroConfig& z) {
      auto ops = make_cpu_ops();
      auto comm = multi_rank ? make_mpi_communicator(*ops) : make_single_communicator(*ops);
      return train(z, *comm, *ops);
    };
    const RunResult want = run(base), got = run(off);
    const int W = multi_rank ? []() {
      int w = 1;
      MPI_Comm_size(MPI_COMM_WORLD, &w);
      return w;
    }()
                             : 1;
    INFO("stage " << c.stage << ", offload_optimizer " << c.optimizer << ", offload_param "
                  << c.params << ", W " << W);
    bool ok = want.losses == got.losses && same_bits(want.master, got.master) &&
              same_bits(want.state, got.state);
    CHECK(all_ranks(ok));
    // Memory: the device drops by exactly what the placement moves off it;
    // host and files hold what it says (stage 3's persistent bytes cancel).
    const ModelStatesPlacement pb = model_states_placement(base, want.padded, W, DType::F32, 0);
    const ModelStatesPlacement po = model_states_placement(off, got.padded, W, DType::F32, 0);
    const bool mem_ok =
        want.model_states - got.model_states == pb.device.total() - po.device.total() &&
        got.host_states == po.host.total() && got.nvme_states == po.nvme.total() &&
        po.device.total() < pb.device.total() && (po.host.total() + po.nvme.total()) > 0;
    INFO("device " << want.model_states << " -> " << got.model_states << ", host "
                   << got.host_states << " (formula " << po.host.total() << "), nvme "
                   << got.nvme_states << " (formula " << po.nvme.total() << ")");
    CHECK(all_ranks(mem_ok));
    // NVMe parameters: once the trace is complete, gathers find pieces read ahead.
    INFO("parameter bytes read ahead " << got.param_read_ahead);
    CHECK(all_ranks((c.params == "nvme") == (got.param_read_ahead > 0)));
    // Every engine reports each owned gradient element once, before the step
    // (stages 2 and 3 during the last backward), so the step copies nothing.
    if (c.optimizer != "none") {
      INFO("gradient bytes to the host early " << got.grad_copies.early << ", at the step "
                                               << got.grad_copies.at_step << ", owned "
                                               << got.owned * 4);
      CHECK(all_ranks(got.grad_copies.early == got.owned * 4 && got.grad_copies.at_step == 0));
    }
    // Offload files are removed with the engine.
    CHECK(all_ranks(std::filesystem::is_empty(dir.path)));
  }
}

TEST_CASE("offloaded optimizer (cpu, nvme) and stage-3 parameters are bit-identical, one rank",
          "[offload]") {
  check_offload_bit_identical(false);
}

TEST_CASE("offloaded runs are bit-identical to the in-memory optimizer across W ranks", "[mpi]") {
  check_offload_bit_identical(true);
}

// An engine dropped after its last backward (gradients reported, no step)
// leaves no copy behind: the next engine on the same backend trains exactly as
// one on a fresh backend (under ASan a stale copy into freed buffers fails).
TEST_CASE("an engine freed with gradient copies in flight settles them first", "[offload]") {
  TestDir dir("zt_offload");
  for (int stage = 0; stage <= 3; stage++) {
    ZeroConfig z;
    z.stage = stage;
    z.sub_group_size = 3001;
    z.offload_optimizer.device = "cpu";
    const ParamTable table(tiny_model());
    auto ops = make_cpu_ops();
    auto comm = make_single_communicator(*ops);
    {
      auto engine = make_zero_engine(setup_for(z, table), table, *ops, *comm);
      std::vector<float> w(table.total());
      init_gpt2_weights(table, 7, w.data());
      engine->init_weights(w.data());
      GPT model(table, *ops, kB, kT);
      std::vector<int> in(kB * kT), tgt(kB * kT);
      sequence(0, in.data(), tgt.data(), table.config().vocab_size);
      engine->begin_micro_step(0, 1);
      model.forward_backward(in.data(), tgt.data(), 1.0f / kT, *engine);
      engine->end_micro_step();
    }
    auto fresh_ops = make_cpu_ops();
    auto fresh_comm = make_single_communicator(*fresh_ops);
    const RunResult after = train(z, *comm, *ops), fresh = train(z, *fresh_comm, *fresh_ops);
    INFO("stage " << stage);
    CHECK(after.losses == fresh.losses);
    CHECK(same_bits(after.state, fresh.state));
  }
}

TEST_CASE("checkpoint state round-trips through offloaded optimizers bit for bit", "[offload]") {
  std::mt19937_64 rng(test_seed());
  TestDir dir("zt_offload");
  const ParamTable table(tiny_model());
  std::vector<float> w(table.total());
  init_gpt2_weights(table, 11, w.data());
  auto ops = make_cpu_ops();
  auto comm = make_single_communicator(*ops);
  std::vector<float> master, m, v;
  for (const char* device : {"none", "nvme", "cpu", "nvme"}) {
    ZeroConfig z;
    z.stage = 2;
    z.sub_group_size = 1000;
    z.offload_optimizer.device = device;
    z.offload_optimizer.nvme_path = dir.path;
    z.offload_optimizer.buffer_count = 3;
    auto engine = make_zero_engine(setup_for(z, table), table, *ops, *comm);
    engine->init_weights(w.data());
    if (master.empty()) {  // random state, as after some steps (v >= 0)
      engine->optimizer().save_state(master, m, v);
      AdamInputs r = random_inputs(master.size(), rng);
      m = r.m;
      v = r.v;
      for (size_t i = 0; i < master.size(); i++) master[i] += r.master[i] * 1e-3f;
    }
    engine->optimizer().load_state(master, m, v);
    engine->refresh_params_from_master();
    std::vector<float> m2, v2, master2;
    engine->optimizer().save_state(master2, m2, v2);
    INFO("offload_optimizer.device " << device);
    CHECK(same_bits(master, master2));
    CHECK(same_bits(m, m2));
    CHECK(same_bits(v, v2));
    CHECK(same_bits(engine->gather_master(*ops, *comm, table.total()), [&] {
      std::vector<float> full(table.total());
      for (const OptimPiece& p : engine->optimizer().pieces())
        std::copy(master.begin() + p.shard_offset, master.begin() + p.shard_offset + p.n,
                  full.begin() + p.flat_begin);
      return full;
    }()));
  }
}

TEST_CASE("host AdamW throughput (elements/s) against the CPU backend's adamw", "[.bench]") {
  const size_t n = size_t(1) << 22;
  const int iters = 20;
  std::mt19937_64 rng(1);
  AdamInputs in = random_inputs(n, rng);
  std::vector<float> param(n);
  const AdamWArgs a{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  auto rate = [&](const std::function<void()>& step) {
    step();  // warm: pages touched, threads started
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++) step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return n * static_cast<double>(iters) / s;
  };
  auto ops = make_cpu_ops();
  std::printf("adamw on %zu fp32 elements, %d steps each (master, m, v, param written)\n", n,
              iters);
  std::printf("  cpu::adamw (ops.adamw, in-memory optimizer): %.3g elements/s\n", rate([&] {
                ops->adamw(param.data(), in.master.data(), in.grad.data(), in.m.data(), in.v.data(),
                           n, a);
              }));
  for (int threads : {1, 2}) {
    HostAdamW host(threads);
    std::printf(
        "  host AdamW, %d thread%s: %.3g elements/s\n", threads, threads == 1 ? "" : "s", rate([&] {
          host.step(in.master.data(), in.grad.data(), in.m.data(), in.v.data(), param.data(), n, a);
        }));
  }
}

}  // namespace
}  // namespace zt
