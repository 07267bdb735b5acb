// `plan --network` / `report --network`: a commbench JSON, a network preset or
// an emulated cluster's cluster.json through read_network_file.
#include "train/config/network_file.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = zt::fuzz::write_scratch("network.json", data, size);
  zt::fuzz::parse_or_reject([&] { (void)zt::read_network_file(path); });
  return 0;
}
