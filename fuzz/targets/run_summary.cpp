// A run's summary.json as `report` reads it (one table row, rendered as CSV
// and Markdown) and as `plan --compute-from` reads its timing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"
#include "train/config/network_file.h"
#include "train/report/report_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = zt::fuzz::write_scratch("summary.json", data, size);
  // read_summary's documented error is a plain std::runtime_error.
  zt::fuzz::parse_or_reject(
      [&] {
        std::vector<zt::ReportRow> rows{zt::read_summary(path, "run")};
        zt::fill_speedups(rows);
        (void)zt::report_csv(rows);
        (void)zt::report_markdown_table(rows);
      },
      zt::fuzz::PlainRuntimeError::expected);
  zt::fuzz::parse_or_reject([&] { (void)zt::read_compute_times(path); });
  return 0;
}
