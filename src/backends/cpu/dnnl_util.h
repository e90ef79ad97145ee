// Shared helpers for the oneDNN-backed kernels (MatMul, Gemm, Conv, ConvTranspose), the pooling
// and quantization kernels: the CPU engine singleton, dims conversion, a primitive cache, the
// dnnl::error -> Status boundary, float conversion, and the spatial attribute logic
// (kernel_shape/strides/dilations/pads/auto_pad/ceil_mode) that Conv and the pools share.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/dispatch.h"
#include "ir/graph.h"
#include "runtime/parallel.h"

namespace ingot::dnnl_util {

// One CPU engine for the process. Streams are cheap on CPU; kernels make one per call so
// concurrent runs never share one.
inline dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

inline dnnl::memory::dims to_dims(const Shape& s) { return dnnl::memory::dims(s.begin(), s.end()); }

// A dense row-major float32 memory descriptor.
inline dnnl::memory::desc plain_desc(const dnnl::memory::dims& d) {
  dnnl::memory::dims s(d.size());
  int64_t acc = 1;
  for (int i = int(d.size()) - 1; i >= 0; --i) s[size_t(i)] = acc, acc *= d[size_t(i)];
  return dnnl::memory::desc(d, dnnl::memory::data_type::f32, s);
}
// A float32 descriptor whose layout the primitive chooses (blocked weights, etc.).
inline dnnl::memory::desc any_desc(const dnnl::memory::dims& d) {
  return dnnl::memory::desc(d, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

inline std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Runs f (returning Status) and turns oneDNN (and allocation) exceptions into a Status.
template <class F>
Status guard(F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    return unsupported(std::string("oneDNN rejected the operation: ") + e.what());
  } catch (const std::bad_alloc&) {
    return internal_error("out of memory");
  } catch (const std::exception& e) {
    return internal_error(std::string("unexpected exception: ") + e.what());
  }
}

// A small thread-safe cache of primitives (or anything) keyed by a string of shapes/params.
template <class V>
class Cache {
 public:
  template <class Make>
  std::shared_ptr<V> get(const std::string& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    std::shared_ptr<V> v = make();  // may throw dnnl::error: caller is inside guard()
    std::lock_guard<std::mutex> lk(mu_);
    if (map_.size() >= kMax) map_.clear();
    map_.emplace(key, v);
    return v;
  }

 private:
  static constexpr size_t kMax = 64;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<V>> map_;
};

inline std::string key_of(std::initializer_list<std::vector<int64_t>> parts) {
  std::string k;
  for (const auto& p : parts) {
    for (int64_t v : p) k += std::to_string(v) + ",";
    k += "|";
  }
  return k;
}

// A float32 view/copy of a float tensor (no copy when it already is float32).
inline Tensor to_f32(const Tensor& t) {
  if (t.dtype() == DType::kFloat32) return t;
  Tensor r(DType::kFloat32, t.shape());
  float* d = r.data<float>();
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = t.data<T>();
    parallel_for(t.numel(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) d[i] = float(s[i]);
    });
  });
  return r;
}

// Copies float32 `src` into `dst` (same element count), converting to dst's float dtype.
inline void from_f32(const Tensor& src, Tensor& dst) {
  const float* s = src.data<float>();
  dispatch_float(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = dst.data<T>();
    parallel_for(dst.numel(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) d[i] = T(s[i]);
    });
  });
}

// Growable 64-byte aligned buffers, one set per thread, for scratchpads and per-call layout or
// dtype conversions: a thread runs one primitive at a time (every execution waits on its
// stream), so reusing them is safe, and it avoids a large allocation per call, whose fresh
// pages fault in every time (oneDNN's AMX matmul scratchpads are megabytes: at batch 1 that
// cost more than the product).
struct ThreadBuffers {
  struct Buf {
    void* p = nullptr;
    size_t n = 0;
    void* get(size_t need) {
      if (need > n) {
        std::free(p);
        n = (std::max<size_t>(need, 1) + 4095) / 4096 * 4096;
        p = std::aligned_alloc(64, n);
        if (!p) {
          n = 0;
          throw std::bad_alloc();
        }
      }
      return p;
    }
    Buf() = default;
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    ~Buf() { std::free(p); }
  };
  Buf scratch, src, dst;
};

inline ThreadBuffers& thread_buffers() {
  thread_local ThreadBuffers b;
  return b;
}

// The calling thread's scratchpad for a primitive made with user_scratchpad_attr().
inline dnnl::memory scratchpad(const dnnl::memory::desc& d) {
  return dnnl::memory(d, cpu_engine(), thread_buffers().scratch.get(d.get_size() + 64));
}

// Executes a primitive whose attr used scratchpad_mode::user, with the calling thread's
// scratchpad (concurrent executions run on different threads, so never share one).
template <class PD>
void execute(const dnnl::primitive& p, const PD& pd, std::unordered_map<int, dnnl::memory> args) {
  dnnl::stream s(cpu_engine());
  args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc()));
  p.execute(s, args);
  s.wait();
}

inline dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

