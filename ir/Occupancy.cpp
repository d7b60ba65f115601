#include "ir/Occupancy.h"

#include <algorithm>

#include "ir/Program.h"

namespace quantc::ir {

std::uint32_t resident_ctas(std::uint32_t threads, std::uint64_t shared_bytes, std::uint32_t registers,
                            const SmLimits& sm) {
  if (threads == 0 || registers == 0) return 0;
  const std::uint64_t unit = std::max<std::uint32_t>(sm.register_unit, 1);
  const std::uint64_t per_thread = (registers + unit - 1) / unit * unit;
  const std::uint64_t resident =
      std::min({std::uint64_t{sm.max_ctas_per_sm}, sm.registers_per_sm / (per_thread * threads),
                std::uint64_t{sm.max_threads_per_sm} / threads,
                sm.shared_bytes_per_sm / (shared_bytes + sm.reserved_shared_bytes_per_cta)});
  return static_cast<std::uint32_t>(resident);
}

std::uint32_t even_waves_dynamic_shared_bytes(std::uint64_t ctas, std::uint32_t threads,
                                              std::uint64_t static_shared_bytes, std::uint32_t registers,
                                              const SmLimits& sm, std::uint32_t most_resident) {
  const std::uint64_t resident = resident_ctas(threads, static_shared_bytes, registers, sm);
  if (resident == 0 || sm.sms == 0 || ctas == 0) return 0;
  const std::uint64_t wave = std::uint64_t{sm.sms} * resident;
  const std::uint64_t waves = (ctas + wave - 1) / wave;
  const std::uint64_t even = (ctas + std::uint64_t{sm.sms} * waves - 1) / (std::uint64_t{sm.sms} * waves);  // r
  const std::uint64_t most = most_resident == 0 ? resident : most_resident;
  if (waves < 2 || even >= most) return 0;
  const std::uint64_t unit = std::max<std::uint64_t>(sm.shared_allocation_unit, 1);
  const std::uint64_t allocated = sm.shared_bytes_per_sm / even / unit * unit;
  if (allocated < static_shared_bytes + sm.reserved_shared_bytes_per_cta) return 0;
  const std::uint64_t dynamic = allocated - sm.reserved_shared_bytes_per_cta - static_shared_bytes;
  if (static_shared_bytes + dynamic > std::min(kMaxLaunchSharedBytes, sm.max_shared_bytes_per_cta)) return 0;
  return static_cast<std::uint32_t>(dynamic);
}

}  // namespace quantc::ir
