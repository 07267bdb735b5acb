// The gradient-path table of docs/zero.md, generated from the registry
// (zero/schedule/grad_path_registry.h) by `zerotrain config-reference --grad-paths`; a test fails
// when the page and the registry disagree.
#pragma once
#include <string>

namespace zt {

// One Markdown row per registry row, stages in order.
std::string grad_path_table_markdown();

}  // namespace zt
