//! `ctc_loss` against a brute-force sum over every alignment, its gradient
//! (through `log_softmax` by finite differences, and PyTorch's direct
//! gradient `exp(log_probs) - occupancy`), its errors; and
//! `triplet_margin_with_distance_loss` with its default and a caller's
//! distance.

mod common;

use common::*;
use kiln::tensor::loss::{CtcOptions, Reduction};
use kiln::tensor::HostValues;
use kiln::{DType, Device, Result, Tensor};

/// The probability that `probs` (`[T][C]`) emit `target` with blank `blank`:
/// the sum over all `C^T` paths that collapse to it.
fn brute_force(probs: &[Vec<f64>], target: &[i64], blank: i64) -> f64 {
    let (steps, classes) = (probs.len(), probs[0].len());
    let mut total = 0.0;
    for code in 0..classes.pow(steps as u32) {
        let path: Vec<i64> = (0..steps)
            .map(|t| (code / classes.pow(t as u32) % classes) as i64)
            .collect();
        let mut collapsed = Vec::new();
        for (t, &c) in path.iter().enumerate() {
            if c != blank && (t == 0 || path[t - 1] != c) {
                collapsed.push(c);
            }
        }
        if collapsed == target {
            total += path
                .iter()
                .enumerate()
                .map(|(t, &c)| probs[t][c as usize])
                .product::<f64>();
        }
    }
    total
}

/// Log-softmax rows `[T, N, C]` from seeded logits, as host rows per sample.
fn log_probs(name: &str, t: usize, n: usize, c: usize) -> (Vec<f64>, Tensor) {
    let mut rng = Rng::new(name);
    let logits = f64_tensor(&rng.signed(t * n * c, 0.0, 2.0), &[t, n, c]);
    let lp = logits.log_softmax(2).unwrap();
    (values(&lp), lp)
}

fn ints(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_host(&HostValues::Int(v.to_vec()), shape, DType::I64, Device::Cpu).unwrap()
}

fn opts(reduction: Reduction, zero_infinity: bool) -> CtcOptions {
    CtcOptions {
        reduction,
        zero_infinity,
        ..CtcOptions::default()
    }
}

#[test]
fn ctc_matches_the_sum_over_alignments() {
    let (t, n, c) = (5, 4, 3);
    let (lp, lpt) = log_probs("ctc brute", t, n, c);
    // repeated labels need a blank between them; sample 3 has no target
    let targets = [vec![1, 2], vec![1, 1], vec![2, 1, 2], vec![]];
    let input_lengths = [5, 4, 5, 3];
    let padded: Vec<i64> = targets
        .iter()
        .flat_map(|tg| (0..3).map(move |j| tg.get(j).copied().unwrap_or(0)))
        .collect();
    let target_lengths: Vec<i64> = targets.iter().map(|tg| tg.len() as i64).collect();
    let got = lpt
        .ctc_loss(
            &ints(&padded, &[n, 3]),
            &input_lengths,
            &target_lengths,
            &opts(Reduction::None, false),
        )
        .unwrap();
    let want: Vec<f64> = (0..n)
        .map(|i| {
            let rows: Vec<Vec<f64>> = (0..input_lengths[i] as usize)
                .map(|s| (0..c).map(|k| lp[(s * n + i) * c + k].exp()).collect())
                .collect();
            -brute_force(&rows, &targets[i], 0).ln()
        })
        .collect();
    assert_close("ctc_loss per sample", &values(&got), &want);

    // the same targets concatenated, and the mean divided by target lengths
    let flat: Vec<i64> = targets.iter().flatten().copied().collect();
    let mean = lpt
        .ctc_loss(
            &ints(&flat, &[flat.len()]),
            &input_lengths,
            &target_lengths,
            &opts(Reduction::Mean, false),
        )
        .unwrap();
    let want_mean = want
        .iter()
        .zip(&target_lengths)
        .map(|(l, &s)| l / s.max(1) as f64)
        .sum::<f64>()
        / n as f64;
    assert_close("ctc_loss mean", &values(&mean), &[want_mean]);
}

#[test]
fn ctc_blank_elsewhere_and_one_sample() {
    let (t, c) = (4, 3);
    let (lp, lpt) = log_probs("ctc blank 2", t, 1, c);
    let one = lpt.squeeze(Some(&[1])).unwrap();
    let o = CtcOptions {
        blank: 2,
        reduction: Reduction::Sum,
        zero_infinity: false,
    };
    let got = one.ctc_loss(&ints(&[0, 1], &[2]), &[4], &[2], &o).unwrap();
    assert_eq!(got.shape(), &[] as &[usize]);
    let rows: Vec<Vec<f64>> = (0..t)
        .map(|s| (0..c).map(|k| lp[s * c + k].exp()).collect())
        .collect();
    assert_close(
        "unbatched ctc_loss",
        &values(&got),
        &[-brute_force(&rows, &[0, 1], 2).ln()],
    );
}

#[test]
fn ctc_impossible_alignments() {
    let (lp, lpt) = log_probs("ctc impossible", 3, 2, 3);
    let _ = lp;
    // sample 0 needs 4 steps for [1, 1] (a blank between); it has 2
    let targets = ints(&[1, 1, 2, 0], &[2, 2]);
    let inf = lpt
        .ctc_loss(&targets, &[2, 3], &[2, 1], &opts(Reduction::None, false))
        .unwrap();
    let v = values(&inf);
    assert!(v[0].is_infinite() && v[0] > 0.0, "{v:?}");
    assert!(v[1].is_finite());
    let x = param(&values(&lpt), &[3, 2, 3]);
    let zeroed = x
        .ctc_loss(&targets, &[2, 3], &[2, 1], &opts(Reduction::Sum, true))
        .unwrap();
    assert_close("zero_infinity", &values(&zeroed), &[v[1]]);
    zeroed.backward().unwrap();
    let g = grad_of(&x);
    // sample 0's gradient is zero everywhere, sample 1's is not
    for s in 0..3 {
        for k in 0..3 {
            assert_eq!(g[(s * 2) * 3 + k], 0.0);
        }
    }
    assert!(g.iter().any(|&x| x != 0.0));
}

