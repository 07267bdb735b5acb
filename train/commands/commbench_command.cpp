// `zerotrain commbench`: nccl-tests for zerotrain's own communicators (the
// measurement is zero/commbench). Rank 0 prints one table per primitive and
// dtype and writes the curves as JSON; the exit status is 1 when any result
// check failed.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "train/cli/command_registry.h"
#include "train/cli/commands.h"
#include "train/config/cluster_description.h"
#include "train/config/config.h"
#include "train/io/atomic_file.h"
#include "train/io/json_writer.h"
#include "train/io/output_target.h"
#include "train/loop/runtime.h"
#include "zero/bench/commbench.h"
#include "zero/bench/host_bench.h"
#include "zero/comm/comm_stats.h"
#include "zero/optim/offload_store.h"

namespace zt {
namespace {

int uniform_ranks_per_node(const NodeMap& m) {
  std::vector<int> size(m.nodes(), 0);
  for (int n : m.node_of) size[n]++;
  for (int s : size)
    if (s != size[0]) return -1;
  return size[0];
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

// "4096", "64K", "64M", "1G" (binary multiples; a trailing "B" or "iB" is allowed).
uint64_t parse_bytes(const CliArgs& f, const std::string& name, uint64_t fallback) {
  if (!f.has(name)) return fallback;
  const std::string text = f.get(name);
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) digits++;
  std::string unit = text.substr(digits);
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "iB") unit.resize(unit.size() - 2);
  else if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  int shift = -1;
  if (unit.empty()) shift = 0;
  else if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  if (digits == 0 || digits > 12 || shift < 0)
    f.fail(name + " expects a byte count such as 4096, 64K, 64M or 1G, got '" + text + "'");
  const uint64_t v = std::stoull(text.substr(0, digits)) << shift;
  const uint64_t cap = uint64_t(4) << 30;
  if (v < 1 || v > cap)
    f.fail(name + " expects 1 B to 4 GiB (send and receive buffers are allocated at it), got '" +
           text + "'");
  return v;
}

std::string one_of(const CliArgs& f, const std::string& name, const std::string& fallback,
                   const std::vector<std::string>& allowed) {
  const std::string v = f.get(name, fallback);
  for (const std::string& a : allowed)
    if (v == a) return v;
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  f.fail(name + " expects one of " + list + ", got '" + v + "'");
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t(1) << 30) && b % (uint64_t(1) << 30) == 0)
    std::snprintf(buf, sizeof buf, "%llu GiB", static_cast<unsigned long long>(b >> 30));
  else if (b >= (1u << 20) && b % (1u << 20) == 0)
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(b >> 20));
  else if (b >= 1024 && b % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(b >> 10));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

// commbench --host: every rank measures at once (they share the node's memory
// and cores, as in a run); the slowest rank's figures, as the network file's
// "host" block. Rank 0 prints them.
std::string measure_host(Ops& ops, const std::string& nvme_dir, int rank, int world, bool writer) {
  HostBenchSpec spec;
  spec.nvme_dir = nvme_dir;
  spec.rank = rank;
  barrier_all();
  const HostBenchResult r = run_host_bench(ops, spec);
  const double to_host = min_over_ranks(r.to_host_bytes_per_s) / 1e9;
  const double from_host = min_over_ranks(r.from_host_bytes_per_s) / 1e9;
  const double adamw = min_over_ranks(r.adamw_elements_per_s) / 1e9;
  const double nvme = nvme_dir.empty() ? 0 : min_over_ranks(r.nvme_bytes_per_s) / 1e9;
  const std::string copies = ops.on_device() ? "pinned host memory" : "memcpy on the CPU backend";
  std::string source = "measured by zerotrain commbench --host on " + std::to_string(world) +
                       " rank" + (world == 1 ? "" : "s") + " at once, the slowest rank's: copies " +
                       copies + ", host AdamW on " + std::to_string(r.threads) + " thread" +
                       (r.threads == 1 ? "" : "s") + " per rank";
  if (!nvme_dir.empty()) source += ", files under " + nvme_dir + " through the page cache";
  if (writer) {
    std::printf(
        "# host (per rank, slowest of %d measured at once): copies to host %.3f GB/s, from host "
        "%.3f GB/s (%s); host AdamW %.4f G elements/s (%d thread%s)",
        world, to_host, from_host, copies.c_str(), adamw, r.threads, r.threads == 1 ? "" : "s");
    if (!nvme_dir.empty())
      std::printf("; files %.3f GB/s (writes and reads, %s)", nvme, nvme_dir.c_str());
    std::printf("\n");
  }
  JsonObject o;
  o.add("pcie_GBps", std::min(to_host, from_host))
      .add("to_host_GBps", to_host)
      .add("from_host_GBps", from_host)
      .add("adamw_Gelements_per_s", adamw)
      .add("adamw_threads", r.threads);
  if (!nvme_dir.empty()) o.add("nvme_GBps", nvme);
  o.add("source", source);
  return o.str();
}

