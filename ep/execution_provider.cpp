// SPDX-License-Identifier: Apache-2.0
#include "execution_provider.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <new>
#include <set>
#include <stdexcept>

#include "attention_kernel.h"
#include "attention_match.h"
#include "counters_export.h"
#include "fused_kernel.h"
#include "graph_index.h"
#include "group_match.h"
#include "group_plan.h"
#include "silu_gate_match.h"
#include "skip_norm_call.h"
#include "skip_norm_match.h"

namespace onebit {

namespace {

OnebitEp& self(OrtEp* ep) { return *static_cast<OnebitEp*>(ep); }

const char* ORT_API_CALL get_name(const OrtEp*) noexcept { return kEpName; }

// The Mul(x_scale, b_scale) of a quantize_dynamic chain reading x_scale: its other factor a
// constant, its product read by one Mul only, whose other factor is a MatMulInteger cast to float.
bool is_chain_scale_product(const GraphIndex& graph, const NodeInfo& mul, const std::string& x_scale) {
  if (mul.op_type != "Mul" || mul.inputs.size() != 2) return false;
  if (!graph.constant(mul.input(0) == x_scale ? mul.input(1) : mul.input(0))) return false;
  const std::string& product = mul.outputs.at(0);
  const std::vector<const NodeInfo*> readers = graph.consumers(product);
  if (graph.is_graph_output(product) || readers.size() != 1 || readers[0]->op_type != "Mul") return false;
  const NodeInfo* cast = graph.producer(readers[0]->input(0) == product ? readers[0]->input(1) : readers[0]->input(0));
  if (cast == nullptr || cast->op_type != "Cast") return false;
  const NodeInfo* matmul = graph.producer(cast->input(0));
  return matmul != nullptr && matmul->op_type == "MatMulInteger";
}

// True for a DynamicQuantizeLinear whose outputs reach anything but quantize_dynamic chains (their
// MatMulIntegers and scale products): those readers keep ORT's values, which differ from ours for a
// NaN input (README).
bool dynamic_quantization_read_elsewhere(const GraphIndex& graph, const NodeInfo& quantizer) {
  if (quantizer.op_type != "DynamicQuantizeLinear") return false;
  for (size_t i = 0; i < quantizer.outputs.size() && i < 3; ++i) {
    const std::string& value = quantizer.outputs[i];
    if (graph.is_graph_output(value)) return true;
    for (const NodeInfo* reader : graph.consumers(value)) {
      const bool chain = i == 1 ? is_chain_scale_product(graph, *reader, value) : reader->op_type == "MatMulInteger";
      if (!chain) return true;  // x_q and x_zero_point: MatMulInteger; x_scale: a scale product
    }
  }
  return false;
}

// Sibling groups — the q/k/v or gate/up projections of one input — are claimed as one fused node:
// ORT's work at session creation grows with about the square of the number of fused nodes
// (docs/benchmarks-log.md, session 14), and siblings are independent of each other, so fusing them
// cannot make a cycle. Siblings read one activation: through one static QuantizeLinear, which each of them then
// runs (the same values), or one value from outside. A group that reads anything else per call
// (a DynamicQuantizeLinear's outputs, per-call scales, a non-constant B) could depend on a
// sibling's output, so it stays a fused node of its own: key "".
std::string sibling_key(const GroupMatch& match, const GroupPlan& plan) {
  if (match.kind == GroupKind::DynamicMatMulInteger || match.b_dynamic || plan.b_per_call ||
      !plan.x_scale_input.empty() || !plan.x_zero_point_input.empty() || !plan.b_scale_input.empty() ||
      !plan.b_zero_point_input.empty())
    return "";
  // By the value it writes, never the node's name: any number of nodes may have an empty name.
  if (match.quantize_in) return "quantized into " + match.quantize_in->outputs.at(0);
  return "reads " + match.x;
}

// Each GroupQueryAttention node the EP computes, as a fused node of its own that keeps its
// constant inputs (the cos/sin caches every layer shares).
void claim_attention_nodes(const SessionContext& session, const GraphIndex& index, OrtEpGraphSupportInfo* support) {
  for (const NodeInfo& node : index.nodes()) {
    if (!is_attention(node)) continue;
    if (std::string reason = attention_decline(index, node); !reason.empty()) {
      log(session.logger, ORT_LOGGING_LEVEL_VERBOSE, "onebit: declined " + node.describe() + ": " + reason);
      continue;
    }
    OrtNodeFusionOptions fusion{};
    fusion.ort_version_supported = ORT_API_VERSION;
    fusion.drop_constant_initializers = false;
    check(ort_ep().EpGraphSupportInfo_AddNodesToFuse(support, &node.node, 1, &fusion));
    log(session.logger, ORT_LOGGING_LEVEL_VERBOSE, "onebit: claimed " + node.describe());
  }
}

// A fused node as GetCapability builds it: its nodes, and what the gate and norm claims need of its
// groups.
struct FusedClaim {
  std::vector<const OrtNode*> nodes;
  std::vector<std::string> outputs;     // each group's output, in claim order
  std::map<std::string, int64_t> n_of;  // each group output's N
  std::set<std::string> activations;    // what its groups read as x
};

// The SwiGLU gates over two groups of a fused node join it.
void claim_silu_gates(const SessionContext& session, const GraphIndex& index, FusedClaim& fused) {
  for (const SiluGateMatch& gate : match_silu_gates(index, fused.outputs)) {
    if (fused.n_of.at(gate.gate) != fused.n_of.at(gate.up)) continue;  // a broadcast product: ORT's
    for (const NodeInfo* node : gate.nodes) fused.nodes.push_back(node->node);
    log(session.logger, ORT_LOGGING_LEVEL_VERBOSE,
        "onebit: claimed the SwiGLU gate writing '" + gate.output + "' with the groups writing '" + gate.gate +
            "' and '" + gate.up + "'");
  }
}

// A SkipSimplifiedLayerNormalization whose output only one fused node's groups read, each as its
// activation (their first input: MatMulNBits' A, a QuantizeLinear's x), joins that fused node.
void claim_skip_norms(const SessionContext& session, const GraphIndex& index,
                      const std::map<const OrtNode*, size_t>& claimed, std::vector<FusedClaim>& fused) {
  for (const NodeInfo& node : index.nodes()) {
    if (!is_skip_norm(node)) continue;
    size_t into = fused.size();
    std::string reason = skip_norm_decline(index, node);
    if (reason.empty()) {
      const std::string& out = node.outputs[NormOut];
      const std::vector<const NodeInfo*> readers = index.consumers(out);
      const auto first = readers.empty() ? claimed.end() : claimed.find(readers[0]->node);
      into = first == claimed.end() ? fused.size() : first->second;
      auto reads_as_activation = [&](const NodeInfo* reader) {
        const auto c = claimed.find(reader->node);
        return c != claimed.end() && c->second == into && reader->input(0) == out &&
               std::count(reader->inputs.begin(), reader->inputs.end(), out) == 1;
      };
      if (into == fused.size() || !fused[into].activations.count(out) ||
          !std::all_of(readers.begin(), readers.end(), reads_as_activation))
        reason = "its output is read by other than the groups of one fused node, as their activation";
    }
    if (!reason.empty()) {
      log(session.logger, ORT_LOGGING_LEVEL_VERBOSE, "onebit: declined " + node.describe() + ": " + reason);
      continue;
    }
    fused[into].nodes.push_back(node.node);
    log(session.logger, ORT_LOGGING_LEVEL_VERBOSE,
        "onebit: claimed " + node.describe() + " with the groups reading it");
  }
}

// Claims every group that matches and whose values we can run exactly; logs why others are not.
OrtStatus* ORT_API_CALL get_capability(OrtEp* ep, const OrtGraph* graph, OrtEpGraphSupportInfo* support) noexcept {
  return guarded([&] {
    const GraphIndex index(graph);
    std::vector<std::pair<const NodeInfo*, MatchResult>> matches;
    std::set<const NodeInfo*> output_quantizes;
    for (const NodeInfo& node : index.nodes()) {
      if (!is_anchor(node)) continue;
      matches.emplace_back(&node, match_group(index, node));
      if (auto* m = std::get_if<GroupMatch>(&matches.back().second); m && m->quantize_out)
        output_quantizes.insert(m->quantize_out);
    }
    // A QuantizeLinear that ends one group and quantizes the next one's activation stays with the
    // first: the second takes the quantized activation.
    for (auto& [node, result] : matches)
      if (auto* m = std::get_if<GroupMatch>(&result); m && output_quantizes.count(m->quantize_in))
        leave_quantize_in(*m);
    // Each claimed group joins the fused node of its siblings (sibling_key), in first-claimed order.
    std::vector<FusedClaim> fused;
    std::map<std::string, size_t> fused_of_key;
    std::map<const OrtNode*, size_t> claimed;  // node → its fused node
    for (auto& [anchor, result] : matches) {
      const NodeInfo& node = *anchor;
      std::string reason;
      if (auto* why = std::get_if<std::string>(&result)) {
        reason = *why;
      } else {
        GroupMatch& match = std::get<GroupMatch>(result);
        if (match.quantize_in && dynamic_quantization_read_elsewhere(index, *match.quantize_in))
          leave_quantize_in(match);
        try {
          GroupPlan plan = read_group(match, index).plan;
          std::string key = sibling_key(match, plan);
          // A quantizer that a group other than a sibling took first (a DynamicQuantizeLinear of
          // sibling chains): this group reads its output, as without it.
          if (match.quantize_in && claimed.count(match.quantize_in->node) && !fused_of_key.count(key)) {
            leave_quantize_in(match);
            plan = read_group(match, index).plan;
            key = sibling_key(match, plan);
          }
          if (plan.x_source == ActivationSource::PerKBlock && plan.accuracy_level != 4 &&
              !self(ep).session.options.nbits_any_accuracy)
            throw UnsupportedGroup("accuracy_level=" + std::to_string(plan.accuracy_level) +
                                   " asks for float accuracy; quantizing its activations to int8 would change its "
                                   "numbers (option matmul_nbits_accuracy=any claims it anyway)");
          if (plan.b_per_call) {
            const std::string decline =
                activation_matmul_decline(self(ep).session.options.activation_matmuls, plan.declared_rows, plan.K,
                                          plan.N, ort_saturates_here(plan.b_type));
            if (!decline.empty()) throw UnsupportedGroup("B '" + match.w + "' is not a constant: " + decline);
          }
          const auto joined = key.empty() ? fused_of_key.end() : fused_of_key.find(key);
          const size_t into = joined != fused_of_key.end() ? joined->second : fused.size();
          for (const NodeInfo* n : match.nodes)
            if (auto c = claimed.find(n->node); c != claimed.end() && c->second != into)
              throw UnsupportedGroup("a node of the group is already in another group");
          if (into == fused.size()) {
            fused.emplace_back();
            if (!key.empty()) fused_of_key[key] = into;
          }
          for (const NodeInfo* n : match.nodes)
            if (claimed.emplace(n->node, into).second) fused[into].nodes.push_back(n->node);
          fused[into].outputs.push_back(match.output);
          fused[into].n_of[match.output] = plan.N;
          fused[into].activations.insert(match.x_float.empty() ? match.x : match.x_float);
          log(self(ep).session.logger, ORT_LOGGING_LEVEL_VERBOSE, "onebit: claimed " + node.describe());
          continue;
        } catch (const UnsupportedGroup& e) {
          reason = e.what();
        }
      }
      log(self(ep).session.logger, ORT_LOGGING_LEVEL_VERBOSE, "onebit: declined " + node.describe() + ": " + reason);
    }
    for (FusedClaim& f : fused) claim_silu_gates(self(ep).session, index, f);
    claim_skip_norms(self(ep).session, index, claimed, fused);
    for (const FusedClaim& f : fused) {
      OrtNodeFusionOptions fusion{};
      fusion.ort_version_supported = ORT_API_VERSION;
      fusion.drop_constant_initializers = true;  // we pack our own copy; ORT may free the originals
      check(ort_ep().EpGraphSupportInfo_AddNodesToFuse(support, f.nodes.data(), f.nodes.size(), &fusion));
    }
    if (self(ep).session.options.claim_attention) claim_attention_nodes(self(ep).session, index, support);
  });
}

// How this session's packed weights are shared (engine/shared_weights.h).
WeightSharing weight_sharing(const SessionContext& session) {
  return {session.options.share_weights, session.packed_cache ? &*session.packed_cache : nullptr};
}

// One group of a fused node: reads its constants from the fused node's graph, sets up its device
// leg from the model's weight (while ORT still holds it), packs the host weights, finds which
// kernel input and output is which. A quantizer that siblings share writes its outputs from the
// first of them (`quantizer_outputs_taken`). `y`: the fused node's output the group writes, ""
// for one only the node itself reads (a SwiGLU's gate).
GroupKernel compile_group(const GroupMatch& match, const std::string& y, const std::string& normed,
                          const GraphIndex& index, const OrtNode* fused_node, const std::string& fused_name,
                          SessionContext& session, std::set<std::string>& quantizer_outputs_taken) {
  GroupSource source = read_group(match, index);
  source.plan.name += " (fused node '" + fused_name + "')";
  GroupDevice device;
  if (session.device && source.batches() == 1 && !source.is_nbits()) {
    device = prepare_group_device(*session.device, source.weight(), session.counters);
    // One cause (a designs_dir that cannot be used) fails every group alike: the session's
    // first such group is a warning, the others go to the verbose log (all are counted).
    if (!device.failure.empty()) {
      const bool first = !session.warned_no_designs.exchange(true);
      log(session.logger, first ? ORT_LOGGING_LEVEL_WARNING : ORT_LOGGING_LEVEL_VERBOSE,
          "onebit: " + source.plan.name + ": no device designs, its calls run on the host: " + device.failure +
              (first ? " (other groups of this session without designs: verbose log, counter designs_failed)" : ""));
    }
  }
  std::vector<PackOutcome> outcomes;
  GroupPlan plan = pack_group(std::move(source), weight_sharing(session), outcomes);
  for (const PackOutcome& outcome : outcomes) {
    if (outcome.origin == PackOutcome::Origin::CacheFile) count(session.counters, Counter::PackedCacheHits);
    if (outcome.cache_written) count(session.counters, Counter::PackedCacheWrites);
    // Names the file and the failed check; each file's trouble is met once (then rewritten or shared).
    if (!outcome.cache_problem.empty())
      log(session.logger, ORT_LOGGING_LEVEL_WARNING,
          "onebit: packed-weights cache: " + outcome.cache_problem + "; packed the weight instead");
  }
  plan.device = std::move(device);
  std::vector<std::string> quantizer_outputs;
  if (match.quantize_in && quantizer_outputs_taken.insert(match.quantize_in->outputs.at(0)).second)
    quantizer_outputs = match.quantize_in->outputs;
  KernelInputs inputs =
      find_kernel_inputs(fused_node, index, match.x_float.empty() ? match.x : match.x_float, normed, plan);
  if (!inputs.x && !plan.quantizes_x())
    throw OrtError(ORT_FAIL, "onebit: " + plan.name + ": reads its norm's float output as a quantized activation");
  KernelOutputs outputs = find_kernel_outputs(fused_node, y, quantizer_outputs, plan);
  return {std::move(plan), inputs, outputs};
}

// The kernel of one fused node: a GroupQueryAttention node, or each of its groups (one, or
// siblings: sibling_key), in the fused graph's order.
NodeKernel* compile_fused_node(const OrtGraph* graph, const OrtNode* fused_node, SessionContext& session) {
  const char* name = nullptr;
  check(ort().Node_GetName(fused_node, &name));
  const std::string fused_name = name;
  const GraphIndex index(graph);
  if (index.nodes().size() == 1 && is_attention(index.nodes()[0]))
    return compile_attention(index.nodes()[0], fused_node, session);
  std::vector<GroupMatch> matches;
  std::vector<std::string> group_outputs;
  std::optional<SkipNormKernel> norm;
  for (const NodeInfo& node : index.nodes()) {
    if (is_skip_norm(node)) norm = compile_skip_norm(node, index, fused_node);
    if (!is_anchor(node)) continue;
    MatchResult result = match_group(index, node);
    if (auto* why = std::get_if<std::string>(&result))
      throw OrtError(ORT_FAIL, "onebit: fused node '" + fused_name + "': " + node.describe() + ": " + *why);
    matches.push_back(std::get<GroupMatch>(result));
    group_outputs.push_back(matches.back().output);
  }
  // A SwiGLU gate GetCapability fused: its up group writes the product, its gate group scratch.
  const std::vector<SiluGateMatch> gate_matches = match_silu_gates(index, group_outputs);
  std::vector<std::string> writes = group_outputs;
  std::vector<SiluGate> gates;
  auto group_of = [&](const std::string& output) {
    return static_cast<size_t>(std::find(group_outputs.begin(), group_outputs.end(), output) - group_outputs.begin());
  };
  for (const SiluGateMatch& gate : gate_matches) {
    gates.push_back({group_of(gate.gate), group_of(gate.up)});
    writes[gates.back().gate_group] = "";
    writes[gates.back().up_group] = gate.output;
  }
  std::vector<GroupKernel> groups;
  std::set<std::string> quantizer_outputs_taken;
  for (size_t i = 0; i < matches.size(); ++i) {
    const GroupMatch& match = matches[i];
    try {
      groups.push_back(compile_group(match, writes[i], norm ? norm->normed : "", index, fused_node, fused_name, session,
                                     quantizer_outputs_taken));
    } catch (const UnsupportedGroup& e) {
      throw OrtError(ORT_FAIL, "onebit: fused node '" + fused_name + "': " + e.what());
    } catch (const std::bad_alloc&) {
      throw OrtError(ORT_FAIL, "onebit: fused node '" + fused_name + "': " + match.anchor->describe() +
                                   ": out of memory packing its weights");
    }
  }
  if (groups.empty()) throw OrtError(ORT_FAIL, "onebit: fused node '" + fused_name + "' holds no MatMul group");
  std::vector<KernelOutputs> outputs;
  for (const GroupKernel& g : groups) outputs.push_back(g.outputs);
  if (norm && norm->sum) {  // the norm's sum: written once too
    outputs.emplace_back();
    outputs.back().y = norm->sum;
  }
  check_outputs_cover(fused_node, fused_name, outputs);
  for (const SiluGate& gate : gates)
    if (groups[gate.gate_group].plan.N != groups[gate.up_group].plan.N)
      throw OrtError(ORT_FAIL, "onebit: fused node '" + fused_name + "': the SwiGLU gate's projections differ in N");
  return new FusedKernel(std::move(groups), std::move(norm), std::move(gates), session);
}

OrtStatus* ORT_API_CALL compile(OrtEp* ep, const OrtGraph** graphs, const OrtNode** fused_nodes, size_t count,
                                OrtNodeComputeInfo** infos, OrtNode** ep_context_nodes) noexcept {
  for (size_t i = 0; i < count; ++i) infos[i] = nullptr;
  OrtStatus* status = guarded([&] {
    SessionContext& session = self(ep).session;
    for (size_t i = 0; i < count; ++i) {
      NodeKernel* kernel = compile_fused_node(graphs[i], fused_nodes[i], session);
      infos[i] = kernel;
      if (ep_context_nodes) ep_context_nodes[i] = nullptr;
      if (auto* groups = dynamic_cast<FusedKernel*>(kernel))
        onebit::count(session.counters, Counter::Groups, groups->groups.size());
    }
  });
  if (status != nullptr) {
    for (size_t i = 0; i < count; ++i) {
      delete static_cast<NodeKernel*>(infos[i]);
      infos[i] = nullptr;
    }
  }
  return status;
}

void ORT_API_CALL release_infos(OrtEp*, OrtNodeComputeInfo** infos, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) delete static_cast<NodeKernel*>(infos[i]);
}

}  // namespace

