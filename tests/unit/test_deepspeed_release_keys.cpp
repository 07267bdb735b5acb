// The per-release key table (train/deepspeed/deepspeed_release_keys.h). Each expectation was
// read by hand from the DeepSpeed sdists (runtime/zero/config.py, zero/offload_config.py,
// runtime/constants.py, runtime/config.py) and, for releases missing from the cache, the
// release tags of DeepSpeed's repository.
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"
#include "train/deepspeed/deepspeed_import.h"
#include "train/deepspeed/deepspeed_release_keys.h"

namespace zt {
namespace {

std::vector<std::string> lines_for(const std::string& json, DeepSpeedRelease release) {
  std::vector<std::string> out;
  for (const ReleaseKeyWarning& w :
       warnings_for_release(parse_json(json, "ds.json", JsonDialect::Hjson), release))
    out.push_back(std::to_string(w.line) + " " + w.key + ": " + w.text);
  return out;
}

}  // namespace

TEST_CASE("a key a release does not have: added in, removed in", "[deepspeed][release_keys]") {
  const std::string multi =
      "{\"gradient_clipping\": 1, \"zero_optimization\": {\"stage\": 2,\n"
      "\"use_multi_rank_bucket_allreduce\": false}}";
  REQUIRE(lines_for(multi, {0, 12, 3}) ==
          std::vector<std::string>{
              "2 zero_optimization.use_multi_rank_bucket_allreduce: not a key of DeepSpeed 0.12.3 "
              "(added in 0.12.4); DeepSpeed 0.12.3 refuses it"});
  REQUIRE(lines_for(multi, {0, 12, 4}).empty());
  REQUIRE(lines_for(multi, {0, 19, 2}).empty());

  // gradient_clipping set: its default changed in 0.19.3 (next test case).
  const std::string mics =
      R"({"gradient_clipping": 1, "zero_optimization": {"stage": 3, "mics_shard_size": 2}})";
  REQUIRE(lines_for(mics, {0, 9, 1}) ==
          std::vector<std::string>{"1 zero_optimization.mics_shard_size: not a key of DeepSpeed "
                                   "0.9.1 (added in 0.9.2); DeepSpeed 0.9.1 refuses it"});
  REQUIRE(lines_for(mics, {0, 19, 6}).empty());
  REQUIRE(lines_for(mics, {0, 19, 7}) ==
          std::vector<std::string>{"1 zero_optimization.mics_shard_size: not a key of DeepSpeed "
                                   "0.19.7 (removed in 0.19.7); DeepSpeed 0.19.7 refuses it"});
  // ZeRO++ (0.10.0), the stage3_ alias as well as the field name (0.14.3), offload keys.
  REQUIRE(lines_for(R"({"zero_optimization": {"zero_hpz_partition_size": 8}})", {0, 9, 5}).size() ==
          1);
  REQUIRE(
      lines_for(R"({"zero_optimization": {"zero_hpz_partition_size": 8}})", {0, 10, 0}).empty());
  REQUIRE(lines_for(R"({"zero_optimization": {"stage3_use_all_reduce_for_fetch_params": true}})",
                    {0, 14, 2})
              .size() == 1);
  REQUIRE(lines_for(R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
                        "pin_memory": true, "super_offload": true}}})",
                    {0, 17, 6}) ==
          std::vector<std::string>{
              "2 zero_optimization.offload_optimizer.super_offload: not a key of DeepSpeed 0.17.6 "
              "(added in 0.18.0); DeepSpeed 0.17.6 refuses it"});
  REQUIRE(
      lines_for(R"({"gradient_clipping": 1, "zero_optimization": {"compute_grad_norm": false}})",
                {0, 19, 6})
          .size() == 1);
  // Top-level features DeepSpeed removed and refuses by name.
  REQUIRE(lines_for(R"({"gradient_clipping": 1, "amp": {"enabled": true}})", {0, 19, 7}).empty());
  REQUIRE(
      lines_for(R"({"gradient_clipping": 1, "amp": {"enabled": true}})", {0, 19, 8}) ==
      std::vector<std::string>{
          "1 amp: not a key of DeepSpeed 0.19.8 (removed in 0.19.8); DeepSpeed 0.19.8 refuses it"});
}

