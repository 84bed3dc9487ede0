//! Tensor contractions composed of views and matrix products: `einsum`
//! (any equation: repeated indices, ellipsis broadcasting, implicit or
//! explicit output), `tensordot`, `inner`, `kron` and `cross`. Every pairwise
//! contraction becomes one batched matrix product (cuBLAS on the GPU), and
//! everything differentiates through its parts.

use super::Tensor;
use crate::core::error::{Error, Result};
use crate::core::op::ReduceOp;
use crate::core::shape::normalize_dim;
use std::collections::BTreeSet;

/// An einsum label: a letter (A–Z before a–z, as PyTorch orders them) or
/// one of the broadcast dims an ellipsis stands for.
type Label = usize;

/// The labels the ellipsis stands for start here (after the 52 letters).
const ELLIPSIS_BASE: Label = 52;

/// An operand during contraction: its tensor and one label per dim.
struct Term {
    t: Tensor,
    labels: Vec<Label>,
}

fn letter(c: char) -> Option<Label> {
    match c {
        'A'..='Z' => Some(c as usize - 'A' as usize),
        'a'..='z' => Some(c as usize - 'a' as usize + 26),
        _ => None,
    }
}

fn einsum_error(msg: impl Into<String>) -> Error {
    Error::invalid("einsum", msg.into())
}

/// The labels of one side of the equation; an ellipsis expands to
/// `ellipsis_dims` labels ending at the last broadcast label.
fn parse_labels(spec: &str, ndim: Option<usize>, max_ellipsis: usize) -> Result<(Vec<Label>, usize)> {
    let letters = spec.replace("...", "");
    let ellipses = (spec.len() - letters.len()) / 3;
    if ellipses > 1 || letters.contains('.') {
        return Err(einsum_error(format!(
            "'{spec}' has a stray '.' or more than one ellipsis"
        )));
    }
    let named = letters.chars().count();
    let e_dims = match (ndim, ellipses) {
        (Some(n), 0) if n != named => {
            return Err(einsum_error(format!(
                "'{spec}' names {named} dims but its operand has {n}"
            )))
        }
        (Some(n), 1) if n < named => {
            return Err(einsum_error(format!(
                "'{spec}' names {named} dims but its operand has only {n}"
            )))
        }
        (Some(n), 1) => n - named,
        (_, 1) => max_ellipsis,
        _ => 0,
    };
    let mut out = Vec::new();
    let mut seen_ellipsis = false;
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '.' {
            if !seen_ellipsis {
                seen_ellipsis = true;
                chars.next();
                chars.next();
                let end = max_ellipsis.max(e_dims);
                out.extend((end - e_dims..end).map(|k| ELLIPSIS_BASE + k));
            }
            continue;
        }
        let l = letter(c).ok_or_else(|| {
            einsum_error(format!(
                "'{c}' is not a valid label (labels are letters a-z, A-Z)"
            ))
        })?;
        out.push(l);
    }
    Ok((out, e_dims))
}

impl Term {
    /// Takes the diagonal of every label repeated within the term.
    fn diagonals(mut self) -> Result<Term> {
        loop {
            let dup = (0..self.labels.len()).find_map(|i| {
                (i + 1..self.labels.len())
                    .find(|&j| self.labels[j] == self.labels[i])
                    .map(|j| (i, j))
            });
            let Some((i, j)) = dup else { return Ok(self) };
            let (a, b) = (self.t.shape()[i], self.t.shape()[j]);
            if a != b {
                return Err(einsum_error(format!(
                    "a repeated label covers dims of sizes {a} and {b} in one operand"
                )));
            }
            // the diagonal becomes the last dim
            self.t = self.t.diagonal(0, i as i64, j as i64)?;
            let l = self.labels[i];
            self.labels.remove(j);
            self.labels.remove(i);
            self.labels.push(l);
        }
    }

    /// Sums out the labels not in `keep`.
    fn sum_except(mut self, keep: &BTreeSet<Label>) -> Result<Term> {
        let dims: Vec<i64> = (0..self.labels.len())
            .filter(|&i| !keep.contains(&self.labels[i]))
            .map(|i| i as i64)
            .collect();
        if dims.is_empty() {
            return Ok(self);
        }
        self.t = self.t.reduce(ReduceOp::Sum, Some(&dims), false)?;
        self.labels.retain(|l| keep.contains(l));
        Ok(self)
    }

