//! The autograd graph's behaviour: accumulation, zero_grad, detach,
//! no_grad, shared inputs, broadcasting, non-scalar roots, in-place errors
//! and ops that must not record.

mod common;

use common::*;
use kiln::core::op::{BinaryOp, ReduceOp};
use kiln::tensor::autograd::{is_grad_enabled, no_grad};
use kiln::tensor::HostValues;
use kiln::{DType, Device, Interpreter, Scalar, Tensor};

// ------------------------------------------------------------ graph behaviour

#[test]
fn gradients_accumulate_until_zero_grad() {
    let x = param(&[1.0, 2.0], &[2]);
    x.mul_scalar(3.0).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![3.0, 3.0]);
    x.mul(&x).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![5.0, 7.0]);
    x.zero_grad();
    assert!(x.grad().is_none());
    x.sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![1.0, 1.0]);
}

#[test]
fn detach_stops_the_gradient() {
    let x = param(&[2.0, 3.0], &[2]);
    let d = x.detach();
    assert!(!d.requires_grad() && d.is_leaf() && d.shares_storage(&x));
    // y = x * detach(x): dy/dx = detach(x) only
    x.mul(&d).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![2.0, 3.0]);
    let y = x.exp().unwrap().detach();
    assert!(!y.requires_grad());
    assert!(y.sum().unwrap().backward().is_err());
}