const char* bus_factor_formula(Primitive p) {
  switch (p) {
    case Primitive::AllReduce: return "2(W-1)/W";
    case Primitive::ReduceScatter:
    case Primitive::AllGather:
    case Primitive::AllToAll: return "(W-1)/W";
    default: return "1";
  }
}

// What the command line asks for, before any rank or device is known.
struct CommbenchRequest {
  CommbenchSpec spec;  // root and dtypes are filled in once the job is up
  SystemConfig sys;
  std::string out, host_nvme;
  bool host = false;
};

std::vector<Primitive> parse_primitives(const CliArgs& f, std::vector<Primitive> fallback) {
  const std::string prims = f.get("--primitives", "all");
  if (prims == "all") return fallback;
  std::vector<Primitive> chosen;
  for (const std::string& name : split_commas(prims)) {
    bool known = false;
    for (Primitive p : commbench_primitives())
      if (name == primitive_name(p)) chosen.push_back(p), known = true;
    if (!known) {
      std::string list;
      for (Primitive p : commbench_primitives())
        list += (list.empty() ? "" : ", ") + std::string(primitive_name(p));
      f.fail("--primitives: unknown primitive '" + name + "' (expected all or some of " + list +
             ")");
    }
  }
  return chosen;
}

CommbenchRequest parse_request(const CliArgs& f) {
  CommbenchRequest r;
  CommbenchSpec& spec = r.spec;
  spec.primitives = parse_primitives(f, spec.primitives);
  spec.min_bytes = parse_bytes(f, "--min-bytes", spec.min_bytes);
  spec.max_bytes = parse_bytes(f, "--max-bytes", spec.max_bytes);
  if (spec.max_bytes < spec.min_bytes)
    f.fail("--max-bytes " + std::to_string(spec.max_bytes) + " is below --min-bytes " +
           std::to_string(spec.min_bytes));
  spec.warmup = static_cast<int>(f.get_int("--warmup", spec.warmup, 0, 1000000));
  spec.iters = static_cast<int>(f.get_int("--iters", spec.iters, 1, 1000000));
  spec.max_seconds = f.get_double("--max-seconds", spec.max_seconds, between(0, 86400, true));
  spec.seed = static_cast<uint64_t>(f.get_int("--seed", 1, 0, INT64_MAX));
  r.sys.device = one_of(f, "--device", "auto", {"auto", "cpu", "cuda"});
  r.sys.communicator = one_of(f, "--communicator", "auto", {"auto", "mpi", "nccl"});
  r.out = f.get("--out");
  r.host_nvme = f.get("--host-nvme");
  r.host = f.has("--host") || !r.host_nvme.empty();
  return r;
}

// Before measuring (which can take minutes): can rank 0 write the JSON, and
// does every rank see a usable --host-nvme? Every rank learns the answers, so
// that all of them stop alike.
void check_destinations(const CliArgs& f, const CommbenchRequest& r, int rank) {
  if (!r.out.empty()) {
    const std::string problem = rank == 0 ? output_file_problem(r.out) : "";
    const std::string first = first_error_over_ranks(problem);
    if (!first.empty()) f.fail("--out " + r.out + ": " + first);
  }
  if (!r.host_nvme.empty()) {
    const std::string problem = first_error_over_ranks(nvme_path_problem(r.host_nvme));
    if (!problem.empty()) f.fail("--host-nvme: " + problem);
  }
}

