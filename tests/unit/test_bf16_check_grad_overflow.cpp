// bf16.check_grad_overflow (zero.bf16_check_grad_overflow): which stages of which release
// issue the overflow check for each setting, the import of the ds_config key, and the refusal
// of a setting in a release without the key. Expected calls written from DeepSpeed's source:
// the key exists from 0.17.1 (default false; true from 0.19.3), engine.py's
// _configure_zero_optimizer hands it to DeepSpeedZeroOptimizer (stages 1/2) when bf16 is on,
// whose step() all-reduces one uint8 when it is set; stage 3 checks fp16 only (0.17.5, 0.19.8).
#include <string>

#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "train/config/config.h"
#include "train/deepspeed/deepspeed_import.h"
#include "zero/schedule/deepspeed_behaviours.h"
#include "zero/schedule/stage012_schedule.h"
#include "zero/schedule/stage3_schedule.h"

namespace zt {
namespace {

// The step's uint8 all-reduces of one element on the hand-sized model (W = 2): the overflow
// check's signature, counted over the whole step so that a misplaced one is seen too.
int overflow_calls(const std::string& release, const std::string& setting, int stage, DType dtype) {
  const ParamTable table(hand_sized_shape());
  ZeroConfig z;
  z.stage = stage;
  z.deepspeed_version = parse_deepspeed_release(release);
  z.bf16_check_grad_overflow = setting;
  resolve_overlap_default(z);
  const std::vector<StepCall> step =
      stage == 3 ? Stage3Schedule(setup_for(z, table, "one"), table, 2, dtype).before_norms
                 : make_stage012_schedule(setup_for(z, table, "one"), table, 2, dtype).step;
  int n = 0;
  for (const StepCall& c : step)
    if (c.primitive == Primitive::AllReduce && c.dtype == DType::U8 && c.count == 1) n++;
  return n;
}

Config imported(const std::string& json, const char* release, std::vector<std::string>& warnings) {
  TestFile file(json, "ds_config.json");
  Config c;
  apply_deepspeed_config(file.path, c, warnings, 2, nullptr, parse_deepspeed_release(release));
  return c;
}

}  // namespace

TEST_CASE("bf16 overflow check per release, setting and stage", "[deepspeed_release][overflow]") {
  struct Case {
    const char* release;
    const char* setting;
    int stage1, stage2, stage3;  // uint8 all-reduces in one step
  };
  for (const Case& c : {
           // 0.17.1-0.19.2: the key defaults to false; true turns the check on at stages 1/2.
           Case{"0.17.1", "auto", 0, 0, 0},
           Case{"0.17.5", "true", 1, 1, 0},
           Case{"0.19.2", "auto", 0, 0, 0},
           Case{"0.19.2", "true", 1, 1, 0},
           Case{"0.19.2", "false", 0, 0, 0},
           // From 0.19.3 the default is true; false turns the check off.
           Case{"0.19.3", "auto", 1, 1, 0},
           Case{"0.19.8", "auto", 1, 1, 0},
           Case{"0.19.8", "true", 1, 1, 0},
           Case{"0.19.8", "false", 0, 0, 0},
           // Before the key, bf16 follows the release alone: on at stages 1-3 up to 0.11.1.
           Case{"0.11.1", "auto", 1, 1, 1},
           Case{"0.14.4", "auto", 0, 0, 0},
       }) {
    INFO(c.release << " " << c.setting);
    CHECK(overflow_calls(c.release, c.setting, 0, DType::BF16) == 0);
    CHECK(overflow_calls(c.release, c.setting, 1, DType::BF16) == c.stage1);
    CHECK(overflow_calls(c.release, c.setting, 2, DType::BF16) == c.stage2);
    CHECK(overflow_calls(c.release, c.setting, 3, DType::BF16) == c.stage3);
  }
  // fp32 training: DeepSpeed passes check_grad_overflow = False whatever the bf16 block says.
  for (const char* setting : {"auto", "true", "false"})
    for (int stage : {1, 2, 3}) {
      INFO(setting << " stage " << stage);
      CHECK(overflow_calls("0.19.8", setting, stage, DType::F32) == 0);
    }
}

TEST_CASE("bf16.check_grad_overflow in a ds_config sets zero.bf16_check_grad_overflow",
          "[deepspeed][overflow]") {
  const std::string off =
      R"({"bf16": {"enabled": true, "check_grad_overflow": false}, "zero_optimization": {"stage": 2}})";
  const std::string on =
      R"({"bf16": {"enabled": true, "check_grad_overflow": true}, "zero_optimization": {"stage": 1}})";
  std::vector<std::string> warnings;
  CHECK(imported(off, "0.19.8", warnings).zero.bf16_check_grad_overflow == "false");
  CHECK(imported(on, "0.19.2", warnings).zero.bf16_check_grad_overflow == "true");
  CHECK(imported(on, "0.17.1", warnings).zero.bf16_check_grad_overflow == "true");
  for (const std::string& w : warnings) CHECK(w.find("check_grad_overflow") == std::string::npos);

  // "auto" is dropped by DeepSpeed's pydantic model: the release's default.
  warnings.clear();
  CHECK(
      imported(R"({"bf16": {"enabled": true, "check_grad_overflow": "auto"}})", "0.19.8", warnings)
          .zero.bf16_check_grad_overflow == "auto");

  // Before 0.17.1 the bf16 block is a plain dict: the key is ignored, with a warning.
  warnings.clear();
  const Config old = imported(on, "0.17.0", warnings);
  CHECK(old.zero.bf16_check_grad_overflow == "auto");
  REQUIRE(warnings.size() >= 1);
  bool named = false;
  for (const std::string& w : warnings)
    named |= w.find("bf16.check_grad_overflow") != std::string::npos &&
             w.find("added in 0.17.1") != std::string::npos;
  CHECK(named);

  // null: pydantic refuses it for a bool field.
  TestFile bad(R"({"bf16": {"enabled": true, "check_grad_overflow": null}})", "ds_config.json");
  Config c;
  warnings.clear();
  const std::string message = error_of<ConfigError>([&] {
    apply_deepspeed_config(bad.path, c, warnings, 2, nullptr, DeepSpeedRelease{0, 19, 8});
  });
  INFO(message);
  CHECK(message.find("bf16.check_grad_overflow") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("zero.bf16_check_grad_overflow: auto, true or false, and only where the release has it",
          "[deepspeed_release][overflow]") {
  const TestFile yaml("zero:\n  stage: 2\n", "c.yaml");
  CHECK(load_config(yaml.path, {}).zero.bf16_check_grad_overflow == "auto");
  CHECK(load_config(yaml.path, {"zero.bf16_check_grad_overflow=false"})
            .zero.bf16_check_grad_overflow == "false");
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"zero.bf16_check_grad_overflow=maybe"},
        std::vector<std::string>{"zero.bf16_check_grad_overflow=true",
                                 "zero.deepspeed_version=0.14.4"}}) {
    const std::string m = error_of<ConfigError>([&] { load_config(yaml.path, sets); });
    INFO(m);
    CHECK(m.find("zero.bf16_check_grad_overflow") != std::string::npos);
    CHECK(m.find('\n') == std::string::npos);
  }
  CHECK(load_config(yaml.path,
                    {"zero.bf16_check_grad_overflow=true", "zero.deepspeed_version=0.17.1"})
            .zero.bf16_check_grad_overflow == "true");
}

}  // namespace zt
