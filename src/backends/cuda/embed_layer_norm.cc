// ingot.EmbedLayerNorm on CUDA: the contract is the CPU kernel's (src/backends/cpu/
// embed_layer_norm.cc); the device code is in embed_layer_norm.cu.
#include <algorithm>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/embed_layer_norm_impl.h"

namespace ingot::cuda {
namespace {

constexpr int kGamma = 0, kBeta = 1, kFirstLookup = 2;

class EmbedLayerNormKernel final : public CudaKernel {
 public:
  bool prefetches_l2() const override { return true; }
  Status init(const Node& node, int) override {
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    x_terms_ = int(node.attrs.get_int("x_terms", 1));
    lookups_ = (int(node.inputs.size()) - kFirstLookup) / 2;
    return Status::ok();
  }

  // gamma and beta as float32 rows of the hidden width, whatever their stored dtype and shape.
  Status prepare(const CudaPrepareContext& ctx) override {
    const Tensor* table = ctx.constant(kFirstLookup);
    const Tensor* gamma = ctx.constant(kGamma);
    if (!table || table->rank() != 2 || !gamma) return Status::ok();  // supports() refuses
    const int64_t h = table->dim(1);
    for (int i : {kGamma, kBeta}) {
      const Tensor* p = ctx.constant(i);
      if (!p) continue;
      Tensor row(DType::kFloat32, {h});
      for (int64_t k = 0; k < h; ++k) row.data<float>()[k] = float(p->scalar_as_double(p->numel() == 1 ? 0 : k));
      auto d = ctx.upload(row);
      if (!d) return d.status();
      (i == kGamma ? gamma_ : beta_) = *d;
    }
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (!gamma_.defined()) return "gamma is not a constant";
    if (in.size() > size_t(kBeta) && in[kBeta].present && !beta_.defined()) return "beta is not a constant";
    if (lookups_ < 2 || lookups_ > kEmbedMaxLookups) return "more than 3 lookups";
    DType t = out[0].dtype;
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16) return "dtype " + std::string(dtype_name(t));
    if (out[0].shape.size() > size_t(kEmbedMaxRank) + 1) return "ids of rank above 4";
    if (gamma_.numel() != out[0].shape.back()) return "gamma width differs from the tables'";
    return {};
  }

  Status compute(CudaComputeContext& ctx) const override {
    Tensor& y = ctx.output(0);
    const Shape& out = y.shape();
    EmbedArgs a;
    a.lookups = lookups_;
    a.x_terms = x_terms_;
    a.hidden = out.back();
    a.rows = a.hidden ? y.numel() / a.hidden : 0;
    const int rank = int(out.size()) - 1;
    for (int d = 0; d < rank; ++d) a.dims[kEmbedMaxRank - rank + d] = out[size_t(d)];
    for (int l = 0; l < lookups_; ++l) {
      const Tensor& table = ctx.input(kFirstLookup + 2 * l);
      const Tensor& ids = ctx.input(kFirstLookup + 2 * l + 1);
      a.table[l] = table.raw();
      a.rows_in_table[l] = table.dim(0);
      a.ids[l] = ids.raw();
      a.ids64[l] = ids.dtype() == DType::kInt64;
      int64_t stride = 1;
      for (int k = 0; k < ids.rank(); ++k) {
        const int d = ids.rank() - 1 - k;
        a.id_stride[l][kEmbedMaxRank - 1 - k] = ids.dim(d) == 1 ? 0 : stride;
        stride *= ids.dim(d);
      }
    }
    a.gamma = gamma_.data<float>();
    a.beta = beta_.defined() ? beta_.data<float>() : nullptr;
    a.epsilon = epsilon_;
    a.y = y.raw();
    a.sum = ctx.has_output(1) ? ctx.output(1).raw() : nullptr;
    a.prefetch = ctx.l2_prefetch();
    return cuda_status(launch_embed_layer_norm(y.dtype(), a, ctx.stream()), "EmbedLayerNorm launch");
  }

 private:
  float epsilon_ = 1e-5f;
  int x_terms_ = 1, lookups_ = 0;
  Tensor gamma_, beta_;  // device float32 [hidden]
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("ingot", EmbedLayerNorm, EmbedLayerNormKernel);

}  // namespace ingot::cuda