std::vector<DType> parse_dtypes(const CliArgs& f, DType model_dtype) {
  const std::string dtypes = f.get("--dtype", dtype_name(model_dtype));
  std::vector<DType> out;
  for (const std::string& name : split_commas(dtypes == "all" ? "fp32,bf16" : dtypes)) {
    if (name == "fp32") out.push_back(DType::F32);
    else if (name == "bf16") out.push_back(DType::BF16);
    else f.fail("--dtype: expected fp32, bf16, both (fp32,bf16) or all, got '" + name + "'");
  }
  return out;
}

// The job the curves were measured on, as the tables and the JSON describe it.
struct BenchJob {
  int rank = 0, world = 1, nodes = 1;
  int group = 1;   // ranks per measuring group (the world unless --group-size)
  int stride = 1;  // rank distance between a group's members (--group-stride)
  int rpn = 1;     // ranks per node; -1: nodes differ in size
  ClusterDescription cluster;
  std::string communicator, device, device_note;
  bool writer() const { return rank == 0; }
  bool has_cluster() const { return !cluster.json.empty(); }
  // The link% column: against the link between nodes, so only where the
  // measuring groups cross it.
  bool groups_cross_nodes() const {
    return group == world || rpn <= 0 || rpn % (group * stride) != 0;
  }
  bool link_column() const { return has_cluster() && groups_cross_nodes(); }
  double link_percent(double busbw_GBps) const {
    return busbw_GBps * 8e9 / cluster.rate_bits_per_s * 100;
  }
};

void print_header(const BenchJob& job, const CommbenchSpec& spec) {
  if (!job.device_note.empty()) std::printf("# %s\n", job.device_note.c_str());
  std::printf(
      "# zerotrain commbench: communicator %s, W = %d on %d node%s x %s rank%s, device %s\n",
      job.communicator.c_str(), job.world, job.nodes, job.nodes == 1 ? "" : "s",
      job.rpn > 0 ? std::to_string(job.rpn).c_str() : "uneven", job.rpn == 1 ? "" : "s",
      job.device.c_str());
  if (job.group < job.world && job.stride == 1)
    std::printf(
        "# groups: %d blocks of %d consecutive ranks (the tensor groups of a tensor-innermost "
        "grid), all measuring at once; W below is the group's\n",
        job.world / job.group, job.group);
  else if (job.group < job.world)
    std::printf(
        "# groups: %d groups of %d ranks %d apart (the data-parallel groups of a "
        "tensor-innermost grid of T = %d), all measuring at once; W below is the group's\n",
        job.world / job.group, job.group, job.stride, job.stride);
  const ClusterDescription& cluster = job.cluster;
  if (!job.has_cluster()) std::printf("# cluster: none (ZT_CLUSTER not set)\n");
  else
    std::printf("# cluster: %s: %d nodes x %d ranks per node, links of %.6g Mbit/s\n",
                cluster.path.c_str(), cluster.nodes, cluster.ranks_per_node,
                cluster.rate_bits_per_s / 1e6);
  if (job.has_cluster() && (cluster.nodes != job.nodes || cluster.ranks_per_node != job.rpn))
    std::printf("# warning: MPI sees %d nodes x %d ranks, the cluster file says %d x %d\n",
                job.nodes, job.rpn, cluster.nodes, cluster.ranks_per_node);
  std::printf(
      "# sizes %s to %s by powers of two; per size 1 checked call, up to %d warm-up and %d "
      "timed calls",
      human_bytes(spec.min_bytes).c_str(), human_bytes(spec.max_bytes).c_str(), spec.warmup,
      spec.iters);
  if (spec.max_seconds > 0)
    std::printf(" (fewer where they would take over %g s)", spec.max_seconds);
  std::printf(
      "\n# size: payload bytes (all_reduce, reduce, broadcast: the buffer; reduce_scatter: its "
      "input; all_gather: its output; all_to_all: its send buffer)\n"
      "# time: mean per call, max over ranks; median: each rank's median call, max over ranks\n"
      "# algbw = size / time; busbw = algbw x bus factor%s\n"
      "# #wrong: elements off the exact result, over all ranks%s\n",
      job.link_column() ? "; link%: busbw x 8 / link rate" : "",
      job.communicator == "mpi"
          ? "; the MPI communicator widens bf16 to fp32 (2x the bytes on the wire)"
          : "");
  std::fflush(stdout);
}