TEST_CASE("a default a release changed, for keys the ds_config leaves to it",
          "[deepspeed][release_keys]") {
  // gradient_clipping: 0 until 0.19.2, 1.0 from 0.19.3.
  REQUIRE(lines_for("{}", {0, 19, 2}).empty());
  REQUIRE(lines_for("{}", {0, 19, 3}) ==
          std::vector<std::string>{"1 gradient_clipping: left to its default, which in DeepSpeed "
                                   "0.19.3 is 1.0 (0 before 0.19.3); zerotrain applies 1.0"});
  REQUIRE(lines_for(R"({"gradient_clipping": 0})", {0, 19, 8}).empty());
  // offload pin_memory: false until 0.19.4, true from 0.19.5; "auto" is dropped (pydantic).
  const std::string cpu =
      "{\"gradient_clipping\": 1,\n \"zero_optimization\": {\"stage\": 2,\n"
      "  \"offload_optimizer\": {\"device\": \"cpu\"}}}";
  REQUIRE(lines_for(cpu, {0, 19, 4}).empty());
  REQUIRE(lines_for(cpu, {0, 19, 5}) ==
          std::vector<std::string>{
              "3 zero_optimization.offload_optimizer.pin_memory: left to its default, which in "
              "DeepSpeed 0.19.5 is true (false before 0.19.5); zerotrain applies true"});
  REQUIRE(lines_for(R"({"gradient_clipping": 1, "zero_optimization": {"offload_param":
                        {"device": "cpu", "pin_memory": "auto"}}})",
                    {0, 19, 5})
              .size() == 1);
  REQUIRE(lines_for(R"({"gradient_clipping": 1, "zero_optimization": {"offload_param":
                        {"device": "cpu", "pin_memory": false}}})",
                    {0, 19, 5})
              .empty());
}

// The import applies the chosen release's default where the file leaves the key unset:
// runtime/constants.py GRADIENT_CLIPPING_DEFAULT is 0. in 0.14.4 and 1.0 in 0.19.8 (changed in
// 0.19.3); zero/offload_config.py's pin_memory is False in 0.14.4 and True in 0.19.8 (changed
// in 0.19.5), in both offload blocks. A value the file sets is kept.
TEST_CASE("the import takes gradient_clipping and pin_memory defaults from the release",
          "[deepspeed][release_keys]") {
  auto imported = [](const std::string& json, DeepSpeedRelease release) {
    TestFile file(json, "ds_config.json");
    Config c;
    c.train.grad_clip = 7;  // the YAML's value never survives the import
    std::vector<std::string> warnings;
    apply_deepspeed_config(file.path, c, warnings, 1, nullptr, release);
    return c;
  };
  const std::string none = R"({"zero_optimization": {"stage": 2}})";
  CHECK(imported(none, {0, 14, 4}).train.grad_clip == 0.0);
  CHECK(imported(none, {0, 19, 2}).train.grad_clip == 0.0);
  CHECK(imported(none, {0, 19, 3}).train.grad_clip == 1.0);
  CHECK(imported(none, {0, 19, 8}).train.grad_clip == 1.0);
  CHECK(imported(R"({"gradient_clipping": 0})", {0, 19, 8}).train.grad_clip == 0.0);
  CHECK(imported(R"({"gradient_clipping": 0.5})", {0, 14, 4}).train.grad_clip == 0.5);

  const std::string offload =
      R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
          "offload_param": {"device": "cpu"}}})";
  for (const DeepSpeedRelease& r : {DeepSpeedRelease{0, 14, 4}, DeepSpeedRelease{0, 19, 4}}) {
    INFO(r.str());
    CHECK_FALSE(imported(offload, r).zero.offload_optimizer.pin_memory);
    CHECK_FALSE(imported(offload, r).zero.offload_param.pin_memory);
  }
  for (const DeepSpeedRelease& r : {DeepSpeedRelease{0, 19, 5}, DeepSpeedRelease{0, 19, 8}}) {
    INFO(r.str());
    CHECK(imported(offload, r).zero.offload_optimizer.pin_memory);
    CHECK(imported(offload, r).zero.offload_param.pin_memory);
  }
  CHECK_FALSE(imported(R"({"zero_optimization": {"stage": 3, "offload_optimizer":
                           {"device": "cpu", "pin_memory": false}}})",
                       {0, 19, 8})
                  .zero.offload_optimizer.pin_memory);
  // "auto" is dropped by DeepSpeed's config classes: the release's default.
  const std::string pin_auto = R"({"zero_optimization": {"stage": 3, "offload_param":
                                   {"device": "cpu", "pin_memory": "auto"}}})";
  CHECK_FALSE(imported(pin_auto, {0, 19, 4}).zero.offload_param.pin_memory);
  CHECK(imported(pin_auto, {0, 19, 5}).zero.offload_param.pin_memory);
  CHECK(imported(R"({"zero_optimization": {"stage": 3, "offload_optimizer":
                     {"device": "cpu", "pin_memory": true}}})",
                 {0, 14, 4})
            .zero.offload_optimizer.pin_memory);
}

