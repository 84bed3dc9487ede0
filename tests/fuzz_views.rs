//! Property tests of the safety invariants: random chains of view ops
//! (narrow, slice, select, expand, permute, transpose, unsqueeze) with
//! extreme arguments, then a consumer op, checked against a reference model
//! of the view computed in i128 (no overflow possible); and random or
//! mutated bytes into every file loader. Every case must give a value equal
//! to the model's or a typed error: never a panic, an abort or data from
//! outside the tensor.

use kiln::{Device, Interpreter, Limits, Tensor};
use proptest::prelude::*;
use std::time::Duration;

/// A view over the base data `0, 1, 2, ...` as the reference sees it.
#[derive(Clone, Debug)]
struct Model {
    shape: Vec<i128>,
    strides: Vec<i128>,
    offset: i128,
}

#[derive(Clone, Debug)]
enum Op {
    Narrow(i64, i64, i64),
    Slice(i64, Option<i64>, Option<i64>, i64),
    Select(i64, i64),
    Expand(Vec<i64>, Vec<i64>),
    Permute(Vec<i64>),
    Transpose(i64, i64),
    Unsqueeze(i64),
}

fn norm_dim(d: i64, ndim: usize) -> Option<usize> {
    let n = ndim as i128;
    let d = if d < 0 { d as i128 + n } else { d as i128 };
    (0..n).contains(&d).then_some(d as usize)
}

impl Model {
    fn numel(&self) -> i128 {
        self.shape.iter().product()
    }

    /// The model after `op`, or `None` when PyTorch refuses it.
    fn apply(&self, op: &Op) -> Option<Model> {
        let mut m = self.clone();
        let nd = self.shape.len();
        match *op {
            Op::Narrow(d, start, len) => {
                let d = norm_dim(d, nd)?;
                let size = self.shape[d];
                let s = if start < 0 {
                    start as i128 + size
                } else {
                    start as i128
                };
                if s < 0 || len < 0 || s + len as i128 > size {
                    return None;
                }
                if len > 0 {
                    m.offset += s * self.strides[d];
                }
                m.shape[d] = len as i128;
            }
            Op::Slice(d, start, end, step) => {
                let d = norm_dim(d, nd)?;
                if step <= 0 {
                    return None;
                }
                let size = self.shape[d];
                let clamp = |v: i64| {
                    let v = v as i128;
                    if v < 0 {
                        (v + size).max(0)
                    } else {
                        v.min(size)
                    }
                };
                let s = clamp(start.unwrap_or(0));
                let e = end.map_or(size, clamp).max(s);
                let len = (e - s + step as i128 - 1) / step as i128;
                if len > 0 {
                    m.offset += s * self.strides[d];
                }
                m.shape[d] = len;
                m.strides[d] *= step as i128;
            }
            Op::Select(d, i) => {
                let d = norm_dim(d, nd)?;
                let size = self.shape[d];
                let i = if i < 0 { i as i128 + size } else { i as i128 };
                if !(0..size).contains(&i) {
                    return None;
                }
                m.offset += i * self.strides[d];
                m.shape.remove(d);
                m.strides.remove(d);
            }
            Op::Expand(ref lead, ref ones) => {
                let mut shape = vec![];
                for &s in lead {
                    if s < 0 {
                        return None;
                    }
                    shape.push(s as i128);
                }
                let mut strides = vec![0; lead.len()];
                for (i, (&d, &st)) in self.shape.iter().zip(&self.strides).enumerate() {
                    let want = ones.get(i).copied().unwrap_or(-1);
                    match want {
                        -1 => {
                            shape.push(d);
                            strides.push(st);
                        }
                        w if w >= 0 && w as i128 == d => {
                            shape.push(d);
                            strides.push(st);
                        }
                        w if w >= 0 && d == 1 => {
                            shape.push(w as i128);
                            strides.push(0);
                        }
                        _ => return None,
                    }
                }
                m.shape = shape;
                m.strides = strides;
            }
            Op::Permute(ref perm) => {
                if perm.len() != nd {
                    return None;
                }
                let mut seen = vec![false; nd];
                let mut dims = vec![];
                for &p in perm {
                    let d = norm_dim(p, nd)?;
                    if seen[d] {
                        return None;
                    }
                    seen[d] = true;
                    dims.push(d);
                }
                m.shape = dims.iter().map(|&d| self.shape[d]).collect();
                m.strides = dims.iter().map(|&d| self.strides[d]).collect();
            }
            Op::Transpose(a, b) => {
                if nd == 0 {
                    return [a, b].iter().all(|&d| d == 0 || d == -1).then_some(m);
                }
                let (a, b) = (norm_dim(a, nd)?, norm_dim(b, nd)?);
                m.shape.swap(a, b);
                m.strides.swap(a, b);
            }
            Op::Unsqueeze(d) => {
                let d = norm_dim(d, nd + 1)?;
                let st = if d < nd {
                    self.strides[d] * self.shape[d]
                } else {
                    1
                };
                m.shape.insert(d, 1);
                m.strides.insert(d, st);
            }
        }
        // kiln's own limits: 64 dims, an element count that fits in usize
        if m.shape.len() > 64 || m.numel() > usize::MAX as i128 {
            return None;
        }
        Some(m)
    }