// One table row as the point is measured (a curve's first point opens its table).
void print_point(const BenchJob& job, const CommbenchCurve& c, const CommbenchPoint& pt) {
  if (&pt == &c.points.front())
    std::printf(
        "#\n# %s %s (bus factor %s = %.4g)\n# %14s %12s %6s %6s %12s %12s %12s %12s%s %7s\n",
        primitive_name(c.primitive), dtype_name(c.dtype), bus_factor_formula(c.primitive),
        bus_factor(c.primitive, job.group), "size(B)", "count", "type", "calls", "time(us)",
        "median(us)", "algbw(GB/s)", "busbw(GB/s)", job.link_column() ? "   link%" : "", "#wrong");
  std::printf("  %14llu %12llu %6s %6d %12.1f %12.1f %12.5f %12.5f",
              static_cast<unsigned long long>(pt.bytes), static_cast<unsigned long long>(pt.count),
              dtype_name(c.dtype), pt.iters, pt.time_us, pt.median_us, pt.algbw_GBps,
              pt.busbw_GBps);
  if (job.link_column()) std::printf(" %7.1f", job.link_percent(pt.busbw_GBps));
  std::printf(" %7llu\n", static_cast<unsigned long long>(pt.wrong));
  std::fflush(stdout);
}

std::string curve_json(const CommbenchCurve& c, int group) {
  std::string points = "[";
  for (const CommbenchPoint& pt : c.points) {
    JsonObject o;
    o.add("bytes", pt.bytes).add("count", pt.count).add("iters", pt.iters);
    o.add("time_us", pt.time_us)
        .add("median_us", pt.median_us)
        .add("algbw_GBps", pt.algbw_GBps)
        .add("busbw_GBps", pt.busbw_GBps);
    o.add("check", pt.wrong == 0 ? "ok" : "wrong").add("wrong", pt.wrong);
    points += (points.size() > 1 ? "," : "") + o.str();
  }
  JsonObject cj;
  cj.add("primitive", primitive_name(c.primitive)).add("dtype", dtype_name(c.dtype));
  cj.add("bus_factor", bus_factor(c.primitive, group));
  cj.raw("points", points + "]");
  return cj.str();
}

// The --out document, less the host figures.
JsonObject curves_document(const BenchJob& job, const CommbenchSpec& spec,
                           const std::vector<CommbenchCurve>& curves) {
  JsonObject doc;
  doc.add("communicator", job.communicator).add("world", job.world).add("nodes", job.nodes);
  doc.add("group_size", job.group).add("group_stride", job.stride);
  doc.raw("ranks_per_node", job.rpn > 0 ? std::to_string(job.rpn) : "null");
  doc.raw("cluster", job.has_cluster() ? job.cluster.json : "null");
  doc.add("device", job.device).add("warmup", spec.warmup).add("iters", spec.iters);
  doc.add("max_seconds", spec.max_seconds).add("root", spec.root);
  std::string curves_json = "[";
  for (const CommbenchCurve& c : curves)
    curves_json += (curves_json.size() > 1 ? ",\n " : "\n ") + curve_json(c, job.group);
  doc.raw("curves", curves_json + "]");
  return doc;
}

