// The cluster.json that ZT_CLUSTER names, from memory as read_cluster_description
// parses it, and the network the step-time model derives from it.
#include "train/config/cluster_description.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/support/parse_outcome.h"
#include "train/config/network_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  zt::fuzz::parse_or_reject([&] {
    const zt::ClusterDescription c = zt::parse_cluster_description(text, "ZT_CLUSTER=fuzz.json");
    (void)zt::network_of_cluster(c);
  });
  return 0;
}
