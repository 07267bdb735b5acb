// The subcommands other than train (train/loop/trainer.h), each registered in
// train/cli/command_registry.cpp with its options.
#pragma once
#include <string>
#include <vector>

namespace zt {

int run_eval_command(const std::vector<std::string>& args);
int run_sample_command(const std::vector<std::string>& args);
int run_export_command(const std::vector<std::string>& args);
int run_plan_command(const std::vector<std::string>& args);
int run_explain_command(const std::vector<std::string>& args);
int run_report_command(const std::vector<std::string>& args);
int run_prepare_command(const std::vector<std::string>& args);
int run_tokenize_command(const std::vector<std::string>& args);
int run_commbench_command(const std::vector<std::string>& args);
int run_grid_projection_command(const std::vector<std::string>& args);
int run_config_reference_command(const std::vector<std::string>& args);

}  // namespace zt