#[test]
fn ctc_gradient_through_log_softmax() {
    let mut rng = Rng::new("ctc grad");
    let logits = sgn(&mut rng, &[6, 3, 4], 0.1, 1.5);
    let targets = ints(&[1, 3, 3, 2, 0, 0, 2, 1, 1], &[3, 3]);
    for (name, r) in [
        ("mean", Reduction::Mean),
        ("sum", Reduction::Sum),
        ("none", Reduction::None),
    ] {
        gradcheck(&format!("ctc_loss {name}"), std::slice::from_ref(&logits), |t| {
            t[0].log_softmax(2)?
                .ctc_loss(&targets, &[6, 5, 4], &[3, 1, 3], &opts(r, false))
        });
    }
}

/// PyTorch's kernel returns `exp(lp) - occupancy` as the gradient in
/// `log_probs` (the occupancy is the true derivative), so the two differ by
/// `exp(lp)` within each sample's steps.
#[test]
fn ctc_direct_gradient_is_pytorchs() {
    let (lp, _) = log_probs("ctc direct", 4, 2, 3);
    let targets = ints(&[1, 2, 2, 0], &[2, 2]);
    let (inputs, lens) = ([4, 3], [2, 1]);
    let x = param(&lp, &[4, 2, 3]);
    x.ctc_loss(&targets, &inputs, &lens, &opts(Reduction::Sum, false))
        .unwrap()
        .backward()
        .unwrap();
    let loss = |v: &[f64]| -> f64 {
        let t = f64_tensor(v, &[4, 2, 3]);
        values(
            &t.ctc_loss(&targets, &inputs, &lens, &opts(Reduction::Sum, false))
                .unwrap(),
        )[0]
    };
    let want: Vec<f64> = (0..lp.len())
        .map(|j| {
            let (mut plus, mut minus) = (lp.clone(), lp.clone());
            plus[j] += EPS;
            minus[j] -= EPS;
            let step = j / 6;
            let sample = (j / 3) % 2;
            let extra = if (step as i64) < inputs[sample] {
                lp[j].exp()
            } else {
                0.0
            };
            (loss(&plus) - loss(&minus)) / (2.0 * EPS) + extra
        })
        .collect();
    assert_close("ctc_loss gradient in log_probs", &grad_of(&x), &want);
}

#[test]
fn ctc_errors_name_the_op() {
    let (_, lp) = log_probs("ctc errors", 3, 2, 3);
    let targets = ints(&[1, 2, 1, 0], &[2, 2]);
    let o = opts(Reduction::Mean, false);
    let cases: Vec<(&str, Result<Tensor>)> = vec![
        ("too long an input", lp.ctc_loss(&targets, &[4, 3], &[2, 1], &o)),
        ("lengths per sample", lp.ctc_loss(&targets, &[3], &[2, 1], &o)),
        (
            "label out of range",
            lp.ctc_loss(&ints(&[1, 5, 1, 0], &[2, 2]), &[3, 3], &[2, 1], &o),
        ),
        ("targets too short", lp.ctc_loss(&targets, &[3, 3], &[3, 1], &o)),
        ("blank out of range", {
            let b = CtcOptions { blank: 3, ..o };
            lp.ctc_loss(&targets, &[3, 3], &[2, 1], &b)
        }),
        ("float targets", lp.ctc_loss(&lp, &[3, 3], &[2, 1], &o)),
        (
            "2-d log_probs with 2-d targets",
            lp.select(1, 0).unwrap().ctc_loss(&targets, &[3], &[2], &o),
        ),
    ];
    for (what, r) in cases {
        let e = r.err().unwrap_or_else(|| panic!("{what}: no error")).to_string();
        assert!(e.contains("ctc_loss"), "{what}: {e}");
    }
}

#[test]
fn triplet_with_distance() {
    let mut rng = Rng::new("triplet distance");
    let a = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let p = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let n = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    // the default distance is triplet_margin_loss's
    let [ta, tp, tn] = [&a, &p, &n].map(|i| f64_tensor(&i.values, &i.shape));
    let mut pairwise = |x: &Tensor, y: &Tensor| x.pairwise_distance(y, 2.0, 1e-6, false);
    let with = ta
        .triplet_margin_with_distance_loss(&tp, &tn, &mut pairwise, 2.0, true, Reduction::None)
        .unwrap();
    let plain = ta
        .triplet_margin_loss(&tp, &tn, 2.0, 2.0, 1e-6, true, Reduction::None)
        .unwrap();
    assert_close("default distance", &values(&with), &values(&plain));
    // a cosine distance, with the swap
    gradcheck("triplet_margin_with_distance_loss", &[a, p, n], |t| {
        let mut cosine = |x: &Tensor, y: &Tensor| x.cosine_similarity(y, 1, 1e-8)?.neg()?.add_scalar(1.0);
        t[0].triplet_margin_with_distance_loss(&t[1], &t[2], &mut cosine, 0.7, true, Reduction::Mean)
    });
    let mut pairwise = |x: &Tensor, y: &Tensor| x.pairwise_distance(y, 2.0, 1e-6, false);
    let e = ta
        .triplet_margin_with_distance_loss(&tp, &tn, &mut pairwise, 0.0, false, Reduction::Mean)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("triplet_margin_with_distance_loss") && e.contains("margin"),
        "{e}"
    );
}
