// ingot.FusedConv (written by the fuse_conv_activation pass): Conv, then an optional residual Z
// added to its result, then an optional activation, as one oneDNN convolution with post-ops
// (sum for Z, eltwise for the activation). Inputs X, W, B (optional), Z (optional); attributes
// are Conv's plus `activation` (ONNX op name, "" for none) and `activation_params`.
//
// Why this kernel exists next to the plain Conv: the weights are reordered into the layout the
// primitive wants once per input shape and kept (the plain Conv reorders them on every call),
// the bias/residual/activation cost no extra pass over memory, and per-call buffers come from
// a per-thread arena instead of fresh allocations.
//
// Layouts: X, Z and Y are NCHW unless the attributes x_channels_last / z_channels_last /
// y_channels_last say that tensor is channels-last (shape [N, H, W, C]: the pass sets them on
// edges between two FusedConvs, so chains of convolutions never leave the layout oneDNN's
// brgemm convolutions run on). Where oneDNN has a fast implementation for the given layouts it
// runs on the caller's buffers directly; otherwise (it would fall back to gemm or a reference
// kernel) the tensors are reordered into the layout it prefers and back.
// INGOT_FUSED_CONV_LAYOUT=plain|blocked forces one choice (for measurements).
//
// Algorithm: 3x3 stride-1 convolutions over enough pixels run as oneDNN's Winograd convolution
// (F(2x2,3x3) or F(4x4,3x3) by its choice; blocked layout, reordered from and to the caller's):
// 2.25-4x fewer multiplies, 1.5-2.2x faster on ResNet-50's 3x3 layers on 2 threads. Its
// transforms change the rounding: on those layers the results differed from the direct kernel's
// by at most 3.1e-6 of the output's magnitude. INGOT_CONV_WINOGRAD=0 keeps every convolution
// direct.
//
// On CPUs with AVX2 and no AVX-512 (panel16_supported()), a 3x3 convolution between
// channels-last tensors with constant weights, 16k output channels, one group, no dilation, a
// channels-last residual of Y's shape or none, and ReLU or no activation runs conv_panel16
// instead (conv_panel16.h says why); INGOT_CONV_PANEL16=0 keeps oneDNN there. Not 1x1: oneDNN's
// jit_1x1:avx2 is faster there (ResNet-50 b1's FusedConv 75-81 ms a run with its 1x1 layers on
// conv_panel16 too, 65-69 with the 3x3 layers alone; developer session 43).
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backends/cpu/conv_panel16.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/fused_conv_util.h"
#include "backends/cpu/gemm_few_rows.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

using namespace dnnl_util;
using fused_conv::Act;
using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;

// Strides of logical dims (N, C, spatial...) stored channels-last when `cl`.
dnnl::memory::dims layout_strides(const dnnl::memory::dims& d, bool cl) {
  size_t r = d.size();
  dnnl::memory::dims s(r);
  if (!cl) {
    int64_t acc = 1;
    for (int i = int(r) - 1; i >= 0; --i) s[size_t(i)] = acc, acc *= d[size_t(i)];
    return s;
  }
  int64_t acc = d[1];
  s[1] = 1;
  for (int i = int(r) - 1; i >= 2; --i) s[size_t(i)] = acc, acc *= d[size_t(i)];
  s[0] = acc;
  return s;
}
md layout_desc(const dnnl::memory::dims& d, bool cl) { return md(d, dt::f32, layout_strides(d, cl)); }

Shape to_physical(const Shape& l, bool cl) {
  if (!cl || l.size() < 3) return l;
  Shape r = {l[0]};
  r.insert(r.end(), l.begin() + 2, l.end());
  r.push_back(l[1]);
  return r;
}

enum class LayoutMode { kAuto, kPlain, kBlocked };
LayoutMode layout_mode() {
  static const LayoutMode m = [] {
    const char* e = std::getenv("INGOT_FUSED_CONV_LAYOUT");
    std::string s = e ? e : "";
    return s == "plain" ? LayoutMode::kPlain : s == "blocked" ? LayoutMode::kBlocked : LayoutMode::kAuto;
  }();
  return m;
}

