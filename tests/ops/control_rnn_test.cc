// Control flow (If, Loop, Scan) and recurrent ops (RNN, GRU, LSTM) against plain references.
#include <cmath>
#include <memory>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

using Kind = Attribute::Kind;

Attribute graph_attr(std::shared_ptr<Graph> g) {
  Attribute a;
  a.kind = Kind::kGraph;
  a.g = std::move(g);
  return a;
}
Attribute strings_attr(std::vector<std::string> v) {
  Attribute a;
  a.kind = Kind::kStrings;
  a.strings = std::move(v);
  return a;
}

// Adds node `op` (inputs/outputs by name) to g.
void add_node(Graph& g, const std::string& op, const std::vector<std::string>& ins,
              const std::vector<std::string>& outs, Attributes attrs = {}) {
  Node n;
  n.op_type = op;
  n.name = op + "_" + std::to_string(g.nodes.size());
  for (const auto& i : ins) n.inputs.push_back(i.empty() ? kNoValue : g.intern(i));
  for (const auto& o : outs) n.outputs.push_back(g.intern(o));
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
}
ValueId add_input(Graph& g, const std::string& name, DType dt) {
  ValueId id = g.intern(name);
  g.value(id).dtype = dt;
  g.inputs.push_back(id);
  return id;
}
void add_output(Graph& g, const std::string& name, DType dt = DType::kUndefined) {
  ValueId id = g.intern(name);
  if (dt != DType::kUndefined) g.value(id).dtype = dt;
  g.outputs.push_back(id);
}
void add_capture(Graph& g, const std::string& name) { g.captures.push_back(g.intern(name)); }

Model model_of(Graph g, int opset = 17) {
  Model m;
  m.path = "test:control";
  m.ir_version = 8;
  m.opsets[""] = opset;
  m.graph = std::move(g);
  return m;
}

Expected<std::vector<Tensor>> run_model(Model m, const std::map<std::string, Tensor>& feeds) {
  auto e = Engine::from_model(std::move(m));
  if (!e) return e.status();
  auto out = (*e)->create_context()->run(feeds);
  if (!out) return out.status();
  std::vector<Tensor> r;
  for (auto& nt : *out) r.push_back(nt.tensor);
  return r;
}

Tensor scalar_i64(int64_t v) { Tensor t(DType::kInt64, {}); t.data<int64_t>()[0] = v; return t; }
Tensor scalar_bool(bool v) { Tensor t(DType::kBool, {}); t.data<bool>()[0] = v; return t; }

// ---------------------------------------------------------------- If

Model if_model() {
  Graph g;
  add_input(g, "cond", DType::kBool);
  add_input(g, "a", DType::kFloat32);
  add_input(g, "b", DType::kFloat32);
  auto then_g = std::make_shared<Graph>();
  then_g->name = "then";
  add_capture(*then_g, "a");
  add_node(*then_g, "Identity", {"a"}, {"t_out"});
  add_output(*then_g, "t_out", DType::kFloat32);
  auto else_g = std::make_shared<Graph>();
  else_g->name = "else";
  add_capture(*else_g, "b");
  add_node(*else_g, "Identity", {"b"}, {"e_out"});
  add_output(*else_g, "e_out", DType::kFloat32);
  Attributes at;
  at.set("then_branch", graph_attr(then_g));
  at.set("else_branch", graph_attr(else_g));
  add_node(g, "If", {"cond"}, {"res"}, at);
  add_output(g, "res");
  return model_of(std::move(g));
}

