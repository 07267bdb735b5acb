#include "train/config/network_file.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "data/input/input_file.h"
#include "data/input/input_scalar.h"
#include "data/json_reader.h"
#include "data/shard.h"
#include "train/config/config.h"

namespace zt {
namespace {

constexpr uint64_t kNetworkFileMaxBytes = uint64_t(16) << 20;

JsonValue read_json_object(const std::string& path, const char* what, std::string* text_out) {
  std::string text;
  try {
    text = read_small_file(path, what, kNetworkFileMaxBytes);
    JsonValue v = parse_json(text, path, JsonDialect::Strict);
    if (v.kind != JsonValue::Kind::object) throw ConfigError(path + ": expected a JSON object");
    if (text_out) *text_out = text;
    return v;
  } catch (const JsonError& e) {
    throw ConfigError(e.what());
  } catch (const DataError& e) {
    throw ConfigError(e.what());
  }
}

const JsonValue& member(const JsonValue& obj, const std::string& key, const std::string& where,
                        JsonValue::Kind kind, const char* expected) {
  const JsonValue* v = obj.find(key);
  if (!v) throw ConfigError(where + ": key '" + key + "' missing (expected " + expected + ")");
  if (v->kind != kind)
    throw ConfigError(where + ": key '" + key + "': expected " + expected + ", got " +
                      describe_json(*v));
  return *v;
}

double positive(const JsonValue& obj, const std::string& key, const std::string& where) {
  const double x = member(obj, key, where, JsonValue::Kind::number, "a number").number();
  if (!(x > 0)) throw ConfigError(where + ": key '" + key + "': expected a positive number");
  return x;
}

double non_negative(const JsonValue& obj, const std::string& key, const std::string& where) {
  const double x = member(obj, key, where, JsonValue::Kind::number, "a number").number();
  if (!(x >= 0)) throw ConfigError(where + ": key '" + key + "': expected a number >= 0");
  return x;
}

NetworkModel commbench_network(const JsonValue& root, const std::string& path) {
  NetworkModel net;
  net.source = path;
  const JsonValue& curves = member(root, "curves", path, JsonValue::Kind::array, "a list");
  for (size_t i = 0; i < curves.items.size(); i++) {
    const std::string where = path + ": curves[" + std::to_string(i) + "]";
    const JsonValue& c = curves.items[i];
    if (c.kind != JsonValue::Kind::object) throw ConfigError(where + ": expected an object");
    CallCurve k;
    const std::string prim =
        member(c, "primitive", where, JsonValue::Kind::string, "a primitive name").text;
    const std::string dt = member(c, "dtype", where, JsonValue::Kind::string, "a dtype").text;
    bool known = false;
    for (int p = 0; p < static_cast<int>(Primitive::kCount); p++)
      if (prim == primitive_name(static_cast<Primitive>(p)))
        k.primitive = static_cast<Primitive>(p), known = true;
    if (!known) throw ConfigError(where + ": unknown primitive '" + prim + "'");
    if (dt == "fp32") k.dtype = DType::F32;
    else if (dt == "bf16") k.dtype = DType::BF16;
    else throw ConfigError(where + ": dtype '" + dt + "': expected fp32 or bf16");
    const JsonValue& points = member(c, "points", where, JsonValue::Kind::array, "a list");
    for (size_t j = 0; j < points.items.size(); j++) {
      const std::string pw = where + ".points[" + std::to_string(j) + "]";
      const double bytes = positive(points.items[j], "bytes", pw);
      // The median call where commbench has one (host backends): a stalled call
      // (a TCP retransmission on a shaped link) moves the mean, not the median.
      const JsonValue* median = points.items[j].find("median_us");
      const double us = median && median->kind == JsonValue::Kind::number
                            ? non_negative(points.items[j], "median_us", pw)
                            : non_negative(points.items[j], "time_us", pw);
      if (!k.bytes.empty() && bytes <= k.bytes.back())
        throw ConfigError(pw + ": sizes must ascend");
      k.bytes.push_back(bytes);
      k.seconds.push_back(us * 1e-6);
    }
    if (k.bytes.empty()) throw ConfigError(where + ": no points");
    net.curves.push_back(k);
  }
  if (net.curves.empty()) throw ConfigError(path + ": no curves");
  const JsonValue* world = root.find("world");
  const JsonValue* per_node = root.find("ranks_per_node");
  if (!world || world->kind != JsonValue::Kind::number || world->number() < 1 ||
      world->number() != std::floor(world->number()))
    throw ConfigError(path +
                      ": key 'world': expected the integer world size >= 1 commbench "
                      "measured at");
  net.measured_world = static_cast<int>(std::min(world->number(), 1e9));
  if (per_node && per_node->kind == JsonValue::Kind::number && per_node->number() >= 1 &&
      per_node->number() == std::floor(per_node->number()))
    net.measured_ranks_per_node = static_cast<int>(std::min(per_node->number(), 1e9));
  net.measured_group_size = net.measured_world;
  if (const JsonValue* group = root.find("group_size")) {
    const double n = group->kind == JsonValue::Kind::number ? group->number() : 0;
    if (!(n >= 1) || n != std::floor(n) || n > net.measured_world ||
        net.measured_world % static_cast<int>(n) != 0)
      throw ConfigError(path + ": key 'group_size': expected an integer that divides 'world' (" +
                        world->text + ")");
    net.measured_group_size = static_cast<int>(n);
  }
  if (const JsonValue* stride = root.find("group_stride")) {
    const double n = stride->kind == JsonValue::Kind::number ? stride->number() : 0;
    if (!(n >= 1) || n != std::floor(n) ||
        (net.measured_world / net.measured_group_size) % static_cast<int>(n) != 0)
      throw ConfigError(path +
                        ": key 'group_stride': expected an integer that divides 'world' / "
                        "'group_size' (" +
                        std::to_string(net.measured_world / net.measured_group_size) + ")");
    net.measured_group_stride = static_cast<int>(n);
  }
  const JsonValue* communicator = root.find("communicator");
  net.open_mpi =
      communicator && communicator->kind == JsonValue::Kind::string && communicator->text == "mpi";
  // On an emulated cluster (its description recorded) libnbc runs the chain
  // scripts/cluster.sh sets; under a plain launch, its own choice.
  const JsonValue* cluster = root.find("cluster");
  if (net.open_mpi && !(cluster && cluster->kind == JsonValue::Kind::object))
    net.reduce_algorithm = ReduceAlgorithm::LibnbcDefault;
  net.source = "measured by commbench: " + path + " (W = " + world->text;
  if (net.measured_group_size < net.measured_world)
    net.source += ", groups of " + std::to_string(net.measured_group_size);
  if (net.measured_group_stride > 1)
    net.source += " ranks " + std::to_string(net.measured_group_stride) + " apart";
  net.source += ")";
  return net;
}

NetworkModel preset_network(const JsonValue& root, const std::string& path) {
  NetworkModel net;
  const JsonValue& intra = member(root, "intra_node", path, JsonValue::Kind::object, "an object");
  const JsonValue& inter = member(root, "inter_node", path, JsonValue::Kind::object, "an object");
  net.link.intra_node_bytes_per_s = positive(intra, "bus_GBps", path + ": intra_node") * 1e9;
  net.link.intra_latency_s = non_negative(intra, "latency_us", path + ": intra_node") * 1e-6;
  net.link.inter_node_bytes_per_s = positive(inter, "node_GBps", path + ": inter_node") * 1e9;
  net.link.inter_latency_s = non_negative(inter, "latency_us", path + ": inter_node") * 1e-6;
  net.source = "preset " + path + ": " +
               member(root, "preset", path, JsonValue::Kind::string, "a description").text;
  return net;
}

// A preset's or commbench --host's "host" block; nvme_GBps may be absent (not
// measured), and nvme offload then counts no I/O time.
HostFigures host_figures(const JsonValue& root, const std::string& path) {
  HostFigures h;
  const JsonValue* host = root.find("host");
  if (!host) return h;
  if (host->kind != JsonValue::Kind::object) throw ConfigError(path + ": host: expected an object");
  const std::string where = path + ": host";
  h.pcie_bytes_per_s = positive(*host, "pcie_GBps", where) * 1e9;
  h.adamw_elements_per_s = positive(*host, "adamw_Gelements_per_s", where) * 1e9;
  if (host->find("nvme_GBps")) h.nvme_bytes_per_s = positive(*host, "nvme_GBps", where) * 1e9;
  h.source =
      member(*host, "source", where, JsonValue::Kind::string, "where the figures come from").text;
  return h;
}

}  // namespace

NetworkModel read_network_file(const std::string& path) {
  std::string text;
  const JsonValue root = read_json_object(path, "network file", &text);
  if (root.find("curves") || root.find("preset")) {
    NetworkModel net =
        root.find("curves") ? commbench_network(root, path) : preset_network(root, path);
    net.host = host_figures(root, path);
    return net;
  }
  if (root.find("link")) return network_of_cluster(parse_cluster_description(text, path));
  throw ConfigError(path +
                    ": not a network file (expected commbench's JSON with 'curves', a preset "
                    "with 'preset', 'intra_node' and 'inter_node', or scripts/cluster.sh's "
                    "cluster.json)");
}

NetworkModel network_of_cluster(const ClusterDescription& c) {
  NetworkModel net;
  net.link.inter_node_bytes_per_s = c.rate_bits_per_s / 8;
  net.link.inter_latency_s = c.delay_us * 1e-6;
  net.link.intra_node_bytes_per_s = 1e15;         // shared memory: taken as free beside the link
  net.open_mpi = true;                            // scripts/cluster.sh runs Open MPI,
  net.reduce_algorithm = ReduceAlgorithm::Chain;  // with libnbc's chain reduce
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "the emulated cluster's link: %.6g Mbit/s per node each way, %.6g us one-way "
                "delay per ring step, intra-node bytes free",
                c.rate_bits_per_s / 1e6, c.delay_us);
  net.source = buf;
  return net;
}

