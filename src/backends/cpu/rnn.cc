// RNN, GRU and LSTM (ONNX opsets 1..22). One kernel class handles all three cells:
//   - X·Wᵀ + Wb for every time step is one matrix multiply up front;
//   - each step multiplies the previous hidden state by Rᵀ (+ Rb) and applies the cell.
// Internally everything is layout 0 ([seq, batch, ...]); layout=1 inputs/outputs are
// transposed at the edges. Supports direction forward/reverse/bidirectional, activations
// with alpha/beta, clip, sequence_lens, initial_h/initial_c, peepholes, input_forget and
// linear_before_reset. float32 and float64.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ir/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

enum class Cell { kRnn, kGru, kLstm };
enum class Act { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus };

struct Activation {
  Act kind = Act::kTanh;
  float alpha = 0, beta = 0;
  template <class T> T operator()(T x) const {
    T a = T(alpha), b = T(beta);
    switch (kind) {
      case Act::kRelu: return x > T(0) ? x : T(0);
      case Act::kTanh: return std::tanh(x);
      case Act::kSigmoid: return T(1) / (T(1) + std::exp(-x));
      case Act::kAffine: return a * x + b;
      case Act::kLeakyRelu: return x >= T(0) ? x : a * x;
      case Act::kThresholdedRelu: return x > a ? x : T(0);
      case Act::kScaledTanh: return a * std::tanh(b * x);
      case Act::kHardSigmoid: return std::max(T(0), std::min(T(1), a * x + b));
      case Act::kElu: return x >= T(0) ? x : a * (std::exp(x) - T(1));
      case Act::kSoftsign: return x / (T(1) + std::fabs(x));
      case Act::kSoftplus: return std::log1p(std::exp(-std::fabs(x))) + std::max(x, T(0));
    }
    return x;
  }
};

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Parses one activation name; alpha/beta are taken from the lists, in order, only by the
// functions that use them (as onnxruntime does), with the usual defaults when a list runs out.
Expected<Activation> parse_activation(const std::string& name, const std::vector<float>& alphas,
                                      const std::vector<float>& betas, size_t& ai, size_t& bi) {
  struct Info { const char* name; Act kind; int uses; float da, db; };  // uses: 1 alpha, 2 beta
  static const Info kInfos[] = {
      {"relu", Act::kRelu, 0, 0, 0},           {"tanh", Act::kTanh, 0, 0, 0},
      {"sigmoid", Act::kSigmoid, 0, 0, 0},     {"affine", Act::kAffine, 3, 1.f, 0.f},
      {"leakyrelu", Act::kLeakyRelu, 1, 0.01f, 0}, {"thresholdedrelu", Act::kThresholdedRelu, 1, 1.f, 0},
      {"scaledtanh", Act::kScaledTanh, 3, 1.f, 1.f}, {"hardsigmoid", Act::kHardSigmoid, 3, 0.2f, 0.5f},
      {"elu", Act::kElu, 1, 1.f, 0},           {"softsign", Act::kSoftsign, 0, 0, 0},
      {"softplus", Act::kSoftplus, 0, 0, 0},
  };
  std::string l = lower(name);
  for (const Info& in : kInfos) {
    if (l != in.name) continue;
    Activation a{in.kind, in.da, in.db};
    if ((in.uses & 1) && ai < alphas.size()) a.alpha = alphas[ai++];
    if ((in.uses & 2) && bi < betas.size()) a.beta = betas[bi++];
    return a;
  }
  return unsupported("activation '" + name + "' is not one RNN ops support");
}

