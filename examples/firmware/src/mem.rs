//! Byte-at-a-time memory routines, replacing compiler-builtins' word-at-a-time ones.
//!
//! Rust code calls `memcpy`, `memmove`, `memset` and `memcmp` (as the ARM EABI's
//! `__aeabi_memcpy` & co.) for every copy, fill and slice comparison the compiler does not
//! expand inline. compiler-builtins' versions are built for speed: about 3.3 KiB of flash
//! (`memmove` alone 1.6 KiB), a fifth of this firmware's budget. These loops take about
//! 120 bytes. They are slower per byte, which does not matter here: the largest copies are
//! receive-buffer compactions of at most 1 KiB, a fraction of a millisecond at 12 MHz, while
//! 1 KiB takes 89 ms to arrive at 115200 baud.
//!
//! compiler-builtins defines its routines as weak symbols so that they can be replaced: these
//! strong definitions win at link time. Assembly, not Rust: a Rust loop that copies bytes may
//! be recognised by the optimiser as a `memcpy` and compiled into a call to itself.
//!
//! Thumb-1 instructions only (low registers, register-offset addressing), so that the same
//! routines serve the Cortex-M3 images and the Cortex-M0 one (`examples/firmware-m0`).

core::arch::global_asm!(
    r#"
    .syntax unified
    .thumb

    @ memmove(dst, src, n) and memcpy(dst, src, n); both return dst.
    .section .text.rpcwire_firmware_memmove,"ax",%progbits
    .p2align 1
    .global memmove
    .global __aeabi_memmove
    .global __aeabi_memmove4
    .global __aeabi_memmove8
    .global memcpy
    .global __aeabi_memcpy
    .global __aeabi_memcpy4
    .global __aeabi_memcpy8
    .thumb_func
memmove:
    .thumb_func
__aeabi_memmove:
    .thumb_func
__aeabi_memmove4:
    .thumb_func
__aeabi_memmove8:
    cmp     r0, r1
    bhi     2f                  @ dst above src: copy from the end
    .thumb_func
memcpy:
    .thumb_func
__aeabi_memcpy:
    .thumb_func
__aeabi_memcpy4:
    .thumb_func
__aeabi_memcpy8:
    push    {{r4, lr}}
    movs    r3, #0              @ index, upwards
1:  cmp     r3, r2
    beq     3f
    ldrb    r4, [r1, r3]
    strb    r4, [r0, r3]
    adds    r3, r3, #1
    b       1b
3:  pop     {{r4, pc}}
2:  subs    r2, r2, #1          @ index, downwards
    bcc     4f                  @ borrow: done
    ldrb    r3, [r1, r2]
    strb    r3, [r0, r2]
    b       2b
4:  bx      lr

    @ memset(dst, c, n) returns dst; __aeabi_memset(dst, n, c); __aeabi_memclr(dst, n).
    .section .text.rpcwire_firmware_memset,"ax",%progbits
    .p2align 1
    .global memset
    .global __aeabi_memset
    .global __aeabi_memset4
    .global __aeabi_memset8
    .global __aeabi_memclr
    .global __aeabi_memclr4
    .global __aeabi_memclr8
    .thumb_func
__aeabi_memclr:
    .thumb_func
__aeabi_memclr4:
    .thumb_func
__aeabi_memclr8:
    movs    r2, #0
    .thumb_func
__aeabi_memset:
    .thumb_func
__aeabi_memset4:
    .thumb_func
__aeabi_memset8:
    mov     r3, r1
    mov     r1, r2
    mov     r2, r3
    .thumb_func
memset:
    movs    r3, #0
1:  cmp     r3, r2
    beq     2f
    strb    r1, [r0, r3]
    adds    r3, r3, #1
    b       1b
2:  bx      lr

    @ memcmp(a, b, n) and bcmp(a, b, n): 0 when equal, else the difference of the first
    @ differing bytes.
    .section .text.rpcwire_firmware_memcmp,"ax",%progbits
    .p2align 1
    .global memcmp
    .global bcmp
    .thumb_func
memcmp:
    .thumb_func
bcmp:
    push    {{r4, r5, lr}}
    movs    r3, #0
1:  cmp     r3, r2
    beq     2f
    ldrb    r4, [r0, r3]
    ldrb    r5, [r1, r3]
    adds    r3, r3, #1
    subs    r4, r4, r5
    beq     1b
    mov     r0, r4
    pop     {{r4, r5, pc}}
2:  movs    r0, #0
    pop     {{r4, r5, pc}}
"#
);
