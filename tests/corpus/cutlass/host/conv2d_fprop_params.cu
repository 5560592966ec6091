// Builds the kernel Params of CUTLASS example 16 (Ampere tensor-op implicit-GEMM 2-D
// convolution forward, NHWC half inputs, float output) the way the example's host code
// does, and prints the launch shape and the Params bytes.  Build (see
// docs/running-library-kernels.md): nvcc -std=c++17 -arch=sm_80 --expt-relaxed-constexpr
//   -I$CUTLASS_DIR/include -I$CUTLASS_DIR/tools/util/include -I$CUTLASS_DIR/examples/common
//   -I$CUTLASS_DIR/examples/16_ampere_tensorop_conv2dfprop conv2d_fprop_params.cu -o conv2d_fprop_params
// Run: ./conv2d_fprop_params N H W C K R S pad alpha beta (pointers are placeholders 0xA0A0A0A000 ...)
#define main example_main
#include "ampere_tensorop_conv2dfprop.cu"
#undef main
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  int N = atoi(argv[1]), H = atoi(argv[2]), W = atoi(argv[3]), C = atoi(argv[4]);
  int K = atoi(argv[5]), R = atoi(argv[6]), S = atoi(argv[7]), pad = atoi(argv[8]);
  float alpha = atof(argv[9]), beta = atof(argv[10]);
  int P = H + 2 * pad - R + 1, Q = W + 2 * pad - S + 1;
  cutlass::conv::Conv2dProblemSize problem(
      {N, H, W, C}, {K, R, S, C}, {pad, pad, pad, pad}, {1, 1}, {1, 1}, {N, P, Q, K},
      cutlass::conv::Mode::kCrossCorrelation, 1);
  using Layout = cutlass::layout::TensorNHWC;
  cutlass::TensorRef<ElementInputA, Layout> a((ElementInputA *)0xA0A0A0A000ull,
                                             Layout::packed({N, H, W, C}));
  cutlass::TensorRef<ElementInputB, Layout> b((ElementInputB *)0xB0B0B0B000ull,
                                             Layout::packed({K, R, S, C}));
  cutlass::TensorRef<ElementOutput, Layout> c((ElementOutput *)0xC0C0C0C000ull,
                                             Layout::packed({N, P, Q, K}));
  cutlass::TensorRef<ElementOutput, Layout> d((ElementOutput *)0xD0D0D0D000ull,
                                             Layout::packed({N, P, Q, K}));
  typename ImplicitGemm::Arguments args{problem, a, b, c, d, {alpha, beta}};
  if (ImplicitGemm::can_implement(args) != cutlass::Status::kSuccess) {
    fprintf(stderr, "cannot implement\n");
    return 1;
  }
  using K_ = ImplicitGemm::UnderlyingKernel;
  typename K_::Params p(args, nullptr);
  SwizzleThreadBlock sw;
  dim3 grid = sw.get_grid_shape(p.grid_tiled_shape);
  printf("%d %d %d %d %zu %zu %d %d\n", grid.x, grid.y, grid.z, K_::kThreadCount,
         sizeof(typename K_::SharedStorage), sizeof(p), P, Q);
  unsigned char *bytes = (unsigned char *)&p;
  for (size_t i = 0; i < sizeof(p); i++) printf("%02x", bytes[i]);
  printf("\n");
  return 0;
}
