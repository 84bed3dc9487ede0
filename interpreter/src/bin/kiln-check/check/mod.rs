//! The CPU-vs-CUDA differential check: every op the CUDA backend runs, for
//! every dtype it supports, through contiguous, transposed, broadcast, sliced
//! and expanded inputs, computed on both backends from the same random inputs
//! and compared within per-dtype tolerances. Also checks that op chains are
//! queued asynchronously. The cases live by op family in the submodules;
//! this module holds the harness (inputs, layouts, tolerances, the record
//! of each case) and the groups `--group` selects.

mod attention;
mod cnn;
mod compositions;
mod dense;
mod elementwise;
mod functional;
mod graphs;
mod indexing;
mod linalg;
mod rearrange;
mod reduce;
mod runtime;
mod training;

pub use runtime::{asynchrony, engines_on_threads, kernel_resources};

use kiln::core::op::{BinaryOp, CmpOp, Domain, ReduceOp, UnaryOp, UnaryRule};
use kiln::core::{DType, Device, HostValues, Scalar};
use kiln::tensor::{Generator, Tensor};
use kiln::Result;

/// One compared case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The op.
    pub op: String,
    /// The dtype computed in.
    pub dtype: String,
    /// The input layout.
    pub layout: String,
    /// Largest difference relative to the tolerance (pass when <= 1).
    pub worst: f64,
    /// Failure message, if any.
    pub error: Option<String>,
}

impl Case {
    /// True when within tolerance.
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.worst <= 1.0
    }
}

/// Absolute and relative tolerance for comparing results of `dtype`.
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F64 => (1e-10, 1e-10),
        DType::F32 => (1e-5, 2e-5),
        DType::F16 => (2e-3, 2e-3),
        DType::BF16 => (2e-2, 1.6e-2),
        _ => (0.0, 0.0),
    }
}

fn values(v: &HostValues) -> Vec<f64> {
    match v {
        HostValues::Bool(b) => b.iter().map(|&x| x as u8 as f64).collect(),
        HostValues::Int(i) => i.iter().map(|&x| x as f64).collect(),
        HostValues::Float(f) => f.clone(),
    }
}

/// Worst |a-b| / (scale·atol + rtol |a|) over all elements (NaN = NaN, inf = inf).
fn worst(cpu: &Tensor, gpu: &Tensor, dtype: DType, scale: f64) -> Result<f64> {
    if cpu.shape() != gpu.shape() || cpu.dtype() != gpu.dtype() {
        return Ok(f64::INFINITY);
    }
    let (a, b) = (values(&cpu.to_host()?), values(&gpu.to_host()?));
    // results are compared at the precision of the result's dtype
    let (atol, rtol) = tolerance(if cpu.dtype().is_float() {
        cpu.dtype()
    } else {
        dtype
    });
    let mut w: f64 = 0.0;
    for (x, y) in a.iter().zip(&b) {
        let same = (x.is_nan() && y.is_nan()) || x == y;
        if same {
            continue;
        }
        let d = (x - y).abs() / (scale * atol + rtol * x.abs());
        w = w.max(if d.is_nan() { f64::INFINITY } else { d });
    }
    Ok(w)
}

struct Checker {
    cases: Vec<Case>,
    gen: Generator,
}

/// An input of `shape` for `dtype`: normal floats, small ints, random bools.
fn input(gen: &mut Generator, shape: &[usize], dtype: DType, positive: bool) -> Result<Tensor> {
    let t = match dtype {
        d if d.is_float() => {
            let t = Tensor::randn(shape, Some(DType::F64), Device::Cpu, gen)?;
            if positive {
                t.abs()?.add_scalar(0.25)?.to_dtype(d)?
            } else {
                t.mul_scalar(2.0)?.to_dtype(d)?
            }
        }
        DType::Bool => Tensor::randint(0, 2, shape, Some(DType::Bool), Device::Cpu, gen)?,
        DType::U8 => Tensor::randint(positive as i64, 16, shape, Some(DType::U8), Device::Cpu, gen)?,
        d => Tensor::randint(
            if positive { 1 } else { -20 },
            20,
            shape,
            Some(d),
            Device::Cpu,
            gen,
        )?,
    };
    Ok(t)
}

/// The layouts each input is checked through: (name, base shape, view).
/// A view applied to a checked input.
type View = fn(&Tensor) -> Result<Tensor>;

