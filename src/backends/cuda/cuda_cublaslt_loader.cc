// The cuBLASLt functions ingot calls, defined here and forwarded to the library, which is loaded
// (dlopen) on the first call instead of with the program. Loading libcublasLt maps and relocates
// ~150 MB that stay resident (a program that only links it: 153 MB of RSS before main, against
// 1.3 MB), which every ingot process paid, CPU engines and `ingot --version` included; now only
// a process that uses the CUDA backend does. Without the library (or without a GPU, where the
// backend stops earlier) calls fail with CUBLAS_STATUS_NOT_INITIALIZED and
// cublasLtGetStatusString says why the library did not load.
//
// Each definition below must match cublasLt.h's declaration (the compiler checks: they are the
// same extern "C" functions). A test or benchmark that links the library itself gets these
// wrappers too when libingot comes first; they then forward to the library already loaded.
#include <cublasLt.h>
#include <dlfcn.h>

#include <string>

namespace {

struct Library {
  void* handle = nullptr;
  std::string error;
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    l.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!l.handle) {
      const char* e = dlerror();
      l.error = "cuBLASLt could not be loaded (" + name + "): " + (e ? e : "unknown error");
    }
    return l;
  }();
  return lib;
}

// The library's `name`, or null when it did not load or lacks it.
template <class F>
F* symbol(const char* name) {
  const Library& lib = library();
  return lib.handle ? reinterpret_cast<F*>(dlsym(lib.handle, name)) : nullptr;
}

}  // namespace

// One forwarding definition per function: `name`'s pointer is looked up once; when there is
// none the call returns `missing`.
#define INGOT_FORWARD(ret, missing, name, params, args)               \
  extern "C" ret CUBLASWINAPI name params {                           \
    static auto* const real = symbol<decltype(name)>(#name);          \
    return real ? real args : missing;                                \
  }

INGOT_FORWARD(size_t, 0, cublasLtGetVersion, (void), ())
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtCreate, (cublasLtHandle_t* handle), (handle))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtDestroy, (cublasLtHandle_t handle), (handle))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmul,
              (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
               cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
               const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
               const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes, cudaStream_t stream),
              (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspace_bytes,
               stream))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatrixLayoutCreate,
              (cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
              (layout, type, rows, cols, ld))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatrixLayoutDestroy,
              (cublasLtMatrixLayout_t layout), (layout))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatrixLayoutSetAttribute,
              (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t bytes),
              (layout, attr, buf, bytes))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulDescCreate,
              (cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale),
              (desc, compute, scale))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc),
              (desc))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulDescSetAttribute,
              (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t bytes),
              (desc, attr, buf, bytes))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulPreferenceCreate,
              (cublasLtMatmulPreference_t* pref), (pref))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulPreferenceDestroy,
              (cublasLtMatmulPreference_t pref), (pref))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulPreferenceSetAttribute,
              (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
               size_t bytes),
              (pref, attr, buf, bytes))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulAlgoGetHeuristic,
              (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
               cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
               cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
               int* returned),
              (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results, returned))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulAlgoInit,
              (cublasLtHandle_t handle, cublasComputeType_t compute, cudaDataType_t scale, cudaDataType_t Atype,
               cudaDataType_t Btype, cudaDataType_t Ctype, cudaDataType_t Dtype, int algo_id,
               cublasLtMatmulAlgo_t* algo),
              (handle, compute, scale, Atype, Btype, Ctype, Dtype, algo_id, algo))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulAlgoCheck,
              (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
               cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
               const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result),
              (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, algo, result))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulAlgoCapGetAttribute,
              (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoCapAttributes_t attr, void* buf, size_t bytes,
               size_t* written),
              (algo, attr, buf, bytes, written))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulAlgoConfigSetAttribute,
              (cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, const void* buf, size_t bytes),
              (algo, attr, buf, bytes))
INGOT_FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulAlgoConfigGetAttribute,
              (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t bytes,
               size_t* written),
              (algo, attr, buf, bytes, written))

extern "C" const char* CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) {
  static auto* const real = symbol<decltype(cublasLtGetStatusName)>("cublasLtGetStatusName");
  return real ? real(status) : "CUBLAS_STATUS_NOT_INITIALIZED";
}

extern "C" const char* CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) {
  static auto* const real = symbol<decltype(cublasLtGetStatusString)>("cublasLtGetStatusString");
  return real ? real(status) : library().error.c_str();
}
