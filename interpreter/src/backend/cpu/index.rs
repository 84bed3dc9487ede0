//! CPU indexing along one dim through an i64 index: the gather behind
//! `index_select` and `gather` (strided reads, split across threads like
//! every map) and the scatter-add behind `index_add` and `scatter_add`
//! (one sequential pass in logical order, so sums are deterministic). Index
//! values are checked before anything is read or written.

use super::element::{cast, with_storage, Element};
use super::elementwise::map_strided;
use super::CpuStorage;
use crate::core::error::{Error, Result};
use crate::core::index::Along;
use crate::core::strided::{offsets, Merged};
use crate::core::Layout;
use rayon::prelude::*;

fn ids_of<'a>(op: &'static str, s: &'a CpuStorage) -> Result<&'a [i64]> {
    i64::slice(s).ok_or_else(|| Error::invalid(op, "internal: the index must be i64"))
}

/// Fails on the first index `li` reads that lies outside `0..along.size()`.
fn check(ids: &[i64], li: &Layout, a: &Along) -> Result<()> {
    if li.numel() == 0 {
        return Ok(());
    }
    // each index element once: broadcast dims dropped
    let (shape, strides): (Vec<usize>, Vec<usize>) = li
        .shape()
        .iter()
        .zip(li.strides())
        .filter(|(_, &s)| s != 0)
        .map(|(&d, &s)| (d, s))
        .unzip();
    let size = a.size() as i64;
    for o in offsets(&shape, &strides, li.offset()) {
        let k = *ids
            .get(o)
            .ok_or_else(|| Error::invalid(a.op, "internal: index layout outside its storage"))?;
        if k < 0 || k >= size {
            return Err(Error::IndexOutOfRange {
                op: a.op,
                index: k,
                dim: a.dim,
                size: a.size(),
                shape: a.shape.clone(),
            });
        }
    }
    Ok(())
}

/// `x[lx(i) + idx[li(i)] * stride]` for every element of `lx`'s shape; dense.
pub(crate) fn gather(
    x: &CpuStorage,
    lx: &Layout,
    a: &Along,
    idx: &CpuStorage,
    li: &Layout,
) -> Result<CpuStorage> {
    let ids = ids_of(a.op, idx)?;
    check(ids, li, a)?;
    let stride = a.stride;
    Ok(with_storage!(x, v: T => {
        let out = map_strided(lx.shape(), [lx, li], |[xo, io]| v[xo + ids[io] as usize * stride]);
        T::into_storage(out)
    }))
}

/// Elements of a scatter-add below which it runs on one thread.
const PAR_SCATTER: usize = 1 << 16;

/// The destination elements of one index of the outermost dim when the
/// scatter-add's writes for different indices of it fall in disjoint,
/// consecutive blocks of that size (as for the planes of a col2im), so the
/// blocks can be summed into in parallel; `None` otherwise.
fn disjoint_outer(ld: &Layout, a: &Along, dst_len: usize) -> Option<usize> {
    let (shape, strides) = (ld.shape(), ld.strides());
    if shape.len() < 2 || shape[0] < 2 || ld.numel() < PAR_SCATTER {
        return None;
    }
    let step = strides[0];
    // the furthest element one outer index reaches, past its block start
    let reach = shape[1..]
        .iter()
        .zip(&strides[1..])
        .map(|(&n, &s)| (n - 1) * s)
        .sum::<usize>()
        + (a.size().max(1) - 1) * a.stride;
    (step > reach && ld.offset() + step * shape[0] <= dst_len).then_some(step)
}

/// `dst[ld(i) + idx[li(i)] * stride] += src[ls(i)]` for every element of
/// `ls`'s shape, in logical order; `dst` holds the accumulator dtype (f32,
/// f64, i32 or i64; integer sums wrap).
pub(crate) fn scatter_add(
    dst: &mut CpuStorage,
    ld: &Layout,
    a: &Along,
    idx: &CpuStorage,
    li: &Layout,
    src: &CpuStorage,
    ls: &Layout,
) -> Result<()> {
    let ids = ids_of(a.op, idx)?;
    check(ids, li, a)?;
    let shape = ls.shape();
    if shape.contains(&0) {
        return Ok(());
    }
    let stride = a.stride;
    let split = disjoint_outer(ld, a, dst.len());
    macro_rules! run {
        ($d:expr, $A:ty, $add:expr) => {{
            let d: &mut [$A] = $d;
            with_storage!(src, sv: S => {
                // every element of `m` from `starts`, into `out` (addressed from its start)
                let rows = |out: &mut [$A], m: &Merged<3>, starts: [usize; 3]| {
                    let (n, [sd, si, ss]) = (m.row_len(), m.row_strides());
                    m.for_each_row(starts, 0, m.rows(), |_, [bd, bi, bs]| {
                        for j in 0..n {
                            let o = bd + j * sd + ids[bi + j * si] as usize * stride;
                            out[o] = $add(out[o], cast::<S, $A>(sv[bs + j * ss]));
                        }
                    })
                };
                match split {
                    Some(step) => {
                        // each outer index writes only its own `step` elements: in parallel
                        let m = Merged::<3>::new(&shape[1..], [&ld.strides()[1..], &li.strides()[1..], &ls.strides()[1..]]);
                        let (i0, s0) = (li.offset(), ls.offset());
                        let (istep, sstep) = (li.strides()[0], ls.strides()[0]);
                        d[ld.offset()..]
                            .par_chunks_mut(step)
                            .take(shape[0])
                            .enumerate()
                            .for_each(|(k, out)| rows(out, &m, [0, i0 + k * istep, s0 + k * sstep]));
                    }
                    None => {
                        let m = Merged::<3>::new(shape, [ld.strides(), li.strides(), ls.strides()]);
                        rows(d, &m, [ld.offset(), li.offset(), ls.offset()]);
                    }
                }
            });
            Ok(())
        }};
    }
    match dst {
        CpuStorage::F32(d) => run!(d, f32, |x: f32, y: f32| x + y),
        CpuStorage::F64(d) => run!(d, f64, |x: f64, y: f64| x + y),
        CpuStorage::I32(d) => run!(d, i32, i32::wrapping_add),
        CpuStorage::I64(d) => run!(d, i64, i64::wrapping_add),
        other => Err(Error::invalid(
            a.op,
            format!("internal: no {} accumulator for scatter-add", other.dtype()),
        )),
    }
}
