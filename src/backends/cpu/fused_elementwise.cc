// ingot.FusedElementwise (fuse_elementwise pass): a program of elementwise steps evaluated per
// output element (encoding in ir/elementwise_program.h). The reference for the CUDA kernel: it
// equals running the original nodes one by one bit for bit, because every step is the CPU
// kernel's own expression in the same compute type (float, also for float16/bfloat16) and its
// result is rounded to the step's dtype before the next step reads it.
//
// Runs of the output (rows of the broadcast walk) are evaluated a chunk at a time, one step
// over the whole chunk before the next: the switch on the opcode leaves the inner loops and
// they vectorise.
#include "backends/cpu/elementwise_util.h"
#include "ir/elementwise_program.h"

namespace ingot {
namespace {

using namespace ew;

constexpr int64_t kChunk = 256;

// One step over m elements; x/y/z the operands' chunks, r the result's.
void run_step(const EwStep& s, const float* x, const float* y, const float* z, float* r, int64_t m) {
  const float a0 = s.p0, a1 = s.p1;
  switch (s.op) {
    case EwOp::kNeg: for (int64_t i = 0; i < m; ++i) r[i] = -x[i]; break;
    case EwOp::kAbs: for (int64_t i = 0; i < m; ++i) r[i] = std::fabs(x[i]); break;
    case EwOp::kSqrt: for (int64_t i = 0; i < m; ++i) r[i] = std::sqrt(x[i]); break;
    case EwOp::kExp: for (int64_t i = 0; i < m; ++i) r[i] = fast_expf(x[i]); break;
    case EwOp::kLog: for (int64_t i = 0; i < m; ++i) r[i] = std::log(x[i]); break;
    case EwOp::kReciprocal: for (int64_t i = 0; i < m; ++i) r[i] = 1.0f / x[i]; break;
    case EwOp::kRelu: for (int64_t i = 0; i < m; ++i) r[i] = x[i] > 0.0f ? x[i] : 0.0f; break;
    case EwOp::kSigmoid: for (int64_t i = 0; i < m; ++i) r[i] = 1.0f / (1.0f + fast_expf(-x[i])); break;
    case EwOp::kTanh: for (int64_t i = 0; i < m; ++i) r[i] = fast_tanhf(x[i]); break;
    case EwOp::kErf: for (int64_t i = 0; i < m; ++i) r[i] = std::erf(x[i]); break;
    case EwOp::kHardSigmoid:
      for (int64_t i = 0; i < m; ++i) r[i] = std::max(0.0f, std::min(1.0f, a0 * x[i] + a1));
      break;
    case EwOp::kHardSwish:
      for (int64_t i = 0; i < m; ++i) r[i] = x[i] * std::max(0.0f, std::min(1.0f, x[i] / 6.0f + 0.5f));
      break;
    case EwOp::kLeakyRelu: for (int64_t i = 0; i < m; ++i) r[i] = x[i] < 0.0f ? a0 * x[i] : x[i]; break;
    case EwOp::kAdd: for (int64_t i = 0; i < m; ++i) r[i] = x[i] + y[i]; break;
    case EwOp::kSub: for (int64_t i = 0; i < m; ++i) r[i] = x[i] - y[i]; break;
    case EwOp::kMul: for (int64_t i = 0; i < m; ++i) r[i] = x[i] * y[i]; break;
    case EwOp::kDiv: for (int64_t i = 0; i < m; ++i) r[i] = x[i] / y[i]; break;
    // Max/Min propagate NaN from either side (the Max/Min kernels' rule).
    case EwOp::kMax: for (int64_t i = 0; i < m; ++i) r[i] = (x[i] > y[i] || x[i] != x[i]) ? x[i] : y[i]; break;
    case EwOp::kMin: for (int64_t i = 0; i < m; ++i) r[i] = (x[i] < y[i] || x[i] != x[i]) ? x[i] : y[i]; break;
    // bool results are 0 or 1.
    case EwOp::kEqual: for (int64_t i = 0; i < m; ++i) r[i] = x[i] == y[i] ? 1.0f : 0.0f; break;
    case EwOp::kLess: for (int64_t i = 0; i < m; ++i) r[i] = x[i] < y[i] ? 1.0f : 0.0f; break;
    case EwOp::kGreater: for (int64_t i = 0; i < m; ++i) r[i] = x[i] > y[i] ? 1.0f : 0.0f; break;
    case EwOp::kLessEqual: for (int64_t i = 0; i < m; ++i) r[i] = x[i] <= y[i] ? 1.0f : 0.0f; break;
    case EwOp::kGreaterEqual: for (int64_t i = 0; i < m; ++i) r[i] = x[i] >= y[i] ? 1.0f : 0.0f; break;
    case EwOp::kNot: for (int64_t i = 0; i < m; ++i) r[i] = x[i] != 0.0f ? 0.0f : 1.0f; break;
    case EwOp::kAnd: for (int64_t i = 0; i < m; ++i) r[i] = (x[i] != 0.0f && y[i] != 0.0f) ? 1.0f : 0.0f; break;
    case EwOp::kOr: for (int64_t i = 0; i < m; ++i) r[i] = (x[i] != 0.0f || y[i] != 0.0f) ? 1.0f : 0.0f; break;
    case EwOp::kWhere: for (int64_t i = 0; i < m; ++i) r[i] = x[i] != 0.0f ? y[i] : z[i]; break;
    // Integer sources were loaded as float(v), the conversion Cast makes; rounding to T follows.
    case EwOp::kCastFloat: for (int64_t i = 0; i < m; ++i) r[i] = x[i]; break;
    case EwOp::kCastBool: for (int64_t i = 0; i < m; ++i) r[i] = x[i] != 0.0f ? 1.0f : 0.0f; break;
    case EwOp::kCount: break;
  }
}

// Rounds a step's results to T (bool results, 0 and 1, are exact in every T).
template <class T>
void round_to(float* r, int64_t m) {
  if constexpr (!std::is_same_v<T, float>)
    for (int64_t i = 0; i < m; ++i) r[i] = float(T(r[i]));
}

// Loads m elements (stride 0 or 1) of an input as float.
void load(const Tensor& t, int64_t off, int64_t stride, float* dst, int64_t m) {
  dispatch_all(t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (std::is_same_v<S, float> || is_half_v<S> || std::is_same_v<S, bool> ||
                  std::is_same_v<S, int32_t> || std::is_same_v<S, int64_t>) {
      const S* p = t.data<S>() + off;
      if (stride) for (int64_t i = 0; i < m; ++i) dst[i] = float(p[i]);
      else std::fill(dst, dst + m, float(*p));
    }
  });
}

class FusedElementwiseKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(prog_, parse_ew_program(node));
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    std::vector<DType> types;
    std::vector<Shape> shapes;
    for (int i = 0; i < prog_.num_inputs; ++i) {
      if (!ctx.has_input(i)) return invalid_model("input " + std::to_string(i) + " is missing");
      types.push_back(ctx.input_dtype(i));
      shapes.push_back(ctx.input_shape(i));
    }
    INGOT_ASSIGN_OR_RETURN(EwTyping typing, type_ew_program(prog_, types));
    INGOT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(shapes));
    ctx.set_output(0, typing.out == EwKind::kBool ? DType::kBool : typing.float_type, std::move(s));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    Tensor& out = ctx.output(0);
    DType float_type = DType::kFloat32;
    for (int i = 0; i < prog_.num_inputs; ++i)
      if (dtype_is_float(ctx.input(i).dtype())) float_type = ctx.input(i).dtype();
    switch (float_type) {
      case DType::kFloat16: run<float16>(ctx, out); break;
      case DType::kBFloat16: run<bfloat16>(ctx, out); break;
      default: run<float>(ctx, out); break;
    }
    return Status::ok();
  }

 private:
  template <class T>
  void run(ComputeContext& ctx, Tensor& out) const {
    const int ni = prog_.num_inputs;
    const int ns = int(prog_.steps.size());
    // Unused operands of the 4-way walk read a scalar.
    static const Shape kScalar;
    std::array<const Shape*, kEwMaxInputs> shapes;
    for (int k = 0; k < kEwMaxInputs; ++k) shapes[size_t(k)] = k < ni ? &ctx.input(k).shape() : &kScalar;
    auto plan = make_plan<kEwMaxInputs>(shapes, out.shape());
    const bool bool_out = out.dtype() == DType::kBool;
    walk<kEwMaxInputs>(plan, 4 * ns, [&](int64_t o, const std::array<int64_t, kEwMaxInputs>& off,
                                           const std::array<int64_t, kEwMaxInputs>& st, int64_t n) {
      float regs[kEwMaxInputs + kEwMaxSteps][kChunk];
      for (int64_t c = 0; c < n; c += kChunk) {
        const int64_t m = std::min(kChunk, n - c);
        for (int k = 0; k < ni; ++k) load(ctx.input(k), off[size_t(k)] + c * st[size_t(k)], st[size_t(k)], regs[k], m);
        for (int s = 0; s < ns; ++s) {
          const EwStep& step = prog_.steps[size_t(s)];
          auto operand = [&](int j) { return step.in[j] >= 0 ? regs[step.in[j]] : nullptr; };
          float* r = regs[ni + s];
          run_step(step, operand(0), operand(1), operand(2), r, m);
          round_to<T>(r, m);
        }
        const float* res = regs[ni + ns - 1];
        if (bool_out) {
          bool* dst = out.data<bool>() + o + c;
          for (int64_t i = 0; i < m; ++i) dst[i] = res[i] != 0.0f;
        } else {
          T* dst = out.data<T>() + o + c;
          for (int64_t i = 0; i < m; ++i) dst[i] = T(res[i]);
        }
      }
    });
  }

  EwProgram prog_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "ingot", FusedElementwise, FusedElementwiseKernel);

}  // namespace ingot
