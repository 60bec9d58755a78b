// coexec_reduce.glsl: work-group reductions for coexec reduction outputs
// (Rust: `Reduction`, `Args::reduce`; C: `coexec_args_reduce`).
//
// Runtime-compiled GLSL (`Engine::kernel_glsl`, `coexec_kernel_glsl`) gets
// this file for `#include "coexec_reduce.glsl"`; ahead-of-time builds add
// its directory to the include path (glslc -I engine/shaders).
// Include it after the `layout(local_size_x = ...) in;` declaration.
//
// The contract (1-D index spaces): the engine binds a reduction as a buffer
// of partials with one slot of WIDTH elements per work-group. Every
// work-group of a package WRITES its whole slot (never accumulates into
// it), at coexec_slot(WIDTH), with the combine of its invocations'
// contributions; an invocation past the end of the index space contributes
// the identity. Declare the buffer `writeonly`, so that a package given
// back after a GPU fault may run again elsewhere. The engine combines the
// slots in index order on the host.
//
// COEXEC_DEFINE_REDUCE(NAME, T, OP) defines `T NAME(T v)`: the combine,
// with OP, of `v` over the invocations of the work-group, returned to every
// invocation. Every invocation must call it (it has barriers). The order is
// canonical (a pairwise tree, the one of Rust's `coexec::reduce::tree`), so
// a CPU closure that combines a work-group's items with `tree` gets
// bit-identical results (for deterministic reductions on both devices).
//
//   layout(local_size_x = 256) in;
//   #include "coexec_reduce.glsl"
//   COEXEC_DEFINE_REDUCE(group_sum, float, COEXEC_SUM)
//   layout(std430, binding = 2) writeonly buffer P { float partials[]; };
//   void main() {
//       uint i = gl_GlobalInvocationID.x;
//       float s = group_sum(i < n ? x[i] * y[i] : 0.0);
//       if (gl_LocalInvocationIndex == 0u) partials[coexec_slot(1u)] = s;
//   }
//
// For an array slot (a histogram), privatize in shared memory and write the
// WIDTH elements of the slot from the work-group's invocations.
#ifndef COEXEC_REDUCE_GLSL
#define COEXEC_REDUCE_GLSL

// Invocations per work-group.
#define COEXEC_GROUP_SIZE (gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z)

// The built-in combines (the same as `ReduceOp`).
#define COEXEC_SUM(a, b) ((a) + (b))
#define COEXEC_MIN(a, b) min((a), (b))
#define COEXEC_MAX(a, b) max((a), (b))

// Index of the first element of this work-group's slot, for slots of
// `width` elements.
uint coexec_slot(uint width) {
    return gl_WorkGroupID.x * width;
}

#define COEXEC_DEFINE_REDUCE(NAME, T, OP)                                    \
    shared T NAME##_scratch[COEXEC_GROUP_SIZE];                              \
    T NAME(T v) {                                                            \
        uint i = gl_LocalInvocationIndex;                                    \
        uint n = COEXEC_GROUP_SIZE;                                          \
        NAME##_scratch[i] = v;                                               \
        barrier();                                                           \
        uint p = 1u;                                                         \
        while (p < n) p <<= 1u;                                              \
        for (uint s = p >> 1u; s > 0u; s >>= 1u) {                           \
            if (i < s && i + s < n)                                          \
                NAME##_scratch[i] = OP(NAME##_scratch[i], NAME##_scratch[i + s]); \
            barrier();                                                       \
        }                                                                    \
        T r = NAME##_scratch[0];                                             \
        barrier();                                                           \
        return r;                                                            \
    }

#endif