    /// The size of `label` in this term.
    fn size(&self, label: Label) -> usize {
        let i = self.labels.iter().position(|&l| l == label).unwrap_or(0);
        self.t.shape()[i]
    }

    /// This term permuted to `order`, expanded to `sizes`, and reshaped into
    /// the groups of dims `groups` (each group one dim).
    fn arrange(&self, order: &[Label], sizes: &[usize], groups: &[usize]) -> Result<Tensor> {
        let perm: Vec<i64> = order
            .iter()
            .map(|l| self.labels.iter().position(|m| m == l).unwrap_or(0) as i64)
            .collect();
        let t = self.t.permute(&perm)?;
        let t = t.expand(&sizes.iter().map(|&s| s as i64).collect::<Vec<_>>())?;
        let mut shape = Vec::with_capacity(groups.len());
        let mut at = 0;
        for &g in groups {
            shape.push(sizes[at..at + g].iter().product::<usize>() as i64);
            at += g;
        }
        t.reshape(&shape)
    }
}

/// Contracts `a` and `b` over the labels they share that `keep` does not
/// need, as one batched matrix product.
fn contract(a: Term, b: Term, keep: &BTreeSet<Label>) -> Result<Term> {
    let in_b = |l: &Label| b.labels.contains(l);
    let batch: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| in_b(l) && keep.contains(l))
        .collect();
    let summed: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| in_b(l) && !keep.contains(l))
        .collect();
    let a_free: Vec<Label> = a.labels.iter().copied().filter(|l| !in_b(l)).collect();
    let b_free: Vec<Label> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !a.labels.contains(l))
        .collect();
    let size = |l: Label| -> Result<usize> {
        let (sa, sb) = (
            a.labels.contains(&l).then(|| a.size(l)),
            b.labels.contains(&l).then(|| b.size(l)),
        );
        match (sa, sb) {
            (Some(x), Some(y)) if x != y && x != 1 && y != 1 => Err(einsum_error(format!(
                "label '{}' covers dims of sizes {x} and {y}, which do not broadcast",
                label_name(l)
            ))),
            (Some(x), Some(y)) => Ok(x.max(y)),
            (Some(x), None) | (None, Some(x)) => Ok(x),
            (None, None) => Ok(1),
        }
    };
    let sizes = |ls: &[Label]| ls.iter().map(|&l| size(l)).collect::<Result<Vec<usize>>>();
    let (sb_, ss, sa_, sbf) = (sizes(&batch)?, sizes(&summed)?, sizes(&a_free)?, sizes(&b_free)?);
    let order_a: Vec<Label> = [batch.as_slice(), &a_free, &summed].concat();
    let order_b: Vec<Label> = [batch.as_slice(), &summed, &b_free].concat();
    let ta = a.arrange(
        &order_a,
        &[sb_.as_slice(), &sa_, &ss].concat(),
        &[batch.len(), a_free.len(), summed.len()],
    )?;
    let tb = b.arrange(
        &order_b,
        &[sb_.as_slice(), &ss, &sbf].concat(),
        &[batch.len(), summed.len(), b_free.len()],
    )?;
    let y = ta.matmul(&tb)?;
    let shape: Vec<i64> = [sb_.as_slice(), &sa_, &sbf]
        .concat()
        .iter()
        .map(|&s| s as i64)
        .collect();
    Ok(Term {
        t: y.reshape(&shape)?,
        labels: [batch.as_slice(), &a_free, &b_free].concat(),
    })
}

