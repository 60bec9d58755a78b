#version 450
// CSR sparse matrix-vector product y = A x, one row per work-item. Row
// lengths follow a power law (most rows a few entries, a few rows thousands),
// so the cost per item is very irregular and x is gathered at random columns.
// Each row is summed in storage order (as the CPU implementation).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer RowPtr { uint row_ptr[]; };  // n + 1
layout(std430, binding = 1) readonly buffer Cols { uint cols[]; };       // nnz
layout(std430, binding = 2) readonly buffer Vals { float vals[]; };      // nnz
layout(std430, binding = 3) readonly buffer X { float x[]; };            // n
layout(std430, binding = 4) writeonly buffer Y { float y[]; };           // n
layout(push_constant) uniform Params { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint end = row_ptr[i + 1u];
    float sum = 0.0;
    for (uint k = row_ptr[i]; k < end; k++) {
        sum += vals[k] * x[cols[k]];
    }
    y[i] = sum;
}
