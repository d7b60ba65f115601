// 128-bit vector memory accesses: ld.global.nc.v4.u32 through __ldg(const uint4*),
// st.global.v4, and a shared-memory tile written and read as float4
// (st.shared.v4.f32 / ld.shared.v4.f32) across a barrier.
extern "C" __global__ void ldg_uint4(const uint4* __restrict__ in, uint4* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint4 v = __ldg(in + i);
  out[i] = make_uint4(v.w, v.x ^ v.y, v.z + 1u, v.y);
}

extern "C" __global__ void shared_float4(const float4* __restrict__ in, float4* __restrict__ out) {
  __shared__ float4 tile[128];
  unsigned t = threadIdx.x;
  tile[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  float4 v = tile[blockDim.x - 1 - t];
  out[blockIdx.x * blockDim.x + t] = make_float4(v.y, v.x, v.w * 2.0f, v.z);
}
