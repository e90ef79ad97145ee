// Col2Im (opset 18; torch.nn.Fold): the blocks of input [N, C * prod(block_shape), L] summed back into
// an image [N, C, image_shape...]. Block position b of sliding position l lands on image index
//   i_d = l_d · stride_d - pad_begin_d + b_d · dilation_d   (dropped where outside the image),
// where the L sliding positions run over the grid of
//   (image_d + pad_begin_d + pad_end_d - dilation_d · (block_d - 1) - 1) / stride_d + 1
// per spatial axis, the last axis fastest. Overlapping blocks add up: in double for float types
// (then rounded once), wrapping for integers.
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/elementwise_util.h"
#include "backends/cpu/tensor_util.h"
#include "ir/dispatch.h"
#include "ir/scalar_semantics.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using tensor_ops::ints_str;

// What the sums are kept in: double for float types, the wrapping unsigned type for integers.
template <class T, bool = std::is_integral_v<T>>
struct Accumulator {
  using type = double;
};
template <class T>
struct Accumulator<T, true> {
  using type = scalar::wrap_t<T>;
};

class Col2ImKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    dilations_ = node.attrs.get_ints("dilations");
    pads_ = node.attrs.get_ints("pads");
    strides_ = node.attrs.get_ints("strides");
    return Status::ok();
  }

  // The geometry of one input: every parameter per spatial axis, checked.
  struct Geometry {
    int64_t n = 0, c = 0, blocks = 1, l = 1;
    std::vector<int64_t> image, block, dilation, pad_begin, stride, grid;
    Shape out;  // [N, C, image...]
  };
  Expected<Geometry> geometry(const Shape& in, const Tensor& image_shape, const Tensor& block_shape) const {
    Geometry g;
    INGOT_ASSIGN_OR_RETURN(g.image, tensor_ops::read_int_list(image_shape, 1, "image_shape"));
    INGOT_ASSIGN_OR_RETURN(g.block, tensor_ops::read_int_list(block_shape, 2, "block_shape"));
    const size_t k = g.image.size();
    if (k == 0 || g.block.size() != k)
      return invalid_argument("image_shape " + ints_str(g.image) + " and block_shape " + ints_str(g.block) +
                              " must be non-empty and of the same length");
    auto per_axis = [&](const std::vector<int64_t>& v, size_t n, int64_t fill, const char* name) -> Expected<std::vector<int64_t>> {
      if (v.empty()) return std::vector<int64_t>(n, fill);
      if (v.size() != n)
        return invalid_model("attribute '" + std::string(name) + "' " + ints_str(v) + " has " + std::to_string(v.size()) +
                             " entries; expected " + std::to_string(n));
      return v;
    };
    INGOT_ASSIGN_OR_RETURN(g.dilation, per_axis(dilations_, k, 1, "dilations"));
    INGOT_ASSIGN_OR_RETURN(g.stride, per_axis(strides_, k, 1, "strides"));
    INGOT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, per_axis(pads_, 2 * k, 0, "pads"));
    if (in.size() != 3)
      return invalid_argument("input 0 (input) has shape " + shape_str(in) + "; expected [N, C * prod(block_shape), L]");
    for (size_t d = 0; d < k; ++d) {
      if (g.image[d] <= 0 || g.block[d] <= 0 || g.dilation[d] <= 0 || g.stride[d] <= 0 || pads[d] < 0 || pads[k + d] < 0)
        return invalid_argument("image_shape " + ints_str(g.image) + ", block_shape " + ints_str(g.block) +
                                ", dilations, strides (positive) or pads (non-negative) out of range");
      const int64_t span = g.dilation[d] * (g.block[d] - 1) + 1, padded = g.image[d] + pads[d] + pads[k + d];
      if (padded < span)
        return invalid_argument("block_shape " + ints_str(g.block) + " (dilated) does not fit the padded image on axis " +
                                std::to_string(d));
      g.grid.push_back((padded - span) / g.stride[d] + 1);
      g.pad_begin.push_back(pads[d]);
      g.blocks *= g.block[d];
      g.l *= g.grid.back();
    }
    g.n = in[0];
    if (in[1] % g.blocks != 0)
      return invalid_argument("input 0 (input) has " + std::to_string(in[1]) + " rows, not a multiple of prod(block_shape) = " +
                              std::to_string(g.blocks));
    g.c = in[1] / g.blocks;
    g.out = {g.n, g.c};
    g.out.insert(g.out.end(), g.image.begin(), g.image.end());
    INGOT_RETURN_IF_ERROR(tensor_ops::check_output_size(g.out, 8));  // image_shape comes from values
    if (in[2] != g.l)
      return invalid_argument("input 0 (input) has " + std::to_string(in[2]) + " columns; the sliding positions are " +
                              std::to_string(g.l));
    return g;
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
      return invalid_model("needs 3 inputs (input, image_shape, block_shape)");
    if (!dtype_is_float(ctx.input_dtype(0)) && !dtype_is_integer(ctx.input_dtype(0)))
      return invalid_argument("input 0 (input) has dtype " + dtype_name(ctx.input_dtype(0)) + "; expected a numeric type");
    if (!ctx.input_value(1) || !ctx.input_value(2)) {
      ctx.set_output_dynamic(0, ctx.input_dtype(0));
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(Geometry g, geometry(ctx.input_shape(0), *ctx.input_value(1), *ctx.input_value(2)));
    ctx.set_output(0, ctx.input_dtype(0), g.out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(Geometry g, geometry(x.shape(), ctx.input(1), ctx.input(2)));
    Tensor& y = ctx.allocate_output(0, x.dtype(), g.out);
    if (y.numel() == 0) return Status::ok();
    const size_t k = g.image.size();
    int64_t pixels = 1;
    for (int64_t d : g.image) pixels *= d;
    dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Accumulator<T>::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      // One (n, c) image a task: its blocks scattered into an accumulator, then rounded once.
      parallel_for(g.n * g.c, g.blocks * g.l, [&](int64_t b, int64_t e) {
        std::vector<A> acc(static_cast<size_t>(pixels));
        std::vector<int64_t> bi(k), li(k);
        for (int64_t nc = b; nc < e; ++nc) {
          std::fill(acc.begin(), acc.end(), A(0));
          const T* src = px + nc * g.blocks * g.l;
          for (int64_t blk = 0; blk < g.blocks; ++blk) {
            for (int64_t rest = blk, d = int64_t(k) - 1; d >= 0; --d) bi[size_t(d)] = rest % g.block[size_t(d)], rest /= g.block[size_t(d)];
            for (int64_t l = 0; l < g.l; ++l) {
              int64_t at = 0;
              bool inside = true;
              for (int64_t rest = l, d = int64_t(k) - 1, stride = 1; d >= 0; --d) {
                const size_t u = size_t(d);
                const int64_t i = rest % g.grid[u] * g.stride[u] - g.pad_begin[u] + bi[u] * g.dilation[u];
                rest /= g.grid[u];
                inside = inside && i >= 0 && i < g.image[u];
                at += i * stride;
                stride *= g.image[u];
              }
              if (inside) acc[size_t(at)] = A(acc[size_t(at)] + ew::convert<A>(src[blk * g.l + l]));
            }
          }
          T* dst = py + nc * pixels;
          for (int64_t i = 0; i < pixels; ++i) dst[i] = ew::convert<T>(acc[size_t(i)]);
        }
      });
    });
    return Status::ok();
  }

 private:
  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Col2Im, Col2ImKernel);

}  // namespace ingot
