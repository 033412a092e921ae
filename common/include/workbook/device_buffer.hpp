/// \file
/// Move-only owners of device memory (cudaMalloc) and pinned host memory (cudaMallocHost).
/// Freed in the destructor, so an exception on the way never leaks GPU memory. They hold
/// trivially copyable elements only and never initialise them.
#pragma once

#include "workbook/cuda_check.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace workbook {

/// An array of \p T in device memory. Copy it with copy_from_host / copy_to_host, or
/// pass data() to kernels and to cudaMemcpy.
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceBuffer holds trivially copyable types");

public:
  DeviceBuffer() noexcept = default;

  /// Allocates \p count elements (uninitialised). Throws CudaError when out of memory.
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count > 0) WORKBOOK_CUDA_CHECK(cudaMalloc(&data_, count * sizeof(T)));
  }

  ~DeviceBuffer() { release(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Takes over \p other's memory; \p other is left empty.
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}

  /// Frees this buffer's memory, then takes over \p other's.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  /// Device pointer to the first element (nullptr when empty).
  T* data() noexcept { return data_; }
  /// Device pointer to the first element (nullptr when empty).
  const T* data() const noexcept { return data_; }
  /// Number of elements.
  std::size_t size() const noexcept { return count_; }
  /// Size in bytes.
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

  /// Copies size() elements from host memory at \p src to the device (cudaMemcpy): \p src may be
  /// reused when it returns, and work on the legacy default stream sees the data; from pageable
  /// memory the copy may still be landing then, so a non-blocking stream is not ordered after it.
  void copy_from_host(const T* src) {
    WORKBOOK_CUDA_CHECK(cudaMemcpy(data_, src, bytes(), cudaMemcpyHostToDevice));
  }
  /// Copies size() elements from the device to host memory at \p dst (synchronous).
  void copy_to_host(T* dst) const {
    WORKBOOK_CUDA_CHECK(cudaMemcpy(dst, data_, bytes(), cudaMemcpyDeviceToHost));
  }

private:
  void release() noexcept {
    if (data_ != nullptr) cuda_check_noexcept(cudaFree(data_), "cudaFree", __FILE__, __LINE__);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// An array of \p T in page-locked ("pinned") host memory: host<->device copies from it run
/// at full PCIe/NVLink speed and can be asynchronous. Indexable like a plain array.
template <class T>
class PinnedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "PinnedBuffer holds trivially copyable types");

public:
  PinnedBuffer() noexcept = default;

  /// Allocates \p count elements of pinned host memory (uninitialised).
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count > 0) WORKBOOK_CUDA_CHECK(cudaMallocHost(&data_, count * sizeof(T)));
  }

  ~PinnedBuffer() { release(); }

  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  /// Takes over \p other's memory; \p other is left empty.
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}

  /// Frees this buffer's memory, then takes over \p other's.
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  /// Host pointer to the first element.
  T* data() noexcept { return data_; }
  /// Host pointer to the first element.
  const T* data() const noexcept { return data_; }
  /// Number of elements.
  std::size_t size() const noexcept { return count_; }
  /// Size in bytes.
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  /// Element \p i (no bounds check, like a plain array).
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  /// Element \p i (no bounds check, like a plain array).
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }

private:
  void release() noexcept {
    if (data_ != nullptr) cuda_check_noexcept(cudaFreeHost(data_), "cudaFreeHost", __FILE__, __LINE__);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace workbook