ComputeTimes read_compute_times(const std::string& path) {
  const JsonValue root = read_json_object(path, "run summary", nullptr);
  const JsonValue& t = member(root, "timing", path, JsonValue::Kind::object,
                              "an object (a summary.json written by this zerotrain)");
  ComputeTimes c;
  c.micro_step_s = positive(t, "compute_ms_per_micro_step", path + ": timing") * 1e-3;
  c.optimizer_s = non_negative(t, "optimizer_ms", path + ": timing") * 1e-3;
  const JsonValue* w = root.find("world_size");
  c.source = "measured in " + path + (w ? " (W = " + w->text + ")" : "");
  const JsonValue* config = root.find("config");
  const JsonValue* model = config ? config->find("model") : nullptr;
  const JsonValue* train = config ? config->find("train") : nullptr;
  if (model && train) {
    auto count = [&](const JsonValue& obj, const char* key, const std::string& where) {
      const double x = positive(obj, key, where);
      if (x != std::floor(x) || x > 1e9)
        throw ConfigError(where + ": key '" + key + "': expected an integer in [1, 1e9]");
      return static_cast<int>(x);
    };
    const std::string where = path + ": config.model";
    GPTConfig m;
    m.n_layer = count(*model, "n_layer", where);
    m.n_head = count(*model, "n_head", where);
    m.n_embd = count(*model, "n_embd", where);
    m.vocab_size = count(*model, "vocab_size", where);
    m.seq_len = count(*model, "seq_len", where);
    c.measured_for = compute_shape(m, count(*train, "micro_batch", path + ": config.train"));
  }
  // The run timed its own shard's step: stages 1-3 update 1/W of the model,
  // and the model's optimizer time is the whole model's.
  const JsonValue* zero = root.find("zero");
  const JsonValue* stage = zero ? zero->find("stage") : nullptr;
  if (w && w->kind == JsonValue::Kind::number && stage && stage->kind == JsonValue::Kind::number &&
      stage->number() >= 1 && w->number() > 1) {
    c.optimizer_s *= w->number();
    c.source += ", optimizer: its shard's step x " + w->text;
  }
  const JsonValue* memory = root.find("memory");
  const JsonValue* off = memory ? memory->find("offload_optimizer") : nullptr;
  if (off && off->kind == JsonValue::Kind::string && off->text != "none")
    c.source += " (an offloaded run: its optimizer time is the host's)";
  return c;
}