    /// The viewed values in logical order (base data is `0, 1, 2, ...`).
    fn values(&self) -> Vec<f64> {
        let n = self.numel() as usize;
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0i128; self.shape.len()];
        for _ in 0..n {
            let off: i128 = self.offset + idx.iter().zip(&self.strides).map(|(i, s)| i * s).sum::<i128>();
            out.push(off as f64);
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    }
}

/// An integer as a Rhai literal (`i64::MIN` has no literal of its own).
fn lit(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807 - 1)".into()
    } else {
        v.to_string()
    }
}

fn script(op: &Op) -> String {
    let l = |v: &i64| lit(*v);
    match op {
        Op::Narrow(d, s, n) => format!("v = v.narrow({}, {}, {});", l(d), l(s), l(n)),
        Op::Slice(d, s, e, st) => format!(
            "v = v.slice({}, {}, {}, {});",
            l(d),
            s.map_or("()".into(), lit),
            e.map_or("()".into(), lit),
            l(st)
        ),
        Op::Select(d, i) => format!("v = v.select({}, {});", l(d), l(i)),
        Op::Expand(lead, ones) => format!("v = v.expand(expand_to(v, {lead:?}, {ones:?}));"),
        Op::Permute(p) => format!("v = v.permute({p:?});"),
        Op::Transpose(a, b) => format!("v = v.transpose({}, {});", l(a), l(b)),
        Op::Unsqueeze(d) => format!("v = v.unsqueeze({});", l(d)),
    }
}

/// Integers that hit the edges: small ones, and the extremes of i64.
fn edgy() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -4i64..6,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => Just(i64::MAX - 1),
        1 => Just(1i64 << 40),
        1 => Just(-(1i64 << 62)),
        1 => any::<i64>(),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (edgy(), edgy(), edgy()).prop_map(|(d, s, l)| Op::Narrow(d, s, l)),
        (edgy(), edgy(), edgy(), edgy()).prop_map(|(d, s, e, st)| Op::Slice(d, Some(s), Some(e), st)),
        (edgy(), edgy()).prop_map(|(d, i)| Op::Select(d, i)),
        (
            prop::collection::vec(prop_oneof![0i64..4, Just(1i64 << 31), Just(-1i64)], 0..3),
            prop::collection::vec(prop_oneof![Just(-1i64), 0i64..4, Just(1i64 << 33)], 0..4)
        )
            .prop_map(|(l, o)| Op::Expand(l, o)),
        prop::collection::vec(-4i64..4, 0..5).prop_map(Op::Permute),
        (edgy(), edgy()).prop_map(|(a, b)| Op::Transpose(a, b)),
        edgy().prop_map(Op::Unsqueeze),
    ]
}

