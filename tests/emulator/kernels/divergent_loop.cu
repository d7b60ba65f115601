// Data-dependent loop trip counts and nested branches, then a warp vote after the
// threads reconverge.
extern "C" __global__ void collatz(const unsigned* start, unsigned* steps, unsigned* ballots) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long x = start[i];
  unsigned count = 0;
  while (x != 1 && count < 1000) {
    if (x & 1) {
      x = 3 * x + 1;
      if (x % 5 == 0) count += 2;  // a nested divergent branch
    } else {
      x >>= 1;
    }
    ++count;
  }
  steps[i] = count;
  unsigned ballot = __ballot_sync(0xffffffffu, count > 20);
  if ((threadIdx.x & 31) == 0) ballots[i / 32] = ballot;
}
