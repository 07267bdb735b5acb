#include "train/report/portability_peaks.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "data/input/input_file.h"
#include "data/json_reader.h"
#include "data/shard.h"
#include "train/report/portability.h"
#include "train/report/report_table.h"
#include "train/report/table_text.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kNetworkFileMaxBytes = uint64_t(1) << 20;

GpuPeak gpu_peak_of(const JsonValue& block, const std::string& file) {
  const std::string where = file + ": peak_TFLOPs";
  auto member = [&](const char* key, JsonValue::Kind kind) -> const JsonValue& {
    const JsonValue* v = block.find(key);
    if (!v || v->kind != kind)
      throw std::runtime_error(where + ": key '" + key + "' missing or of the wrong type");
    return *v;
  };
  GpuPeak p;
  p.file = file;
  p.flops_per_second = member("value", JsonValue::Kind::number).number() * 1e12;
  if (!(p.flops_per_second > 0)) throw std::runtime_error(where + ": value: expected above 0");
  p.precision = member("precision", JsonValue::Kind::string).text;
  p.source = member("source", JsonValue::Kind::string).text;
  for (const JsonValue& g : member("gpus", JsonValue::Kind::array).items) {
    if (g.kind != JsonValue::Kind::string)
      throw std::runtime_error(where + ": gpus: expected GPU model names");
    p.gpus.push_back(g.text);
  }
  return p;
}

void cuda_peak(PortabilitySystem& sys, const std::vector<GpuPeak>& gpu_peaks) {
  if (sys.gpu.empty()) {
    sys.no_peak_reason = "the runs recorded no GPU model (summary.json's host.gpu)";
    return;
  }
  for (const GpuPeak& p : gpu_peaks) {
    if (std::find(p.gpus.begin(), p.gpus.end(), sys.gpu) == p.gpus.end()) continue;
    for (PortabilityRun& r : sys.runs) r.peak_flops = p.flops_per_second * r.world;
    sys.peak_source = fmt("%.6g", p.flops_per_second / 1e12) + " TFLOP/s per GPU (" + p.precision +
                      ") × the ranks, from " + p.file + ": " + p.source;
    return;
  }
  sys.no_peak_reason = "no network preset's peak_TFLOPs lists the GPU '" + sys.gpu + "'";
}

void emulated_peak(PortabilitySystem& sys) {
  for (PortabilityRun& r : sys.runs) {
    const double micro_step_flops =
        flops_per_token(r.model.params, r.model.n_layer, r.model.n_embd, r.model.seq_len) *
        r.micro_batch * r.model.seq_len;
    r.peak_flops = micro_step_flops / (r.emulated_micro_step_ms * 1e-3) * r.world;
  }
  sys.peak_source =
      "against the emulated device's stated rate, not a hardware peak: the model FLOPs of one "
      "micro-step (micro-batch × T tokens) over emulated_compute.micro_step_ms (time_scale "
      "already applied), "
      "× the ranks (emulated device: " +
      (sys.emulated_device.empty() ? std::string("not named") : sys.emulated_device) +
      "; its figures: " + (sys.emulated_source.empty() ? "no source given" : sys.emulated_source) +
      ")";
}

}  // namespace

std::vector<GpuPeak> read_gpu_peaks(const std::string& networks_dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(networks_dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<GpuPeak> peaks;
  for (const fs::path& f : files) {
    JsonValue root;
    try {
      root = parse_json(read_small_file(f.string(), "network preset", kNetworkFileMaxBytes),
                        f.string(), JsonDialect::Strict);
    } catch (const JsonError& e) {
      throw std::runtime_error(e.what());
    } catch (const DataError& e) {
      throw std::runtime_error(e.what());
    }
    const JsonValue* block =
        root.kind == JsonValue::Kind::object ? root.find("peak_TFLOPs") : nullptr;
    if (!block) continue;
    if (block->kind != JsonValue::Kind::object)
      throw std::runtime_error(f.string() + ": peak_TFLOPs: expected an object");
    peaks.push_back(gpu_peak_of(*block, f.string()));
  }
  return peaks;
}

void assign_peaks(std::vector<PortabilitySystem>& systems, const std::vector<GpuPeak>& gpu_peaks,
                  const std::string& this_host, const std::function<SgemmRate()>& sgemm) {
  std::optional<SgemmRate> measured;
  for (PortabilitySystem& sys : systems) {
    if (!sys.projection.empty() && !sys.emulated_compute) {
      sys.no_peak_reason = "a projection of real-compute runs: no hardware stands behind it";
    } else if (sys.emulated_compute) {
      emulated_peak(sys);
    } else if (sys.device == "cuda") {
      cuda_peak(sys, gpu_peaks);
    } else if (sys.host.empty()) {
      sys.no_peak_reason = "the runs recorded no host name, so no sgemm here can stand for theirs";
    } else if (sys.host != this_host) {
      sys.no_peak_reason = "the runs recorded host '" + sys.host +
                           "', and the sgemm is measured "
                           "on this host ('" +
                           this_host + "')";
    } else {
      if (!measured) measured = sgemm();
      for (PortabilityRun& r : sys.runs) r.peak_flops = measured->flops_per_second;
      sys.peak_source = "measured sgemm, " + fmt("%.1f", measured->flops_per_second / 1e9) +
                        " GFLOP/s, fp32 " + std::to_string(measured->n) + "³ products through " +
                        measured->backend + " on " + std::to_string(measured->threads) +
                        " threads, the fastest of " + std::to_string(measured->reps) +
                        ", at report time on this host (the whole host, shared by the ranks)";
    }
  }
}

}  // namespace zt