/// A matmul case: name, shapes of A and B, and the views applied to them.
type MatmulCase = (&'static str, Vec<usize>, Vec<usize>, View, View);

fn layouts() -> Vec<(&'static str, Vec<usize>, View)> {
    vec![
        ("contiguous", vec![37, 65], |t| Ok(t.clone())),
        ("transposed", vec![65, 37], |t| t.t()),
        ("sliced", vec![37, 130], |t| t.slice(1, Some(1), None, 2)),
        ("expanded", vec![1, 65], |t| t.expand(&[37, 65])),
        ("permuted3d", vec![5, 65, 37], |t| {
            t.permute(&[2, 1, 0])?.select(2, 3)
        }),
    ]
}

/// Several results as one tensor (each flattened, end to end).
fn joined(parts: Result<Vec<Tensor>>) -> Result<Tensor> {
    let flat = parts?
        .iter()
        .map(|t| t.flatten(0, -1))
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&flat, 0)
}

/// An op of one input, checked through every layout.
type LayoutOp = (&'static str, fn(&Tensor) -> Result<Tensor>);

impl Checker {
    fn record(&mut self, op: &str, dtype: DType, layout: &str, r: Result<(Tensor, Tensor)>) {
        self.record_scaled(op, dtype, layout, r, 1.0)
    }

    /// `scale` widens the absolute tolerance (sums of many terms round more).
    fn record_scaled(
        &mut self,
        op: &str,
        dtype: DType,
        layout: &str,
        r: Result<(Tensor, Tensor)>,
        scale: f64,
    ) {
        let (w, error) = match r.and_then(|(c, g)| worst(&c, &g, dtype, scale)) {
            Ok(w) => (w, None),
            Err(e) => (f64::INFINITY, Some(e.to_string())),
        };
        self.cases.push(Case {
            op: op.to_string(),
            dtype: dtype.name().to_string(),
            layout: layout.to_string(),
            worst: w,
            error,
        });
    }

    /// Each of `ops` on both backends from the same input, for each of
    /// `dtypes` and every layout of [`layouts`]; `scale` widens the absolute
    /// tolerance. An input that cannot be made is recorded as `group input`.
    fn through_layouts(&mut self, group: &str, dtypes: &[DType], ops: &[LayoutOp], scale: f64) {
        for &dtype in dtypes {
            for (layout, shape, view) in layouts() {
                let x = match input(&mut self.gen, &shape, dtype, false).and_then(|t| view(&t)) {
                    Ok(x) => x,
                    Err(e) => {
                        self.record(&format!("{group} input"), dtype, layout, Err(e));
                        continue;
                    }
                };
                for (name, op) in ops {
                    let r = self.both(&x, op);
                    self.record_scaled(name, dtype, layout, r, scale);
                }
            }
        }
    }

    fn both(&mut self, x: &Tensor, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<(Tensor, Tensor)> {
        let c = f(x)?;
        let g = f(&x.to_device(gpu())?)?;
        Ok((c, g))
    }
}

/// Whether the "GPU" side runs on the CPU too (`--cpu-only`): a smoke run
/// of every case, for errors and panics, on a machine without a GPU.
pub static CPU_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The device the second side of each case runs on.
fn gpu() -> Device {
    if CPU_ONLY.load(std::sync::atomic::Ordering::Relaxed) {
        Device::Cpu
    } else {
        Device::Cuda(0)
    }
}

/// The case groups, in the order [`run`] runs them.
pub const GROUPS: [&str; 18] = [
    "unary",
    "binary",
    "casts",
    "reductions",
    "nn",
    "random",
    "matmul",
    "dense",
    "training",
    "indexing",
    "rearrange",
    "compositions",
    "functional",
    "linalg",
    "cnn",
    "attention",
    "collectives",
    "graphs",
];

/// Runs every case; returns them in order.
pub fn run() -> Vec<Case> {
    run_groups(&GROUPS)
}

/// Runs the cases of the named groups (see [`GROUPS`]); unknown names run nothing.
pub fn run_groups(groups: &[&str]) -> Vec<Case> {
    let mut c = Checker {
        cases: vec![],
        gen: Generator::new(2024),
    };
    for g in GROUPS.iter().filter(|g| groups.contains(g)) {
        match *g {
            "unary" => c.unary(),
            "binary" => c.binary(),
            "casts" => c.casts_and_copies(),
            "reductions" => c.reductions(),
            "nn" => c.nn(),
            "random" => c.random(),
            "matmul" => {
                c.matmul();
                c.matmul_bias();
            }
            "dense" => c.dense_paths(),
            "indexing" => c.indexing(),
            "rearrange" => c.rearrange(),
            "compositions" => c.compositions(),
            "functional" => c.functional(),
            "linalg" => c.linalg(),
            "cnn" => c.cnn(),
            "attention" => c.attention(),
            "collectives" => c.collectives(),
            "graphs" => c.graphs(),
            _ => {
                c.training();
                c.training_multi();
            }
        }
    }
    c.cases
}
