// Warp and block reductions: shfl.sync down/bfly/idx/up, shared memory, bar.sync.
extern "C" __global__ void warp_sum_u32(const unsigned* x, unsigned* warp_sums, unsigned* prefix) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = x[i];
  // Inclusive prefix sum over the warp with shfl.up.
  unsigned lane = threadIdx.x & 31;
  unsigned scan = v;
  for (int offset = 1; offset < 32; offset <<= 1) {
    unsigned other = __shfl_up_sync(0xffffffffu, scan, offset);
    if (lane >= offset) scan += other;
  }
  prefix[i] = scan;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  v = __shfl_sync(0xffffffffu, v, 0);  // broadcast lane 0's total
  if (lane == 31) warp_sums[i / 32] = v;
}

extern "C" __global__ void block_sum_f32(const float* x, float* block_sums, int n) {
  __shared__ float partial[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffffu, v, mask);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int warps = blockDim.x / 32;
    float w = lane < warps ? partial[lane] : 0.0f;
    for (int mask = 16; mask > 0; mask >>= 1) w += __shfl_xor_sync(0xffffffffu, w, mask);
    if (lane == 0) block_sums[blockIdx.x] = w;
  }
}