// Spatial attributes of Conv/ConvTranspose/pools.
struct Spatial {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel_shape, strides, dilations, pads;  // pads: begins then ends
  bool ceil_mode = false;

  Status parse(const Node& n) {
    auto_pad = n.attrs.get_string("auto_pad", "NOTSET");
    if (auto_pad.empty()) auto_pad = "NOTSET";
    if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
      return invalid_model("auto_pad '" + auto_pad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    kernel_shape = n.attrs.get_ints("kernel_shape");
    strides = n.attrs.get_ints("strides");
    dilations = n.attrs.get_ints("dilations");
    pads = n.attrs.get_ints("pads");
    ceil_mode = n.attrs.get_int("ceil_mode", 0) != 0;
    for (int64_t k : kernel_shape)
      if (k <= 0) return invalid_model("kernel_shape " + ints_str(kernel_shape) + " has a non-positive entry");
    for (int64_t s : strides)
      if (s <= 0) return invalid_model("strides " + ints_str(strides) + " has a non-positive entry");
    for (int64_t d : dilations)
      if (d <= 0) return invalid_model("dilations " + ints_str(dilations) + " has a non-positive entry");
    if (pads.size() % 2) return invalid_model("pads " + ints_str(pads) + " has an odd number of entries");
    return Status::ok();
  }

  // Fills per-dim strides/dilations (defaults 1) and checks the lengths against `nd`.
  Status expand(size_t nd, std::vector<int64_t>& st, std::vector<int64_t>& dl) const {
    st = strides.empty() ? std::vector<int64_t>(nd, 1) : strides;
    dl = dilations.empty() ? std::vector<int64_t>(nd, 1) : dilations;
    if (st.size() != nd)
      return invalid_model("strides " + ints_str(strides) + " has " + std::to_string(st.size()) +
                           " entries, expected " + std::to_string(nd) + " (spatial dims)");
    if (dl.size() != nd)
      return invalid_model("dilations " + ints_str(dilations) + " has " + std::to_string(dl.size()) +
                           " entries, expected " + std::to_string(nd) + " (spatial dims)");
    if (!pads.empty() && pads.size() != 2 * nd)
      return invalid_model("pads " + ints_str(pads) + " has " + std::to_string(pads.size()) + " entries, expected " +
                           std::to_string(2 * nd));
    return Status::ok();
  }

  // A forward convolution's output [N, M, spatial...] for X [N, C, ...] and W [M, C/group, k...],
  // with the resolved strides, dilations and pads.
  Status conv_geometry(const Shape& x, const Shape& w, std::vector<int64_t>& st, std::vector<int64_t>& dl,
                       std::vector<int64_t>& pb, std::vector<int64_t>& pe, Shape& y) const {
    Shape in(x.begin() + 2, x.end()), k(w.begin() + 2, w.end()), out;
    INGOT_RETURN_IF_ERROR(resolve(in, k, st, dl, pb, pe, out, false));
    y = {x[0], w[0]};
    y.insert(y.end(), out.begin(), out.end());
    return Status::ok();
  }

  // Output spatial dims and begin/end pads of a forward window op (Conv, pools).
  Status resolve(const Shape& in, const std::vector<int64_t>& kernel, std::vector<int64_t>& st,
                 std::vector<int64_t>& dl, std::vector<int64_t>& pb, std::vector<int64_t>& pe, Shape& out,
                 bool pool) const {
    size_t nd = in.size();
    INGOT_RETURN_IF_ERROR(expand(nd, st, dl));
    pb.assign(nd, 0);
    pe.assign(nd, 0);
    out.assign(nd, 0);
    for (size_t i = 0; i < nd; ++i) {
      int64_t ek = (kernel[i] - 1) * dl[i] + 1;
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out[i] = (in[i] + st[i] - 1) / st[i];
        int64_t total = std::max<int64_t>(0, (out[i] - 1) * st[i] + ek - in[i]);
        int64_t small = total / 2;
        pb[i] = auto_pad == "SAME_UPPER" ? small : total - small;
        pe[i] = total - pb[i];
        continue;
      }
      if (auto_pad == "NOTSET" && !pads.empty()) {
        pb[i] = pads[i];
        pe[i] = pads[i + nd];
        if (pb[i] < 0 || pe[i] < 0) return invalid_model("pads " + ints_str(pads) + " has a negative entry");
      }
      int64_t span = in[i] + pb[i] + pe[i] - ek;
      if (span < 0)
        return invalid_argument("spatial dim " + std::to_string(i) + " of size " + std::to_string(in[i]) +
                                " (padded " + std::to_string(in[i] + pb[i] + pe[i]) +
                                ") is smaller than the dilated kernel " + std::to_string(ek));
      if (pool && ceil_mode) {
        out[i] = (span + st[i] - 1) / st[i] + 1;
        if ((out[i] - 1) * st[i] >= in[i] + pb[i]) out[i]--;  // last window must start inside
      } else {
        out[i] = span / st[i] + 1;
      }
    }
    return Status::ok();
  }
};

}  // namespace ingot::dnnl_util
