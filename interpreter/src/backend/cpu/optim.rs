//! CPU optimizer steps: one loop over a dense parameter and its state, in
//! place, with the per-element formulas shared with the GPU kernels
//! (`kiln_kernels::optim`), computed in f32 (f64 for f64 parameters) and split
//! across threads for large parameters.

use super::element::Element;
use super::{CpuStorage, PAR_THRESHOLD};
use crate::core::error::{Error, Result};
use half::{bf16, f16};
use kiln_kernels::optim::{Adam, Real, Sgd};
use kiln_kernels::params::{AdamParams, SgdParams};
use rayon::prelude::*;

/// Elements per parallel chunk.
const CHUNK: usize = 1 << 14;

fn internal(op: &'static str) -> Error {
    Error::invalid(op, "internal: optimizer operands of unexpected dtype or size")
}

/// `n` elements of `s` from `offset` as `T`s.
fn part<'a, T: Element>(op: &'static str, s: &'a CpuStorage, offset: usize, n: usize) -> Result<&'a [T]> {
    T::slice(s)
        .and_then(|v| v.get(offset..offset + n))
        .ok_or_else(|| internal(op))
}

fn part_mut<'a, T: Element>(
    op: &'static str,
    s: &'a mut CpuStorage,
    offset: usize,
    n: usize,
) -> Result<&'a mut [T]> {
    T::slice_mut(s)
        .and_then(|v| v.get_mut(offset..offset + n))
        .ok_or_else(|| internal(op))
}

/// A parameter element in the compute type (exact: the compute type is at least as wide).
#[inline(always)]
fn up<T: Element, R: Element>(x: T) -> R {
    R::from_f64(x.to_f64())
}

/// A computed value rounded once to the parameter's type.
#[inline(always)]
fn down<R: Element, T: Element>(x: R) -> T {
    T::from_f64(x.to_f64())
}

fn sgd_loop<T: Element, R: Element + Real>(p: &mut [T], g: &[T], buf: Option<&mut [R]>, o: Sgd<R>) {
    let zero = R::from_f64(0.0);
    match buf {
        Some(b) => {
            let body = |(p, (g, b)): (&mut [T], (&[T], &mut [R]))| {
                for ((p, g), b) in p.iter_mut().zip(g).zip(b.iter_mut()) {
                    let (np, nb) = o.step(up(*p), up(*g), *b);
                    *p = down(np);
                    *b = nb;
                }
            };
            if p.len() >= PAR_THRESHOLD {
                p.par_chunks_mut(CHUNK)
                    .zip(g.par_chunks(CHUNK).zip(b.par_chunks_mut(CHUNK)))
                    .for_each(body);
            } else {
                body((p, (g, b)));
            }
        }
        None => {
            let body = |(p, g): (&mut [T], &[T])| {
                for (p, g) in p.iter_mut().zip(g) {
                    *p = down(o.step(up(*p), up(*g), zero).0);
                }
            };
            if p.len() >= PAR_THRESHOLD {
                p.par_chunks_mut(CHUNK).zip(g.par_chunks(CHUNK)).for_each(body);
            } else {
                body((p, g));
            }
        }
    }
}

/// One parallel chunk of an Adam step: parameter and gradient, then the two moments.
type AdamChunk<'a, T, R> = ((&'a mut [T], &'a [T]), (&'a mut [R], &'a mut [R]));

fn adam_loop<T: Element, R: Element + Real>(p: &mut [T], g: &[T], m: &mut [R], v: &mut [R], o: Adam<R>) {
    let body = |((p, g), (m, v)): AdamChunk<'_, T, R>| {
        for (((p, g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
            let (np, nm, nv) = o.step(up(*p), up(*g), *m, *v);
            *p = down(np);
            *m = nm;
            *v = nv;
        }
    };
    if p.len() >= PAR_THRESHOLD {
        p.par_chunks_mut(CHUNK)
            .zip(g.par_chunks(CHUNK))
            .zip(m.par_chunks_mut(CHUNK).zip(v.par_chunks_mut(CHUNK)))
            .for_each(body);
    } else {
        body(((p, g), (m, v)));
    }
}

/// Calls `$body` with `$T` the parameter's element type and `$R` its compute
/// (and state) type.
macro_rules! with_param_type {
    ($dtype:expr, $op:expr, $T:ident, $R:ident => $body:expr) => {
        match $dtype {
            crate::core::DType::F32 => {
                type $T = f32;
                type $R = f32;
                $body
            }
            crate::core::DType::F64 => {
                type $T = f64;
                type $R = f64;
                $body
            }
            crate::core::DType::F16 => {
                type $T = f16;
                type $R = f32;
                $body
            }
            crate::core::DType::BF16 => {
                type $T = bf16;
                type $R = f32;
                $body
            }
            other => return Err(Error::dtype($op, other)),
        }
    };
}

/// One SGD step over `n` elements of parameter `p` (from `po`), gradient `g`
/// (from `go`) and, with momentum, the buffer `buf` (from its offset).
pub(crate) fn sgd_step(
    p: (&mut CpuStorage, usize),
    g: (&CpuStorage, usize),
    buf: Option<(&mut CpuStorage, usize)>,
    n: usize,
    h: &SgdParams,
) -> Result<()> {
    const OP: &str = "sgd_step_";
    let dtype = p.0.dtype();
    with_param_type!(dtype, OP, T, R => {
        let o = Sgd::<R>::new(h);
        let pv = part_mut::<T>(OP, p.0, p.1, n)?;
        let gv = part::<T>(OP, g.0, g.1, n)?;
        let bv = match buf {
            Some((b, bo)) if o.uses_buffer() => Some(part_mut::<R>(OP, b, bo, n)?),
            _ => None,
        };
        sgd_loop(pv, gv, bv, o);
    });
    Ok(())
}

/// One Adam / AdamW step over `n` elements of parameter `p`, gradient `g` and
/// moments `m`, `v` (each with its offset).
pub(crate) fn adam_step(
    p: (&mut CpuStorage, usize),
    g: (&CpuStorage, usize),
    m: (&mut CpuStorage, usize),
    v: (&mut CpuStorage, usize),
    n: usize,
    h: &AdamParams,
) -> Result<()> {
    const OP: &str = "adam_step_";
    let dtype = p.0.dtype();
    with_param_type!(dtype, OP, T, R => {
        let pv = part_mut::<T>(OP, p.0, p.1, n)?;
        let gv = part::<T>(OP, g.0, g.1, n)?;
        let mv = part_mut::<R>(OP, m.0, m.1, n)?;
        let vv = part_mut::<R>(OP, v.0, v.1, n)?;
        adam_loop(pv, gv, mv, vv, Adam::<R>::new(h));
    });
    Ok(())
}