fn engine() -> Interpreter {
    let mut k = Interpreter::builder()
        .device(Device::Cpu)
        .limits(Limits {
            max_duration: Some(Duration::from_secs(5)),
            ..Limits::sandbox()
        })
        .build()
        .unwrap();
    // the target shape of an expand: new leading sizes, then the tensor's
    // dims (-1 keeps one, or the size asked for)
    let _defined = k.run(
        "fn expand_to(v, lead, ones) { let s = lead; for i in 0..v.ndim { s.push(if i < ones.len() { ones[i] } else { -1 }); } s }",
        "helpers.rhai",
    )
    .unwrap();
    k
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x6b69_6c6e), ..ProptestConfig::default() })]

    #[test]
    fn view_chains_match_the_model(
        dims in prop::collection::vec(0usize..5, 0..4),
        ops in prop::collection::vec(op(), 1..6),
    ) {
        let mut k = engine();
        let n: usize = dims.iter().product();
        let base = Tensor::from_vec((0..n).map(|i| i as f32).collect(), &dims, Device::Cpu).unwrap();
        k.set_var("v", base);
        let mut model = Some(Model {
            strides: {
                let mut s = vec![1i128; dims.len()];
                for d in (0..dims.len().saturating_sub(1)).rev() {
                    s[d] = s[d + 1] * dims[d + 1].max(1) as i128;
                }
                s
            },
            shape: dims.iter().map(|&d| d as i128).collect(),
            offset: 0,
        });
        for op in &ops {
            let Some(m) = model.clone() else { break };
            let r = k.run(&script(op), "chain.rhai");
            model = m.apply(op);
            match (&model, &r) {
                (Some(_), Err(e)) => prop_assert!(false, "{op:?} on {m:?} failed: {e}"),
                (None, Ok(_)) => prop_assert!(false, "{op:?} on {m:?} should fail"),
                _ => {}
            }
        }
        let Some(m) = model else { return Ok(()) };
        let v: Tensor = k.get_var("v").unwrap();
        let shape: Vec<i128> = v.shape().iter().map(|&d| d as i128).collect();
        prop_assert_eq!(&shape, &m.shape);
        if m.numel() <= 4096 {
            let want = m.values();
            let got: Vec<f32> = k.eval::<Tensor>("v.flatten()").unwrap().to_vec().unwrap();
            let got: Vec<f64> = got.into_iter().map(f64::from).collect();
            prop_assert_eq!(&got, &want);
            let sum: f64 = k.eval("v.sum().item()").unwrap();
            prop_assert!((sum - want.iter().sum::<f64>()).abs() <= 1e-6 * (1.0 + sum.abs()));
            let sq: f64 = k.eval("let f = v.reshape([-1]); (f.unsqueeze(0) @ f.unsqueeze(1)).sum().item()").unwrap();
            let want_sq: f64 = want.iter().map(|x| x * x).sum();
            prop_assert!((sq - want_sq).abs() <= 1e-4 * (1.0 + want_sq));
            let c: Vec<f32> = k.eval::<Tensor>("(v.contiguous() + v).flatten()").unwrap().to_vec().unwrap();
            prop_assert!(c.iter().zip(&want).all(|(&c, &w)| c as f64 == 2.0 * w));
        } else if m.numel() > 1 << 40 {
            // far more than memory: a typed error before any allocation
            prop_assert!(k.run("v.exp()", "huge.rhai").is_err());
            prop_assert!(k.run("v.to_list()", "huge.rhai").is_err());
        }
    }
}

/// A valid `.npy` header for `shape` (f4, C order) and `data_len` bytes of data.
fn npy(shape: &str, data_len: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    let mut h = dict.into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((h.len() as u16).to_le_bytes());
    out.extend(h);
    out.extend(std::iter::repeat_n(0u8, data_len));
    out
}

fn loader_engine(dir: &std::path::Path) -> Interpreter {
    let mut k = Interpreter::builder()
        .device(Device::Cpu)
        .allow_files(true)
        .limits(Limits {
            max_memory: Some(64 << 20),
            ..Limits::sandbox()
        })
        .build()
        .unwrap();
    k.set_var("dir", dir.display().to_string());
    k
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x6b69_6c6e), ..ProptestConfig::default() })]

    #[test]
    fn loaders_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        cut in 0usize..600,
        dims in prop::collection::vec(prop_oneof![0u64..5, Just(u64::MAX), Just(1u64 << 40)], 0..70),
        flip in any::<(usize, u8)>(),
    ) {
        let dir = std::env::temp_dir().join(format!("kiln-fuzz-{}-{}", std::process::id(), cut));
        std::fs::create_dir_all(&dir).unwrap();
        let mut k = loader_engine(&dir);
        let shape = format!("({})", dims.iter().map(|d| format!("{d},")).collect::<String>());
        let mut valid = npy(&shape, 16);
        if !valid.is_empty() {
            let at = flip.0 % valid.len();
            valid[at] ^= flip.1;
        }
        let mut st = (bytes.len() as u64).to_le_bytes().to_vec();
        st.extend(&bytes);
        let cases: [(&str, &[u8]); 5] = [
            ("a.npy", &bytes),
            ("b.npy", &valid[..cut.min(valid.len())]),
            ("c.npy", &valid),
            ("d.safetensors", &st),
            ("e.csv", &bytes),
        ];
        for (name, data) in cases {
            std::fs::write(dir.join(name), data).unwrap();
            let load = match name.rsplit('.').next() {
                Some("npy") => "load_npy",
                Some("safetensors") => "load_safetensors",
                _ => "load_csv",
            };
            // an error or a value, never a panic; the engine stays usable
            let _ = k.run(&format!("{load}(dir + \"/{name}\")"), "load.rhai");
            prop_assert_eq!(k.eval::<i64>("arange(3).sum().item()").unwrap(), 3);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
