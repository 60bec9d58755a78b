//! C ABI of coexec (filled in by the C ABI work).