impl Tensor {
    /// `torch.einsum(equation, operands)`: the sum over the labels that
    /// leave the output of the product of the operands, as the equation
    /// names their dims (`"ij,jk->ik"`, `"bii->bi"`, `"...ij,...jk"`).
    pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
        let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match eq.split_once("->") {
            Some((l, r)) => (l, Some(r)),
            None => (eq.as_str(), None),
        };
        let specs: Vec<&str> = lhs.split(',').collect();
        if specs.len() != operands.len() {
            return Err(einsum_error(format!(
                "'{equation}' has {} operand specs but {} operands were given",
                specs.len(),
                operands.len()
            )));
        }
        if let Some(first) = operands.first() {
            for o in &operands[1..] {
                first.same_device("einsum", o)?;
            }
        }
        // the number of broadcast dims the ellipsis stands for
        let mut max_ellipsis = 0;
        for (spec, t) in specs.iter().zip(operands) {
            let (_, e) = parse_labels(spec, Some(t.ndim()), 0)?;
            max_ellipsis = max_ellipsis.max(e);
        }
        let mut terms = Vec::with_capacity(operands.len());
        for (spec, t) in specs.iter().zip(operands) {
            let (labels, _) = parse_labels(spec, Some(t.ndim()), max_ellipsis)?;
            terms.push(Term { t: t.clone(), labels });
        }
        let output: Vec<Label> = match rhs {
            Some(r) => {
                let (out, _) = parse_labels(r, None, max_ellipsis)?;
                let unique: BTreeSet<Label> = out.iter().copied().collect();
                if unique.len() != out.len() {
                    return Err(einsum_error(format!("the output '{r}' repeats a label")));
                }
                if let Some(l) = out.iter().find(|l| !terms.iter().any(|t| t.labels.contains(l))) {
                    return Err(einsum_error(format!(
                        "the output label '{}' is in no operand",
                        label_name(*l)
                    )));
                }
                out
            }
            None => {
                // broadcast dims first, then the letters seen once, in order
                let mut count = [0usize; ELLIPSIS_BASE];
                for t in &terms {
                    for &l in &t.labels {
                        if l < ELLIPSIS_BASE {
                            count[l] += 1;
                        }
                    }
                }
                (ELLIPSIS_BASE..ELLIPSIS_BASE + max_ellipsis)
                    .chain((0..ELLIPSIS_BASE).filter(|&l| count[l] == 1))
                    .collect()
            }
        };
        if terms.is_empty() {
            return Err(einsum_error("einsum needs at least one operand"));
        }
        let out_set: BTreeSet<Label> = output.iter().copied().collect();
        let terms: Vec<Term> = terms.into_iter().map(Term::diagonals).collect::<Result<_>>()?;
        // keep[i]: the labels the output and the operands from i on still need
        let mut keep = vec![out_set.clone(); terms.len() + 1];
        for i in (0..terms.len()).rev() {
            let mut s = keep[i + 1].clone();
            s.extend(terms[i].labels.iter().copied());
            keep[i] = s;
        }
        let mut terms = terms.into_iter().enumerate();
        let (_, first) = terms.next().expect("at least one operand");
        let mut acc = first.sum_except(&keep[1])?;
        for (i, next) in terms {
            let mut own = keep[i + 1].clone();
            own.extend(acc.labels.iter().copied());
            let next = next.sum_except(&own)?;
            acc = contract(acc, next, &keep[i + 1])?;
        }
        let acc = acc.sum_except(&out_set)?;
        let perm: Vec<i64> = output
            .iter()
            .map(|l| acc.labels.iter().position(|m| m == l).unwrap_or(0) as i64)
            .collect();
        if perm.is_empty() {
            return Ok(acc.t);
        }
        acc.t.permute(&perm)?.contiguous()
    }
}

/// A label as the equation writes it.
fn label_name(l: Label) -> String {
    match l {
        0..=25 => ((b'A' + l as u8) as char).to_string(),
        26..=51 => ((b'a' + (l - 26) as u8) as char).to_string(),
        _ => "...".to_string(),
    }
}

impl Tensor {
    /// `torch.tensordot`: contracts `dims_a` of this tensor with `dims_b` of
    /// `other` (pairwise, equal sizes); the result has this tensor's other
    /// dims, then `other`'s.
    pub fn tensordot(&self, other: &Tensor, dims_a: &[i64], dims_b: &[i64]) -> Result<Tensor> {
        const OP: &str = "tensordot";
        if dims_a.len() != dims_b.len() {
            return Err(Error::invalid(
                OP,
                format!("dims {dims_a:?} and {dims_b:?} must pair up"),
            ));
        }
        let norm = |t: &Tensor, ds: &[i64]| -> Result<Vec<usize>> {
            let v: Vec<usize> = ds
                .iter()
                .map(|&d| normalize_dim(OP, d, t.shape()))
                .collect::<Result<_>>()?;
            if v.iter().collect::<BTreeSet<_>>().len() != v.len() {
                return Err(Error::invalid(OP, format!("dims {ds:?} repeat a dim")));
            }
            Ok(v)
        };
        let (da, db) = (norm(self, dims_a)?, norm(other, dims_b)?);
        for (&i, &j) in da.iter().zip(&db) {
            if self.shape()[i] != other.shape()[j] {
                return Err(Error::shape(
                    OP,
                    format!(
                        "dim {i} of shape {:?} (size {}) does not match dim {j} of shape {:?} (size {})",
                        self.shape(),
                        self.shape()[i],
                        other.shape(),
                        other.shape()[j]
                    ),
                ));
            }
        }
        let free_a: Vec<usize> = (0..self.ndim()).filter(|d| !da.contains(d)).collect();
        let free_b: Vec<usize> = (0..other.ndim()).filter(|d| !db.contains(d)).collect();
        let k: usize = da.iter().map(|&d| self.shape()[d]).product();
        let m: usize = free_a.iter().map(|&d| self.shape()[d]).product();
        let n: usize = free_b.iter().map(|&d| other.shape()[d]).product();
        let pa: Vec<i64> = free_a.iter().chain(&da).map(|&d| d as i64).collect();
        let pb: Vec<i64> = db.iter().chain(&free_b).map(|&d| d as i64).collect();
        let a = self.permute(&pa)?.reshape(&[m as i64, k as i64])?;
        let b = other.permute(&pb)?.reshape(&[k as i64, n as i64])?;
        let shape: Vec<i64> = free_a
            .iter()
            .map(|&d| self.shape()[d] as i64)
            .chain(free_b.iter().map(|&d| other.shape()[d] as i64))
            .collect();
        a.matmul(&b)?.reshape(&shape)
    }

