// Local memory (a dynamically indexed per-thread array), dynamic shared memory
// (extern __shared__) and a CTA barrier between writing and reading it.
extern "C" __global__ void memory_spaces(const int* index, const float* x, float* out) {
  extern __shared__ float dynamic[];
  float local[16];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 16; ++k) local[k] = x[i] * static_cast<float>(k);
  dynamic[threadIdx.x] = local[index[i] & 15];
  __syncthreads();
  out[i] = dynamic[blockDim.x - 1 - threadIdx.x] + 1.0f;
}
