// The DeepSpeed "optimizer" and "scheduler" blocks, mapped onto train.* where zerotrain runs
// the same arithmetic (see deepspeed_import.h and train/loop/lr_schedule.h).
#include <cctype>
#include <cmath>

#include "train/config/config_schema.h"
#include "train/deepspeed/deepspeed_import_context.h"

namespace zt {
namespace {

std::string lowercase(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

void import_optimizer(DsContext& ctx, const JsonMember* block) {
  if (!block) return;  // deepspeed.initialize's client optimizer: train.* as configured
  const JsonValue& v = ctx.require_object(block->value[0], block->line, block->key);
  const JsonValue* type = v.find("type");
  if (!type || type->kind == JsonValue::Kind::null) return;
  const std::string name = lowercase(type->text);
  const JsonValue* params = v.find("params");
  for (const JsonMember& m : v.members)
    if (m.key != "type" && m.key != "params")
      ctx.warn(m.line, "optimizer." + m.key, "not honoured by zerotrain, ignored");
  if (name != "adam" && name != "adamw") {
    ctx.warn(type->line, "optimizer.type",
             "'" + type->text +
                 "' is not honoured: zerotrain always runs AdamW with train.lr, "
                 "beta1, beta2, eps and weight_decay, which keep their values");
    return;
  }
  if (params) ctx.require_object(*params, type->line, "optimizer.params");
  auto param = [&](const char* key) { return params ? params->find(key) : nullptr; };
  // "auto" here has no Trainer rule: trainer_auto refuses it.
  auto flag = [&](const char* name, bool absent) {
    const JsonValue* v = param(name);
    const std::string key = std::string("optimizer.params.") + name;
    if (v && v->is_string("auto")) ctx.trainer_auto(v->line, key);
    return v ? ctx.read_bool(*v, v->line, key) : absent;
  };
  const bool torch_adam = flag("torch_adam", false), adam_w_mode = flag("adam_w_mode", true);
  const bool decoupled = name == "adamw" || adam_w_mode;

  // Absent parameters take the defaults of the optimizer DeepSpeed builds: FusedAdam (and
  // DeepSpeedCPUAdam) lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0; torch_adam
  // builds torch.optim.AdamW, whose weight_decay defaults to 0.01.
  TrainConfig& t = ctx.c.train;
  t.lr = 1e-3, t.beta1 = 0.9, t.beta2 = 0.999, t.eps = 1e-8;
  t.weight_decay = torch_adam && decoupled ? 0.01 : 0.0;
  if (!params) return;
  for (const JsonMember& m : params->members) {
    const std::string key = "optimizer.params." + m.key;
    const JsonValue& value = m.value[0];
    if (value.is_string("auto")) {  // the Trainer's arguments, or refused (DsContext)
      const std::vector<double> filled = ctx.trainer_auto(m.line, key).numbers;
      if (m.key == "lr") t.lr = filled[0];
      else if (m.key == "betas") t.beta1 = filled[0], t.beta2 = filled[1];
      else if (m.key == "eps") t.eps = filled[0];
      else t.weight_decay = filled[0];
      continue;
    }
    if (m.key == "lr") {
      t.lr = ctx.read_number(value, m.line, key, 0, true);
    } else if (m.key == "betas") {
      if (value.kind != JsonValue::Kind::array || value.items.size() != 2)
        ctx.fail(m.line, key, "expected [beta1, beta2], got " + describe_json(value));
      double b[2];
      for (int i = 0; i < 2; i++) {
        b[i] = ctx.read_number(value.items[i], m.line, key, 0);
        if (b[i] >= 1)
          ctx.fail(m.line, key, "expected betas in [0, 1), got " + value.items[i].text);
      }
      t.beta1 = b[0], t.beta2 = b[1];
    } else if (m.key == "eps") {
      t.eps = ctx.read_number(value, m.line, key, 0, true);
    } else if (m.key == "weight_decay") {
      t.weight_decay = ctx.read_number(value, m.line, key, 0);
    } else if (m.key == "torch_adam") {
      // An implementation choice; the arithmetic is AdamW's either way.
    } else if (m.key == "adam_w_mode") {
      if (!decoupled)
        ctx.warn(m.line, key,
                 "Adam with L2 regularisation (adam_w_mode: false) is not honoured: zerotrain "
                 "runs AdamW (decoupled weight decay)");
    } else if (m.key == "max_grad_norm") {
      ctx.fail(m.line, key,
               "DeepSpeed refuses max_grad_norm as an optimizer parameter; use the top-level "
               "gradient_clipping");
    } else if (m.key == "bias_correction" && ctx.read_bool(value, m.line, key)) {
      // true is what zerotrain does
    } else if ((m.key == "amsgrad" || m.key == "maximize") && !ctx.read_bool(value, m.line, key)) {
      // false is what zerotrain does
    } else {
      ctx.warn(m.line, key, "not honoured by zerotrain, ignored");
    }
  }
}

void import_scheduler(DsContext& ctx, const JsonMember* block, bool has_optimizer) {
  TrainConfig& t = ctx.c.train;
  if (!block) {
    // deepspeed.initialize with a DeepSpeed optimizer and no scheduler keeps its lr; the HF
    // Trainer builds its own scheduler from its arguments (zerotrain's train.*).
    if (has_optimizer && !ctx.hf()) t.lr_schedule = "constant";
    return;
  }
  const JsonValue& v = ctx.require_object(block->value[0], block->line, block->key);
  const JsonValue* type = v.find("type");
  if (!type || type->kind == JsonValue::Kind::null) return;
  const std::string& name = type->text;
  for (const JsonMember& m : v.members)
    if (m.key != "type" && m.key != "params")
      ctx.warn(m.line, "scheduler." + m.key, "not honoured by zerotrain, ignored");
  const bool warmup = name == "WarmupLR", decay = name == "WarmupDecayLR",
             cosine = name == "WarmupCosineLR";
  if (!warmup && !decay && !cosine) {
    ctx.warn(type->line, "scheduler.type",
             "'" + name +
                 "' is not honoured (zerotrain has DeepSpeed's WarmupLR, WarmupDecayLR "
                 "and WarmupCosineLR); the schedule stays train.lr_schedule = " +
                 t.lr_schedule);
    return;
  }
  const JsonValue* params = v.find("params");
  if (params) ctx.require_object(*params, type->line, "scheduler.params");
  // DeepSpeed's defaults (lr_schedules.py); warmup_max_lr of WarmupLR is the optimizer's lr.
  double min_lr = 0, max_lr = warmup ? t.lr : 1e-3, min_ratio = 0, cos_min_ratio = 1e-4;
  int64_t warmup_steps = 1000, total = -1;
  std::string warmup_type = "log";
  int total_line = type->line;
  for (const JsonMember& m : params ? params->members : std::vector<JsonMember>{}) {
    const std::string key = "scheduler.params." + m.key;
    const JsonValue& value = m.value[0];
    // "auto": the Trainer's arguments, or refused (DsContext); a parameter the type does not
    // take is refused as such, "auto" or not.
    const bool automatic = value.is_string("auto");
    auto number = [&](double min, bool exclusive) {
      return automatic ? ctx.trainer_auto(m.line, key).numbers[0]
                       : ctx.read_number(value, m.line, key, min, exclusive);
    };
    auto integer = [&](int64_t min) {
      return automatic ? int64_t(ctx.trainer_auto(m.line, key).numbers[0])
                       : ctx.read_int(value, m.line, key, min);
    };
    if (m.key == "warmup_min_lr" && !cosine) {
      min_lr = number(0, false);
    } else if (m.key == "warmup_max_lr" && !cosine) {
      max_lr = number(0, true);
    } else if (m.key == "warmup_num_steps") {
      warmup_steps = integer(1);
      if (warmup_steps > INT32_MAX) ctx.fail(m.line, key, "expected at most 2147483647 steps");
    } else if (m.key == "total_num_steps" && !warmup) {
      total = integer(1);
      total_line = m.line;
    } else if (automatic &&
               (m.key == "warmup_type" || m.key == "last_batch_iteration" ||
                (cosine && (m.key == "warmup_min_ratio" || m.key == "cos_min_ratio")))) {
      ctx.trainer_auto(m.line, key);  // a parameter the Trainer has no rule for: refused
    } else if (m.key == "warmup_type") {
      warmup_type = value.text;
      if (warmup_type != "log" && warmup_type != "linear") {
        ctx.warn(m.line, key,
                 "DeepSpeed takes an unknown warmup_type as 'log', and so does zerotrain");
        warmup_type = "log";
      }
    } else if (m.key == "warmup_min_ratio" && cosine) {
      min_ratio = ctx.read_number(value, m.line, key, 0);
    } else if (m.key == "cos_min_ratio" && cosine) {
      cos_min_ratio = ctx.read_number(value, m.line, key, 0);
    } else if (m.key == "last_batch_iteration") {
      ctx.warn(m.line, key,
               "not honoured (zerotrain's schedule starts at step 0, or at the "
               "step it resumes from), ignored");
    } else {
      ctx.fail(m.line, key, "DeepSpeed's " + name + " takes no such parameter");
    }
  }
  if (total < 0 && !warmup)
    ctx.fail(type->line, "scheduler.params.total_num_steps",
             "DeepSpeed's " + name + " needs total_num_steps");
  if (total >= 0 && total != t.steps)
    ctx.warn(total_line, "scheduler.params.total_num_steps",
             "zerotrain's schedule spans train.steps = " + std::to_string(t.steps) +
                 ", DeepSpeed's " + std::to_string(total) +
                 " steps; set train.steps=" + std::to_string(total) + " for the same schedule");
  t.warmup_steps = int(warmup_steps);
  t.warmup_type = warmup_type;
  if (cosine) {
    t.lr_schedule = "warmup_cosine_lr";
    t.warmup_start_lr = min_ratio * t.lr;
    t.min_lr = cos_min_ratio * t.lr;
  } else {
    t.lr_schedule = warmup ? "warmup_lr" : "warmup_decay_lr";
    t.lr = max_lr;
    t.min_lr = min_lr;
  }
  if (t.min_lr > t.lr)
    ctx.fail(block->line, "scheduler",
             "zerotrain needs the schedule's floor (" + format_double(t.min_lr) +
                 ") at or below its peak (" + format_double(t.lr) + ")");
}

}  // namespace zt

namespace zt {

// The rule for train.min_lr when the ds_config sets the lr: a schedule the ds_config sets takes
// its floor from the ds_config (import_scheduler); a schedule kept from the YAML (no scheduler
// block, or one zerotrain does not have) keeps the YAML's min_lr unless it is above the lr,
// where it is lowered to the lr: DeepSpeed runs such a config (BingBertSquad's and ZenFlow's
// ds_configs set an lr of 3e-5 or 2e-5 with no scheduler), and the YAML's floor was chosen for
// the YAML's lr.
void fit_min_lr(DsContext& ctx, const JsonMember* optimizer) {
  TrainConfig& t = ctx.c.train;
  if (!optimizer || t.min_lr <= t.lr) return;
  ctx.warn(optimizer->line, "optimizer",
           "train.min_lr " + format_double(t.min_lr) + " is above the imported lr " +
               format_double(t.lr) + "; train.min_lr = " + format_double(t.lr) +
               (t.lr_schedule == "constant" ? " (DeepSpeed's constant lr: the floor is the lr)"
                                            : " (train.lr_schedule " + t.lr_schedule +
                                                  " keeps its shape, floored at the lr)"));
  t.min_lr = t.lr;
}

}  // namespace zt
