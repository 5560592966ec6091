// Builds the Params of CUTLASS example 41's forward attention kernel
// (AttentionKernel<half_t, Sm80, aligned, 64 queries, 64 keys, kMaxK 64>) the way the
// example's host code fills them (BMHK tensors, no causal mask), and prints the launch
// shape and the Params bytes.  Build (see docs/running-library-kernels.md):
//   nvcc -std=c++17 -arch=sm_80 --expt-relaxed-constexpr -I$CUTLASS_DIR/include
//   -I$CUTLASS_DIR/tools/util/include -I$CUTLASS_DIR/examples/common
//   -I$CUTLASS_DIR/examples/41_fused_multi_head_attention fmha_params.cu -o fmha_params
// Run: ./fmha_params batches heads seq head_dim (pointers are placeholders 0xA0A0A0A000 ...)
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include "kernel_forward.h"

using Attention = AttentionKernel<cutlass::half_t, cutlass::arch::Sm80, true, 64, 64, 64,
                                  false, false>;

int main(int argc, char **argv) {
  int B = atoi(argv[1]), H = atoi(argv[2]), S = atoi(argv[3]), D = atoi(argv[4]);
  typename Attention::Params p;
  p.query_ptr = (cutlass::half_t *)0xA0A0A0A000ull;
  p.key_ptr = (cutlass::half_t *)0xB0B0B0B000ull;
  p.value_ptr = (cutlass::half_t *)0xC0C0C0C000ull;
  p.logsumexp_ptr = nullptr;
  p.output_accum_ptr = nullptr;
  p.output_ptr = (cutlass::half_t *)0xD0D0D0D000ull;
  p.scale = 1.0f / std::sqrt(float(D));
  p.num_heads = H;
  p.num_batches = B;
  p.head_dim = D;
  p.head_dim_value = D;
  p.num_queries = S;
  p.num_keys = S;
  p.q_strideH = D;
  p.k_strideH = D;
  p.v_strideH = D;
  p.q_strideM = H * D;
  p.k_strideM = H * D;
  p.v_strideM = H * D;
  p.q_strideB = p.q_strideM * S;
  p.k_strideB = p.k_strideM * S;
  p.v_strideB = p.v_strideM * S;
  p.o_strideM = p.head_dim_value * p.num_heads;
  dim3 g = p.getBlocksGrid(), t = p.getThreadsGrid();
  printf("%d %d %d %d %d %d %zu %zu %d\n", g.x, g.y, g.z, t.x, t.y, t.z,
         sizeof(typename Attention::SharedStorage), sizeof(p),
         int(Attention::kNeedsOutputAccumulatorBuffer));
  unsigned char *b = (unsigned char *)&p;
  for (size_t i = 0; i < sizeof(p); i++) printf("%02x", b[i]);
  printf("\n");
  return 0;
}
