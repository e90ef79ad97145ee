// Conv and ConvTranspose (1-D/2-D/3-D, groups, strides, pads, dilations, auto_pad, bias,
// output_padding/output_shape) on oneDNN's convolution/deconvolution primitives. oneDNN picks
// the layouts (format `any`, usually blocked); activations and weights are reordered into them
// and the result back to plain NCHW. Non-float32 float inputs go through float32.
#include "backends/cpu/dnnl_util.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

using namespace dnnl_util;
using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;


struct ConvPrim {
  dnnl::primitive prim;
  md src, wei, dst, scratch;
};

// Runs a conv/deconv primitive on plain buffers, reordering where its layouts differ.
void run_prim(const ConvPrim& p, const md& xd, const float* x, const md& wd, const float* w, const float* bias,
              int64_t bias_n, const md& yd, float* y) {
  auto& eng = cpu_engine();
  dnnl::stream s(eng);
  auto in = [&](const md& want, const md& have, const float* data) {
    dnnl::memory m(have, eng, const_cast<float*>(data));
    if (want == have) return m;
    dnnl::memory t(want, eng);
    dnnl::reorder(m, t).execute(s, m, t);
    return t;
  };
  dnnl::memory xm = in(p.src, xd, x);
  dnnl::memory wm = in(p.wei, wd, w);
  dnnl::memory ym(yd, eng, y);
  dnnl::memory yb = p.dst == yd ? ym : dnnl::memory(p.dst, eng);
  dnnl::memory scratch = scratchpad(p.scratch);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, yb}, {DNNL_ARG_SCRATCHPAD, scratch}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(plain_desc({bias_n}), eng, const_cast<float*>(bias)));
  p.prim.execute(s, args);
  if (!(p.dst == yd)) dnnl::reorder(yb, ym).execute(s, yb, ym);
  s.wait();
}

// Weight dims in oneDNN's logical order (g, oc/g, ic/g, k...) or (oc, ic, k...) without groups.
dnnl::memory::dims weight_dims(int64_t group, int64_t oc, int64_t ic, const Shape& k) {
  dnnl::memory::dims d;
  if (group > 1) d = {group, oc / group, ic / group};
  else d = {oc, ic};
  d.insert(d.end(), k.begin(), k.end());
  return d;
}

// Shared validation of X, W, B for Conv and ConvTranspose. W's channel dim that must match X's
// channels is W[0] for ConvTranspose and W[1]*group for Conv.
Status check_inputs(InferContext& ctx, bool transpose, int64_t group, const std::vector<int64_t>& kernel_attr) {
  if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3 || !ctx.has_input(0) || !ctx.has_input(1))
    return invalid_model("needs 2 or 3 inputs (X, W, B), got " + std::to_string(ctx.num_inputs()));
  DType t = ctx.input_dtype(0);
  if (!dtype_is_float(t)) return unsupported("input 0 (X) has dtype " + dtype_name(t) + "; only float types are supported");
  for (int i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != t)
      return invalid_model("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) +
                           ", X has " + dtype_name(t));
  const Shape& x = ctx.input_shape(0);
  const Shape& w = ctx.input_shape(1);
  if (x.size() < 3 || x.size() > 5)
    return unsupported("input 0 (X) has shape " + shape_str(x) + "; ingot supports 1-D, 2-D and 3-D convolutions (rank 3..5)");
  if (w.size() != x.size())
    return invalid_argument("input 1 (W) has rank " + std::to_string(w.size()) + " (shape " + shape_str(w) +
                            "), X has rank " + std::to_string(x.size()));
  if (group <= 0) return invalid_model("group=" + std::to_string(group) + " must be positive");
  int64_t C = x[1];
  if (!transpose && w[1] * group != C)
    return invalid_argument("input 1 (W) has " + std::to_string(w[1]) + " input channels, X has " + std::to_string(C) +
                            " (group=" + std::to_string(group) + ")");
  if (transpose && w[0] != C)
    return invalid_argument("input 1 (W) has " + std::to_string(w[0]) + " input channels, X has " + std::to_string(C));
  if (!transpose && w[0] % group != 0)
    return invalid_argument("input 1 (W) has " + std::to_string(w[0]) + " output channels, not divisible by group=" +
                            std::to_string(group));
  if (transpose && C % group != 0)
    return invalid_argument("X has " + std::to_string(C) + " channels, not divisible by group=" + std::to_string(group));
  Shape k(w.begin() + 2, w.end());
  if (!kernel_attr.empty() && kernel_attr != std::vector<int64_t>(k.begin(), k.end()))
    return invalid_model("kernel_shape " + ints_str(kernel_attr) + " does not match W's spatial dims " + shape_str(k));
  int64_t M = transpose ? w[1] * group : w[0];
  if (ctx.has_input(2) && ctx.input_shape(2) != Shape{M})
    return invalid_argument("input 2 (B) has shape " + shape_str(ctx.input_shape(2)) + ", expected [" +
                            std::to_string(M) + "]");
  for (size_t i = 1; i < x.size(); ++i)
    if (x[i] == 0) return unsupported("input 0 (X) has an empty channel or spatial dim: " + shape_str(x));
  return Status::ok();
}

class ConvKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    INGOT_RETURN_IF_ERROR(sp_.parse(node));
    group_ = node.attrs.get_int("group", 1);
    if (group_ <= 0) return invalid_model("group=" + std::to_string(group_) + " must be positive");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_inputs(ctx, false, group_, sp_.kernel_shape));
    std::vector<int64_t> st, dl, pb, pe;
    Shape y;
    INGOT_RETURN_IF_ERROR(sp_.conv_geometry(ctx.input_shape(0), ctx.input_shape(1), st, dl, pb, pe, y));
    ctx.set_output(0, ctx.input_dtype(0), y);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return guard([&]() -> Status {
      const Tensor& X = ctx.input(0);
      const Tensor& W = ctx.input(1);
      Tensor& Y = ctx.output(0);
      if (Y.numel() == 0) return Status::ok();
      std::vector<int64_t> st, dl, pb, pe;
      Shape ys;
      INGOT_RETURN_IF_ERROR(sp_.conv_geometry(X.shape(), W.shape(), st, dl, pb, pe, ys));
      bool has_b = ctx.has_input(2);
      Tensor Xf = to_f32(X), Wf = to_f32(W), Bf = has_b ? to_f32(ctx.input(2)) : Tensor();
      Tensor Yf = Y.dtype() == DType::kFloat32 ? Y : Tensor(DType::kFloat32, Y.shape());
      Shape k(W.shape().begin() + 2, W.shape().end());
      auto xd = to_dims(X.shape()), yd = to_dims(ys);
      auto wd = weight_dims(group_, W.dim(0), W.dim(1) * group_, k);
      dnnl::memory::dims d1(dl.size());
      for (size_t i = 0; i < dl.size(); ++i) d1[i] = dl[i] - 1;
      std::string key = key_of({xd, wd, st, dl, pb, pe, {has_b}});
      auto p = cache_.get(key, [&] {
        dnnl::convolution_forward::desc d(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_desc(xd), any_desc(wd),
            has_b ? plain_desc({W.dim(0)}) : md(), any_desc(yd), to_dims(st), d1, to_dims(pb), to_dims(pe));
        dnnl::convolution_forward::primitive_desc pd(d, user_scratchpad_attr(), cpu_engine());
        auto cp = std::make_shared<ConvPrim>();
        cp->prim = dnnl::convolution_forward(pd);
        cp->src = pd.src_desc(), cp->wei = pd.weights_desc(), cp->dst = pd.dst_desc();
        cp->scratch = pd.scratchpad_desc();
        return cp;
      });
      run_prim(*p, plain_desc(xd), Xf.data<float>(), plain_desc(wd), Wf.data<float>(),
               has_b ? Bf.data<float>() : nullptr, W.dim(0), plain_desc(yd), Yf.data<float>());
      if (Y.dtype() != DType::kFloat32) from_f32(Yf, Y);
      return Status::ok();
    });
  }

 private:
  Spatial sp_;
  int64_t group_ = 1;
  mutable Cache<ConvPrim> cache_;
};

class ConvTransposeKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    INGOT_RETURN_IF_ERROR(sp_.parse(node));
    group_ = node.attrs.get_int("group", 1);
    if (group_ <= 0) return invalid_model("group=" + std::to_string(group_) + " must be positive");
    output_padding_ = node.attrs.get_ints("output_padding");
    output_shape_ = node.attrs.get_ints("output_shape");
    for (int64_t v : output_padding_)
      if (v < 0) return invalid_model("output_padding " + ints_str(output_padding_) + " has a negative entry");
    for (int64_t v : output_shape_)
      if (v <= 0) return invalid_model("output_shape " + ints_str(output_shape_) + " has a non-positive entry");
    return Status::ok();
  }

  // Output shape and begin pads (may be negative); `full` is the unpadded deconv extent.
  Status geometry(const Shape& x, const Shape& w, std::vector<int64_t>& st, std::vector<int64_t>& dl,
                  std::vector<int64_t>& pb, Shape& out, Shape& full) const {
    size_t nd = x.size() - 2;
    INGOT_RETURN_IF_ERROR(sp_.expand(nd, st, dl));
    std::vector<int64_t> op = output_padding_.empty() ? std::vector<int64_t>(nd, 0) : output_padding_;
    if (op.size() != nd)
      return invalid_model("output_padding " + ints_str(output_padding_) + " has " + std::to_string(op.size()) +
                           " entries, expected " + std::to_string(nd));
    std::vector<int64_t> os;
    if (!output_shape_.empty()) {
      if (output_shape_.size() != nd && output_shape_.size() != nd + 2)
        return invalid_model("output_shape " + ints_str(output_shape_) + " has " +
                             std::to_string(output_shape_.size()) + " entries, expected " + std::to_string(nd));
      os.assign(output_shape_.end() - int64_t(nd), output_shape_.end());
    }
    pb.assign(nd, 0);
    out = {x[0], w[1] * group_};
    full.assign(nd, 0);
    for (size_t i = 0; i < nd; ++i) {
      int64_t ek = (w[i + 2] - 1) * dl[i] + 1;
      int64_t in = x[i + 2];
      full[i] = st[i] * (in - 1) + ek;
      int64_t natural = full[i] + op[i];
      bool same = sp_.auto_pad == "SAME_UPPER" || sp_.auto_pad == "SAME_LOWER";
      int64_t o;
      if (!os.empty() || same) {
        o = !os.empty() ? os[i] : in * st[i];
        int64_t total = natural - o;
        bool upper = sp_.auto_pad == "SAME_UPPER";
        // Floor division so negative totals (a larger requested output) split consistently.
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        pb[i] = upper ? half : total - half;
      } else {
        int64_t b = 0, e = 0;
        if (sp_.auto_pad == "NOTSET" && !sp_.pads.empty()) b = sp_.pads[i], e = sp_.pads[i + nd];
        if (b < 0 || e < 0) return invalid_model("pads " + ints_str(sp_.pads) + " has a negative entry");
        o = natural - b - e;
        pb[i] = b;
      }
      if (o <= 0)
        return invalid_argument("spatial dim " + std::to_string(i) + " of the output would be " + std::to_string(o));
      out.push_back(o);
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_inputs(ctx, true, group_, sp_.kernel_shape));
    std::vector<int64_t> st, dl, pb;
    Shape y, full;
    INGOT_RETURN_IF_ERROR(geometry(ctx.input_shape(0), ctx.input_shape(1), st, dl, pb, y, full));
    ctx.set_output(0, ctx.input_dtype(0), y);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return guard([&]() -> Status {
      const Tensor& X = ctx.input(0);
      const Tensor& W = ctx.input(1);
      Tensor& Y = ctx.output(0);
      if (Y.numel() == 0) return Status::ok();
      std::vector<int64_t> st, dl, pb;
      Shape ys, full;
      INGOT_RETURN_IF_ERROR(geometry(X.shape(), W.shape(), st, dl, pb, ys, full));
      size_t nd = full.size();
      bool has_b = ctx.has_input(2);
      int64_t M = ys[1];
      Tensor Xf = to_f32(X), Wf = to_f32(W), Bf = has_b ? to_f32(ctx.input(2)) : Tensor();
      Tensor Yf = Y.dtype() == DType::kFloat32 ? Y : Tensor(DType::kFloat32, Y.shape());
      // Direct when the output is a crop of the full extent; otherwise compute the full extent
      // and crop/zero-extend it.
      std::vector<int64_t> pe(nd);
      bool direct = true;
      for (size_t i = 0; i < nd; ++i) {
        pe[i] = full[i] - pb[i] - ys[i + 2];
        direct &= pb[i] >= 0 && pe[i] >= 0;
      }
      Shape ds = ys;
      std::vector<int64_t> ppb = pb, ppe = pe;
      if (!direct) {
        for (size_t i = 0; i < nd; ++i) ds[i + 2] = full[i], ppb[i] = 0, ppe[i] = 0;
      }
      Shape k(W.shape().begin() + 2, W.shape().end());
      int64_t icg = X.dim(1) / group_, ocg = W.dim(1);
      auto xd = to_dims(X.shape()), yd = to_dims(ds);
      auto wd = weight_dims(group_, M, X.dim(1), k);
      // ONNX W is (C_in, M/g, k...) = (g, ic/g, oc/g, k...) physically.
      int64_t ksz = shape_numel(k);
      dnnl::memory::dims ws(wd.size());
      size_t o = group_ > 1 ? 1 : 0;
      if (group_ > 1) ws[0] = icg * ocg * ksz;
      ws[o] = ksz, ws[o + 1] = ocg * ksz;
      int64_t acc = 1;
      for (int i = int(wd.size()) - 1; i >= int(o + 2); --i) ws[size_t(i)] = acc, acc *= wd[size_t(i)];
      md wplain(wd, dt::f32, ws);
      dnnl::memory::dims d1(nd);
      for (size_t i = 0; i < nd; ++i) d1[i] = dl[i] - 1;
      bool bias_in_prim = has_b && direct;
      std::string key = key_of({xd, wd, st, dl, ppb, ppe, {bias_in_prim}});
      auto p = cache_.get(key, [&] {
        dnnl::deconvolution_forward::desc d(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, any_desc(xd), any_desc(wd),
            bias_in_prim ? plain_desc({M}) : md(), any_desc(yd), to_dims(st), d1, to_dims(ppb), to_dims(ppe));
        dnnl::deconvolution_forward::primitive_desc pd(d, user_scratchpad_attr(), cpu_engine());
        auto cp = std::make_shared<ConvPrim>();
        cp->prim = dnnl::deconvolution_forward(pd);
        cp->src = pd.src_desc(), cp->wei = pd.weights_desc(), cp->dst = pd.dst_desc();
        cp->scratch = pd.scratchpad_desc();
        return cp;
      });
      if (direct) {
        run_prim(*p, plain_desc(xd), Xf.data<float>(), wplain, Wf.data<float>(),
                 bias_in_prim ? Bf.data<float>() : nullptr, M, plain_desc(yd), Yf.data<float>());
      } else {
        Tensor F(DType::kFloat32, ds);
        run_prim(*p, plain_desc(xd), Xf.data<float>(), wplain, Wf.data<float>(), nullptr, M, plain_desc(yd),
                 F.data<float>());
        // Crop/extend F into Y, adding the bias everywhere.
        auto fs = strides_of(ds), os = strides_of(ys);
        const float* f = F.data<float>();
        float* y = Yf.data<float>();
        const float* b = has_b ? Bf.data<float>() : nullptr;
        int64_t planes = ys[0] * M, plane = shape_numel(Shape(ys.begin() + 2, ys.end()));
        parallel_for(planes, plane, [&](int64_t pb0, int64_t pe0) {
          for (int64_t pl = pb0; pl < pe0; ++pl) {
            float bv = b ? b[pl % M] : 0.f;
            for (int64_t idx = 0; idx < plane; ++idx) {
              int64_t rem = idx, src = pl * fs[1];
              bool inside = true;
              for (size_t i = 0; i < nd; ++i) {
                int64_t c = rem / os[i + 2];
                rem %= os[i + 2];
                int64_t fc = c + pb[i];
                if (fc < 0 || fc >= full[i]) { inside = false; break; }
                src += fc * fs[i + 2];
              }
              y[pl * plane + idx] = (inside ? f[src] : 0.f) + bv;
            }
          }
        });
      }
      if (Y.dtype() != DType::kFloat32) from_f32(Yf, Y);
      return Status::ok();
    });
  }

 private:
  Spatial sp_;
  int64_t group_ = 1;
  std::vector<int64_t> output_padding_, output_shape_;
  mutable Cache<ConvPrim> cache_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Conv, ConvKernel);
INGOT_REGISTER_KERNEL(cpu, "", ConvTranspose, ConvTransposeKernel);

}  // namespace ingot