#[test]
fn no_grad_records_nothing_and_restores_the_mode() {
    let x = param(&[1.0, 2.0], &[2]);
    let y = no_grad(|| x.mul_scalar(2.0).unwrap());
    assert!(!y.requires_grad() && y.grad_fn_name().is_none());
    assert!(is_grad_enabled());
    let e = y.sum().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("does not require grad"), "{e}");
    // in a script, also when the closure fails
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let r: rhai::Array = k
        .eval(
            "let w = ones([2]).requires_grad(true);
             let a = no_grad(|| (w * 2).requires_grad);
             let inner = no_grad(|| enable_grad(|| (w * 2).requires_grad));
             let before = is_grad_enabled();
             try { no_grad(|| { let z = w * 2; throw \"boom\"; }); } catch (e) { }
             try { no_grad(|| w.reshape([5])); } catch (e) { }
             [a, inner, before, is_grad_enabled(), (w * 2).requires_grad]",
        )
        .unwrap();
    let r: Vec<bool> = r.into_iter().map(|v| v.as_bool().unwrap()).collect();
    assert_eq!(r, vec![false, true, true, true, true]);
    assert!(is_grad_enabled());
}

#[test]
fn a_leaf_used_twice_and_a_diamond() {
    let x = param(&[0.5, -1.0], &[2]);
    // y = x * x + x: dy/dx = 2x + 1
    x.mul(&x)
        .unwrap()
        .add(&x)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(grad_of(&x), vec![2.0, -1.0]);
    // a = exp(x); y = 2a + sin(a): dy/dx = (2 + cos(a)) a
    let x = param(&[0.3, -0.7], &[2]);
    let a = x.exp().unwrap();
    let y = a.mul_scalar(2.0).unwrap().add(&a.sin().unwrap()).unwrap();
    y.sum().unwrap().backward().unwrap();
    let want: Vec<f64> = [0.3f64, -0.7]
        .iter()
        .map(|v| (2.0 + v.exp().cos()) * v.exp())
        .collect();
    assert_close("diamond", &grad_of(&x), &want);
}

#[test]
fn broadcast_gradients_are_reduced_to_the_input_shape() {
    let a = param(&[1.0, 2.0, 3.0], &[3, 1]);
    let b = param(&[10.0, 20.0, 30.0, 40.0], &[1, 4]);
    let c = param(&[5.0], &[]);
    a.mul(&b)
        .unwrap()
        .add(&c)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(a.grad().unwrap().shape(), &[3, 1]);
    assert_eq!(grad_of(&a), vec![100.0, 100.0, 100.0]);
    assert_eq!(b.grad().unwrap().shape(), &[1, 4]);
    assert_eq!(grad_of(&b), vec![6.0, 6.0, 6.0, 6.0]);
    assert_eq!(c.grad().unwrap().shape(), &[] as &[usize]);
    assert_eq!(grad_of(&c), vec![12.0]);
}

#[test]
fn backward_with_a_gradient_for_non_scalar_outputs() {
    let x = param(&[1.0, 2.0, 3.0], &[3]);
    let y = x.mul(&x).unwrap();
    let e = y.backward().unwrap_err().to_string();
    assert!(e.contains("one element"), "{e}");
    let bad = f64_tensor(&[1.0, 1.0], &[2]);
    assert!(y.backward_with(&bad).is_err());
    y.backward_with(&f64_tensor(&[1.0, 0.5, -1.0], &[3])).unwrap();
    assert_eq!(grad_of(&x), vec![2.0, 2.0, -6.0]);
    // a second backward through the freed graph is an error
    let e = y
        .backward_with(&f64_tensor(&[1.0, 1.0, 1.0], &[3]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("already used"), "{e}");
    // from a script, with a tensor or a number
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let g: rhai::Array = k
        .eval(
            "let x = tensor([1.0, 2.0]).requires_grad(true);
             (x * 3.0).backward(tensor([1.0, -1.0]));
             (x * x).backward(2.0);
             x.grad.to_list()",
        )
        .unwrap();
    let g: Vec<f64> = g.into_iter().map(|v| v.as_float().unwrap()).collect();
    assert_eq!(g, vec![3.0 + 4.0, -3.0 + 8.0]);
}

#[test]
fn in_place_errors() {
    let x = param(&[1.0, 2.0], &[2]);
    let one = f64_tensor(&[1.0, 1.0], &[2]);
    // a leaf that requires grad
    let e = x.binary_(BinaryOp::Add, &one).unwrap_err().to_string();
    assert!(e.contains("leaf"), "{e}");
    assert!(x.copy_(&one).is_err());
    // fine inside no_grad (the optimizer step)
    no_grad(|| x.binary_scalar_(BinaryOp::Sub, Scalar::Float(0.5))).unwrap();
    assert_eq!(values(&x), vec![0.5, 1.5]);
    // a tensor in the graph
    let y = x.mul_scalar(2.0).unwrap();
    let e = y
        .binary_scalar_(BinaryOp::Mul, Scalar::Int(2))
        .unwrap_err()
        .to_string();
    assert!(e.contains("part of an autograd graph"), "{e}");
    // a tensor that requires grad written into a plain one
    let plain = f64_tensor(&[0.0, 0.0], &[2]);
    let e = plain.copy_(&y).unwrap_err().to_string();
    assert!(e.contains("lose its gradient"), "{e}");
    assert!(plain.binary_(BinaryOp::Add, &y).is_err());
    // a saved tensor modified in place (under no_grad) makes backward fail
    let s = f64_tensor(&[3.0, 4.0], &[2]);
    let z = x.mul(&s).unwrap().sum().unwrap();
    s.binary_scalar_(BinaryOp::Add, Scalar::Float(1.0)).unwrap();
    let e = z.backward().unwrap_err().to_string();
    assert!(e.contains("modified in place"), "{e}");
    // from a script: the message carries the position
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let e = k
        .run("let w = ones([2]).requires_grad(true);\nw += 1;", "s.rhai")
        .unwrap_err();
    assert_eq!(e.line, Some(2));
    assert!(
        e.message.contains("leaf tensor that requires grad"),
        "{}",
        e.message
    );
}

#[test]
fn backward_of_a_tensor_without_grad_is_an_error() {
    let x = f64_tensor(&[1.0], &[1]);
    let e = x.backward().unwrap_err().to_string();
    assert!(e.contains("does not require grad"), "{e}");
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let e = k
        .run("let a = ones([1]);\n(a * 2).sum().backward();", "s.rhai")
        .unwrap_err();
    assert_eq!(e.line, Some(2));
    assert!(e.message.contains("does not require grad"), "{}", e.message);
}

#[test]
fn integer_and_bool_results_do_not_record() {
    let x = param(&[1.0, -2.0, 3.0], &[3]);
    assert!(!x
        .compare_scalar(kiln::core::op::CmpOp::Gt, Scalar::Int(0), false)
        .unwrap()
        .requires_grad());
    assert!(!x.reduce(ReduceOp::ArgMax, None, false).unwrap().requires_grad());
    assert!(!x.reduce(ReduceOp::Any, None, false).unwrap().requires_grad());
    assert!(!x.to_dtype(DType::I32).unwrap().requires_grad());
    let i = Tensor::from_host(&HostValues::Int(vec![1, 2, 3]), &[3], DType::I64, Device::Cpu).unwrap();
    assert!(i.set_requires_grad(true).is_err());
    assert!(!i.add(&i).unwrap().requires_grad());
    assert!(!i.sum().unwrap().requires_grad());
    // an int operand next to a float parameter: only the parameter gets a gradient
    x.mul(&i).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![1.0, 2.0, 3.0]);
}

#[test]
fn script_properties() {
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let r: rhai::Array = k
        .eval(
            "let w = tensor([1.0, 2.0]);
             let a = [w.requires_grad, w.is_leaf, w.grad == ()];
             w.requires_grad(true);
             let y = (w * 2).sum();
             let b = [w.requires_grad, y.is_leaf, y.grad_fn, w.grad_fn == (), y.grad == ()];
             w.grad = ones([2]);
             let c = w.grad.to_list();
             w.grad = ();
             let d = w.grad == ();
             w.requires_grad = false;
             let e = [w.requires_grad, w.detach().requires_grad];
             let f = tensor([1.0], #{requires_grad: true}).requires_grad;
             [a, b, c, d, e, f]",
        )
        .unwrap();
    let s = format!("{r:?}");
    assert_eq!(
        s,
        "[[false, true, true], [true, false, \"sum\", true, true], [1.0, 1.0], true, [false, false], true]"
    );
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    for (src, msg) in [
        ("let a = ones([2]); a.grad = 3;", "expected a tensor or ()"),
        (
            "let a = ones([2]).requires_grad(true); a.grad = ones([3]);",
            "does not fit",
        ),
        ("arange(3).requires_grad(true)", "only floating-point"),
        (
            "(ones([2]).requires_grad(true) * 2).requires_grad(false)",
            "only the flag of leaf",
        ),
    ] {
        let e = k.run(src, "s.rhai").unwrap_err();
        assert!(e.message.contains(msg), "{src}: {}", e.message);
    }
}
