#include "textflag.h"

// func prefetchPairs(slots *pairSlot, hs []uint64, mask uint64)
TEXT ·prefetchPairs(SB), NOSPLIT, $0-40
	MOVQ slots+0(FP), DI
	MOVQ hs_base+8(FP), SI
	MOVQ hs_len+16(FP), CX
	MOVQ mask+32(FP), DX
	TESTQ CX, CX
	JEQ  done
loop:
	MOVQ (SI), AX
	ANDQ DX, AX
	SHLQ $4, AX
	PREFETCHT0 (DI)(AX*1)
	ADDQ $8, SI
	DECQ CX
	JNE  loop
done:
	RET

// func prefetchLines(p unsafe.Pointer, lines int)
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ lines+8(FP), CX
	TESTQ CX, CX
	JLE  done
loop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	DECQ CX
	JNE  loop
done:
	RET