// One compiled convolution for one input geometry, with the constant weights packed for it.
struct Prim {
  dnnl::primitive prim;
  md src, wei, dst, scratch;
  bool post_ops = false;  // the sum and activation run inside the primitive
  dnnl::memory packed;    // the constant W in `wei`'s layout (empty: W is not constant)
  std::string impl;
  // Between the caller's layouts and the primitive's, when they differ (created once: a reorder
  // built per call cost more than its copy on ResNet-50's small tensors).
  dnnl::reorder src_in, dst_out, z_in;
};

dnnl::memory::dims weight_dims(int64_t group, int64_t oc, int64_t ic, const Shape& k) {
  dnnl::memory::dims d;
  if (group > 1) d = {group, oc / group, ic / group};
  else d = {oc, ic};
  d.insert(d.end(), k.begin(), k.end());
  return d;
}

void append_activation(dnnl::post_ops& po, const fused_conv::Activation& a) {
  using alg = dnnl::algorithm;
  switch (a.kind) {
    case Act::kNone: break;
    case Act::kRelu: po.append_eltwise(1.f, alg::eltwise_relu, 0.f, 0.f); break;
    case Act::kLeakyRelu: po.append_eltwise(1.f, alg::eltwise_relu, a.a, 0.f); break;
    case Act::kClip: po.append_eltwise(1.f, alg::eltwise_clip, a.a, a.b); break;
    case Act::kHardSwish: po.append_eltwise(1.f, alg::eltwise_hardswish, 0.f, 0.f); break;
    // oneDNN 2.6 has no hardsigmoid: alpha*x+beta clipped to [0, 1].
    case Act::kHardSigmoid:
      po.append_eltwise(1.f, alg::eltwise_linear, a.a, a.b);
      po.append_eltwise(1.f, alg::eltwise_clip, 0.f, 1.f);
      break;
    case Act::kSigmoid: po.append_eltwise(1.f, alg::eltwise_logistic, 0.f, 0.f); break;
  }
}

// Implementations that are slow on plain NCHW; with them the blocked layout wins.
bool slow_on_plain(const std::string& impl) {
  return impl.find("gemm") != std::string::npos || impl.find("ref") != std::string::npos;
}

// Winograd: 2-D 3x3 convolutions with stride 1 and no dilation (no groups: the weight dims have
// no group axis) over at least 196 output pixels (14x14 at batch 1; on 7x7 at batch 1 it measured
// no faster than the direct kernel before the layout reorders it needs).
bool winograd_pays(const dnnl::memory::dims& xd, const dnnl::memory::dims& wd, const dnnl::memory::dims& yd,
                   const std::vector<int64_t>& st, const dnnl::memory::dims& d1) {
  if (xd.size() != 4 || wd.size() != 4 || wd[2] != 3 || wd[3] != 3) return false;
  if (st[0] != 1 || st[1] != 1 || d1[0] != 0 || d1[1] != 0) return false;
  return yd[0] * yd[2] * yd[3] >= 196;
}
bool panel16_allowed() {
  static const bool allowed = [] {
    const char* e = std::getenv("INGOT_CONV_PANEL16");
    return !(e && std::string(e) == "0") && cpu::panel16_supported();
  }();
  return allowed;
}
bool winograd_allowed() {
  static const bool allowed = [] {
    const char* e = std::getenv("INGOT_CONV_WINOGRAD");
    return !(e && std::string(e) == "0");
  }();
  return allowed;
}

class FusedConvKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    INGOT_RETURN_IF_ERROR(sp_.parse(node));
    group_ = node.attrs.get_int("group", 1);
    if (group_ <= 0) return invalid_model("group=" + std::to_string(group_) + " must be positive");
    x_cl_ = node.attrs.get_int("x_channels_last", 0) != 0;
    z_cl_ = node.attrs.get_int("z_channels_last", 0) != 0;
    y_cl_ = node.attrs.get_int("y_channels_last", 0) != 0;
    return act_.parse(node.attrs.get_string("activation", ""), node.attrs.get_floats("activation_params"));
  }

  // Keeps float32 copies of constant W and B (views when they already are float32); the
  // per-shape packing happens at the first compute() for that shape, since the layout oneDNN
  // picks depends on it. Shape inference during optimization prepares kernels too: packing
  // lazily keeps that cheap.
  Status prepare(const std::vector<const Tensor*>& c) override {
    return guard([&]() -> Status {
      if (c.size() > 1 && c[1] && dtype_is_float(c[1]->dtype())) {
        w_src_ = c[1]->raw();
        w_f32_ = to_f32(*c[1]);
        const Shape& w = w_f32_.shape();
        const bool relu_or_none = act_.kind == Act::kNone || act_.kind == Act::kRelu;
        bool undilated = true;
        for (int64_t d : sp_.dilations) undilated &= d == 1;
        const bool k3 = w.size() == 4 && w[2] == 3 && w[3] == 3;
        panel16_ = panel16_allowed() && k3 && w[0] % 16 == 0 && group_ == 1 && x_cl_ && y_cl_ && relu_or_none &&
                   undilated;
      }
      if (c.size() > 2 && c[2] && dtype_is_float(c[2]->dtype())) {
        b_src_ = c[2]->raw();
        b_f32_ = to_f32(*c[2]);
      }
      return Status::ok();
    });
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 4 || !ctx.has_input(0) || !ctx.has_input(1))
      return invalid_model("needs 2 to 4 inputs (X, W, B, Z), got " + std::to_string(ctx.num_inputs()));
    DType t = ctx.input_dtype(0);
    if (!dtype_is_float(t)) return unsupported("input 0 (X) has dtype " + dtype_name(t) + "; only float types are supported");
    for (int i = 1; i < 4; ++i)
      if (ctx.has_input(i) && ctx.input_dtype(i) != t)
        return invalid_model("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) +
                             ", X has " + dtype_name(t));
    Shape x = channels_first_shape(ctx.input_shape(0), x_cl_);
    const Shape& w = ctx.input_shape(1);
    if (x.size() < 3 || x.size() > 5)
      return unsupported("input 0 (X) has shape " + shape_str(x) + "; ingot supports 1-D, 2-D and 3-D convolutions");
    if (w.size() != x.size())
      return invalid_argument("input 1 (W) has shape " + shape_str(w) + ", X has rank " + std::to_string(x.size()));
    if (w[1] * group_ != x[1])
      return invalid_argument("input 1 (W) has " + std::to_string(w[1]) + " input channels, X has " +
                              std::to_string(x[1]) + " (group=" + std::to_string(group_) + ")");
    if (w[0] % group_ != 0)
      return invalid_argument("input 1 (W) has " + std::to_string(w[0]) + " output channels, not divisible by group=" +
                              std::to_string(group_));
    Shape k(w.begin() + 2, w.end());
    if (!sp_.kernel_shape.empty() && sp_.kernel_shape != std::vector<int64_t>(k.begin(), k.end()))
      return invalid_model("kernel_shape " + ints_str(sp_.kernel_shape) + " does not match W's spatial dims " + shape_str(k));
    if (ctx.has_input(2) && ctx.input_shape(2) != Shape{w[0]})
      return invalid_argument("input 2 (B) has shape " + shape_str(ctx.input_shape(2)) + ", expected [" +
                              std::to_string(w[0]) + "]");
    for (size_t i = 1; i < x.size(); ++i)
      if (x[i] == 0) return unsupported("input 0 (X) has an empty channel or spatial dim: " + shape_str(x));
    std::vector<int64_t> st, dl, pb, pe;
    Shape y;
    INGOT_RETURN_IF_ERROR(sp_.conv_geometry(x, w, st, dl, pb, pe, y));
    if (ctx.has_input(3)) {
      // The pass checked Z against the conv output for the shapes it optimized for; other
      // shapes may make Z broadcast (a dim of 1), which the slow path handles.
      Shape z = channels_first_shape(ctx.input_shape(3), z_cl_);
      bool ok = z.size() == y.size();
      for (size_t i = 0; ok && i < z.size(); ++i) ok = z[i] == y[i] || z[i] == 1;
      if (!ok)
        return invalid_argument("input 3 (Z) has shape " + shape_str(z) + ", which does not broadcast to the " +
                                "convolution's output " + shape_str(y));
    }
    ctx.set_output(0, t, to_physical(y, y_cl_));
    return Status::ok();
  }

  bool writes_every_output_element() const override { return true; }
  // Y in Z's buffer: the sum post-op starts from Z where Y is, so the copy of Z into Y vanishes
  // (ResNet-50: 16 residuals, ~20 MB a batch-1 run). Only when both have one layout.
  int output_may_overwrite_input(int output) const override { return output == 0 && z_cl_ == y_cl_ ? 3 : -1; }

  Status compute(ComputeContext& ctx) const override {
    return guard([&]() -> Status {
      const Tensor& X = ctx.input(0);
      const Tensor& W = ctx.input(1);
      Tensor& Y = ctx.output(0);
      if (Y.numel() == 0) return Status::ok();
      std::vector<int64_t> st, dl, pb, pe;
      Shape ys, xs = channels_first_shape(X.shape(), x_cl_);
      INGOT_RETURN_IF_ERROR(sp_.conv_geometry(xs, W.shape(), st, dl, pb, pe, ys));
      bool has_b = ctx.has_input(2), has_z = ctx.has_input(3);
      bool fuse_z = has_z && channels_first_shape(ctx.input(3).shape(), z_cl_) == ys;
      bool w_const = w_f32_.defined() && W.raw() == w_src_;
      const bool z_fits = !has_z || (fuse_z && z_cl_ && ctx.input(3).dtype() == DType::kFloat32);
      if (panel16_ && w_const && z_fits && X.dtype() == DType::kFloat32 && Y.dtype() == DType::kFloat32 &&
          xs.size() == 4) {
        run_panel16(ctx, xs, ys, st, pb);
        return Status::ok();
      }
      Shape k(W.shape().begin() + 2, W.shape().end());
      auto xd = to_dims(xs), yd = to_dims(ys);
      auto wd = weight_dims(group_, W.dim(0), W.dim(1) * group_, k);
      dnnl::memory::dims d1(dl.size());
      for (size_t i = 0; i < dl.size(); ++i) d1[i] = dl[i] - 1;
      bool post = !has_z || fuse_z;  // with a broadcast Z, the sum and activation run after
      std::string key = key_of({xd, wd, st, dl, pb, pe, {has_b, fuse_z, post, w_const}});
      auto p = cache_.get(key, [&] { return build(xd, wd, yd, st, d1, pb, pe, has_b, fuse_z, post, w_const); });

      auto& eng = cpu_engine();
      dnnl::stream s(eng);
      ThreadBuffers& ar = thread_buffers();
      Tensor Xf = to_f32(X);
      // Y may share Z's buffer (output_may_overwrite_input); when X is Z too (conv(x) + x), the
      // convolution must not read the buffer it writes.
      if (Xf.raw() == Y.raw()) Xf = Xf.clone();
      Tensor Yf = Y.dtype() == DType::kFloat32 ? Y : Tensor(DType::kFloat32, Y.shape());
      md xpd = layout_desc(xd, x_cl_), ypd = layout_desc(yd, y_cl_);
      dnnl::memory xm(xpd, eng, const_cast<float*>(Xf.data<float>()));
      dnnl::memory src = xm;
      if (!(p->src == xpd)) {
        src = dnnl::memory(p->src, eng, ar.src.get(p->src.get_size()));
        p->src_in.execute(s, xm, src);
      }
      dnnl::memory ym(ypd, eng, Yf.data<float>());
      dnnl::memory dst = p->dst == ypd ? ym : dnnl::memory(p->dst, eng, ar.dst.get(p->dst.get_size()));
      Tensor Zf;
      if (has_z) Zf = to_f32(ctx.input(3));
      if (has_z && !fuse_z && Zf.raw() == Yf.raw()) Zf = Zf.clone();  // a broadcast Z is read after Y is written
      if (fuse_z) {
        // The sum post-op accumulates into dst: start it as Z.
        dnnl::memory zm(layout_desc(yd, z_cl_), eng, const_cast<float*>(Zf.data<float>()));
        if (dst.get_data_handle() == zm.get_data_handle()) {
          // Already there.
        } else if (zm.get_desc() == dst.get_desc()) {
          // Same layout: a plain copy (oneDNN's reorder runs its slow generic kernel for it).
          const char* from = static_cast<const char*>(zm.get_data_handle());
          char* to = static_cast<char*>(dst.get_data_handle());
          int64_t bytes = int64_t(dst.get_desc().get_size());
          parallel_for(bytes, 1, [&](int64_t b0, int64_t e0) { std::memcpy(to + b0, from + b0, size_t(e0 - b0)); });
        } else {
          p->z_in.execute(s, zm, dst);
        }
      }
      dnnl::memory wm;
      if (w_const) {
        wm = p->packed;
      } else {
        Tensor Wf = to_f32(W);
        dnnl::memory wp(plain_desc(wd), eng, const_cast<float*>(Wf.data<float>()));
        wm = dnnl::memory(p->wei, eng);
        dnnl::reorder(wp, wm).execute(s, wp, wm);
        s.wait();  // Wf dies at the end of this block
      }
      Tensor Bf;
      const float* bias = bias_f32(ctx, Bf);
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dst}};
      args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(p->scratch));
      if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(plain_desc({W.dim(0)}), eng, const_cast<float*>(bias)));
      p->prim.execute(s, args);
      if (!(dst == ym)) p->dst_out.execute(s, dst, ym);
      s.wait();
      if (!post) broadcast_sum_activate(Zf, Yf, ys);
      if (Y.dtype() != DType::kFloat32) from_f32(Yf, Y);
      return Status::ok();
    });
  }

 private:
  std::shared_ptr<Prim> build(const dnnl::memory::dims& xd, const dnnl::memory::dims& wd, const dnnl::memory::dims& yd,
                              const std::vector<int64_t>& st, const dnnl::memory::dims& d1,
                              const std::vector<int64_t>& pb, const std::vector<int64_t>& pe, bool has_b, bool fuse_z,
                              bool post, bool w_const) const {
    auto& eng = cpu_engine();
    dnnl::primitive_attr attr = user_scratchpad_attr();
    if (post) {
      dnnl::post_ops po;
      if (fuse_z) po.append_sum(1.f);
      append_activation(po, act_);
      attr.set_post_ops(po);
    }
    md bd = has_b ? plain_desc({yd[1]}) : md();
    auto make = [&](const md& s, const md& d, dnnl::algorithm alg = dnnl::algorithm::convolution_direct) {
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, alg, s, any_desc(wd), bd, d,
                                           to_dims(st), d1, to_dims(pb), to_dims(pe));
      return dnnl::convolution_forward::primitive_desc(desc, attr, eng);
    };
    LayoutMode mode = layout_mode();
    dnnl::convolution_forward::primitive_desc pd;
    bool have = false;
    if (winograd_pays(xd, wd, yd, st, d1) && winograd_allowed()) {
      try {
        pd = make(any_desc(xd), any_desc(yd), dnnl::algorithm::convolution_winograd);
        have = true;
      } catch (const dnnl::error&) {
        have = false;
      }
    }
    if (!have && mode != LayoutMode::kBlocked) {
      try {
        pd = make(layout_desc(xd, x_cl_), layout_desc(yd, y_cl_));
        have = mode == LayoutMode::kPlain || !slow_on_plain(pd.impl_info_str());
      } catch (const dnnl::error&) {
        have = false;
      }
    }
    if (!have) pd = make(any_desc(xd), any_desc(yd));
    auto p = std::make_shared<Prim>();
    p->prim = dnnl::convolution_forward(pd);
    p->src = pd.src_desc(), p->wei = pd.weights_desc(), p->dst = pd.dst_desc();
    p->scratch = pd.scratchpad_desc();
    p->post_ops = post;
    p->impl = pd.impl_info_str();
    const md xpd = layout_desc(xd, x_cl_), ypd = layout_desc(yd, y_cl_), zpd = layout_desc(yd, z_cl_);
    if (!(p->src == xpd)) p->src_in = dnnl::reorder(dnnl::reorder::primitive_desc(eng, xpd, eng, p->src));
    if (!(p->dst == ypd)) p->dst_out = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p->dst, eng, ypd));
    if (fuse_z && !(p->dst == zpd)) p->z_in = dnnl::reorder(dnnl::reorder::primitive_desc(eng, zpd, eng, p->dst));
    if (w_const) {
      dnnl::stream s(eng);
      dnnl::memory wp(plain_desc(wd), eng, const_cast<float*>(w_f32_.data<float>()));
      if (p->wei == wp.get_desc()) {
        p->packed = wp;  // w_f32_ lives as long as the kernel
      } else {
        p->packed = dnnl::memory(p->wei, eng);
        dnnl::reorder(wp, p->packed).execute(s, wp, p->packed);
        s.wait();
      }
    }
    if (std::getenv("INGOT_FUSED_CONV_VERBOSE"))
      std::fprintf(stderr, "ingot.FusedConv %s: %s (x %s, y %s%s; reorders:%s%s%s)\n", key_of({xd, wd}).c_str(),
                   p->impl.c_str(), x_cl_ ? "nhwc" : "nchw", y_cl_ ? "nhwc" : "nchw",
                   fuse_z ? (z_cl_ ? ", z nhwc" : ", z nchw") : "", p->src_in ? " x" : "", p->dst_out ? " y" : "",
                   p->z_in ? " z" : "");
    return p;
  }

  // B as float32, or null without one: the kernel's copy when B is the constant it was prepared
  // with, else converted into `keep`.
  const float* bias_f32(ComputeContext& ctx, Tensor& keep) const {
    if (!ctx.has_input(2)) return nullptr;
    if (b_f32_.defined() && ctx.input(2).raw() == b_src_) return b_f32_.data<float>();
    keep = to_f32(ctx.input(2));
    return keep.data<float>();
  }

  // The convolution on conv_panel16 (its conditions checked by the caller): X, Y and Z float32,
  // xs and ys logical NCHW shapes, st and pb conv_geometry's strides and leading pads.
  void run_panel16(ComputeContext& ctx, const Shape& xs, const Shape& ys, const std::vector<int64_t>& st,
                   const std::vector<int64_t>& pb) const {
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    Tensor& Y = ctx.output(0);
    const bool has_z = ctx.has_input(3);
    // Packed at the first run, not in prepare(): shape inference prepares kernels too.
    std::call_once(panel16_packed_, [&] {
      panel16_w_ = cpu::pack_conv_weights(w_f32_.data<float>(), W.dim(0), W.dim(1), W.dim(2) * W.dim(3));
      if (std::getenv("INGOT_FUSED_CONV_VERBOSE"))
        std::fprintf(stderr, "ingot.FusedConv %s: conv_panel16%s\n", key_of({to_dims(xs), to_dims(W.shape())}).c_str(),
                     has_z ? " with residual" : "");
    });
    cpu::ConvGeometry g;
    g.n = xs[0], g.ic = xs[1], g.h = xs[2], g.w = xs[3], g.oc = ys[1], g.oh = ys[2], g.ow = ys[3];
    g.kh = W.dim(2), g.kw = W.dim(3);
    g.stride_h = st[0], g.stride_w = st[1], g.pad_top = pb[0], g.pad_left = pb[1];
    Tensor Bf;
    const float* bias = bias_f32(ctx, Bf);
    // Y in the buffer of a Z that is X too (conv(x) + x): no tile may read what another wrote.
    const Tensor Xin = X.raw() == Y.raw() ? X.clone() : X;
    cpu::conv_panel16(g, Xin.data<float>(), panel16_w_.data(), bias, has_z ? ctx.input(3).data<float>() : nullptr,
                      act_.kind == Act::kRelu, Y.data<float>());
  }

  // y = act(y + z) with z broadcast over its dims of 1 (ranks are equal: infer() checked);
  // `yl` is Y's logical shape, and either tensor may be channels-last.
  void broadcast_sum_activate(const Tensor& Z, Tensor& Y, const Shape& yl) const {
    Shape zl = channels_first_shape(Z.shape(), z_cl_);
    auto ystr = layout_strides(to_dims(yl), y_cl_), zstr = layout_strides(to_dims(zl), z_cl_);
    auto lstr = strides_of(yl);
    const float* z = Z.data<float>();
    float* y = Y.data<float>();
    size_t r = yl.size();
    parallel_for(Y.numel(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t rem = i, yi = 0, zi = 0;
        for (size_t d = 0; d < r; ++d) {
          int64_t c = rem / lstr[d];
          rem %= lstr[d];
          yi += c * ystr[d];
          if (zl[d] != 1) zi += c * zstr[d];
        }
        y[yi] = act_.apply(y[yi] + z[zi]);
      }
    });
  }

  Spatial sp_;
  int64_t group_ = 1;
  fused_conv::Activation act_;
  bool x_cl_ = false, z_cl_ = false, y_cl_ = false;
  const void* w_src_ = nullptr;
  const void* b_src_ = nullptr;
  Tensor w_f32_, b_f32_;
  bool panel16_ = false;  // conv_panel16 runs it (the constant W packed for it at the first run)
  mutable std::once_flag panel16_packed_;
  mutable std::vector<float> panel16_w_;
  mutable Cache<Prim> cache_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "ingot", FusedConv, FusedConvKernel);

}  // namespace ingot