TEST(ControlRnnIf, PicksBranchWithDifferentShapes) {
  Tensor a = random_tensor({2, 3}, 1), b = random_tensor({4}, 2);
  auto r1 = run_model(if_model(), {{"cond", scalar_bool(true)}, {"a", a}, {"b", b}});
  ASSERT_TRUE(r1) << r1.status().message();
  EXPECT_EQ((*r1)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(max_abs_diff((*r1)[0], a), 0.0);
  auto r2 = run_model(if_model(), {{"cond", scalar_bool(false)}, {"a", a}, {"b", b}});
  ASSERT_TRUE(r2) << r2.status().message();
  EXPECT_EQ(max_abs_diff((*r2)[0], b), 0.0);
}

TEST(ControlRnnIf, RejectsNonBoolCond) {
  Model m = if_model();
  m.graph.value(m.graph.find("cond")).dtype = DType::kUndefined;
  auto r = run_model(std::move(m), {{"cond", scalar_i64(1)}, {"a", random_tensor({1}, 1)}, {"b", random_tensor({1}, 2)}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("cond must be bool"), std::string::npos) << r.status().message();
}

TEST(ControlRnnIf, RejectsBranchOutputCountMismatch) {
  Model m = if_model();
  Attribute& a = const_cast<Attribute&>(*m.graph.nodes[0].attrs.find("else_branch"));
  add_output(*a.g, "b");
  auto e = Engine::from_model(std::move(m));
  ASSERT_FALSE(e);
  EXPECT_NE(e.status().message().find("else_branch has 2 outputs, but the node has 1"), std::string::npos)
      << e.status().message();
}

// ---------------------------------------------------------------- Loop

// Loop(M, cond, v): body passes v through, emits iteration numbers and a captured outer value.
Model loop_model(bool with_extra_output = false) {
  Graph g;
  add_input(g, "M", DType::kInt64);
  add_input(g, "cond", DType::kBool);
  add_input(g, "v", DType::kFloat32);
  add_input(g, "outer", DType::kFloat32);
  auto body = std::make_shared<Graph>();
  body->name = "body";
  add_input(*body, "i", DType::kInt64);
  add_input(*body, "c_in", DType::kBool);
  add_input(*body, "v_in", DType::kFloat32);
  add_capture(*body, "outer");
  add_node(*body, "Identity", {"c_in"}, {"c_out"});
  add_node(*body, "Identity", {"v_in"}, {"v_out"});
  add_node(*body, "Identity", {"i"}, {"i_out"});
  add_node(*body, "Identity", {"outer"}, {"o_out"});
  add_output(*body, "c_out", DType::kBool);
  add_output(*body, "v_out", DType::kFloat32);
  add_output(*body, "i_out", DType::kInt64);
  add_output(*body, "o_out", DType::kFloat32);
  if (with_extra_output) add_output(*body, "v_in");
  Attributes at;
  at.set("body", graph_attr(body));
  add_node(g, "Loop", {"M", "cond", "v"}, {"v_final", "iters", "outers"}, at);
  add_output(g, "v_final");
  add_output(g, "iters");
  add_output(g, "outers");
  return model_of(std::move(g));
}

TEST(ControlRnnLoop, TripCountScanOutputsAndCaptures) {
  Tensor v = random_tensor({3}, 3), outer = random_tensor({2}, 4);
  auto r = run_model(loop_model(), {{"M", scalar_i64(4)}, {"cond", scalar_bool(true)}, {"v", v}, {"outer", outer}});
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ(max_abs_diff((*r)[0], v), 0.0);
  ASSERT_EQ((*r)[1].shape(), (Shape{4}));
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*r)[1].data<int64_t>()[i], i);
  ASSERT_EQ((*r)[2].shape(), (Shape{4, 2}));
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ((*r)[2].data<float>()[i], outer.data<float>()[i % 2]);
}

TEST(ControlRnnLoop, FalseCondRunsZeroTimes) {
  Tensor v = random_tensor({3}, 3), outer = random_tensor({2}, 4);
  auto r = run_model(loop_model(), {{"M", scalar_i64(4)}, {"cond", scalar_bool(false)}, {"v", v}, {"outer", outer}});
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(max_abs_diff((*r)[0], v), 0.0);
  EXPECT_EQ((*r)[1].shape(), (Shape{0}));
}

TEST(ControlRnnLoop, RejectsBodyWithWrongOutputCount) {
  auto e = Engine::from_model(loop_model(/*with_extra_output=*/true));
  ASSERT_FALSE(e);
  EXPECT_NE(e.status().message().find("the node has 3 outputs, but the body gives 1 loop-carried + 3 scan outputs"),
            std::string::npos)
      << e.status().message();
}

