//! Reduction outputs for C (`COEXEC_ACCESS_REDUCE_*`): the engine's
//! [`Reduction`] of the C element type, made for the run, whose value is
//! copied into the argument's buffer once the run succeeded.

use super::invalid;
use super::status::FfiResult;
use super::types::coexec_access::*;
use super::types::coexec_elem_type::*;
use super::types::COEXEC_REDUCE_DETERMINISTIC;
use ::coexec_engine::{Args, ReduceOp, Reduction};

/// What a C reduction argument asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spec {
    op: ReduceOp,
    /// A `coexec_elem_type` value.
    ty: u32,
    deterministic: bool,
    /// Elements of the result.
    pub(crate) width: usize,
}

impl Spec {
    /// The reduction of `access` (`None`: not a reduction: its low byte is
    /// not a `COEXEC_ACCESS_REDUCE_*`) with its element type and flags, and
    /// `per_item` (0 means 1), checked against the buffer's `elem_size`.
    pub(crate) fn of(access: u32, per_item: u64, elem_size: usize) -> FfiResult<Option<Spec>> {
        let op = match access & 0xff {
            a if a == COEXEC_ACCESS_REDUCE_SUM as u32 => ReduceOp::Sum,
            a if a == COEXEC_ACCESS_REDUCE_MIN as u32 => ReduceOp::Min,
            a if a == COEXEC_ACCESS_REDUCE_MAX as u32 => ReduceOp::Max,
            _ => return Ok(None),
        };
        if access & !(COEXEC_REDUCE_DETERMINISTIC | 0xffff) != 0 {
            return Err(invalid(format!("unknown bits in access ({access:#x})")));
        }
        let ty = access & 0xff00;
        let size = match ty {
            t if t == COEXEC_ELEM_F32 as u32 || t == COEXEC_ELEM_I32 as u32 => 4,
            t if t == COEXEC_ELEM_U32 as u32 => 4,
            t if t == COEXEC_ELEM_F64 as u32 || t == COEXEC_ELEM_U64 as u32 => 8,
            t => return Err(invalid(format!("unknown coexec_elem_type {t:#x}"))),
        };
        if size != elem_size {
            return Err(invalid(format!(
                "the reduction's element type takes {size} bytes but the buffer's elements are {elem_size}"
            )));
        }
        let width = usize::try_from(per_item.max(1))
            .map_err(|_| invalid(format!("per_item {per_item} is too large")))?;
        Ok(Some(Spec {
            op,
            ty,
            deterministic: access & COEXEC_REDUCE_DETERMINISTIC != 0,
            width,
        }))
    }
}

/// A reduction of one of the C element types.
pub(crate) enum AnyReduction {
    F32(Reduction<f32>),
    F64(Reduction<f64>),
    I32(Reduction<i32>),
    U32(Reduction<u32>),
    U64(Reduction<u64>),
}

impl AnyReduction {
    /// A fresh reduction for `spec`.
    pub(crate) fn new(spec: &Spec) -> Self {
        let (op, w, d) = (spec.op, spec.width, spec.deterministic);
        match spec.ty {
            t if t == COEXEC_ELEM_F32 as u32 => Self::F32(Reduction::new(op, w).deterministic(d)),
            t if t == COEXEC_ELEM_F64 as u32 => Self::F64(Reduction::new(op, w).deterministic(d)),
            t if t == COEXEC_ELEM_I32 as u32 => Self::I32(Reduction::new(op, w).deterministic(d)),
            t if t == COEXEC_ELEM_U32 as u32 => Self::U32(Reduction::new(op, w).deterministic(d)),
            _ => Self::U64(Reduction::new(op, w).deterministic(d)),
        }
    }

    /// `args` with this reduction added.
    pub(crate) fn add<'a>(&'a mut self, args: Args<'a>) -> Args<'a> {
        match self {
            Self::F32(r) => args.reduce(r),
            Self::F64(r) => args.reduce(r),
            Self::I32(r) => args.reduce(r),
            Self::U32(r) => args.reduce(r),
            Self::U64(r) => args.reduce(r),
        }
    }

    /// The result, as bytes.
    pub(crate) fn value_bytes(&self) -> &[u8] {
        match self {
            Self::F32(r) => ::coexec_engine::bytemuck::cast_slice(r.value()),
            Self::F64(r) => ::coexec_engine::bytemuck::cast_slice(r.value()),
            Self::I32(r) => ::coexec_engine::bytemuck::cast_slice(r.value()),
            Self::U32(r) => ::coexec_engine::bytemuck::cast_slice(r.value()),
            Self::U64(r) => ::coexec_engine::bytemuck::cast_slice(r.value()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_checked() {
        let sum = COEXEC_ACCESS_REDUCE_SUM as u32;
        assert_eq!(Spec::of(1, 1, 4).unwrap(), None);
        let det = COEXEC_ELEM_U32 as u32 | COEXEC_REDUCE_DETERMINISTIC;
        let s = Spec::of(sum | det, 0, 4).unwrap().unwrap();
        assert!(s.deterministic && s.width == 1);
        assert!(Spec::of(sum | COEXEC_ELEM_F64 as u32, 1, 4).is_err());
        assert!(Spec::of(sum | 0x900, 1, 4).is_err());
        assert!(Spec::of(sum | 0x100000, 1, 4).is_err());
        let u64s = Spec::of(sum | COEXEC_ELEM_U64 as u32, 3, 8)
            .unwrap()
            .unwrap();
        let r = AnyReduction::new(&u64s);
        assert_eq!(r.value_bytes(), &[0u8; 24]);
    }
}
