/// \file
/// A loop over [0, n) on every core of the host: for the grader's own large inputs and
/// reference results (millions of elements), which would otherwise keep the GPU waiting, alone,
/// while one core makes them.
#pragma once

#include <cstddef>
#include <functional>

namespace workbook {

/// Calls \p body(begin, end) on contiguous ranges that cover [0, n) once, at most one range per
/// core this process may use (its CPU affinity) and none shorter than \p grain elements: the last
/// on the caller's thread, the others on threads of their own (or the caller's too, where no more
/// threads can be started). Returns when every range is done; an exception a range throws is
/// rethrown here (the first one, after all ranges have ended). Host-only.
void parallel_for(std::size_t n, const std::function<void(std::size_t begin, std::size_t end)>& body,
                  std::size_t grain = std::size_t(1) << 18);

/// The cores this process may run on: its CPU affinity (a Slurm job's share of a large node), not
/// every core the machine has. At least 1. Host-only.
std::size_t usable_cores();

}  // namespace workbook
