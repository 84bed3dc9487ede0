//! CPU reductions over any set of dims of a strided tensor. Each output
//! element reduces one "lane" (the reduced dims, walked through their strides);
//! outputs are split across threads, and a reduction to a single value splits
//! its lane instead. Floats accumulate in f64, integers in i64.

use super::element::{cast, with_dtype, with_storage, Element};
use super::elementwise::map_strided;
use super::{CpuStorage, PAR_THRESHOLD};
use crate::core::control::{Stop, CHECK_EVERY};
use crate::core::error::Result;
use crate::core::op::ReduceOp;
use crate::core::strided::Merged;
use crate::core::Layout;
use rayon::prelude::*;

/// A finished lane, stored into the output dtype once per output element.
#[derive(Clone, Copy)]
enum Value<T> {
    F(f64),
    I(i64),
    B(bool),
    Same(T),
}

impl<T> Default for Value<T> {
    fn default() -> Self {
        Value::I(0)
    }
}

impl<T: Element> Value<T> {
    fn store<D: Element>(self) -> D {
        match self {
            Value::F(f) => D::from_f64(f),
            Value::I(i) => D::from_i64(i),
            Value::B(b) => D::from_i64(b as i64),
            Value::Same(x) => cast(x),
        }
    }
}

/// One reduction: a mergeable state per lane piece.
trait Reducer<T: Element>: Sync {
    type State: Copy + Send;
    fn init(&self) -> Self::State;
    fn push(&self, s: &mut Self::State, x: T, index: u64);
    /// Merges `b` (a later piece of the lane) into `a`.
    fn merge(&self, a: Self::State, b: Self::State) -> Self::State;
    fn finish(&self, s: Self::State) -> Value<T>;
}

