// Builds the kernel Params of CUTLASS example 14 (Ampere TF32 tensor-op GEMM) the way
// the example's host code does, and prints the launch shape and the Params bytes.
// Build (see docs/running-library-kernels.md): nvcc -std=c++17 -arch=sm_80
//   --expt-relaxed-constexpr -I$CUTLASS_DIR/include -I$CUTLASS_DIR/tools/util/include
//   -I$CUTLASS_DIR/examples/common -I$CUTLASS_DIR/examples/14_ampere_tf32_tensorop_gemm
//   tf32_gemm_params.cu -o tf32_gemm_params
// Run: ./tf32_gemm_params M N K alpha beta (pointers are placeholders 0xA0A0A0A000 ...)
#define main example_main
#include "ampere_tf32_tensorop_gemm.cu"
#undef main
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  float alpha = atof(argv[4]), beta = atof(argv[5]);
  cutlass::gemm::GemmCoord problem(M, N, K);
  using GK = Gemm::GemmKernel;
  float *A = (float *)0xA0A0A0A000ull, *B = (float *)0xB0B0B0B000ull;
  float *C = (float *)0xC0C0C0C000ull, *D = (float *)0xD0D0D0D000ull;
  typename Gemm::Arguments args{problem, {A, K}, {B, K}, {C, N}, {D, N}, {alpha, beta}, 1};
  SwizzleThreadBlock sw;
  cutlass::gemm::GemmCoord grid_shape = sw.get_tiled_shape(
      problem, {ShapeMMAThreadBlock::kM, ShapeMMAThreadBlock::kN, ShapeMMAThreadBlock::kK}, 1);
  typename GK::Params p(problem, grid_shape, args.ref_A.non_const_ref(), args.ref_B.non_const_ref(),
                        args.ref_C.non_const_ref(), args.ref_D, args.epilogue, nullptr);
  dim3 grid = sw.get_grid_shape(grid_shape);
  printf("%d %d %d %d %zu %zu\n", grid.x, grid.y, grid.z, GK::kThreadCount,
         sizeof(typename GK::SharedStorage), sizeof(p));
  unsigned char *b = (unsigned char *)&p;
  for (size_t i = 0; i < sizeof(p); i++) printf("%02x", b[i]);
  printf("\n");
  return 0;
}
