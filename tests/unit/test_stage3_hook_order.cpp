// DeepSpeed's stage-3 hook order (zero/schedule/stage3_hook_order.h): which
// gradients swap from 0.19.4 on, and the engine's hand-on in that order.
#include <string>
#include <vector>

#include "model/gpt.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "zero/schedule/deepspeed_behaviours.h"
#include "zero/schedule/stage3_hook_order.h"
#include "zero/stages/engine.h"

using namespace zt;

namespace {

std::vector<std::string> names(const ParamTable& t, const std::vector<int>& order) {
  std::vector<std::string> out;
  for (int p : order) out.push_back(t.params()[p].name);
  return out;
}

}  // namespace

TEST_CASE("stage 3's hooks see each Linear's weight before its bias from DeepSpeed 0.19.4",
          "[expected]") {
  const ParamTable t(gpt_shape(1, 2, 8, 11, 4));
  const std::vector<int> model = grad_ready_order(GPT::training_events(t, Recompute::None));
  // The model's own order: a Linear's bias, then its weight; LayerNorms weight first.
  const std::vector<std::string> bias_first = {"ln_f.weight",          "ln_f.bias",
                                               "h.0.mlp.c_proj.bias",  "h.0.mlp.c_proj.weight",
                                               "h.0.mlp.c_fc.bias",    "h.0.mlp.c_fc.weight",
                                               "h.0.ln_2.weight",      "h.0.ln_2.bias",
                                               "h.0.attn.c_proj.bias", "h.0.attn.c_proj.weight",
                                               "h.0.attn.c_attn.bias", "h.0.attn.c_attn.weight",
                                               "h.0.ln_1.weight",      "h.0.ln_1.bias",
                                               "wpe.weight",           "wte.weight"};
  REQUIRE(names(t, model) == bias_first);
  CHECK(stage3_hook_order(model, t, false) == model);
  std::vector<std::string> weight_first = bias_first;
  for (size_t i : {2u, 4u, 8u, 10u}) std::swap(weight_first[i], weight_first[i + 1]);
  CHECK(names(t, stage3_hook_order(model, t, true)) == weight_first);

  CHECK_FALSE(deepspeed_behaviours(DeepSpeedRelease{0, 19, 3}).stage3_linear_weight_grad_first);
  CHECK(deepspeed_behaviours(DeepSpeedRelease{0, 19, 4}).stage3_linear_weight_grad_first);
}

TEST_CASE("gradients ready out of the scheduled order are held until their turn", "[expected]") {
  ReadyInOrder in_order({3, 1, 0, 2}, 4);
  for (int pass = 0; pass < 2; pass++) {
    in_order.begin();
    std::vector<int> handed;
    auto hand_on = [&](int q) { handed.push_back(q); };
    in_order.ready(1, hand_on);
    CHECK(handed.empty());
    in_order.ready(3, hand_on);
    CHECK(handed == std::vector<int>{3, 1});
    in_order.ready(2, hand_on);
    CHECK(handed == std::vector<int>{3, 1});
    in_order.ready(0, hand_on);
    CHECK(handed == std::vector<int>{3, 1, 0, 2});
  }
}
