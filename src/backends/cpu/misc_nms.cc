// NonMaxSuppression: greedy per (batch, class) selection by descending score (ties: lower
// box index first), dropping boxes whose IoU with a selected one exceeds iou_threshold.
// Output [num_selected, 3] int64 of (batch, class, box), so its shape is known only at run time.
#include <algorithm>
#include <cmath>

#include "runtime/kernel.h"

namespace ingot {
namespace {

struct Box { float y1, x1, y2, x2; };

class NmsKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    center_ = node.attrs.get_int("center_point_box", 0);
    if (center_ != 0 && center_ != 1)
      return invalid_model("attribute 'center_point_box' value " + std::to_string(center_) + " must be 0 or 1");
    return Status::ok();
  }

  Status check(const Shape& bs, DType bt, const Shape& ss, DType st) const {
    if (bt != DType::kFloat32) return unsupported("boxes dtype " + dtype_name(bt) + " is not supported (float32 only)");
    if (st != DType::kFloat32) return unsupported("scores dtype " + dtype_name(st) + " is not supported (float32 only)");
    if (bs.size() != 3 || bs[2] != 4)
      return invalid_argument("boxes must have shape [batches, boxes, 4], got " + shape_str(bs));
    if (ss.size() != 3) return invalid_argument("scores must have shape [batches, classes, boxes], got " + shape_str(ss));
    if (ss[0] != bs[0] || ss[2] != bs[1])
      return invalid_argument("scores shape " + shape_str(ss) + " does not match boxes shape " + shape_str(bs));
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return invalid_model("needs inputs 'boxes' and 'scores'");
    INGOT_RETURN_IF_ERROR(check(ctx.input_shape(0), ctx.input_dtype(0), ctx.input_shape(1), ctx.input_dtype(1)));
    if (ctx.has_input(2) && ctx.input_dtype(2) != DType::kInt64)
      return invalid_argument("max_output_boxes_per_class must be int64, got " + dtype_name(ctx.input_dtype(2)));
    for (int i = 3; i <= 4; ++i)
      if (ctx.has_input(i) && ctx.input_dtype(i) != DType::kFloat32)
        return invalid_argument(std::string(i == 3 ? "iou_threshold" : "score_threshold") + " must be float32, got " +
                                dtype_name(ctx.input_dtype(i)));
    ctx.set_output_dynamic(0, DType::kInt64);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    INGOT_RETURN_IF_ERROR(check(boxes.shape(), boxes.dtype(), scores.shape(), scores.dtype()));
    auto scalar = [&](int i, const char* name, bool& present) -> Expected<double> {
      present = ctx.has_input(i) && ctx.input(i).numel() > 0;
      if (!present) return 0.0;
      if (ctx.input(i).numel() != 1)
        return invalid_argument(std::string(name) + " must hold one value, got shape " + shape_str(ctx.input(i).shape()));
      return ctx.input(i).scalar_as_double();
    };
    bool has_max, has_iou, has_score;
    INGOT_ASSIGN_OR_RETURN(double maxd, scalar(2, "max_output_boxes_per_class", has_max));
    INGOT_ASSIGN_OR_RETURN(double iou_th, scalar(3, "iou_threshold", has_iou));
    INGOT_ASSIGN_OR_RETURN(double score_th, scalar(4, "score_threshold", has_score));
    const int64_t max_out = has_max ? ctx.input(2).scalar_as_int() : 0;
    (void)maxd;
    if (has_iou && (iou_th < 0 || iou_th > 1))
      return invalid_argument("iou_threshold value " + std::to_string(iou_th) + " must be in [0, 1]");
    const int64_t nb = boxes.dim(0), n = boxes.dim(1), nc = scores.dim(1);
    const float* bp = boxes.data<float>();
    const float* sp = scores.data<float>();
    std::vector<int64_t> sel;
    if (max_out > 0) {
      std::vector<Box> bx(static_cast<size_t>(n));
      std::vector<float> area(static_cast<size_t>(n));
      for (int64_t b = 0; b < nb; ++b) {
        for (int64_t i = 0; i < n; ++i) {
          const float* q = bp + (b * n + i) * 4;
          Box r;
          if (center_) {
            r = {q[1] - q[3] / 2, q[0] - q[2] / 2, q[1] + q[3] / 2, q[0] + q[2] / 2};
          } else {
            r = {std::min(q[0], q[2]), std::min(q[1], q[3]), std::max(q[0], q[2]), std::max(q[1], q[3])};
          }
          bx[size_t(i)] = r;
          area[size_t(i)] = (r.y2 - r.y1) * (r.x2 - r.x1);
        }
        for (int64_t c = 0; c < nc; ++c) {
          const float* s = sp + (b * nc + c) * n;
          std::vector<int64_t> cand;
          for (int64_t i = 0; i < n; ++i)
            if (!has_score || s[i] > float(score_th)) cand.push_back(i);
          std::stable_sort(cand.begin(), cand.end(), [s](int64_t a, int64_t b2) {
            auto key = [](float v) { return v != v ? -INFINITY : v; };  // NaN ranks last
            return key(s[a]) > key(s[b2]);
          });
          std::vector<int64_t> kept;
          for (int64_t i : cand) {
            if (int64_t(kept.size()) >= max_out) break;
            bool suppressed = false;
            for (int64_t k : kept) {
              const Box& A = bx[size_t(i)];
              const Box& B = bx[size_t(k)];
              const float iy1 = std::max(A.y1, B.y1), ix1 = std::max(A.x1, B.x1);
              const float iy2 = std::min(A.y2, B.y2), ix2 = std::min(A.x2, B.x2);
              if (iy2 <= iy1 || ix2 <= ix1) continue;
              const float inter = (iy2 - iy1) * (ix2 - ix1);
              const float uni = area[size_t(i)] + area[size_t(k)] - inter;
              if (area[size_t(i)] <= 0 || area[size_t(k)] <= 0 || uni <= 0) continue;
              if (inter / uni > float(iou_th)) { suppressed = true; break; }
            }
            if (suppressed) continue;
            kept.push_back(i);
            sel.insert(sel.end(), {b, c, i});
          }
        }
      }
    }
    Tensor& y = ctx.allocate_output(0, DType::kInt64, {int64_t(sel.size() / 3), 3});
    std::copy(sel.begin(), sel.end(), y.data<int64_t>());
    return Status::ok();
  }

 private:
  int64_t center_ = 0;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", NonMaxSuppression, NmsKernel);

}  // namespace ingot
