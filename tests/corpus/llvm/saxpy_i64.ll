; Grid-stride saxpy with a 64-bit induction variable, written by hand for ptxopt.
;   for (i64 i = ctaid.x * ntid.x + tid.x; i < n; i += ntid.x * nctaid.x)
;       y[i] = fma(a, x[i], y[i])
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare float @llvm.fma.f32(float, float, float)

define void @saxpy_i64(float addrspace(1)* noalias readonly %x, float addrspace(1)* noalias %y,
                       float %a, i64 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %nctaid = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %tid64 = zext i32 %tid to i64
  %ntid64 = zext i32 %ntid to i64
  %ctaid64 = zext i32 %ctaid to i64
  %nctaid64 = zext i32 %nctaid to i64
  %base = mul i64 %ctaid64, %ntid64
  %start = add i64 %base, %tid64
  %stride = mul i64 %ntid64, %nctaid64
  %enter = icmp ult i64 %start, %n
  br i1 %enter, label %loop, label %exit

loop:
  %i = phi i64 [ %start, %entry ], [ %i.next, %loop ]
  %px = getelementptr inbounds float, float addrspace(1)* %x, i64 %i
  %py = getelementptr inbounds float, float addrspace(1)* %y, i64 %i
  %vx = load float, float addrspace(1)* %px, align 4
  %vy = load float, float addrspace(1)* %py, align 4
  %r = call float @llvm.fma.f32(float %a, float %vx, float %vy)
  store float %r, float addrspace(1)* %py, align 4
  %i.next = add i64 %i, %stride
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, float addrspace(1)*, float, i64)* @saxpy_i64, !"kernel", i32 1}