    /// `torch.tensordot(a, b, n)`: the last `n` dims of this tensor with the
    /// first `n` of `other`.
    pub fn tensordot_n(&self, other: &Tensor, n: i64) -> Result<Tensor> {
        if n < 0 || n as usize > self.ndim() || n as usize > other.ndim() {
            return Err(Error::invalid(
                "tensordot",
                format!(
                    "cannot contract {n} dims of shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let a: Vec<i64> = (self.ndim() as i64 - n..self.ndim() as i64).collect();
        let b: Vec<i64> = (0..n).collect();
        self.tensordot(other, &a, &b)
    }

    /// `torch.inner`: sums over the last dims of both (a scalar operand
    /// multiplies).
    pub fn inner(&self, other: &Tensor) -> Result<Tensor> {
        if self.ndim() == 0 || other.ndim() == 0 {
            return self.mul(other);
        }
        self.tensordot(other, &[-1], &[-1])
    }

    /// The Kronecker product: block `(i, j, ...)` of the result is
    /// `self[i, j, ...] * other`.
    pub fn kron(&self, other: &Tensor) -> Result<Tensor> {
        let n = self.ndim().max(other.ndim());
        let pad = |t: &Tensor| -> Vec<usize> {
            let mut s = vec![1; n - t.ndim()];
            s.extend_from_slice(t.shape());
            s
        };
        let (sa, sb) = (pad(self), pad(other));
        let mut a_shape = Vec::with_capacity(2 * n);
        let mut b_shape = Vec::with_capacity(2 * n);
        for i in 0..n {
            a_shape.extend([sa[i] as i64, 1]);
            b_shape.extend([1, sb[i] as i64]);
        }
        let out: Vec<i64> = (0..n).map(|i| (sa[i] * sb[i]) as i64).collect();
        self.reshape(&a_shape)?
            .mul(&other.reshape(&b_shape)?)?
            .reshape(&out)
    }

    /// The cross product of 3-vectors along `dim` (broadcasting), or along
    /// the first dim of size 3 when `dim` is `None` (as `torch.cross`).
    pub fn cross(&self, other: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        const OP: &str = "cross";
        let shape = crate::core::shape::broadcast_shapes(OP, self.shape(), other.shape())?;
        let d = match dim {
            Some(d) => normalize_dim(OP, d, &shape)?,
            None => shape
                .iter()
                .position(|&s| s == 3)
                .ok_or_else(|| Error::shape(OP, format!("no dim of size 3 in shape {shape:?}")))?,
        };
        if shape[d] != 3 {
            return Err(Error::shape(
                OP,
                format!("dim {d} of shape {shape:?} has size {}, not 3", shape[d]),
            ));
        }
        let a = self.broadcast_to(&shape)?;
        let b = other.broadcast_to(&shape)?;
        let d = d as i64;
        // c_i = a_(i+1) b_(i+2) - a_(i+2) b_(i+1)
        let (a1, a2) = (a.roll(&[-1], &[d])?, a.roll(&[-2], &[d])?);
        let (b1, b2) = (b.roll(&[-1], &[d])?, b.roll(&[-2], &[d])?);
        a1.mul(&b2)?.sub(&a2.mul(&b1)?)
    }
}