OnebitEp::OnebitEp(EpOptions opts, bool threads_sleep, const OrtLogger* log_to) : OrtEp{} {
  ort_version_supported = ORT_API_VERSION;
  GetName = get_name;
  GetCapability = get_capability;
  Compile = compile;
  ReleaseNodeComputeInfos = release_infos;
  IsConcurrentRunSupported = [](OrtEp*, bool* yes) noexcept -> OrtStatus* {
    *yes = true;
    return nullptr;
  };  // test/ts/concurrency.test.ts
  session.options = std::move(opts);
  session.logger = log_to;
  session.threads_sleep = threads_sleep;
  session.device = SessionDevice::open(session.options);
  if (session.device) log(log_to, ORT_LOGGING_LEVEL_INFO, "onebit: device " + session.device->description());
  session.policy.min_device_rows = session.options.min_device_rows;
  // A routes file or trace path the EP refuses is the option's error, named as such.
  const EpOptions& o = session.options;
  try {
    if (!o.routes.empty()) session.policy.routes = RoutesTable::load(o.routes);
  } catch (const std::invalid_argument& e) {
    throw option_error("routes", o.routes, e.what());
  }
  try {
    if (!o.trace_file.empty())
      session.trace_file = std::make_unique<TraceFile>(o.trace_file, o.cost_model ? o.cost_model->generation : "");
  } catch (const std::invalid_argument& e) {
    throw option_error(o.trace_file_from, o.trace_file, e.what());
  }
  if (!session.options.packed_cache_dir.empty())
    session.packed_cache.emplace(session.options.packed_cache_dir,
                                 static_cast<uint64_t>(session.options.packed_cache_max_mb) << 20);
  publish_session_counters(session.options.session_id, &session.counters);
}

OnebitEp::~OnebitEp() {
  withdraw_session_counters(session.options.session_id);
  if (session.trace_file) {
    try {
      session.trace_file->write(session.counters);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
  if (session.options.trace) std::fprintf(stderr, "%s\n", session.counters.summary_line().c_str());
}

}  // namespace onebit
