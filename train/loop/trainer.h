// `zerotrain train`: the training story, top to bottom.
#pragma once
#include <string>
#include <vector>

namespace zt {

struct TrainArgs {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string run_dir;  // default runs/<config name>
  bool resume = false;
  bool recover = false;   // --recover: in-memory snapshots, else the newest checkpoint
  std::string init_from;  // llm.c model file
  std::string deepspeed;  // DeepSpeed JSON config to import
};

TrainArgs parse_train_args(const std::vector<std::string>& args);
int run_train(const TrainArgs& a);

}  // namespace zt
