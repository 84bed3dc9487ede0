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
    let m = Merged::<3>::new(shape, [ld.strides(), li.strides(), ls.strides()]);
    let (n, [sd, si, ss]) = (m.row_len(), m.row_strides());
    let starts = [ld.offset(), li.offset(), ls.offset()];
    let stride = a.stride;
    macro_rules! run {
        ($d:expr, $A:ty, $add:expr) => {{
            let d: &mut [$A] = $d;
            with_storage!(src, sv: S => {
                m.for_each_row(starts, 0, m.rows(), |_, [bd, bi, bs]| {
                    for j in 0..n {
                        let o = bd + j * sd + ids[bi + j * si] as usize * stride;
                        d[o] = $add(d[o], cast::<S, $A>(sv[bs + j * ss]));
                    }
                })
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