struct SumF;
impl<T: Element> Reducer<T> for SumF {
    type State = f64;
    fn init(&self) -> f64 {
        0.0
    }
    fn push(&self, s: &mut f64, x: T, _: u64) {
        *s += x.to_f64();
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn finish(&self, s: f64) -> Value<T> {
        Value::F(s)
    }
}

struct SumI;
impl<T: Element> Reducer<T> for SumI {
    type State = i64;
    fn init(&self) -> i64 {
        0
    }
    fn push(&self, s: &mut i64, x: T, _: u64) {
        *s = s.wrapping_add(x.to_i64());
    }
    fn merge(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    fn finish(&self, s: i64) -> Value<T> {
        Value::I(s)
    }
}

struct ProdF;
impl<T: Element> Reducer<T> for ProdF {
    type State = f64;
    fn init(&self) -> f64 {
        1.0
    }
    fn push(&self, s: &mut f64, x: T, _: u64) {
        *s *= x.to_f64();
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a * b
    }
    fn finish(&self, s: f64) -> Value<T> {
        Value::F(s)
    }
}

struct ProdI;
impl<T: Element> Reducer<T> for ProdI {
    type State = i64;
    fn init(&self) -> i64 {
        1
    }
    fn push(&self, s: &mut i64, x: T, _: u64) {
        *s = s.wrapping_mul(x.to_i64());
    }
    fn merge(&self, a: i64, b: i64) -> i64 {
        a.wrapping_mul(b)
    }
    fn finish(&self, s: i64) -> Value<T> {
        Value::I(s)
    }
}

/// Welford's running moments; `finish` gives the mean, or the variance /
/// standard deviation with Bessel's `correction`.
struct Moments {
    what: MomentKind,
}
#[derive(Clone, Copy)]
enum MomentKind {
    Mean,
    Var(u32),
    Std(u32),
}
impl<T: Element> Reducer<T> for Moments {
    type State = (f64, f64, f64); // (n, mean, m2)
    fn init(&self) -> Self::State {
        (0.0, 0.0, 0.0)
    }
    fn push(&self, s: &mut Self::State, x: T, _: u64) {
        let x = x.to_f64();
        s.0 += 1.0;
        let d = x - s.1;
        s.1 += d / s.0;
        s.2 += d * (x - s.1);
    }
    fn merge(&self, a: Self::State, b: Self::State) -> Self::State {
        if a.0 == 0.0 {
            return b;
        }
        if b.0 == 0.0 {
            return a;
        }
        let n = a.0 + b.0;
        let d = b.1 - a.1;
        (n, a.1 + d * b.0 / n, a.2 + b.2 + d * d * a.0 * b.0 / n)
    }
    fn finish(&self, s: Self::State) -> Value<T> {
        let var = |c: u32| s.2 / (s.0 - c as f64).max(0.0);
        Value::F(match self.what {
            MomentKind::Mean if s.0 == 0.0 => f64::NAN,
            MomentKind::Mean => s.1,
            MomentKind::Var(c) => var(c),
            MomentKind::Std(c) => var(c).sqrt(),
        })
    }
}

/// Max/min and their first index; NaN wins and propagates, as in PyTorch.
struct Extreme {
    max: bool,
    index: bool,
}
impl<T: Element> Reducer<T> for Extreme {
    type State = Option<(T, u64)>;
    fn init(&self) -> Self::State {
        None
    }
    fn push(&self, s: &mut Self::State, x: T, i: u64) {
        let better = match s {
            None => true,
            Some((b, _)) => {
                #[allow(clippy::eq_op)]
                let (x_nan, b_nan) = (x != x, *b != *b);
                !b_nan && (x_nan || if self.max { x > *b } else { x < *b })
            }
        };
        if better {
            *s = Some((x, i));
        }
    }
    fn merge(&self, a: Self::State, b: Self::State) -> Self::State {
        match (a, b) {
            (Some(_), Some((x, i))) => {
                let mut s = a;
                self.push(&mut s, x, i);
                s
            }
            (None, b) => b,
            (a, None) => a,
        }
    }
    fn finish(&self, s: Self::State) -> Value<T> {
        match (s, self.index) {
            (Some((_, i)), true) => Value::I(i as i64),
            (Some((x, _)), false) => Value::Same(x),
            (None, _) => Value::I(0),
        }
    }
}

/// All / any non-zero.
struct Truth {
    all: bool,
}
impl<T: Element> Reducer<T> for Truth {
    type State = bool;
    fn init(&self) -> bool {
        self.all
    }
    fn push(&self, s: &mut bool, x: T, _: u64) {
        let nz = x != T::default();
        *s = if self.all { *s && nz } else { *s || nz };
    }
    fn merge(&self, a: bool, b: bool) -> bool {
        if self.all {
            a && b
        } else {
            a || b
        }
    }
    fn finish(&self, s: bool) -> Value<T> {
        Value::B(s)
    }
}

/// Splits `l` into the kept dims (outer) and the reduced dims (inner).
fn split(l: &Layout, dims: &[usize]) -> (Layout, Vec<usize>, Vec<usize>) {
    let (mut os, mut ost, mut is, mut ist) = (vec![], vec![], vec![], vec![]);
    for d in 0..l.ndim() {
        if dims.contains(&d) {
            is.push(l.shape()[d]);
            ist.push(l.strides()[d]);
        } else {
            os.push(l.shape()[d]);
            ost.push(l.strides()[d]);
        }
    }
    (Layout::from_parts(os, ost, l.offset()), is, ist)
}

/// At most this many partial states of one long lane (a lane is split into
/// pieces for the threads; the states are merged in order, so the result
/// does not depend on the thread count).
const MAX_PARTS: usize = 1 << 16;

fn run<T: Element, R: Reducer<T>>(r: &R, v: &[T], l: &Layout, dims: &[usize], stop: &Stop) -> Vec<Value<T>> {
    let (outer, inner_shape, inner_strides) = split(l, dims);
    let inner = Merged::<1>::new(&inner_shape, [&inner_strides]);
    let (row_len, [step]) = (inner.row_len(), inner.row_strides());
    // Pushes elements `from..to` of the row starting at `b` (row number `row`),
    // in pieces of at most CHECK_EVERY, until the run must stop.
    let push_row = |s: &mut R::State, b: usize, row: usize, from: usize, to: usize| {
        let mut j = from;
        while j < to {
            let end = to.min(j.saturating_add(CHECK_EVERY));
            if stop.tick(end - j) {
                return;
            }
            for k in j..end {
                r.push(s, v[b + k * step], (row * row_len + k) as u64);
            }
            j = end;
        }
    };
    let lane = |base: usize, rows: std::ops::Range<usize>| {
        let mut s = r.init();
        inner.for_each_row([base], rows.start, rows.end, |row, [b]| {
            push_row(&mut s, b, row, 0, row_len)
        });
        s
    };
    let lane_len: usize = crate::core::shape::numel(&inner_shape);
    if outer.numel() == 1 && lane_len >= PAR_THRESHOLD && inner.rows() > 1 {
        let rows = inner.rows();
        let per = (PAR_THRESHOLD / row_len.max(1)).max(1).max(rows / MAX_PARTS);
        let parts: Vec<R::State> = (0..rows.div_ceil(per))
            .into_par_iter()
            .map(|c| lane(outer.offset(), c * per..((c + 1) * per).min(rows)))
            .collect();
        let s = parts.into_iter().fold(r.init(), |a, b| r.merge(a, b));
        return vec![r.finish(s)];
    }
    if outer.numel() == 1 && lane_len >= PAR_THRESHOLD {
        // One long contiguous-ish row: split it by elements.
        let per = PAR_THRESHOLD.max(lane_len / MAX_PARTS);
        let base = outer.offset();
        let parts: Vec<R::State> = (0..lane_len.div_ceil(per))
            .into_par_iter()
            .map(|c| {
                let mut s = r.init();
                push_row(&mut s, base, 0, c * per, ((c + 1) * per).min(lane_len));
                s
            })
            .collect();
        let s = parts.into_iter().fold(r.init(), |a, b| r.merge(a, b));
        return vec![r.finish(s)];
    }
    let rows = inner.rows();
    let empty = lane_len == 0;
    map_strided(outer.shape(), [&outer], |[base]| {
        let s = if empty { r.init() } else { lane(base, 0..rows) };
        r.finish(s)
    })
}

/// Reduces `dims` (sorted, distinct) of `l`; the output is contiguous over the
/// kept dims, in the dtype [`ReduceOp::result_dtype`] gives. Stops with a
/// `Terminated` error when the run must stop (checked every chunk).
pub(crate) fn reduce(op: ReduceOp, s: &CpuStorage, l: &Layout, dims: &[usize]) -> Result<CpuStorage> {
    let out_dtype = op.result_dtype(s.dtype());
    let float = s.dtype().is_float();
    let stop = Stop::current();
    let stop = &stop;
    let out = with_storage!(s, v: T => {
        {
            let out: Vec<Value<T>> = match op {
                ReduceOp::Sum if float => run(&SumF, v, l, dims, stop),
                ReduceOp::Sum => run(&SumI, v, l, dims, stop),
                ReduceOp::Prod if float => run(&ProdF, v, l, dims, stop),
                ReduceOp::Prod => run(&ProdI, v, l, dims, stop),
                ReduceOp::Mean => run(&Moments { what: MomentKind::Mean }, v, l, dims, stop),
                ReduceOp::Var { correction } => run(&Moments { what: MomentKind::Var(correction) }, v, l, dims, stop),
                ReduceOp::Std { correction } => run(&Moments { what: MomentKind::Std(correction) }, v, l, dims, stop),
                ReduceOp::Max => run(&Extreme { max: true, index: false }, v, l, dims, stop),
                ReduceOp::Min => run(&Extreme { max: false, index: false }, v, l, dims, stop),
                ReduceOp::ArgMax => run(&Extreme { max: true, index: true }, v, l, dims, stop),
                ReduceOp::ArgMin => run(&Extreme { max: false, index: true }, v, l, dims, stop),
                ReduceOp::All => run(&Truth { all: true }, v, l, dims, stop),
                ReduceOp::Any => run(&Truth { all: false }, v, l, dims, stop),
            };
            store_all(out, out_dtype)
        }
    });
    stop.finish(op.name())?;
    Ok(out)
}

fn store_all<T: Element>(v: Vec<Value<T>>, dtype: crate::core::DType) -> CpuStorage {
    with_dtype!(dtype, D => D::into_storage(v.into_iter().map(|x| x.store::<D>()).collect()))
}
