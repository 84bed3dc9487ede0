//! The ops composed in the tensor layer from other ops (`combine.rs`,
//! `integrate.rs`, `quantile.rs`, `scatter_forms.rs`, `special.rs`,
//! `matrix_exp.rs` and the newer ones of `rearrange.rs`, `structure.rs`,
//! `counting.rs`, `statistics.rs` and `functional.rs`), in every float dtype
//! and through every input layout: their parts are checked elsewhere, this
//! checks that the compositions themselves agree on both backends (index
//! arithmetic, sorts, scatters and dtype handling included).

use super::*;
use kiln::tensor::cnn::fractional::FractionalOutput;
use kiln::tensor::integrate::Spacing;
use kiln::tensor::loss::{CtcOptions, Reduction};
use kiln::tensor::quantile::{Interpolation, Quantiles};
use kiln::tensor::random::Generator;
use kiln::tensor::rearrange::Sections;

/// `values` as an i64 tensor on `t`'s device.
fn ints_on(t: &Tensor, values: Vec<i64>, shape: &[usize]) -> Result<Tensor> {
    Tensor::from_host(&HostValues::Int(values), shape, DType::I64, t.device())
}

impl Checker {
    /// Each composition on both backends from the same input (`[37, 65]`
    /// after the layout's view), for every float dtype and layout; then the
    /// integer ones.
    pub(super) fn compositions(&mut self) {
        let ops: Vec<LayoutOp> = vec![
            ("logaddexp", |t| t.logaddexp(&t.flip(&[0])?)),
            ("logaddexp2", |t| t.logaddexp2(&t.select(0, 3)?)),
            ("fmax", |t| t.log()?.fmax(&t.flip(&[1])?)),
            ("fmin", |t| t.fmin(&t.flip(&[0])?.log()?)),
            ("heaviside", |t| t.round()?.heaviside(&t.select(0, 0)?)),
            ("rot90", |t| t.rot90(1, &[0, 1])?.contiguous()),
            ("rot90 twice", |t| t.rot90(2, &[1, 0])?.contiguous()),
            ("hsplit", |t| joined(t.hsplit(Sections::At(&[3, 40])))),
            ("trapezoid", |t| t.trapezoid(Spacing::Step(0.5), 1)),
            ("trapezoid x", |t| {
                let x = t.select(0, 2)?.cumsum(0, None)?;
                t.trapezoid(Spacing::Points(&x), -1)
            }),
            ("cumulative_trapezoid", |t| {
                t.cumulative_trapezoid(Spacing::Step(1.0), 0)
            }),
            ("quantile", |t| {
                t.quantile(Quantiles::One(0.3), Some(1), false, Interpolation::Linear)
            }),
            ("quantile many", |t| {
                let q = Tensor::from_host(
                    &HostValues::Float(vec![0.0, 0.25, 0.9, 1.0]),
                    &[4],
                    DType::F64,
                    t.device(),
                )?;
                t.quantile(Quantiles::Many(&q), Some(0), true, Interpolation::Midpoint)
            }),
            ("nanquantile", |t| {
                t.log()?
                    .nanquantile(Quantiles::One(0.5), Some(1), false, Interpolation::Nearest)
            }),
            ("select_scatter", |t| {
                t.select_scatter(&t.select(1, 4)?.exp()?, 1, 2)
            }),
            ("slice_scatter", |t| {
                t.slice_scatter(&t.slice(0, Some(1), None, 3)?.neg()?, 0, Some(1), None, 3)
            }),
            ("diagonal_scatter", |t| {
                t.diagonal_scatter(&t.diagonal(2, 0, 1)?.neg()?, 2, 0, 1)
            }),
            ("index_reduce amax", |t| {
                let i = ints_on(t, (0..65).map(|k| (k * 7) % 11).collect(), &[65])?;
                t.narrow(1, 0, 11)?.index_reduce(1, &i, t, "amax", true)
            }),
            ("index_reduce mean", |t| {
                let i = ints_on(t, (0..37).map(|k| k % 5).collect(), &[37])?;
                t.narrow(0, 0, 5)?.index_reduce(0, &i, t, "mean", false)
            }),
            ("block_diag", |t| {
                Tensor::block_diag(&[t.clone(), t.select(1, 0)?, t.narrow(0, 0, 3)?])
            }),
            ("vander", |t| {
                t.select(1, 5)?.narrow(0, 0, 9)?.vander(Some(5), false)
            }),
            ("combinations", |t| {
                t.select(0, 1)?.narrow(0, 0, 12)?.combinations(3, false)
            }),
            ("addr", |t| t.addr(&t.select(1, 0)?, &t.select(0, 0)?, 0.5, 2.0)),
            ("dist", |t| t.dist(&t.flip(&[1])?, 3.0)),
            ("ldexp", |t| {
                let e = ints_on(t, (0..65).map(|k| k % 9 - 4).collect(), &[65])?;
                t.ldexp(&e)
            }),
            ("frexp", |t| {
                let (m, e) = t.frexp()?;
                Tensor::cat(&[m.to_dtype(DType::F64)?, e.to_dtype(DType::F64)?], 0)
            }),
            ("mvlgamma", |t| t.abs()?.add_scalar(1.5)?.mvlgamma(3)),
            ("xlog1py", |t| t.xlog1py(&t.abs()?)),
            ("entr", |t| t.entr()),
            ("ndtr", |t| t.ndtr()),
            ("log_ndtr", |t| t.log_ndtr()),
            ("ndtri", |t| t.sigmoid()?.ndtri()),
            ("pdist", |t| t.narrow(0, 0, 12)?.pdist(2.0)),
            ("renorm", |t| t.renorm(2.0, 1, 3.0)),
            ("histogram", |t| {
                use kiln::tensor::counting::HistogramBins;
                let (h, e) = t.histogram(HistogramBins::Count(16), Some((-3.0, 3.0)), None, true)?;
                Tensor::cat(&[h, e], 0)
            }),
            ("gradient", |t| {
                joined(t.gradient(&[Spacing::Step(0.5), Spacing::Step(2.0)], None, 2))
            }),
            ("gradient at points", |t| {
                // the points summed in f64, so that both devices take the
                // same ones (their differences cancel: an ulp of a point is
                // a large error in a spacing)
                let x = t
                    .select(0, 0)?
                    .to_dtype(DType::F64)?
                    .abs()?
                    .add_scalar(0.1)?
                    .cumsum(0, None)?
                    .to_dtype(t.dtype())?;
                joined(t.gradient(&[Spacing::Points(&x)], Some(&[1]), 1))
            }),
            ("embedding_bag", |t| {
                let i = ints_on(t, (0..40).map(|k| (k * 5) % 37).collect(), &[40])?;
                let o = ints_on(t, vec![0, 3, 3, 17], &[4])?;
                let mean = i.embedding_bag(t, Some(&o), "mean", None, false, Some(5))?;
                let max = i.embedding_bag(t, Some(&o), "max", None, false, None)?;
                Tensor::cat(&[mean, max], 0)
            }),
            ("matrix_exp", |t| {
                t.narrow(1, 0, 37)?.mul_scalar(0.05)?.matrix_exp()
            }),
            ("fractional_max_pool2d", |t| {
                let x = t.narrow(0, 0, 36)?.reshape(&[2, 2, 9, 65])?;
                let u = [0.1, 0.7, 0.45, 0.2, 0.9, 0.33, 0.6, 0.05];
                let u = Tensor::from_host(&HostValues::Float(u.to_vec()), &[2, 2, 2], t.dtype(), t.device())?;
                let out = FractionalOutput::Size(vec![4, 20]);
                let mut g = Generator::new(0);
                let (v, i) = x.fractional_max_pool(2, &[3], &out, Some(&u), true, &mut g)?;
                Tensor::cat(
                    &[
                        v.to_dtype(DType::F64)?.flatten(0, -1)?,
                        i.unwrap().to_dtype(DType::F64)?.flatten(0, -1)?,
                    ],
                    0,
                )
            }),
            ("ctc_loss", |t| {
                let lp = t.narrow(0, 0, 36)?.reshape(&[12, 3, 65])?.log_softmax(2)?;
                let targets = ints_on(t, vec![5, 9, 9, 40, 1, 2, 3, 0, 64, 7, 0, 0], &[3, 4])?;
                let o = CtcOptions {
                    reduction: Reduction::None,
                    ..CtcOptions::default()
                };
                lp.ctc_loss(&targets, &[12, 10, 7], &[4, 3, 2], &o)
            }),
        ];
        // sums of many half-precision terms round more
        let floats = [DType::F32, DType::F64, DType::F16, DType::BF16];
        self.through_layouts("compositions", &floats, &ops, 4.0);
        let int_ops: Vec<LayoutOp> = vec![
            ("isin", |t| t.isin(&t.select(0, 0)?, false)),
            ("isin invert", |t| t.isin(&t.narrow(1, 0, 3)?, true)),
            ("unravel_index", |t| joined(t.abs()?.unravel_index(&[3, 2, 4]))),
            ("combinations with replacement", |t| {
                t.select(0, 2)?.narrow(0, 0, 9)?.combinations(2, true)
            }),
            ("vander ints", |t| {
                t.select(1, 1)?.narrow(0, 0, 6)?.vander(None, true)
            }),
        ];
        self.through_layouts("compositions", &[DType::I64, DType::I32], &int_ops, 1.0);
    }
}