// The largest size's bus bandwidth, from the mean and from the median call.
void print_largest_sizes(const BenchJob& job, const std::vector<CommbenchCurve>& curves) {
  for (const CommbenchCurve& c : curves) {
    const CommbenchPoint& big = c.points.back();
    const double median_busbw =
        big.bytes / (big.median_us * 1e-6) / 1e9 * bus_factor(c.primitive, job.group);
    std::printf("# %s %s at %s: busbw %.5f GB/s", primitive_name(c.primitive), dtype_name(c.dtype),
                human_bytes(big.bytes).c_str(), big.busbw_GBps);
    if (job.link_column())
      std::printf(" = %.1f%% of the %.6g Mbit/s link", job.link_percent(big.busbw_GBps),
                  job.cluster.rate_bits_per_s / 1e6);
    if (std::isfinite(median_busbw)) {
      std::printf("; median call %.5f GB/s", median_busbw);
      if (job.link_column()) std::printf(" = %.1f%%", job.link_percent(median_busbw));
    }
    std::printf("\n");
  }
}

uint64_t wrong_elements(const std::vector<CommbenchCurve>& curves) {
  uint64_t wrong = 0;
  for (const CommbenchCurve& c : curves)
    for (const CommbenchPoint& pt : c.points) wrong += pt.wrong;
  return wrong;
}

}  // namespace

int run_commbench_command(const std::vector<std::string>& args) {
  const CliArgs f = command_args("commbench", args);
  CommbenchRequest request = parse_request(f);
  CommbenchSpec& spec = request.spec;
  BenchJob job;
  job.cluster = read_cluster_description();
  Runtime rt = make_runtime(request.sys);
  int local_rank = 0, local_size = 1;
  mpi_ranks(&job.rank, &job.world, &local_rank, &local_size);
  check_destinations(f, request, job.rank);
  job.group = static_cast<int>(f.get_int("--group-size", job.world, 1, job.world));
  if (job.world % job.group != 0)
    f.fail("--group-size " + std::to_string(job.group) + " does not divide the world of " +
           std::to_string(job.world) + " ranks");
  job.stride = static_cast<int>(f.get_int("--group-stride", 1, 1, job.world));
  if ((job.world / job.group) % job.stride != 0)
    f.fail("--group-stride " + std::to_string(job.stride) + ": groups of " +
           std::to_string(job.group) + " ranks " + std::to_string(job.stride) +
           " apart do not tile the world of " + std::to_string(job.world) +
           " ranks (expected --group-size x --group-stride to divide it)");
  spec.group_size = job.group;
  spec.group_stride = job.stride;
  spec.root = static_cast<int>(f.get_int("--root", 0, 0, job.group - 1));
  spec.dtypes = parse_dtypes(f, rt.ops->dtype());
  const NodeMap node_map = job_nodes();
  job.nodes = node_map.nodes();
  job.rpn = uniform_ranks_per_node(node_map);
  Communicator& comm = *rt.comm;  // commbench's process only: its counts are never reported
  job.communicator = comm.name();
  job.device = rt.ops->name();
  job.device_note = rt.device_note;

  if (job.writer()) print_header(job, spec);
  const std::vector<CommbenchCurve> curves =
      run_commbench(comm, *rt.ops, spec, [&](const CommbenchCurve& c, const CommbenchPoint& pt) {
        if (job.writer()) print_point(job, c, pt);
      });
  JsonObject doc = curves_document(job, spec, curves);
  if (request.host)
    doc.raw("host", measure_host(*rt.ops, request.host_nvme, job.rank, job.world, job.writer()));
  const uint64_t wrong = wrong_elements(curves);
  if (job.writer()) {
    print_largest_sizes(job, curves);
    if (!request.out.empty()) {
      write_file_atomic(request.out, doc.str() + "\n");
      std::printf("# wrote %s\n", request.out.c_str());
    }
    if (wrong > 0)
      std::fprintf(stderr, "zerotrain: commbench: %llu elements differ from the exact result\n",
                   static_cast<unsigned long long>(wrong));
  }
  return wrong > 0 ? 1 : 0;
}

}  // namespace zt
