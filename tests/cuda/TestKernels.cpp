#include "TestKernels.h"

#include <fmt/format.h>

#include "ir/Builder.h"
#include "ptx/Target.h"

namespace quantc::test {

ir::Program scale_by_two_program() {
  using namespace ir;
  ProgramBuilder builder("scale_by_two");
  BufferRef x = builder.input("x", ScalarType::F32, kScaleCount);
  BufferRef y = builder.output("y", ScalarType::F32, kScaleCount);
  builder.launch({256, 1, 1}, {ceil_div(kScaleCount, 256), 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    body.if_then(i < kScaleCount, [&](Body& then) { then.store(y, i, x[i] * 2.0); });
  });
  return builder.build();
}

std::string scale_by_two_ptx(int sm) {
  const ptx::Target target{sm};
  return fmt::format(R"(.version {}
.target {}
.address_size 64

.visible .entry scale_by_two(
  .param .u64 x,
  .param .u64 y
)
.maxntid 256, 1, 1
{{
  .reg .pred %p<2>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<6>;
  .reg .f32 %f<3>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  setp.ge.u32 %p1, %r4, {};
  @%p1 bra DONE;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, %f1;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
DONE:
  ret;
}}
)",
                     target.min_ptx_version().to_string(), target.name(), kScaleCount);
}

}  // namespace quantc::test