// C[M,N] = A[M,K]·B[K,N] (+ bias[N]); leading dimensions in elements. Tiles of 4 rows x 256
// columns, so each loaded row of B serves four rows of A and the C tile stays in L1; tiles
// run in parallel.
template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, const T* bias, T* C,
          int64_t ldc) {
  constexpr int64_t MB = 4, NB = 256;
  const int64_t mt = (M + MB - 1) / MB, nt = (N + NB - 1) / NB;
  parallel_for(mt * nt, MB * NB * K, [&](int64_t t0, int64_t t1) {
    for (int64_t tile = t0; tile < t1; ++tile) {
      const int64_t m0 = (tile / nt) * MB, n0 = (tile % nt) * NB;
      const int64_t mm = std::min(MB, M - m0), nn = std::min(NB, N - n0);
      for (int64_t i = 0; i < mm; ++i) {
        T* c = C + (m0 + i) * ldc + n0;
        for (int64_t n = 0; n < nn; ++n) c[n] = bias ? bias[n0 + n] : T(0);
      }
      if (mm == MB) {
        T* __restrict c0 = C + m0 * ldc + n0;
        T* __restrict c1 = c0 + ldc;
        T* __restrict c2 = c1 + ldc;
        T* __restrict c3 = c2 + ldc;
        const T* a = A + m0 * lda;
        for (int64_t k = 0; k < K; ++k) {
          const T a0 = a[k], a1 = a[lda + k], a2 = a[2 * lda + k], a3 = a[3 * lda + k];
          const T* __restrict b = B + k * ldb + n0;
          for (int64_t n = 0; n < nn; ++n) {
            const T bv = b[n];
            c0[n] += a0 * bv;
            c1[n] += a1 * bv;
            c2[n] += a2 * bv;
            c3[n] += a3 * bv;
          }
        }
      } else {
        for (int64_t i = 0; i < mm; ++i) {
          T* c = C + (m0 + i) * ldc + n0;
          const T* a = A + (m0 + i) * lda;
          for (int64_t k = 0; k < K; ++k) {
            const T av = a[k];
            const T* b = B + k * ldb + n0;
            for (int64_t n = 0; n < nn; ++n) c[n] += av * b[n];
          }
        }
      }
    }
  });
}

// [d0, d1, rest] -> [d1, d0, rest] (swaps the two leading axes).
template <class T>
void swap01(const T* src, T* dst, int64_t d0, int64_t d1, int64_t rest) {
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j) std::memcpy(dst + (j * d0 + i) * rest, src + (i * d1 + j) * rest, size_t(rest) * sizeof(T));
}

class RnnKernel : public OpKernel {
 public:
  explicit RnnKernel(Cell cell) : cell_(cell) {}

