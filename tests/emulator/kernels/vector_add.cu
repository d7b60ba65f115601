// c[i] = a[i] + b[i] for i < n: bounds guard, 64-bit addressing, f32 add.
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
