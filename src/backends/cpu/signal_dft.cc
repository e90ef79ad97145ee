// DFT (opset 17 axis attribute; opset 20 axis input) and STFT. Complex values are a trailing
// dimension of 2 (real input: 1). Transforms run in double: radix-2 FFT for powers of two,
// Bluestein's chirp-z through a power-of-two FFT otherwise, naive for tiny lengths.
#include <cmath>
#include <complex>
#include <memory>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cd = std::complex<double>;

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// In-place radix-2 FFT, forward (e^{-i}) or backward (e^{+i}), unnormalised.
void fft_pow2(cd* a, int64_t n, const std::vector<cd>& tw /* e^{-2πik/n}, k < n/2 */, bool backward) {
  for (int64_t i = 1, j = 0; i < n; ++i) {
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    const int64_t half = len / 2, stride = n / len;
    for (int64_t i = 0; i < n; i += len) {
      for (int64_t k = 0; k < half; ++k) {
        cd w = tw[size_t(k * stride)];
        if (backward) w = std::conj(w);
        cd u = a[i + k], v = a[i + k + half] * w;
        a[i + k] = u + v;
        a[i + k + half] = u - v;
      }
    }
  }
}

std::vector<cd> twiddles(int64_t n) {
  std::vector<cd> tw(static_cast<size_t>(std::max<int64_t>(n / 2, 1)));
  for (int64_t k = 0; k < n / 2; ++k) tw[size_t(k)] = std::polar(1.0, -2.0 * M_PI * double(k) / double(n));
  return tw;
}

// A transform of one length and direction, shared read-only by all lines.
class Dft {
 public:
  Dft(int64_t n, bool inverse) : n_(n), inverse_(inverse) {
    if (is_pow2(n)) {
      tw_ = twiddles(n);
    } else if (n <= 32) {
      tw_.resize(size_t(n));
      for (int64_t k = 0; k < n; ++k) tw_[size_t(k)] = std::polar(1.0, (inverse ? 2.0 : -2.0) * M_PI * double(k) / double(n));
    } else {
      m_ = 1;
      while (m_ < 2 * n - 1) m_ <<= 1;
      tw_ = twiddles(m_);
      chirp_.resize(size_t(n));
      for (int64_t k = 0; k < n; ++k) {
        const int64_t k2 = (k * k) % (2 * n);
        chirp_[size_t(k)] = std::polar(1.0, (inverse ? 1.0 : -1.0) * M_PI * double(k2) / double(n));
      }
      bfft_.assign(size_t(m_), cd(0));
      bfft_[0] = std::conj(chirp_[0]);
      for (int64_t k = 1; k < n; ++k) bfft_[size_t(k)] = bfft_[size_t(m_ - k)] = std::conj(chirp_[size_t(k)]);
      fft_pow2(bfft_.data(), m_, tw_, false);
    }
  }
  int64_t scratch_size() const { return std::max(n_, m_); }
  // x: n values in, transformed in place (scaled by 1/n when inverse). scratch: scratch_size().
  void run(cd* x, cd* scratch) const {
    const int64_t n = n_;
    if (is_pow2(n)) {
      fft_pow2(x, n, tw_, inverse_);
    } else if (n <= 32) {
      for (int64_t k = 0; k < n; ++k) {
        cd s = 0;
        for (int64_t j = 0; j < n; ++j) s += x[j] * tw_[size_t((j * k) % n)];
        scratch[k] = s;
      }
      std::copy(scratch, scratch + n, x);
    } else {
      for (int64_t k = 0; k < m_; ++k) scratch[k] = k < n ? x[k] * chirp_[size_t(k)] : cd(0);
      fft_pow2(scratch, m_, tw_, false);
      for (int64_t k = 0; k < m_; ++k) scratch[k] *= bfft_[size_t(k)];
      fft_pow2(scratch, m_, tw_, true);
      const double inv_m = 1.0 / double(m_);
      for (int64_t k = 0; k < n; ++k) x[k] = scratch[k] * inv_m * chirp_[size_t(k)];
    }
    if (inverse_) {
      const double s = 1.0 / double(n);
      for (int64_t k = 0; k < n; ++k) x[k] *= s;
    }
  }

 private:
  int64_t n_, m_ = 0;
  bool inverse_;
  std::vector<cd> tw_, chirp_, bfft_;
};

template <class T> double rd(const T& v) { return double(v); }
template <class T> T wr(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else return T(float(v));
}

Expected<int64_t> read_int_scalar(const Tensor& t, const char* name) {
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    return invalid_argument(std::string("input '") + name + "' must be int32 or int64, got " + dtype_name(t.dtype()));
  if (t.numel() != 1)
    return invalid_argument(std::string("input '") + name + "' must hold one value, got shape " + shape_str(t.shape()));
  return t.scalar_as_int();
}

class DftKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    opset_ = opset;
    inverse_ = node.attrs.get_int("inverse", 0) != 0;
    onesided_ = node.attrs.get_int("onesided", 0) != 0;
    axis_ = opset < 20 ? node.attrs.get_int("axis", 1) : -2;
    if (inverse_ && onesided_) return unsupported("onesided output of an inverse DFT is not supported");
    return Status::ok();
  }

  struct Params { int axis; int64_t length; Shape out; };

  Expected<Params> params(const Shape& s, DType t, const Tensor* len_t, const Tensor* axis_t) const {
    if (!dtype_is_float(t)) return unsupported("input dtype " + dtype_name(t) + " is not supported");
    const int r = int(s.size());
    if (r < 2) return invalid_argument("input must have rank >= 2, got rank " + std::to_string(r));
    if (s.back() != 1 && s.back() != 2)
      return invalid_argument("the last dimension of the input must be 1 (real) or 2 (complex), got " +
                              std::to_string(s.back()));
    int64_t ax = axis_;
    if (axis_t) { INGOT_ASSIGN_OR_RETURN(ax, read_int_scalar(*axis_t, "axis")); }
    if (ax < 0) ax += r;
    if (ax < 0 || ax > r - 2)
      return invalid_argument("axis value " + std::to_string(ax < 0 ? ax - r : ax) + " is out of range for rank " +
                              std::to_string(r) + " (the last dimension holds the complex parts)");
    if (onesided_ && s.back() == 2) return invalid_argument("onesided output needs a real input (last dimension 1)");
    int64_t n = s[size_t(ax)];
    if (len_t) {
      INGOT_ASSIGN_OR_RETURN(n, read_int_scalar(*len_t, "dft_length"));
      if (n <= 0 || n > (int64_t(1) << 28))
        return invalid_argument("input 'dft_length' value " + std::to_string(n) + " must be in [1, 2^28]");
    }
    if (n <= 0) return invalid_argument("cannot take the DFT of an empty axis");
    Params p{int(ax), n, s};
    p.out[size_t(ax)] = onesided_ ? n / 2 + 1 : n;
    p.out.back() = 2;
    return p;
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs input 'input'");
    const bool need_len = ctx.has_input(1), need_axis = opset_ >= 20 && ctx.has_input(2);
    if ((need_len && !ctx.input_value(1)) || (need_axis && !ctx.input_value(2))) {
      if (!dtype_is_float(ctx.input_dtype(0)))
        return unsupported("input dtype " + dtype_name(ctx.input_dtype(0)) + " is not supported");
      ctx.set_output_dynamic(0, ctx.input_dtype(0));
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(Params p, params(ctx.input_shape(0), ctx.input_dtype(0), need_len ? ctx.input_value(1) : nullptr,
                                            need_axis ? ctx.input_value(2) : nullptr));
    ctx.set_output(0, ctx.input_dtype(0), p.out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const bool has_axis = opset_ >= 20 && ctx.has_input(2);
    INGOT_ASSIGN_OR_RETURN(Params p, params(x.shape(), x.dtype(), ctx.has_input(1) ? &ctx.input(1) : nullptr,
                                            has_axis ? &ctx.input(2) : nullptr));
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.out);
    const Shape& s = x.shape();
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < p.axis; ++i) outer *= s[size_t(i)];
    for (size_t i = size_t(p.axis) + 1; i + 1 < s.size(); ++i) inner *= s[i];
    const int64_t nin = s[size_t(p.axis)], comp = s.back(), n = p.length, nout = p.out[size_t(p.axis)];
    if (y.numel() == 0) return Status::ok();
    Dft dft(n, inverse_);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      parallel_for(outer * inner, n * 16, [&](int64_t b, int64_t e) {
        std::vector<cd> buf(static_cast<size_t>(n)), scratch(static_cast<size_t>(dft.scratch_size()));
        for (int64_t l = b; l < e; ++l) {
          const int64_t o = l / inner, j = l % inner;
          const T* src = in + (o * nin * inner + j) * comp;
          for (int64_t k = 0; k < n; ++k) {
            if (k < nin) {
              const T* v = src + k * inner * comp;
              buf[size_t(k)] = cd(rd(v[0]), comp == 2 ? rd(v[1]) : 0.0);
            } else {
              buf[size_t(k)] = 0;
            }
          }
          dft.run(buf.data(), scratch.data());
          T* dst = out + (o * nout * inner + j) * 2;
          for (int64_t k = 0; k < nout; ++k) {
            dst[k * inner * 2] = wr<T>(buf[size_t(k)].real());
            dst[k * inner * 2 + 1] = wr<T>(buf[size_t(k)].imag());
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  int opset_ = 17;
  bool inverse_ = false, onesided_ = false;
  int64_t axis_ = 1;
};

// STFT: frames of frame_length samples every frame_step, multiplied by the window, DFT'd.
// Output [batch, frames, bins, 2] with bins = frame_length/2+1 when onesided.
class StftKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    onesided_ = node.attrs.get_int("onesided", 1) != 0;
    return Status::ok();
  }

  struct Params { int64_t step, flen, frames, bins; };

  Expected<Params> params(const Shape& s, DType t, const Tensor& step_t, const Shape* win_shape,
                          const Tensor* flen_t) const {
    if (!dtype_is_float(t)) return unsupported("input dtype " + dtype_name(t) + " is not supported");
    if (s.size() != 2 && s.size() != 3)
      return invalid_argument("signal must have shape [batch, length] or [batch, length, 1 or 2], got " + shape_str(s));
    const int64_t comp = s.size() == 3 ? s[2] : 1;
    if (comp != 1 && comp != 2)
      return invalid_argument("the last dimension of the signal must be 1 (real) or 2 (complex), got " + std::to_string(comp));
    if (onesided_ && comp == 2) return invalid_argument("onesided output needs a real signal");
    Params p{};
    INGOT_ASSIGN_OR_RETURN(p.step, read_int_scalar(step_t, "frame_step"));
    if (p.step <= 0) return invalid_argument("input 'frame_step' value " + std::to_string(p.step) + " must be > 0");
    p.flen = -1;
    if (win_shape) {
      if (win_shape->size() != 1) return invalid_argument("window must be 1-D, got shape " + shape_str(*win_shape));
      p.flen = (*win_shape)[0];
    }
    if (flen_t) {
      INGOT_ASSIGN_OR_RETURN(int64_t fl, read_int_scalar(*flen_t, "frame_length"));
      if (p.flen >= 0 && fl != p.flen)
        return invalid_argument("frame_length " + std::to_string(fl) + " does not match the window length " +
                                std::to_string(p.flen));
      p.flen = fl;
    }
    if (p.flen < 0) return invalid_argument("needs a window or a frame_length");
    if (p.flen == 0 || p.flen > s[1])
      return invalid_argument("frame length " + std::to_string(p.flen) + " must be in [1, signal length " +
                              std::to_string(s[1]) + "]");
    p.frames = 1 + (s[1] - p.flen) / p.step;
    p.bins = onesided_ ? p.flen / 2 + 1 : p.flen;
    return p;
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return invalid_model("needs inputs 'signal' and 'frame_step'");
    const Tensor* step = ctx.input_value(1);
    const bool has_win = ctx.has_input(2), has_len = ctx.has_input(3);
    if (has_win && ctx.input_dtype(2) != ctx.input_dtype(0))
      return invalid_argument("window dtype " + dtype_name(ctx.input_dtype(2)) + " does not match signal dtype " +
                              dtype_name(ctx.input_dtype(0)));
    if (!step || (has_len && !ctx.input_value(3))) {
      ctx.set_output_dynamic(0, ctx.input_dtype(0));
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(Params p, params(ctx.input_shape(0), ctx.input_dtype(0), *step,
                                            has_win ? &ctx.input_shape(2) : nullptr, has_len ? ctx.input_value(3) : nullptr));
    ctx.set_output(0, ctx.input_dtype(0), {ctx.input_shape(0)[0], p.frames, p.bins, 2});
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor* win = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    INGOT_ASSIGN_OR_RETURN(Params p, params(x.shape(), x.dtype(), ctx.input(1), win ? &win->shape() : nullptr,
                                            ctx.has_input(3) ? &ctx.input(3) : nullptr));
    const int64_t batch = x.dim(0), len = x.dim(1), comp = x.rank() == 3 ? x.dim(2) : 1;
    Tensor& y = ctx.allocate_output(0, x.dtype(), {batch, p.frames, p.bins, 2});
    if (y.numel() == 0) return Status::ok();
    Dft dft(p.flen, false);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      const T* w = win ? win->data<T>() : nullptr;
      T* out = y.data<T>();
      parallel_for(batch * p.frames, p.flen * 16, [&](int64_t b, int64_t e) {
        std::vector<cd> buf(static_cast<size_t>(p.flen)), scratch(static_cast<size_t>(dft.scratch_size()));
        for (int64_t l = b; l < e; ++l) {
          const int64_t bi = l / p.frames, f = l % p.frames;
          const T* src = in + (bi * len + f * p.step) * comp;
          for (int64_t k = 0; k < p.flen; ++k) {
            const double wk = w ? rd(w[k]) : 1.0;
            buf[size_t(k)] = cd(rd(src[k * comp]) * wk, comp == 2 ? rd(src[k * comp + 1]) * wk : 0.0);
          }
          dft.run(buf.data(), scratch.data());
          T* dst = out + l * p.bins * 2;
          for (int64_t k = 0; k < p.bins; ++k) {
            dst[2 * k] = wr<T>(buf[size_t(k)].real());
            dst[2 * k + 1] = wr<T>(buf[size_t(k)].imag());
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  bool onesided_ = true;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", DFT, DftKernel);
INGOT_REGISTER_KERNEL(cpu, "", STFT, StftKernel);

}  // namespace ingot
