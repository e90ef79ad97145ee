// Times ingot.FusedMatMul (through the kernel registry, exactly as the engine runs it) at
// DistilBERT/BERT-base linear shapes, fp32 and bf16, against oneDNN's matmul with plain (ab)
// weights and with pre-packed weights on pre-converted input (the ceiling), in GFLOP/s.
// Also checks that oneDNN's preferred packed weights layout does not depend on M, and prints
// the implementation each primitive uses (brg:avx512_core_amx expected for bf16 on AMX CPUs).
//   matmul_bench [--iters N] [--min-ms MS]
// Build by hand against a build dir (nothing in CMake):
//   g++ -O2 -std=c++20 -march=x86-64-v3 -Iinclude -Isrc bench/matmul_bench.cc -o build-lin/matmul_bench
//       -Lbuild-lin -lingot -ldnnl -Wl,-rpath,$PWD/build-lin -fopenmp        (one command line)
// In CMake it would be: add_executable(matmul_bench bench/matmul_bench.cc)
//                       target_link_libraries(matmul_bench PRIVATE ingot)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/fused_matmul_util.h"
#include "runtime/kernel.h"

using namespace ingot;
using namespace ingot::fused_matmul;
using Clock = std::chrono::steady_clock;

namespace {

int g_iters = 20;
double g_min_ms = 300;

Tensor random_tensor(Shape s, uint32_t seed) {
  Tensor t(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Median and best milliseconds of fn over at least g_iters calls and g_min_ms, after warmup.
std::pair<double, double> time_ms(const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> ts;
  auto start = Clock::now();
  while (int(ts.size()) < g_iters || std::chrono::duration<double, std::milli>(Clock::now() - start).count() < g_min_ms) {
    auto t0 = Clock::now();
    fn();
    ts.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (ts.size() > 2000) break;
  }
  std::sort(ts.begin(), ts.end());
  return {ts[ts.size() / 2], ts[0]};
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

struct Result {
  double med_ms = 0, best_ms = 0;
};

// FusedMatMul through the registry: init, prepare (packs W), infer, compute into a
// preallocated output (so timing excludes the engine's output allocation).
Result bench_fused(int64_t M, int64_t K, int64_t N, bool bf16, const Tensor& A, const Tensor& W, const Tensor& b) {
  Node node;
  node.name = "bench";
  node.op_type = "FusedMatMul";
  node.domain = "ingot";
  node.inputs = {0, 1, 2};
  node.outputs = {3};
  Attribute p;
  p.kind = Attribute::Kind::kString;
  p.s = bf16 ? "bf16" : "fp32";
  node.attrs.set("precision", p);
  auto k = create_kernel("cpu", node, 0, 1);
  if (!k) {
    std::fprintf(stderr, "create_kernel: %s\n", k.status().message().c_str());
    std::exit(1);
  }
  Status st = (*k)->prepare({nullptr, &W, &b});
  if (!st.ok()) std::fprintf(stderr, "prepare: %s\n", st.message().c_str()), std::exit(1);
  InferContext ic(node, {{true, DType::kFloat32, A.shape(), nullptr}, {true, DType::kFloat32, W.shape(), &W},
                         {true, DType::kFloat32, b.shape(), &b}}, 1);
  st = (*k)->infer(ic);
  if (!st.ok()) std::fprintf(stderr, "infer: %s\n", st.message().c_str()), std::exit(1);
  Tensor Y(DType::kFloat32, {M, N});
  auto run = [&] {
    ComputeContext cc(node, {&A, &W, &b}, ic.outputs(), nullptr);
    cc.set_output(0, Y);
    Status s = (*k)->compute(cc);
    if (!s.ok()) std::fprintf(stderr, "compute: %s\n", s.message().c_str()), std::exit(1);
  };
  auto [med, best] = time_ms(run);
  return {med, best};
}

// Plain oneDNN matmul: weights in `weights_tag` (ab: plain rows, as a kernel without
// pre-packing sees them; any: packed once, outside the timing), input already in the
// compute type. The weights reorder for plain bf16 happens once, outside the timing too.
Result bench_onednn(int64_t M, int64_t K, int64_t N, bool bf16, tag weights_tag, const Tensor& A, const Tensor& W,
                    const Tensor& b, std::string* impl) {
  Spec s{K, N, bf16, true, Activation::kNone};
  auto pd = make_pd(s, M, weights_tag);
  *impl = impl_name(pd);
  auto& eng = dnnl_util::cpu_engine();
  dnnl::matmul prim(pd);
  dnnl::memory wm = pack_weights(W.data<float>(), K, N, pd.weights_desc());
  dnnl::memory a32({{M, K}, dt::f32, tag::ab}, eng, const_cast<float*>(A.data<float>()));
  dnnl::memory am(pd.src_desc(), eng);
  dnnl::stream st(eng);
  dnnl::reorder(a32, am).execute(st, a32, am);
  st.wait();
  dnnl::memory bm({{1, N}, dt::f32, tag::ab}, eng, const_cast<float*>(b.data<float>()));
  dnnl::memory ym(pd.dst_desc(), eng);
  dnnl::memory scratch(pd.scratchpad_desc(), eng);
  auto run = [&] {
    prim.execute(st, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, ym},
                      {DNNL_ARG_SCRATCHPAD, scratch}});
    st.wait();
  };
  auto [med, best] = time_ms(run);
  return {med, best};
}

// Does the preferred weights layout for (K, N) change with M?
void check_layouts(int64_t K, int64_t N, bool bf16) {
  Spec s{K, N, bf16, true, Activation::kNone};
  auto ref = make_pd(s, 128, tag::any);
  std::string diffs;
  for (int64_t M : {1, 2, 7, 16, 64, 127, 500, 1024, 4096, 16384}) {
    auto pd = make_pd(s, M, tag::any);
    if (!(pd.weights_desc() == ref.weights_desc())) diffs += " M=" + std::to_string(M);
  }
  std::printf("  layout K=%-5ld N=%-5ld %s: %s (impl at M=128: %s)\n", long(K), long(N), bf16 ? "bf16" : "fp32",
              diffs.empty() ? "same for M in {1..16384}" : ("differs at" + diffs).c_str(), impl_name(ref).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) g_iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-ms") && i + 1 < argc) g_min_ms = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: matmul_bench [--iters N] [--min-ms MS]\n");
      return 2;
    }
  }
  std::printf("threads %d, load average before: %s\n", num_threads(), loadavg().c_str());
  struct Shape3 { int64_t M, K, N; };
  std::vector<Shape3> shapes = {{128, 768, 768},  {128, 768, 3072},  {128, 3072, 768},
                                {1024, 768, 768}, {1024, 768, 3072}, {1024, 3072, 768}};
  std::printf("Packed weights layout vs M:\n");
  for (bool bf16 : {false, true})
    for (auto [K, N] : std::vector<std::pair<int64_t, int64_t>>{{768, 768}, {768, 3072}, {3072, 768}})
      check_layouts(K, N, bf16);
  std::printf("\nGFLOP/s, median (best) over >= %d iters / %.0f ms:\n", g_iters, g_min_ms);
  std::printf("%-6s %5s %5s %5s | %-17s | %-17s | %-17s | %s\n", "prec", "M", "K", "N", "FusedMatMul",
              "oneDNN plain W", "oneDNN packed W", "impl (plain / packed)");
  for (bool bf16 : {false, true})
    for (auto sh : shapes) {
      Tensor A = random_tensor({sh.M, sh.K}, 1), W = random_tensor({sh.K, sh.N}, 2), b = random_tensor({sh.N}, 3);
      double flop = 2.0 * double(sh.M) * double(sh.K) * double(sh.N);
      auto gf = [&](double ms) { return flop / (ms * 1e6); };
      std::string impl_plain, impl_packed;
      Status st = dnnl_util::guard([&] {
        Result f = bench_fused(sh.M, sh.K, sh.N, bf16, A, W, b);
        Result p = bench_onednn(sh.M, sh.K, sh.N, bf16, tag::ab, A, W, b, &impl_plain);
        Result q = bench_onednn(sh.M, sh.K, sh.N, bf16, tag::any, A, W, b, &impl_packed);
        std::printf("%-6s %5ld %5ld %5ld | %7.0f (%7.0f) | %7.0f (%7.0f) | %7.0f (%7.0f) | %s / %s\n",
                    bf16 ? "bf16" : "fp32", long(sh.M), long(sh.K), long(sh.N), gf(f.med_ms), gf(f.best_ms),
                    gf(p.med_ms), gf(p.best_ms), gf(q.med_ms), gf(q.best_ms), impl_plain.c_str(),
                    impl_packed.c_str());
        std::fflush(stdout);
        return Status::ok();
      });
      if (!st.ok()) std::printf("error: %s\n", st.message().c_str());
    }
  std::printf("load average after: %s\n", loadavg().c_str());
  return 0;
}
