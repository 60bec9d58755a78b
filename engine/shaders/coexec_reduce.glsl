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

// Levels of the tree with a stride of at least this many invocations run
// without barriers in between: invocation i < COEXEC_SPLIT combines the
// elements of its own residue class (mod COEXEC_SPLIT), in the tree's order.
#define COEXEC_SPLIT 32u

#define COEXEC_DEFINE_REDUCE(NAME, T, OP)                                    \
    shared T NAME##_scratch[COEXEC_GROUP_SIZE];                              \
    T NAME(T v) {                                                            \
        uint i = gl_LocalInvocationIndex;                                    \
        uint n = COEXEC_GROUP_SIZE;                                          \
        NAME##_scratch[i] = v;                                               \
        barrier();                                                           \
        uint p = 1u;                                                         \
        while (p < n) p <<= 1u;                                              \
        uint w = min(p, COEXEC_SPLIT);                                       \
        if (i < w) {                                                         \
            for (uint s = p >> 1u; s >= w; s >>= 1u)                         \
                for (uint j = i; j < s; j += w)                              \
                    if (j + s < n)                                           \
                        NAME##_scratch[j] = OP(NAME##_scratch[j], NAME##_scratch[j + s]); \
        }                                                                    \
        barrier();                                                           \
        if (i == 0u) {                                                       \
            for (uint s = w >> 1u; s > 0u; s >>= 1u)                         \
                for (uint j = 0u; j < s; j++)                                \
                    if (j + s < n)                                           \
                        NAME##_scratch[j] = OP(NAME##_scratch[j], NAME##_scratch[j + s]); \
        }                                                                    \
        barrier();                                                           \
        T r = NAME##_scratch[0];                                             \
        barrier();                                                           \
        return r;                                                            \
    }

// COEXEC_DEFINE_REDUCE_SUBGROUP(NAME, T, SUBGROUP_OP, OP): the same
// combine with fewer barriers, through subgroup arithmetic (SUBGROUP_OP:
// subgroupAdd, subgroupMin or subgroupMax); its order is the device's, so
// it is not for deterministic reductions, and the result is valid in
// invocation 0 only. The shader needs
// `#extension GL_KHR_shader_subgroup_arithmetic : require` before it.
#define COEXEC_DEFINE_REDUCE_SUBGROUP(NAME, T, SUBGROUP_OP, OP)              \
    shared T NAME##_scratch[COEXEC_GROUP_SIZE];                              \
    T NAME(T v) {                                                            \
        T r = SUBGROUP_OP(v);                                                \
        if (subgroupElect()) NAME##_scratch[gl_SubgroupID] = r;              \
        barrier();                                                           \
        if (gl_LocalInvocationIndex == 0u)                                   \
            for (uint k = 1u; k < gl_NumSubgroups; k++)                      \
                r = OP(r, NAME##_scratch[k]);                                \
        barrier();                                                           \
        return r;                                                            \
    }

#endif
