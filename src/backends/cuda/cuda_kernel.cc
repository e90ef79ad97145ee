#include "backends/cuda/cuda_kernel.h"

#include <cstdio>
#include <map>

namespace ingot::cuda {

Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return internal_error(std::string("cuda error: ") + cudaGetErrorString(e) + " (" + what + ")");
}

Status cublas_status(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return internal_error(std::string("cublas error ") + std::to_string(int(e)) + " (" + what + ")");
}

Status cudnn_status(cudnnStatus_t e, const char* what) {
  if (e == CUDNN_STATUS_SUCCESS) return Status::ok();
  return internal_error(std::string("cudnn error: ") + cudnnGetErrorString(e) + " (" + what + ")");
}

Status last_launch_status(const char* what) { return cuda_status(cudaGetLastError(), what); }

Expected<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  cudaError_t e = cudaMalloc(&b.ptr_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error
    const auto gib = [](double v) {
      char s[32];
      std::snprintf(s, sizeof s, "%.1f GiB", v / double(1ull << 30));
      return std::string(s);
    };
    size_t free_bytes = 0, total_bytes = 0;
    const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    cudaGetLastError();
    return Status(e == cudaErrorMemoryAllocation ? ErrorCode::kOutOfMemory : ErrorCode::kInternal,
                  "cannot allocate " + gib(double(bytes)) + " (" + std::to_string(bytes) + " bytes) of GPU memory" +
                      (known ? ", " + gib(double(free_bytes)) + " free of " + gib(double(total_bytes)) : std::string()) +
                      ": " + cudaGetErrorString(e));
  }
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

CudaKernelRegistry& CudaKernelRegistry::instance() {
  static CudaKernelRegistry r;
  return r;
}

bool CudaKernelRegistry::add(const std::string& domain, const std::string& op_type, CudaKernelFactory factory) {
  map_[domain + "|" + op_type] = std::move(factory);
  return true;
}

const CudaKernelFactory* CudaKernelRegistry::find(const std::string& domain, const std::string& op_type) const {
  auto it = map_.find(domain + "|" + op_type);
  return it == map_.end() ? nullptr : &it->second;
}

std::vector<std::string> CudaKernelRegistry::ops() const {
  std::vector<std::string> out;
  for (const auto& [k, f] : map_) {
    auto bar = k.find('|');
    out.push_back(k.substr(0, bar) + ":" + k.substr(bar + 1));
  }
  return out;
}

}  // namespace ingot::cuda