std::string summary_device(const std::string& path) {
  const JsonValue root = read_json_object(path, "run summary", nullptr);
  const JsonValue* device = root.find("device");
  return device && device->kind == JsonValue::Kind::string ? device->text : "";
}

std::string compute_shape(const GPTConfig& m, int micro_batch) {
  return std::to_string(m.n_layer) + " layers, " + std::to_string(m.n_head) + " heads, width " +
         std::to_string(m.n_embd) + ", vocabulary " + std::to_string(m.vocab_size) +
         ", T = " + std::to_string(m.seq_len) + ", micro-batch " + std::to_string(micro_batch);
}

std::string group_curves_mismatch(const NetworkModel& net, int world, int ranks_per_node, int size,
                                  int stride) {
  const int rpn =
      net.measured_ranks_per_node > 0 ? net.measured_ranks_per_node : net.measured_world;
  if (net.measured_group_size == size && net.measured_group_stride == stride &&
      net.measured_world == world && rpn == ranks_per_node)
    return "";
  auto layout = [](int w, int g) {
    return " at W = " + std::to_string(w) + " with " + std::to_string(g) + " ranks per node";
  };
  return "expected commbench --group-size " + std::to_string(size) +
         (stride > 1 ? " --group-stride " + std::to_string(stride) : "") +
         layout(world, ranks_per_node) + ", got group size " +
         std::to_string(net.measured_group_size) +
         (net.measured_group_stride > 1 ? " stride " + std::to_string(net.measured_group_stride)
                                        : "") +
         layout(net.measured_world, rpn);
}

