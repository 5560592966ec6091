; Hand-written kernel for ptxopt: each thread counts the set bits of in[i] with a
; data-dependent loop (v &= v - 1), and the block sums the counts through shared
; memory with barriers. counts[i] = popcount(in[i]); sums[blockIdx.x] = block total.
; Block size must be a power of two no larger than 256.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@scratch = internal addrspace(3) global [256 x i32] undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()

define void @block_bitcount(i32 addrspace(1)* noalias readonly %in, i32 addrspace(1)* noalias %counts,
                            i32 addrspace(1)* noalias %sums, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %load, label %count.done

load:
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds i32, i32 addrspace(1)* %in, i64 %idx
  %v0 = load i32, i32 addrspace(1)* %p, align 4
  br label %count.head

count.head:
  %v = phi i32 [ %v0, %load ], [ %v.next, %count.body ]
  %c = phi i32 [ 0, %load ], [ %c.next, %count.body ]
  %zero = icmp eq i32 %v, 0
  br i1 %zero, label %count.store, label %count.body

count.body:
  %vm1 = add i32 %v, -1
  %v.next = and i32 %v, %vm1
  %c.next = add i32 %c, 1
  br label %count.head

count.store:
  %pc = getelementptr inbounds i32, i32 addrspace(1)* %counts, i64 %idx
  store i32 %c, i32 addrspace(1)* %pc, align 4
  br label %count.done

count.done:
  %mine = phi i32 [ 0, %entry ], [ %c, %count.store ]
  %tid64 = zext i32 %tid to i64
  %slot = getelementptr inbounds [256 x i32], [256 x i32] addrspace(3)* @scratch, i64 0, i64 %tid64
  store i32 %mine, i32 addrspace(3)* %slot, align 4
  call void @llvm.nvvm.barrier0()
  %half0 = lshr i32 %ntid, 1
  br label %red.head

red.head:
  %s = phi i32 [ %half0, %count.done ], [ %s.next, %red.latch ]
  %go = icmp ugt i32 %s, 0
  br i1 %go, label %red.body, label %red.done

red.body:
  %active = icmp ult i32 %tid, %s
  br i1 %active, label %red.add, label %red.latch

red.add:
  %other = add i32 %tid, %s
  %other64 = zext i32 %other to i64
  %po = getelementptr inbounds [256 x i32], [256 x i32] addrspace(3)* @scratch, i64 0, i64 %other64
  %vo = load i32, i32 addrspace(3)* %po, align 4
  %vs = load i32, i32 addrspace(3)* %slot, align 4
  %sum = add i32 %vs, %vo
  store i32 %sum, i32 addrspace(3)* %slot, align 4
  br label %red.latch

red.latch:
  call void @llvm.nvvm.barrier0()
  %s.next = lshr i32 %s, 1
  br label %red.head

red.done:
  %t0 = icmp eq i32 %tid, 0
  br i1 %t0, label %write, label %exit

write:
  %first = getelementptr inbounds [256 x i32], [256 x i32] addrspace(3)* @scratch, i64 0, i64 0
  %total = load i32, i32 addrspace(3)* %first, align 4
  %ctaid64 = zext i32 %ctaid to i64
  %ps = getelementptr inbounds i32, i32 addrspace(1)* %sums, i64 %ctaid64
  store i32 %total, i32 addrspace(1)* %ps, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32)* @block_bitcount, !"kernel", i32 1}