TEST(ControlRnnLoop, RejectsNonScalarTripCount) {
  Model m = loop_model();
  Tensor M(DType::kInt64, {2});
  auto r = run_model(std::move(m), {{"M", M}, {"cond", scalar_bool(true)}, {"v", random_tensor({1}, 1)},
                                    {"outer", random_tensor({1}, 2)}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("M must hold one element"), std::string::npos) << r.status().message();
}

// ---------------------------------------------------------------- Scan

TEST(ControlRnnScan, ReversedInputAndOutputAxis) {
  // Body: state passes through, scan output = slice. Reversed input, output stacked on axis 1.
  Graph g;
  add_input(g, "s", DType::kFloat32);
  add_input(g, "x", DType::kFloat32);
  auto body = std::make_shared<Graph>();
  add_input(*body, "s_in", DType::kFloat32);
  add_input(*body, "x_in", DType::kFloat32);
  add_node(*body, "Identity", {"s_in"}, {"s_out"});
  add_node(*body, "Identity", {"x_in"}, {"y"});
  add_output(*body, "s_out", DType::kFloat32);
  add_output(*body, "y", DType::kFloat32);
  Attributes at;
  at.set("body", graph_attr(body));
  at.set("num_scan_inputs", int_attr(1));
  at.set("scan_input_directions", ints_attr({1}));
  at.set("scan_output_axes", ints_attr({1}));
  add_node(g, "Scan", {"s", "x"}, {"s_final", "ys"}, at);
  add_output(g, "s_final");
  add_output(g, "ys");
  Tensor s = random_tensor({2}, 5), x = random_tensor({3, 2}, 6);
  auto r = run_model(model_of(std::move(g)), {{"s", s}, {"x", x}});
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ((*r)[1].shape(), (Shape{2, 3}));
  // ys[j][t] = x[2 - t][j]
  for (int j = 0; j < 2; ++j)
    for (int t = 0; t < 3; ++t) EXPECT_EQ((*r)[1].data<float>()[j * 3 + t], x.data<float>()[(2 - t) * 2 + j]);
}

// ---------------------------------------------------------------- RNN family

double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Reference LSTM, forward, layout 0, default activations, with bias, initial states and peepholes.
void lstm_ref(const Tensor& X, const Tensor& W, const Tensor& R, const Tensor& B, const Tensor& h0, const Tensor& c0,
              const Tensor& P, Tensor& Y, Tensor& Yh, Tensor& Yc) {
  int64_t S = X.dim(0), Bt = X.dim(1), I = X.dim(2), H = R.dim(2);
  const float *x = X.data<float>(), *w = W.data<float>(), *r = R.data<float>(), *b = B.data<float>(),
              *p = P.data<float>();
  std::vector<double> h(h0.data<float>(), h0.data<float>() + Bt * H), c(c0.data<float>(), c0.data<float>() + Bt * H);
  for (int64_t t = 0; t < S; ++t) {
    std::vector<double> hn(size_t(Bt * H));
    for (int64_t bb = 0; bb < Bt; ++bb)
      for (int64_t j = 0; j < H; ++j) {
        double g[4];
        for (int k = 0; k < 4; ++k) {
          int64_t row = k * H + j;
          double acc = b[row] + b[4 * H + row];
          for (int64_t q = 0; q < I; ++q) acc += double(x[(t * Bt + bb) * I + q]) * w[row * I + q];
          for (int64_t q = 0; q < H; ++q) acc += h[size_t(bb * H + q)] * r[row * H + q];
          g[k] = acc;
        }
        double cp = c[size_t(bb * H + j)];
        double i = sigm(g[0] + p[j] * cp), f = sigm(g[2] + p[2 * H + j] * cp), cc = std::tanh(g[3]);
        double cn = f * cp + i * cc;
        double o = sigm(g[1] + p[H + j] * cn);
        c[size_t(bb * H + j)] = cn;
        hn[size_t(bb * H + j)] = o * std::tanh(cn);
        Y.data<float>()[(t * Bt + bb) * H + j] = float(hn[size_t(bb * H + j)]);
      }
    h = hn;
  }
  for (int64_t i = 0; i < Bt * H; ++i) {
    Yh.data<float>()[i] = float(h[size_t(i)]);
    Yc.data<float>()[i] = float(c[size_t(i)]);
  }
}

TEST(ControlRnnLstm, MatchesReference) {
  const int64_t S = 4, Bt = 3, I = 5, H = 6;
  Tensor X = random_tensor({S, Bt, I}, 10), W = random_tensor({1, 4 * H, I}, 11), R = random_tensor({1, 4 * H, H}, 12);
  Tensor B = random_tensor({1, 8 * H}, 13), h0 = random_tensor({1, Bt, H}, 14), c0 = random_tensor({1, Bt, H}, 15);
  Tensor P = random_tensor({1, 3 * H}, 16);
  Tensor sl(DType::kInt32, {Bt});
  for (int64_t i = 0; i < Bt; ++i) sl.data<int32_t>()[i] = int32_t(S);
  Attributes at;
  at.set("hidden_size", int_attr(H));
  auto out = run_single_node("LSTM", {X, W, R, B, sl, h0, c0, P}, 3, at, 14);
  ASSERT_EQ(out.size(), 3u);
  Tensor Y(DType::kFloat32, {S, 1, Bt, H}), Yh(DType::kFloat32, {1, Bt, H}), Yc(DType::kFloat32, {1, Bt, H});
  lstm_ref(X, W, R, B, h0, c0, P, Y, Yh, Yc);
  EXPECT_LT(max_abs_diff(out[0], Y), 1e-5);
  EXPECT_LT(max_abs_diff(out[1], Yh), 1e-5);
  EXPECT_LT(max_abs_diff(out[2], Yc), 1e-5);
}

// Reference GRU (forward, layout 0, default activations).
Tensor gru_ref(const Tensor& X, const Tensor& W, const Tensor& R, const Tensor& B, bool lbr) {
  int64_t S = X.dim(0), Bt = X.dim(1), I = X.dim(2), H = R.dim(2);
  const float *x = X.data<float>(), *w = W.data<float>(), *r = R.data<float>(), *b = B.data<float>();
  std::vector<double> h(size_t(Bt * H), 0.0);
  for (int64_t t = 0; t < S; ++t) {
    std::vector<double> hn(h.size());
    for (int64_t bb = 0; bb < Bt; ++bb) {
      auto xw = [&](int64_t row) {
        double a = b[row];
        for (int64_t q = 0; q < I; ++q) a += double(x[(t * Bt + bb) * I + q]) * w[row * I + q];
        return a;
      };
      auto hr = [&](int64_t row, const std::vector<double>& hv) {
        double a = b[3 * H + row];
        for (int64_t q = 0; q < H; ++q) a += hv[size_t(q)] * r[row * H + q];
        return a;
      };
      std::vector<double> hb(h.begin() + bb * H, h.begin() + (bb + 1) * H), rh(static_cast<size_t>(H));
      std::vector<double> z(static_cast<size_t>(H)), rr(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        z[size_t(j)] = sigm(xw(j) + hr(j, hb));
        rr[size_t(j)] = sigm(xw(H + j) + hr(H + j, hb));
        rh[size_t(j)] = rr[size_t(j)] * hb[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        double hh = lbr ? std::tanh(xw(2 * H + j) + rr[size_t(j)] * hr(2 * H + j, hb))
                        : std::tanh(xw(2 * H + j) + hr(2 * H + j, rh));
        hn[size_t(bb * H + j)] = (1 - z[size_t(j)]) * hh + z[size_t(j)] * hb[size_t(j)];
      }
    }
    h = hn;
  }
  Tensor Yh(DType::kFloat32, {1, Bt, H});
  for (int64_t i = 0; i < Bt * H; ++i) Yh.data<float>()[i] = float(h[size_t(i)]);
  return Yh;
}

TEST(ControlRnnGru, MatchesReferenceBothResetModes) {
  const int64_t S = 3, Bt = 2, I = 4, H = 5;
  Tensor X = random_tensor({S, Bt, I}, 20), W = random_tensor({1, 3 * H, I}, 21), R = random_tensor({1, 3 * H, H}, 22);
  Tensor B = random_tensor({1, 6 * H}, 23);
  for (int lbr = 0; lbr < 2; ++lbr) {
    Attributes at;
    at.set("hidden_size", int_attr(H));
    at.set("linear_before_reset", int_attr(lbr));
    auto out = run_single_node("GRU", {X, W, R, B}, 2, at, 14);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_LT(max_abs_diff(out[1], gru_ref(X, W, R, B, lbr != 0)), 1e-5) << "linear_before_reset=" << lbr;
  }
}

TEST(ControlRnnGru, BidirectionalReverseHalfMatchesReverseRun) {
  const int64_t S = 3, Bt = 2, I = 4, H = 3;
  Tensor X = random_tensor({S, Bt, I}, 30), W = random_tensor({2, 3 * H, I}, 31), R = random_tensor({2, 3 * H, H}, 32);
  Attributes bi;
  bi.set("hidden_size", int_attr(H));
  bi.set("direction", string_attr("bidirectional"));
  auto both = run_single_node("GRU", {X, W, R}, 2, bi, 14);
  ASSERT_EQ(both.size(), 2u);
  Tensor W1 = Tensor::wrap(DType::kFloat32, {1, 3 * H, I}, W.data<float>() + 3 * H * I, nullptr);
  Tensor R1 = Tensor::wrap(DType::kFloat32, {1, 3 * H, H}, R.data<float>() + 3 * H * H, nullptr);
  Attributes rv;
  rv.set("hidden_size", int_attr(H));
  rv.set("direction", string_attr("reverse"));
  auto rev = run_single_node("GRU", {X, W1.clone(), R1.clone()}, 2, rv, 14);
  ASSERT_EQ(rev.size(), 2u);
  for (int64_t i = 0; i < Bt * H; ++i) EXPECT_EQ(both[1].data<float>()[Bt * H + i], rev[1].data<float>()[i]);
}

TEST(ControlRnnRnn, LayoutOneMatchesLayoutZero) {
  const int64_t S = 3, Bt = 2, I = 4, H = 3;
  Tensor X = random_tensor({S, Bt, I}, 40), W = random_tensor({1, H, I}, 41), R = random_tensor({1, H, H}, 42);
  Tensor Xb(DType::kFloat32, {Bt, S, I});
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < Bt; ++b)
      for (int64_t i = 0; i < I; ++i) Xb.data<float>()[(b * S + t) * I + i] = X.data<float>()[(t * Bt + b) * I + i];
  Attributes a0, a1;
  a0.set("hidden_size", int_attr(H));
  a0.set("activations", strings_attr({"Relu"}));
  a1 = a0;
  a1.set("layout", int_attr(1));
  auto o0 = run_single_node("RNN", {X, W, R}, 2, a0, 14);
  auto o1 = run_single_node("RNN", {Xb, W, R}, 2, a1, 14);
  ASSERT_EQ(o0.size(), 2u);
  ASSERT_EQ(o1.size(), 2u);
  ASSERT_EQ(o1[0].shape(), (Shape{Bt, S, 1, H}));
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < Bt; ++b)
      for (int64_t h = 0; h < H; ++h)
        EXPECT_EQ(o0[0].data<float>()[(t * Bt + b) * H + h], o1[0].data<float>()[(b * S + t) * H + h]);
}

TEST(ControlRnnLstm, RejectsBadWeightShape) {
  Tensor X = random_tensor({2, 1, 3}, 1), W = random_tensor({1, 10, 3}, 2), R = random_tensor({1, 12, 3}, 3);
  Attributes at;
  at.set("hidden_size", int_attr(3));
  auto e = Engine::from_model(single_node_model("LSTM", {X, W, R}, 2, at, 14));
  ASSERT_TRUE(e) << e.status().message();
  auto r = (*e)->create_context()->run({{"in0", X}, {"in1", W}, {"in2", R}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("W has shape 1x10x3, expected 1x12x3"), std::string::npos) << r.status().message();
}

TEST(ControlRnnLstm, RejectsBadDirection) {
  Attributes at;
  at.set("direction", string_attr("sideways"));
  auto e = Engine::from_model(single_node_model("LSTM", {random_tensor({1, 1, 1}, 1), random_tensor({1, 4, 1}, 2),
                                                         random_tensor({1, 4, 1}, 3)}, 1, at, 14));
  ASSERT_FALSE(e);
  EXPECT_NE(e.status().message().find("direction must be forward, reverse or bidirectional"), std::string::npos)
      << e.status().message();
}

}  // namespace
}  // namespace ingot::testing