std::string network_layout_mismatch(const NetworkModel& net, int world, int ranks_per_node) {
  if (net.measured_world == 0) return "";
  if (net.measured_group_size < net.measured_world)
    return "measured over groups of " + std::to_string(net.measured_group_size) +
           " ranks (commbench --group-size), not over the whole world: give a tensor "
           "group's curves as --tensor-curves, a data-parallel group's as --data-curves";
  const int measured_g =
      net.measured_ranks_per_node > 0 ? net.measured_ranks_per_node : net.measured_world;
  if (net.measured_world == world && measured_g == ranks_per_node) return "";
  return "measured at W = " + std::to_string(net.measured_world) + " with " +
         std::to_string(measured_g) + " ranks per node, asked for W = " + std::to_string(world) +
         " with " + std::to_string(ranks_per_node) +
         "; measured curves do not scale to another layout (measure commbench at this one, or "
         "give a preset or an emulated cluster's cluster.json, whose links do)";
}

ComputeTimes parse_compute_ms(const std::string& text, const std::string& where) {
  const size_t comma = text.find(',');
  const std::string a = text.substr(0, comma),
                    b = comma == std::string::npos ? "" : text.substr(comma + 1);
  double f = 0, o = 0;
  // At most a day per step: anything longer is a typo, and keeps every sum finite.
  if (!parse_number(a, f) || !in_range(f, open_between(0, 86.4e6, true)) || !parse_number(b, o) ||
      !in_range(o, between(0, 86.4e6, true)))
    throw ConfigError(where +
                      " expects MICRO_MS,OPTIMIZER_MS (milliseconds per micro-step in (0, "
                      "86400000] and per optimizer step in [0, 86400000], e.g. 120,15), got " +
                      quote_value(text));
  ComputeTimes c;
  c.micro_step_s = f * 1e-3;
  c.optimizer_s = o * 1e-3;
  c.source = "given: " + text + " ms";
  return c;
}

}  // namespace zt
