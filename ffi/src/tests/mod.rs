//! Tests of the C ABI, calling the `extern "C"` functions exactly as C does.
//! (They live in the crate because it builds no rlib for integration tests.)

mod api;
mod errors;
mod footprints;
mod header;
mod limits;
mod misuse;
mod program;
mod reduce;
mod shaders;
mod spirv_cpu;
mod subrange;
mod tiles;
