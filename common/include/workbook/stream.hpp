/// \file
/// Move-only owners of a CUDA stream and a CUDA event.
#pragma once

#include "workbook/cuda_check.hpp"

#include <utility>

namespace workbook {

/// A CUDA stream: an in-order queue of device work. Destroyed with its owner.
class Stream {
public:
  /// Creates a stream with \p flags (cudaStreamDefault or cudaStreamNonBlocking).
  explicit Stream(unsigned flags = cudaStreamDefault);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// Takes over \p other's stream; \p other is left empty.
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  /// Destroys this stream, then takes over \p other's.
  Stream& operator=(Stream&& other) noexcept;

  /// The raw handle, for launches (`kernel<<<g, b, 0, s.get()>>>`) and async copies.
  cudaStream_t get() const noexcept { return stream_; }
  /// Blocks the host until all work queued on this stream has finished.
  void synchronize() const;

private:
  cudaStream_t stream_ = nullptr;
};

/// A CUDA event: a marker in a stream that the GPU timestamps when it gets there.
class Event {
public:
  /// Creates an event with \p flags (cudaEventDefault keeps timing enabled).
  explicit Event(unsigned flags = cudaEventDefault);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// Takes over \p other's event; \p other is left empty.
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  /// Destroys this event, then takes over \p other's.
  Event& operator=(Event&& other) noexcept;

  /// Enqueues the event on \p stream.
  void record(cudaStream_t stream = nullptr);
  /// Blocks the host until the GPU has reached the event.
  void synchronize() const;
  /// The raw handle.
  cudaEvent_t get() const noexcept { return event_; }

private:
  cudaEvent_t event_ = nullptr;
};

/// Milliseconds between two recorded and completed events (cudaEventElapsedTime).
float elapsed_ms(const Event& start, const Event& stop);

}  // namespace workbook
