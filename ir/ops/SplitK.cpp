#include "ir/ops/SplitK.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/ops/Checks.h"

namespace quantc::ir::ops {

SplitK declare_split_k(ProgramBuilder& program, std::uint32_t splits, std::uint32_t outputs, std::uint32_t units,
                       ScalarType element) {
  SplitK split_k;
  split_k.splits = splits;
  split_k.outputs = outputs;
  split_k.element = element;
  if (splits <= 1) return split_k;
  split_k.partials =
      program.scratch("partials", element, checked_count("split-K", "splits*outputs (partial sums)", splits, outputs));
  split_k.arrivals = program.scratch("arrivals", ScalarType::U32, units);
  return split_k;
}

void emit_split_k_meeting(Body& body, const SplitK& split_k, const Expr& owner, const Expr& first,
                          const std::vector<Expr>& values, const Expr& unit, const Expr& split,
                          const std::function<void(Body&, const std::vector<Expr>& totals)>& finish,
                          std::uint32_t vector_stride, const Expr& drawer) {
  if (split_k.splits <= 1) {
    body.if_then(owner, [&](Body& owned) { finish(owned, values); });
    return;
  }
  const auto count = static_cast<std::uint32_t>(values.size());
  const std::uint32_t width = split_k.lanes();
  const std::uint32_t stride = vector_stride == 0 ? width : vector_stride;
  // Element offset of the vector holding values[c, c + width) from the lane's first.
  auto offset = [&](const Expr& from, std::uint32_t c) { return c == 0 ? from : from + (c / width) * stride; };
  auto vector_of = [&](const std::vector<Expr>& scalars, std::uint32_t from) {
    if (width == 1) return scalars[from];
    return make_vector(std::vector<Expr>(scalars.begin() + from, scalars.begin() + from + width));
  };
  const Expr zero = literal_like(Type(split_k.element), 0.0);
  body.if_then(owner, [&](Body& owned) {
    Expr base = owned.let("partial_base", split * split_k.outputs + first);
    for (std::uint32_t c = 0; c < count; c += width) owned.store(split_k.partials, offset(base, c), vector_of(values, c));
  });
  // Release the partials, then draw a ticket; lane 0 draws for the subgroup.
  body.fence();
  const Expr draws = drawer.defined() ? drawer : eq(local_id(0), u32(0));
  Expr drawn = body.let("drawn", u32(0));
  body.if_then(draws, [&](Body& drawing) {
    drawing.assign(drawn, drawing.atomic_add("ticket", split_k.arrivals, unit, u32(1)));
  });
  Expr ticket = body.let("unit_ticket", subgroup_shuffle(drawn, u32(0)));
  body.if_then(eq(ticket, u32(split_k.splits - 1)), [&](Body& last) {
    // Acquire the other workgroups' partials.
    last.fence();
    last.if_then(owner, [&](Body& owned) {
      std::vector<Expr> totals;
      for (std::uint32_t c = 0; c < count; ++c) totals.push_back(owned.let(fmt::format("total{}", c), zero));
      // `batch` splits at a time: their loads first, so that one wait covers them all, then
      // the zeroing stores and the additions in split order (the same sums, the same bits).
      const std::uint32_t registers_per_split = count * (split_k.element == ScalarType::F64 ? 2 : 1);
      const std::uint32_t batch = std::clamp(split_k.registers_in_flight / registers_per_split, 1u, split_k.splits);
      auto add = [&](Body& each, std::uint32_t c, const Expr& partial) {
        for (std::uint32_t l = 0; l < width; ++l) {
          each.assign(totals[c + l], totals[c + l] + (width == 1 ? partial : extract_lane(partial, l)));
        }
      };
      auto load = [&](Body& each, const Expr& index, const std::string& name) {
        return each.let(name, width == 1 ? split_k.partials[index] : split_k.partials.load(index, width));
      };
      const Expr zeros = width == 1 ? zero : broadcast(zero, width);
      auto add_splits = [&](Body& each, const Expr& first_split, std::uint32_t splits_here) {
        if (splits_here == 1) {  // each vector loaded, added and zeroed in turn: fewest registers
          Expr at = each.let("partial_at", first_split * split_k.outputs + first);
          for (std::uint32_t c = 0; c < count; c += width) {
            Expr index = offset(at, c);
            add(each, c, load(each, index, fmt::format("partial{}", c / width)));
            each.store(split_k.partials, index, zeros);
          }
          return;
        }
        std::vector<Expr> indices, partials;
        for (std::uint32_t i = 0; i < splits_here; ++i) {
          Expr split_here = i == 0 ? first_split : first_split + u32(i);
          Expr at = each.let(fmt::format("partial_at{}", i), split_here * split_k.outputs + first);
          for (std::uint32_t c = 0; c < count; c += width) {
            indices.push_back(offset(at, c));
            partials.push_back(load(each, indices.back(), fmt::format("partial{}_{}", i, c / width)));
          }
        }
        for (const Expr& index : indices) each.store(split_k.partials, index, zeros);
        for (std::uint32_t i = 0, v = 0; i < splits_here; ++i) {
          for (std::uint32_t c = 0; c < count; c += width) add(each, c, partials[v++]);
        }
      };
      const std::uint32_t batches = split_k.splits / batch, tail = split_k.splits % batch;
      owned.loop("split_batch", u32(0), u32(batches),
                 [&](Body& each, Expr b) { add_splits(each, b * batch, batch); });
      if (tail != 0) add_splits(owned, u32(batches * batch), tail);
      finish(owned, totals);
    });
    last.if_then(draws, [&](Body& resetter) { resetter.store(split_k.arrivals, unit, u32(0)); });
  });
}

WorkgroupSubgroup locate_subgroup(Body& body, std::uint32_t column_subgroups, std::uint32_t k_subgroups) {
  WorkgroupSubgroup at;
  at.local = body.let("local", local_id(0));
  Expr warp = at.local / kSubgroupSize;
  at.column_subgroup = column_subgroups == 1 ? u32(0) : body.let("column_subgroup", warp % column_subgroups);
  at.k_subgroup = k_subgroups == 1 ? u32(0) : body.let("k_subgroup", warp / column_subgroups);
  at.subgroup = body.let("subgroup", workgroup_id(0) * column_subgroups + at.column_subgroup);
  at.lane = body.let("lane", at.local % kSubgroupSize);
  return at;
}

KSubgroupMeeting declare_k_subgroup_meeting(ProgramBuilder& program, std::uint32_t k_subgroups, std::uint32_t slots,
                                            ScalarType element, const BufferRef& reuse) {
  KSubgroupMeeting meeting{k_subgroups, slots, element, {}, !reuse.name.empty()};
  if (k_subgroups <= 1) return meeting;
  const std::uint32_t count = checked_count("k-subgroups", "k_subgroups*slots", k_subgroups, slots);
  if (meeting.reused) {
    meeting.partials = reuse;
  } else {
    meeting.partials = program.shared("k_partials", element, count);
  }
  return meeting;
}

void emit_k_subgroup_meeting(Body& body, const KSubgroupMeeting& meeting, const Expr& k_subgroup, const Expr& owner,
                             const Expr& first, const std::vector<Expr>& values, std::uint32_t vector_stride) {
  if (meeting.k_subgroups <= 1) return;
  const auto count = static_cast<std::uint32_t>(values.size());
  const std::uint32_t width = meeting.element == ScalarType::F32 && count % 4 == 0 ? 4 : 1;
  // Slot of values[v]: first + (v / width) * stride + v % width (contiguous by default).
  const std::uint32_t stride = vector_stride != 0 ? vector_stride : width;
  auto offset = [&](std::uint32_t v) { return v / width * stride; };
  if (meeting.reused) body.barrier();  // every subgroup is done reading the array
  body.if_then(logical_and(owner, ne(k_subgroup, u32(0))), [&](Body& storer) {
    Expr base = storer.let("k_partial_base", k_subgroup * meeting.slots + first);
    for (std::uint32_t v = 0; v < count; v += width) {
      Expr value = width == 1 ? values[v]
                              : make_vector(std::vector<Expr>(values.begin() + v, values.begin() + v + width));
      storer.store(meeting.partials, v == 0 ? base : base + offset(v), value);
    }
  });
  body.barrier();
  body.if_then(logical_and(owner, eq(k_subgroup, u32(0))), [&](Body& adder) {
    for (std::uint32_t k = 1; k < meeting.k_subgroups; ++k) {
      for (std::uint32_t v = 0; v < count; v += width) {
        Expr index = first + (k * meeting.slots + offset(v));
        Expr partial = adder.let(fmt::format("k_partial{}_{}", k, v / width),
                                 width == 1 ? meeting.partials[index] : meeting.partials.load(index, width));
        for (std::uint32_t l = 0; l < width; ++l) {
          adder.assign(values[v + l], values[v + l] + (width == 1 ? partial : extract_lane(partial, l)));
        }
      }
    }
  });
}

std::vector<BufferSpec> with_split_k_buffers(std::vector<BufferSpec> buffers, ScalarType element,
                                             const std::string& partials_count, const std::string& units_count) {
  const std::string when = " (fast schedule, when it splits K across workgroups; provided zeroed by the runtime)";
  buffers.push_back({"partials", "scratch", element, partials_count + when});
  buffers.push_back({"arrivals", "scratch", ScalarType::U32, units_count + when});
  return buffers;
}

std::uint32_t choose_k_subgroups(std::uint64_t chunks, std::uint32_t lanes_per_subgroup, std::uint32_t chunks_per_lane,
                                 std::uint32_t most) {
  std::uint32_t k_subgroups = 1;
  while (k_subgroups * 2 <= most &&
         chunks >= std::uint64_t{k_subgroups} * 2 * lanes_per_subgroup * chunks_per_lane) {
    k_subgroups *= 2;
  }
  return k_subgroups;
}

std::uint32_t fit_k_subgroups_to_one_wave(std::uint32_t k_subgroups, std::uint64_t warps_per_k_subgroup,
                                          std::uint32_t resident_warps_per_sm) {
  const std::uint64_t wave = std::uint64_t{kTargetSms} * resident_warps_per_sm;
  if (warps_per_k_subgroup > wave) return k_subgroups;
  std::uint32_t fitted = k_subgroups;
  while (fitted > 1 && warps_per_k_subgroup * fitted > wave) fitted /= 2;
  return fitted;
}

std::uint32_t even_waves_reserved_bytes(std::uint64_t workgroups, std::uint32_t invocations, std::uint64_t shared_bytes,
                                        std::uint32_t registers) {
  // Fewer registers than `registers` could let an SM hold up to resident_workgroups at one
  // register: reserve wherever that passes r.
  return even_waves_dynamic_shared_bytes(workgroups, invocations, shared_bytes, registers, kH100SxmSm,
                                         resident_workgroups(invocations, shared_bytes, 1));
}

void even_out_waves(ProgramBuilder& program, std::uint32_t least_registers, std::uint32_t expected_registers) {
  const std::uint32_t invocations = program.invocations_per_workgroup();
  const std::uint64_t shared = program.static_shared_bytes();
  const std::uint32_t reserved = even_waves_reserved_bytes(program.workgroups(), invocations, shared, least_registers);
  if (reserved == 0) return;
  program.reserved_shared_bytes(reserved);
  const std::uint32_t even = resident_workgroups(invocations, shared + reserved, least_registers);
  if (even <= resident_workgroups(invocations, shared, expected_registers)) program.min_resident_workgroups(even);
}

std::uint32_t resident_workgroups(std::uint32_t invocations, std::uint64_t shared_bytes, std::uint32_t registers) {
  return resident_ctas(invocations, shared_bytes, registers, kH100SxmSm);
}

std::uint32_t fewer_waves_resident_workgroups(std::uint64_t workgroups, std::uint32_t invocations,
                                              std::uint64_t shared_bytes, std::uint32_t unasked_registers,
                                              std::uint32_t least_registers) {
  const std::uint32_t asked = resident_workgroups(invocations, shared_bytes, least_registers);
  const std::uint32_t unasked = resident_workgroups(invocations, shared_bytes, unasked_registers);
  if (asked == 0 || unasked == 0) return 0;
  auto waves = [&](std::uint32_t resident) {
    const std::uint64_t wave = std::uint64_t{kTargetSms} * resident;
    return (workgroups + wave - 1) / wave;
  };
  return waves(asked) < waves(unasked) ? asked : 0;
}

std::uint32_t one_wave_resident_workgroups(std::uint64_t workgroups, std::uint32_t invocations,
                                           std::uint64_t shared_bytes, std::uint32_t least_registers) {
  const std::uint64_t per_sm = (workgroups + kTargetSms - 1) / kTargetSms;
  if (per_sm < 2) return 0;
  return per_sm <= resident_workgroups(invocations, shared_bytes, least_registers) ? static_cast<std::uint32_t>(per_sm)
                                                                                   : 0;
}

std::uint32_t choose_splits(std::uint32_t units, std::uint32_t chunks, std::uint32_t lanes_per_split) {
  std::uint32_t splits = 1;
  while (std::uint64_t{units} * splits < kSplitKTargetWorkgroups &&
         std::uint64_t{chunks} >= std::uint64_t{lanes_per_split} * splits * 2) {
    splits *= 2;
  }
  return splits;
}

}  // namespace quantc::ir::ops
