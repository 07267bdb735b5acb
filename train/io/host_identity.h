// Where a run ran, for summary.json's "host": the host name, the CPU model
// and the first NVIDIA GPU's model as the kernel driver reports them. Read
// from Linux's files, so that CPU-only builds record a GPU too; "" where a
// file is absent. `report --portability` names systems from these.
#pragma once
#include <string>

#include "train/io/json_writer.h"

namespace zt {

JsonObject host_identity_json();
// This machine's host name ("" when unknown), as host_identity_json records it.
std::string host_name();

}  // namespace zt