TEST_CASE("releases outside the table and precision \"auto\"", "[deepspeed][release_keys]") {
  REQUIRE(lines_for("{}", {0, 7, 0}) ==
          std::vector<std::string>{
              "1 : keys not checked against DeepSpeed 0.7.0: the key table covers 0.8.3-0.19.8"});
  REQUIRE(lines_for("{}", {0, 20, 0}).size() == 1);
  REQUIRE(deepspeed_precision_auto_is_on({0, 17, 0}));
  REQUIRE_FALSE(deepspeed_precision_auto_is_on({0, 17, 1}));
}

TEST_CASE("the import prints the release's key warnings, file and line first",
          "[deepspeed][release_keys]") {
  TestFile file(
      "{\"zero_optimization\": {\"stage\": 2,\n \"use_multi_rank_bucket_allreduce\": "
      "false, \"compute_grad_norm\": true}}",
      "ds_config.json");
  Config c;
  std::vector<std::string> warnings;
  apply_deepspeed_config(file.path, c, warnings, 1, nullptr, {0, 12, 3});
  auto has = [&](const std::string& line) {
    return std::find(warnings.begin(), warnings.end(), line) != warnings.end();
  };
  REQUIRE(has(file.path +
              ":2: key 'zero_optimization.use_multi_rank_bucket_allreduce': not a key of "
              "DeepSpeed 0.12.3 (added in 0.12.4); DeepSpeed 0.12.3 refuses it"));
  REQUIRE(has(file.path +
              ":2: key 'zero_optimization.compute_grad_norm': not a key of DeepSpeed 0.12.3 "
              "(added in 0.19.7); DeepSpeed 0.12.3 refuses it"));
  REQUIRE_FALSE(c.zero.use_multi_rank_bucket_allreduce);  // imported all the same
}

// "pin_memory": null is not "left to its default": DeepSpeed's offload blocks declare pin_memory
// a plain bool, and pydantic refuses None for it (run on 0.10.3, 0.14.4 and 0.19.8's
// DeepSpeedZeroOffloadOptimizerConfig: "Input should be a valid boolean" / "none is not an
// allowed value"). So no default warning, and the import refuses it in one line.
TEST_CASE("pin_memory: null is refused as DeepSpeed refuses it, not defaulted",
          "[deepspeed][release_keys]") {
  for (const char* block : {"offload_optimizer", "offload_param"}) {
    INFO(block);
    const std::string json =
        std::string(R"({"gradient_clipping": 1, "zero_optimization": {"stage": 3, ")") + block +
        R"(": {"device": "cpu", "pin_memory": null}}})";
    CHECK(lines_for(json, {0, 19, 5}).empty());
    for (const DeepSpeedRelease& r : {DeepSpeedRelease{0, 14, 4}, DeepSpeedRelease{0, 19, 8}}) {
      TestFile file(json, "ds_config.json");
      Config c;
      std::vector<std::string> warnings;
      const std::string m = error_of<ConfigError>(
          [&] { apply_deepspeed_config(file.path, c, warnings, 1, nullptr, r); });
      INFO(m);
      CHECK(m.find(std::string("zero_optimization.") + block + ".pin_memory") != std::string::npos);
      CHECK(m.find("refuses null") != std::string::npos);
      CHECK(m.find('\n') == std::string::npos);
    }
  }
}

}  // namespace zt
