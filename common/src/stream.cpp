// Stream and Event: thin RAII over the runtime handles.
#include "workbook/stream.hpp"

namespace workbook {

Stream::Stream(unsigned flags) { WORKBOOK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, flags)); }

Stream::~Stream() {
  if (stream_ != nullptr) cuda_check_noexcept(cudaStreamDestroy(stream_), "cudaStreamDestroy", __FILE__, __LINE__);
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cuda_check_noexcept(cudaStreamDestroy(stream_), "cudaStreamDestroy", __FILE__, __LINE__);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const { WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Event::Event(unsigned flags) { WORKBOOK_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }

Event::~Event() {
  if (event_ != nullptr) cuda_check_noexcept(cudaEventDestroy(event_), "cudaEventDestroy", __FILE__, __LINE__);
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cuda_check_noexcept(cudaEventDestroy(event_), "cudaEventDestroy", __FILE__, __LINE__);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(cudaStream_t stream) { WORKBOOK_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void Event::synchronize() const { WORKBOOK_CUDA_CHECK(cudaEventSynchronize(event_)); }

float elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  WORKBOOK_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

}  // namespace workbook