  Status init(const Node& node, int opset) override {
    gates_ = cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 3 : 4;
    int acts_per_dir = cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 2 : 3;
    hidden_ = node.attrs.get_int("hidden_size", -1);
    if (node.attrs.has("hidden_size") && hidden_ <= 0) {
      return invalid_model("attribute hidden_size must be > 0, got " + std::to_string(hidden_));
    }
    std::string dir = node.attrs.get_string("direction", "forward");
    if (dir == "forward") dirs_ = 1;
    else if (dir == "reverse") dirs_ = 1, reverse_ = true;
    else if (dir == "bidirectional") dirs_ = 2;
    else return invalid_model("attribute direction must be forward, reverse or bidirectional, got '" + dir + "'");
    std::vector<std::string> names = node.attrs.get_strings("activations");
    if (names.empty()) {
      if (cell_ == Cell::kRnn) names = {"Tanh"};
      else if (cell_ == Cell::kGru) names = {"Sigmoid", "Tanh"};
      else names = {"Sigmoid", "Tanh", "Tanh"};
    }
    if (dirs_ == 2 && int(names.size()) == acts_per_dir) {  // one set given: use it for both directions
      std::vector<std::string> once = names;
      names.insert(names.end(), once.begin(), once.end());
    }
    if (int(names.size()) != acts_per_dir * dirs_) {
      return invalid_model("attribute activations has " + std::to_string(names.size()) + " names, expected " +
                           std::to_string(acts_per_dir * dirs_) + " (" + std::to_string(acts_per_dir) +
                           " per direction)");
    }
    std::vector<float> alphas = node.attrs.get_floats("activation_alpha"), betas = node.attrs.get_floats("activation_beta");
    size_t ai = 0, bi = 0;
    for (const auto& n : names) {
      INGOT_ASSIGN_OR_RETURN(Activation a, parse_activation(n, alphas, betas, ai, bi));
      acts_.push_back(a);
    }
    if (node.attrs.has("clip")) {
      clip_ = node.attrs.get_float("clip", 0.f);
      if (!(clip_ > 0)) return invalid_model("attribute clip must be > 0, got " + std::to_string(clip_));
      has_clip_ = true;
    }
    if (opset >= 14) {
      layout_ = int(node.attrs.get_int("layout", 0));
      if (layout_ != 0 && layout_ != 1) return invalid_model("attribute layout must be 0 or 1, got " + std::to_string(layout_));
    }
    if (cell_ == Cell::kGru) linear_before_reset_ = node.attrs.get_int("linear_before_reset", 0) != 0;
    if (cell_ == Cell::kLstm) input_forget_ = node.attrs.get_int("input_forget", 0) != 0;
    int max_inputs = cell_ == Cell::kLstm ? 8 : 6;
    if (node.inputs.size() < 3 || int(node.inputs.size()) > max_inputs) {
      return invalid_model("needs 3 to " + std::to_string(max_inputs) + " inputs (X, W, R, ...), got " +
                           std::to_string(node.inputs.size()));
    }
    int max_outputs = cell_ == Cell::kLstm ? 3 : 2;
    if (int(node.outputs.size()) > max_outputs) {
      return invalid_model("has " + std::to_string(node.outputs.size()) + " outputs, at most " +
                           std::to_string(max_outputs) + " allowed");
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    for (int i = 0; i < 3; ++i)
      if (!ctx.has_input(i)) return invalid_model(std::string("input ") + "XWR"[i] + " is required");
    DType dt = ctx.input_dtype(0);
    if (dt != DType::kFloat32 && dt != DType::kFloat64) {
      return unsupported("X has dtype " + dtype_name(dt) + "; ingot runs " + op_name() + " in float32 and float64");
    }
    static const char* kNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i) || i == 4) continue;
      if (ctx.input_dtype(i) != dt) {
        return invalid_argument(std::string(kNames[i]) + " has dtype " + dtype_name(ctx.input_dtype(i)) + ", X has " +
                                dtype_name(dt));
      }
    }
    INGOT_ASSIGN_OR_RETURN(Dims d, dims(ctx));
    auto expect = [&](int i, Shape want) -> Status {
      if (!ctx.has_input(i) || ctx.input_shape(i) == want) return Status::ok();
      return invalid_argument(std::string(kNames[i]) + " has shape " + shape_str(ctx.input_shape(i)) + ", expected " +
                              shape_str(want));
    };
    int64_t G = gates_, H = d.hidden, D = dirs_;
    INGOT_RETURN_IF_ERROR(expect(1, {D, G * H, d.input}));
    INGOT_RETURN_IF_ERROR(expect(2, {D, G * H, H}));
    INGOT_RETURN_IF_ERROR(expect(3, {D, 2 * G * H}));
    Shape state = layout_ ? Shape{d.batch, D, H} : Shape{D, d.batch, H};
    INGOT_RETURN_IF_ERROR(expect(5, state));
    if (cell_ == Cell::kLstm) {
      INGOT_RETURN_IF_ERROR(expect(6, state));
      INGOT_RETURN_IF_ERROR(expect(7, {D, 3 * H}));
    }
    if (ctx.has_input(4)) {
      DType st = ctx.input_dtype(4);
      if (st != DType::kInt32 && st != DType::kInt64) return invalid_argument("sequence_lens must be int32, got " + dtype_name(st));
      if (ctx.input_shape(4) != Shape{d.batch}) {
        return invalid_argument("sequence_lens has shape " + shape_str(ctx.input_shape(4)) + ", expected " + shape_str({d.batch}));
      }
    }
    ctx.set_output(0, dt, layout_ ? Shape{d.batch, d.seq, D, H} : Shape{d.seq, D, d.batch, H});
    for (int o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, dt, state);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    Status st;
    if (ctx.input(0).dtype() == DType::kFloat64) st = run<double>(ctx);
    else st = run<float>(ctx);
    return st;
  }

 private:
  struct Dims { int64_t seq, batch, input, hidden; };

  std::string op_name() const { return cell_ == Cell::kRnn ? "RNN" : cell_ == Cell::kGru ? "GRU" : "LSTM"; }

  template <class Ctx> Expected<Dims> dims(const Ctx& ctx) const {
    const Shape& x = ctx.input_shape(0);
    const Shape& r = ctx.input_shape(2);
    if (x.size() != 3) return invalid_argument("X must have rank 3, got shape " + shape_str(x));
    if (r.size() != 3) return invalid_argument("R must have rank 3, got shape " + shape_str(r));
    Dims d{layout_ ? x[1] : x[0], layout_ ? x[0] : x[1], x[2], hidden_ > 0 ? hidden_ : r[2]};
    if (d.hidden <= 0) return invalid_argument("hidden size must be > 0, R has shape " + shape_str(r));
    return d;
  }

  template <class T> T clip(T v) const {
    return has_clip_ ? std::max(T(-clip_), std::min(T(clip_), v)) : v;
  }

  template <class T> Status run(ComputeContext& ctx) const {
    struct ShapeView {
      const ComputeContext& c;
      const Shape& input_shape(int i) const { return c.input(i).shape(); }
    };
    INGOT_ASSIGN_OR_RETURN(Dims dm, dims(ShapeView{ctx}));
    const int64_t S = dm.seq, Bt = dm.batch, I = dm.input, H = dm.hidden, D = dirs_, G = gates_, GH = G * H;
    const T* x = ctx.input(0).data<T>();
    const T* W = ctx.input(1).data<T>();
    const T* R = ctx.input(2).data<T>();
    const T* Bias = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
    const T* P = cell_ == Cell::kLstm && ctx.has_input(7) ? ctx.input(7).data<T>() : nullptr;

    std::vector<int64_t> lens(size_t(Bt), S);
    if (ctx.has_input(4)) {
      for (int64_t b = 0; b < Bt; ++b) {
        int64_t l = ctx.input(4).scalar_as_int(b);
        if (l < 0 || l > S) {
          return invalid_argument("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(l) + " is outside [0, " +
                                  std::to_string(S) + "]");
        }
        lens[size_t(b)] = l;
      }
    }
    // Layout 0 copies of X and the initial states.
    std::vector<T> xbuf, h0buf, c0buf;
    if (layout_) {
      xbuf.resize(size_t(S * Bt * I));
      swap01(x, xbuf.data(), Bt, S, I);
      x = xbuf.data();
    }
    auto state_in = [&](int i, std::vector<T>& buf) -> const T* {
      if (!ctx.has_input(i)) return nullptr;
      const T* p = ctx.input(i).data<T>();
      if (!layout_) return p;
      buf.resize(size_t(D * Bt * H));
      swap01(p, buf.data(), Bt, D, H);
      return buf.data();
    };
    const T* h0 = state_in(5, h0buf);
    const T* c0 = cell_ == Cell::kLstm ? state_in(6, c0buf) : nullptr;

    std::vector<T> Y(size_t(S * D * Bt * H), T(0)), Yh(size_t(D * Bt * H)), Yc(size_t(D * Bt * H));
    std::vector<T> Wt(size_t(I * GH)), Rt(size_t(H * GH)), XW(size_t(S * Bt * GH)), rec(size_t(Bt * GH));
    std::vector<T> h(size_t(Bt * H)), hn(size_t(Bt * H)), c(size_t(Bt * H)), rh(size_t(Bt * H)), rec2(size_t(Bt * H));

    for (int64_t d = 0; d < D; ++d) {
      const bool rev = reverse_ || d == 1;
      const T* Wd = W + d * GH * I;
      const T* Rd = R + d * GH * H;
      for (int64_t g = 0; g < GH; ++g) {
        for (int64_t k = 0; k < I; ++k) Wt[size_t(k * GH + g)] = Wd[g * I + k];
        for (int64_t k = 0; k < H; ++k) Rt[size_t(k * GH + g)] = Rd[g * H + k];
      }
      const T* Wb = Bias ? Bias + d * 2 * GH : nullptr;
      const T* Rb = Bias ? Bias + d * 2 * GH + GH : nullptr;
      gemm<T>(S * Bt, GH, I, x, I, Wt.data(), GH, Wb, XW.data(), GH);
      if (h0) std::copy(h0 + d * Bt * H, h0 + (d + 1) * Bt * H, h.begin());
      else std::fill(h.begin(), h.end(), T(0));
      if (c0) std::copy(c0 + d * Bt * H, c0 + (d + 1) * Bt * H, c.begin());
      else std::fill(c.begin(), c.end(), T(0));
      const Activation* act = &acts_[size_t(d * (cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 2 : 3))];
      const T* Pd = P ? P + d * 3 * H : nullptr;

      for (int64_t s = 0; s < S; ++s) {
        // Recurrent part: h·Rᵀ + Rb. GRU without linear_before_reset needs only z and r here.
        int64_t ncols = (cell_ == Cell::kGru && !linear_before_reset_) ? 2 * H : GH;
        gemm<T>(Bt, ncols, H, h.data(), H, Rt.data(), GH, Rb, rec.data(), GH);
        auto xw_row = [&](int64_t b) {
          int64_t t = rev ? lens[size_t(b)] - 1 - s : s;
          return XW.data() + (t * Bt + b) * GH;
        };
        if (cell_ == Cell::kGru && !linear_before_reset_) {
          // r = f(...), then (r ⊙ h)·Rhᵀ + Rbh
          for (int64_t b = 0; b < Bt; ++b) {
            if (s >= lens[size_t(b)]) continue;
            const T* xw = xw_row(b);
            const T* rc = rec.data() + b * GH;
            for (int64_t j = 0; j < H; ++j) {
              T r = act[0](clip(xw[H + j] + rc[H + j]));
              rh[size_t(b * H + j)] = r * h[size_t(b * H + j)];
            }
          }
          gemm<T>(Bt, H, H, rh.data(), H, Rt.data() + 2 * H, GH, Rb ? Rb + 2 * H : nullptr, rec2.data(), H);
        }
        for (int64_t b = 0; b < Bt; ++b) {
          T* hb = hn.data() + b * H;
          const T* hp = h.data() + b * H;
          if (s >= lens[size_t(b)]) {
            std::copy(hp, hp + H, hb);
            continue;
          }
          const T* xw = xw_row(b);
          const T* rc = rec.data() + b * GH;
          T* cb = c.data() + b * H;
          switch (cell_) {
            case Cell::kRnn:
              for (int64_t j = 0; j < H; ++j) hb[j] = act[0](clip(xw[j] + rc[j]));
              break;
            case Cell::kGru:
              for (int64_t j = 0; j < H; ++j) {
                T z = act[0](clip(xw[j] + rc[j]));
                T hh;
                if (linear_before_reset_) {
                  T r = act[0](clip(xw[H + j] + rc[H + j]));
                  hh = act[1](clip(xw[2 * H + j] + r * rc[2 * H + j]));
                } else {
                  hh = act[1](clip(xw[2 * H + j] + rec2[size_t(b * H + j)]));
                }
                hb[j] = (T(1) - z) * hh + z * hp[j];
              }
              break;
            case Cell::kLstm:
              for (int64_t j = 0; j < H; ++j) {
                T cp = cb[j];
                T gi = xw[j] + rc[j] + (Pd ? Pd[j] * cp : T(0));
                T i = act[0](clip(gi));
                T f;
                if (input_forget_) {
                  f = T(1) - i;
                } else {
                  T gf = xw[2 * H + j] + rc[2 * H + j] + (Pd ? Pd[2 * H + j] * cp : T(0));
                  f = act[0](clip(gf));
                }
                T cc = act[1](clip(xw[3 * H + j] + rc[3 * H + j]));
                T cn = f * cp + i * cc;
                T go = xw[H + j] + rc[H + j] + (Pd ? Pd[H + j] * cn : T(0));
                T o = act[0](clip(go));
                cb[j] = cn;
                hb[j] = o * act[2](cn);
              }
              break;
          }
          int64_t t = rev ? lens[size_t(b)] - 1 - s : s;
          std::copy(hb, hb + H, Y.data() + ((t * D + d) * Bt + b) * H);
        }
        std::swap(h, hn);
      }
      std::copy(h.begin(), h.end(), Yh.begin() + d * Bt * H);
      std::copy(c.begin(), c.end(), Yc.begin() + d * Bt * H);
    }

    // Outputs, transposed back for layout 1.
    if (ctx.has_output(0)) {
      T* y = ctx.output(0).data<T>();
      if (!layout_) {
        std::copy(Y.begin(), Y.end(), y);
      } else {  // [S, D, B, H] -> [B, S, D, H]
        for (int64_t t = 0; t < S; ++t)
          for (int64_t dd = 0; dd < D; ++dd)
            for (int64_t b = 0; b < Bt; ++b)
              std::memcpy(y + ((b * S + t) * D + dd) * H, Y.data() + ((t * D + dd) * Bt + b) * H, size_t(H) * sizeof(T));
      }
    }
    auto state_out = [&](int o, const std::vector<T>& v) {
      if (!ctx.has_output(o)) return;
      T* p = ctx.output(o).data<T>();
      if (layout_) swap01(v.data(), p, D, Bt, H);
      else std::copy(v.begin(), v.end(), p);
    };
    state_out(1, Yh);
    if (cell_ == Cell::kLstm) state_out(2, Yc);
    return Status::ok();
  }

  Cell cell_;
  int gates_ = 1, dirs_ = 1, layout_ = 0;
  bool reverse_ = false, has_clip_ = false, linear_before_reset_ = false, input_forget_ = false;
  int64_t hidden_ = -1;
  float clip_ = 0;
  std::vector<Activation> acts_;
};

class RnnOp : public RnnKernel { public: RnnOp() : RnnKernel(Cell::kRnn) {} };
class GruOp : public RnnKernel { public: GruOp() : RnnKernel(Cell::kGru) {} };
class LstmOp : public RnnKernel { public: LstmOp() : RnnKernel(Cell::kLstm) {} };

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", RNN, RnnOp);
INGOT_REGISTER_KERNEL(cpu, "", GRU, GruOp);
INGOT_REGISTER_KERNEL(cpu, "", LSTM, LstmOp);

}  // namespace ingot
