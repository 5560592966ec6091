// Builds the kernel Params of CUTLASS example 55 (Hopper mixed-dtype GEMM, convert-only
// mode: fp8 e4m3 B converted to half in registers, half A, TMA + wgmma, warp-specialized
// cooperative schedule, 1x1x1 cluster) the way the example's host code does, with the
// TMA descriptors encoded by a cuTensorMapEncodeTiled of our own that writes the
// interpreter's tensor-map layout (ptxopt/sim/tma.py).  Prints the launch shape and the
// Params bytes.  Run: ./mixed_params M N K alpha beta (pointers are placeholders).
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1
#define main example_main
#include "55_hopper_mixed_dtype_gemm.cu"
#undef main
#include <cstdio>
#include <cstdlib>
#include <cstring>

// the interpreter's 128-byte tensor-map layout (ptxopt/sim/tma.py LAYOUT)
extern "C" CUresult cuTensorMapEncodeTiled(
    CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank, void *addr,
    const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
    const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
    CUtensorMapL2promotion, CUtensorMapFloatOOBfill fill) {
  unsigned char *b = reinterpret_cast<unsigned char *>(map);
  memset(b, 0, 128);
  uint64_t a = reinterpret_cast<uint64_t>(addr);
  uint32_t u[6] = {rank, uint32_t(dtype), uint32_t(sw), uint32_t(il), uint32_t(fill), 0x544D4150u};
  memcpy(b, &a, 8);
  memcpy(b + 8, u, 24);
  for (uint32_t i = 0; i < 5; i++) {
    uint32_t d = i < rank ? uint32_t(dims[i]) : 1, bx = i < rank ? box[i] : 1;
    uint32_t es = i < rank ? estrides[i] : 1;
    memcpy(b + 32 + 4 * i, &d, 4);
    memcpy(b + 88 + 4 * i, &bx, 4);
    memcpy(b + 108 + 4 * i, &es, 4);
  }
  for (uint32_t i = 0; i + 1 < rank && i < 4; i++) memcpy(b + 56 + 8 * i, &strides[i], 8);
  return CUDA_SUCCESS;
}

int main(int argc, char **argv) {
  int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]), L = 1;
  float alpha = atof(argv[4]), beta = atof(argv[5]);
  using Gemm = GemmConvertOnly;
  using GK = Gemm::GemmKernel;
  stride_A = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(M, K, L));
  stride_B = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(N, K, L));
  stride_C = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(N, M, L));
  stride_D = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(N, M, L));
  auto *A = (MmaType *)0xA0A0A0A000ull;
  auto *B = (QuantType *)0xB0B0B0B000ull;
  auto *C = (ElementC *)0xC0C0C0C000ull;
  auto *D = (ElementD *)0xD0D0D0D000ull;
  // as args_from_options: A and B swapped, problem (n, m, k, l)
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {N, M, K, L},
                                {B, stride_B, A, stride_A},
                                {{alpha, beta}, C, stride_C, D, stride_D}};
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = 2;
  if (GK::can_implement(args) == false) {
    fprintf(stderr, "cannot implement\n");
    return 1;
  }
  typename GK::Params p = GK::to_underlying_arguments(args, nullptr);
  dim3 grid = GK::get_grid_shape(p), block = GK::get_block_shape();
  printf("%d %d %d %d %d %d %d %zu\n", grid.x, grid.y, grid.z, block.x, block.y, block.z,
         int(GK::SharedStorageSize), sizeof(p));
  unsigned char *bytes = (unsigned char *)&p;
  for (size_t i = 0; i < sizeof(p); i++) printf("%02x", bytes[i]);
  printf("\n");
  return 0;
}
