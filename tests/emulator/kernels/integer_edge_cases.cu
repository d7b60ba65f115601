// Integer edge cases: signed division and remainder, high multiplies, shifts of
// negative values, bit counting and permutes, saturating narrowing.
extern "C" __global__ void integer_edge_cases(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  int* o = out + 12 * i;
  o[0] = y != 0 ? x / y : 0;
  o[1] = y != 0 ? x % y : 0;
  o[2] = __mulhi(x, y);
  o[3] = static_cast<int>(__umulhi(static_cast<unsigned>(x), static_cast<unsigned>(y)));
  o[4] = x >> (y & 31);
  o[5] = static_cast<int>(static_cast<unsigned>(x) >> (y & 31));
  o[6] = __popc(x) + 100 * __clz(y);
  o[7] = static_cast<int>(__brev(static_cast<unsigned>(x)));
  o[8] = static_cast<int>(__byte_perm(static_cast<unsigned>(x), static_cast<unsigned>(y), 0x7531));
  o[9] = static_cast<int>(__funnelshift_l(static_cast<unsigned>(x), static_cast<unsigned>(y), static_cast<unsigned>(y)));
  o[10] = max(min(x, y), -1000) + abs(x) / 2;
  o[11] = static_cast<int>(static_cast<signed char>(x)) + ((x >> 7) & 0x3f);
}
