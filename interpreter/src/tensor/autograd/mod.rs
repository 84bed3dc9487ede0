//! Reverse-mode automatic differentiation, PyTorch style: grad mode (a
//! thread-local switch with [`NoGradGuard`] and [`no_grad`]), the autograd
//! metadata a tensor may carry ([`AutogradMeta`]: `requires_grad`, the
//! accumulated `grad`, the `grad_fn` node that made it), the graph [`Node`]s
//! that ops record, and the backward pass.
//!
//! Ops record themselves in their own front-end files through `record`; the
//! backward formulas live in [`functions`]. Backward runs with grad mode off,
//! through the same tensor ops as forward, so it runs on the tensors' device
//! and stays asynchronous there. A node's saved tensors are freed when the
//! backward pass has run it; a second backward through the same graph is an
//! error that says so.
//!
//! A leaf may carry post-accumulate-grad hooks
//! ([`Tensor::register_post_accumulate_grad_hook`]): each runs once per
//! backward pass, as soon as that leaf's gradient is final for the pass (the
//! data-parallel reducer starts communicating a gradient bucket from them
//! while the rest of backward still runs).

mod engine;
use engine::{run_backward, Captured, Sink};
pub mod functions;
mod mode;

pub use mode::{is_grad_enabled, no_grad, set_grad_enabled, GradModeGuard, NoGradGuard};

use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// The backward of one recorded op: given the gradient of its output and
/// which inputs need a gradient, the gradient of each input (`None`: zero or
/// not needed). Runs once; what it captured (the saved tensors) is then freed.
pub(crate) type BackwardFn = Box<dyn FnOnce(&Tensor, &[bool]) -> Result<Vec<Option<Tensor>>> + Send>;

/// A post-accumulate-grad hook: called with the leaf (the parameter) once
/// its gradient is final for a backward pass; an error ends `backward()`
/// with it.
pub type GradHook = dyn Fn(&Tensor) -> Result<()> + Send + Sync;

/// One registered hook of a leaf. Both references are weak: a hook keeps
/// neither its owner nor the parameter alive, and one whose owner has gone
/// does not run.
struct HookEntry {
    id: u64,
    param: Weak<super::TensorImpl>,
    hook: Weak<GradHook>,
}

/// Autograd state of one tensor handle.
pub struct AutogradMeta {
    requires_grad: AtomicBool,
    grad: Mutex<Option<Tensor>>,
    grad_fn: Option<Arc<Node>>,
    /// True while `hooks` is not empty: backward counts the uses of this
    /// leaf only then, so leaves without hooks cost nothing.
    has_hooks: AtomicBool,
    hooks: Mutex<Vec<HookEntry>>,
}

impl AutogradMeta {
    fn new(requires_grad: bool, grad_fn: Option<Arc<Node>>) -> AutogradMeta {
        AutogradMeta {
            requires_grad: AtomicBool::new(requires_grad),
            grad: Mutex::new(None),
            grad_fn,
            has_hooks: AtomicBool::new(false),
            hooks: Mutex::new(Vec::new()),
        }
    }

    fn grad_slot(&self) -> MutexGuard<'_, Option<Tensor>> {
        self.grad.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn hook_list(&self) -> MutexGuard<'_, Vec<HookEntry>> {
        self.hooks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True while some post-accumulate-grad hook is registered.
    #[inline]
    pub(crate) fn hooked(&self) -> bool {
        self.has_hooks.load(Ordering::Acquire)
    }

    /// Runs this leaf's live hooks, in registration order (no lock held).
    fn fire_hooks(&self) -> Result<()> {
        let live: Vec<(Tensor, Arc<GradHook>)> = self
            .hook_list()
            .iter()
            .filter_map(|e| Some((Tensor(e.param.upgrade()?), e.hook.upgrade()?)))
            .collect();
        for (param, hook) in live {
            hook(&param)?;
        }
        Ok(())
    }
}

/// The registration of a post-accumulate-grad hook: it holds the hook, and
/// removes it from the leaf when dropped (or by [`HookHandle::remove`]).
pub struct HookHandle {
    meta: Weak<AutogradMeta>,
    id: u64,
    _hook: Arc<GradHook>,
}

impl HookHandle {
    /// Removes the hook now (dropping the handle does the same).
    pub fn remove(self) {}
}

impl std::fmt::Debug for HookHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HookHandle({})", self.id)
    }
}

impl Drop for HookHandle {
    fn drop(&mut self) {
        if let Some(meta) = self.meta.upgrade() {
            let mut hooks = meta.hook_list();
            hooks.retain(|e| e.id != self.id);
            meta.has_hooks.store(!hooks.is_empty(), Ordering::Release);
        }
    }
}

/// Where an input's gradient goes: the node that made it, or a leaf's grad.
enum Edge {
    Node(Arc<Node>),
    Leaf(Arc<AutogradMeta>),
}

/// One input of a node: its edge (absent when it needs no gradient) and the
/// shape and dtype its gradient must have.
struct Input {
    edge: Option<Edge>,
    shape: Vec<usize>,
    dtype: DType,
    /// A leaf stored channels last keeps its gradient channels last (as
    /// PyTorch's gradient layout contract: the gradient takes the
    /// parameter's strides, so optimizer steps read both in one order).
    channels_last: bool,
}

/// A recorded op in the graph (PyTorch's `grad_fn`).
pub struct Node {
    name: &'static str,
    backward: Mutex<Option<BackwardFn>>,
    inputs: Vec<Input>,
    /// The output's autograd state once `retain_grad()` asked for its
    /// gradient: backward accumulates the node's output gradient there.
    retained: Mutex<Option<Weak<AutogradMeta>>>,
}

impl Node {
    /// The name of the op that recorded this node.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl Drop for Node {
    /// Frees a long chain of nodes without one stack frame per node.
    fn drop(&mut self) {
        let mut stack: Vec<Arc<Node>> = take_node_edges(&mut self.inputs);
        while let Some(n) = stack.pop() {
            if let Ok(mut inner) = Arc::try_unwrap(n) {
                stack.extend(take_node_edges(&mut inner.inputs));
            }
        }
    }
}

fn take_node_edges(inputs: &mut [Input]) -> Vec<Arc<Node>> {
    inputs
        .iter_mut()
        .filter_map(|i| match i.edge.take() {
            Some(Edge::Node(n)) => Some(n),
            other => {
                i.edge = other;
                None
            }
        })
        .collect()
}

/// A tensor a backward formula needs later, with the storage version it had
/// when saved: reading it after an in-place write is an error, not a wrong
/// gradient.
pub(crate) struct Saved {
    tensor: Tensor,
    version: u64,
}

impl Saved {
    /// Saves a detached handle of `t` (no reference back into the graph).
    pub(crate) fn new(t: &Tensor) -> Saved {
        Saved {
            tensor: t.detach(),
            version: t.version(),
        }
    }

    /// The saved tensor, unless its storage was written since.
    pub(crate) fn get(&self, op: &'static str) -> Result<&Tensor> {
        if self.tensor.version() != self.version {
            return Err(Error::invalid(
                "backward",
                format!(
                    "a tensor of shape {:?} that {op} saved for its gradient was modified in place after {op} used it; use an out-of-place op (x = x + y) or clone() it first",
                    self.tensor.shape()
                ),
            ));
        }
        Ok(&self.tensor)
    }
}

/// True when an op on `inputs` must record its backward: grad mode is on and
/// some input requires grad.
#[inline]
pub(crate) fn needs_grad(inputs: &[&Tensor]) -> bool {
    inputs.iter().any(|t| t.requires_grad()) && is_grad_enabled()
}

/// Runs a forward computation with grad mode off, so that the ops it is
/// composed of record nothing of their own.
#[inline]
pub(crate) fn forward<R>(f: impl FnOnce() -> R) -> R {
    no_grad(f)
}

/// Makes `out` the result of op `name` on `inputs` in the graph: a node with
/// `backward` and an edge to every input that requires grad. Non-float results
/// (argmax, comparisons) are returned as they are: they carry no gradient.
pub(crate) fn record(
    name: &'static str,
    inputs: &[&Tensor],
    out: Tensor,
    backward: impl FnOnce(&Tensor, &[bool]) -> Result<Vec<Option<Tensor>>> + Send + 'static,
) -> Tensor {
    if !out.dtype().is_float() {
        return out;
    }
    let inputs = inputs
        .iter()
        .map(|t| {
            let edge = t.edge();
            let leaf = matches!(edge, Some(Edge::Leaf(_)));
            Input {
                channels_last: leaf && crate::tensor::elementwise::channels_last_perm(t).is_some(),
                edge,
                shape: t.shape().to_vec(),
                dtype: t.dtype(),
            }
        })
        .collect();
    let node = Arc::new(Node {
        name,
        backward: Mutex::new(Some(Box::new(backward))),
        inputs,
        retained: Mutex::new(None),
    });
    // A forward may return an input's own handle; the result needs its own.
    let out = if out.autograd_meta().is_some() {
        out.with_checked_layout(out.layout().clone())
    } else {
        out
    };
    let meta = Arc::new(AutogradMeta::new(true, Some(node)));
    let _ = out.autograd_slot().set(meta);
    out
}

/// Backpropagates from every tensor of `outputs` at once
/// (`torch.autograd.backward`), each with its `grads` entry (`None`: ones,
/// for a one-element output): the leaves accumulate the sum of what each
/// output sends them, in one pass through the shared graph.
pub fn backward(outputs: &[Tensor], grads: &[Option<Tensor>]) -> Result<()> {
    let roots = roots("autograd::backward", outputs, grads)?;
    run_backward(roots, Sink::Accumulate)
}

/// Each output with its starting gradient (checked against it), for a
/// backward pass from several outputs.
fn roots(op: &'static str, outputs: &[Tensor], grads: &[Option<Tensor>]) -> Result<Vec<(Tensor, Tensor)>> {
    if grads.len() != outputs.len() {
        return Err(Error::invalid(
            op,
            format!("{} gradients for {} outputs", grads.len(), outputs.len()),
        ));
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (i, (t, g)) in outputs.iter().zip(grads).enumerate() {
        if !t.requires_grad() {
            return Err(Error::invalid(
                op,
                format!(
                    "output {i} (shape {:?}) does not require grad and has no grad_fn",
                    t.shape()
                ),
            ));
        }
        let g = match g {
            Some(g) if g.shape() != t.shape() => {
                return Err(Error::shape(
                    op,
                    format!(
                        "the gradient of output {i} has shape {:?} but the output has shape {:?}",
                        g.shape(),
                        t.shape()
                    ),
                ))
            }
            Some(g) => {
                t.same_device(op, g)?;
                no_grad(|| g.detach().to_dtype(t.dtype()))?
            }
            None if t.numel() == 1 => no_grad(|| t.ones_like())?,
            None => {
                return Err(Error::invalid(
                    op,
                    format!(
                        "a gradient can be implicitly created only for outputs with one element; output {i} has shape {:?}: pass its gradient",
                        t.shape()
                    ),
                ))
            }
        };
        roots.push((t.clone(), g));
    }
    Ok(roots)
}

/// The gradients of `outputs` with respect to `inputs` (`torch.autograd.grad`):
/// one backward pass from every output, weighted by its `grad_outputs`
/// entry (a gradient of the output's shape; `None` means ones, for a
/// one-element output), that touches no tensor's `grad`. An input the
/// outputs do not depend on gets `None`. The pass frees the graph, as
/// `backward()` does.
pub fn grad(
    outputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    inputs: &[Tensor],
) -> Result<Vec<Option<Tensor>>> {
    const OP: &str = "autograd::grad";
    let mut captured = Captured {
        leaves: HashMap::new(),
        nodes: HashMap::new(),
        grads: vec![None; inputs.len()],
    };
    for (i, t) in inputs.iter().enumerate() {
        let meta = t.autograd_meta().filter(|_| t.requires_grad()).ok_or_else(|| {
            Error::invalid(
                OP,
                format!("input {i} (shape {:?}) does not require grad", t.shape()),
            )
        })?;
        match &meta.grad_fn {
            Some(n) => captured.nodes.entry(Arc::as_ptr(n)).or_default().push(i),
            None => captured.leaves.entry(Arc::as_ptr(meta)).or_default().push(i),
        }
    }
    let roots = roots(OP, outputs, grad_outputs)?;
    run_backward(roots, Sink::Capture(&mut captured))?;
    Ok(captured.grads)
}

/// Fails when an in-place write into `dest` (from `src`, if any) would break
/// the graph: a leaf that requires grad (while grad mode is on), a tensor in
/// the graph, or a source that requires grad written into a plain tensor.
pub(crate) fn check_inplace(op: &'static str, dest: &Tensor, src: Option<&Tensor>) -> Result<()> {
    if !is_grad_enabled() {
        return Ok(());
    }
    if dest.requires_grad() {
        return Err(Error::invalid(
            op,
            if dest.is_leaf() {
                "a leaf tensor that requires grad is used in an in-place operation; update it inside no_grad(|| ...) or use an out-of-place op".to_string()
            } else {
                "in-place operations on a tensor that is part of an autograd graph (it requires grad) are not supported; use the out-of-place form (x = x + y)".to_string()
            },
        ));
    }
    if src.is_some_and(|s| s.requires_grad()) {
        return Err(Error::invalid(
            op,
            "writing a tensor that requires grad into one that does not would lose its gradient; build the result with cat/stack/where, or detach() the source",
        ));
    }
    Ok(())
}

impl Tensor {
    /// True when this tensor takes part in autograd: a leaf marked with
    /// [`Tensor::set_requires_grad`], or the result of a recorded op.
    #[inline]
    pub fn requires_grad(&self) -> bool {
        self.autograd_meta()
            .is_some_and(|m| m.requires_grad.load(Ordering::Relaxed))
    }

    /// True for tensors not made by a recorded op (every tensor that does
    /// not require grad, and the parameters that do).
    pub fn is_leaf(&self) -> bool {
        self.autograd_meta().is_none_or(|m| m.grad_fn.is_none())
    }

    /// Keeps this non-leaf tensor's gradient in [`Tensor::grad`] after
    /// backward (`Tensor.retain_grad()`: it accumulates across passes, as
    /// a leaf's does); a no-op for a leaf that requires grad.
    pub fn retain_grad(&self) -> Result<()> {
        let Some(meta) = self.autograd_meta().filter(|_| self.requires_grad()) else {
            return Err(Error::invalid(
                "retain_grad",
                "can't retain the gradient of a tensor that does not require grad",
            ));
        };
        if let Some(node) = &meta.grad_fn {
            *node.retained.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::downgrade(meta));
        }
        Ok(())
    }

    /// True for a non-leaf tensor whose gradient `retain_grad` keeps.
    pub fn retains_grad(&self) -> bool {
        self.autograd_meta()
            .and_then(|m| m.grad_fn.as_ref())
            .is_some_and(|n| n.retained.lock().unwrap_or_else(|p| p.into_inner()).is_some())
    }

    /// The name of the op that made this tensor, when it was recorded.
    pub fn grad_fn_name(&self) -> Option<&'static str> {
        self.autograd_meta()?.grad_fn.as_ref().map(|n| n.name())
    }

    /// Marks a leaf tensor as a parameter whose gradient `backward` accumulates
    /// (float dtypes only).
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        if requires_grad && !self.dtype().is_float() {
            return Err(Error::UnsupportedDType {
                op: "requires_grad",
                dtype: self.dtype(),
                hint: " (only floating-point tensors can require gradients)".into(),
            });
        }
        if !self.is_leaf() {
            if requires_grad {
                return Ok(());
            }
            return Err(Error::invalid(
                "requires_grad",
                "only the flag of leaf tensors can be changed; use detach() to get a tensor outside the graph",
            ));
        }
        if !requires_grad && self.autograd_meta().is_none() {
            return Ok(());
        }
        let meta = self
            .autograd_slot()
            .get_or_init(|| Arc::new(AutogradMeta::new(false, None)));
        meta.requires_grad.store(requires_grad, Ordering::Relaxed);
        Ok(())
    }

    /// The gradient accumulated into this leaf by `backward`, if any.
    pub fn grad(&self) -> Option<Tensor> {
        self.autograd_meta()?.grad_slot().clone()
    }

    /// Replaces the accumulated gradient (`None` clears it); it must have this
    /// tensor's shape, and is stored in this tensor's dtype.
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        let grad = match grad {
            None => {
                if let Some(m) = self.autograd_meta() {
                    *m.grad_slot() = None;
                }
                return Ok(());
            }
            Some(g) => g,
        };
        if grad.shape() != self.shape() {
            return Err(Error::shape(
                "grad",
                format!(
                    "a gradient of shape {:?} does not fit a tensor of shape {:?}",
                    grad.shape(),
                    self.shape()
                ),
            ));
        }
        self.same_device("grad", &grad)?;
        if !self.dtype().is_float() {
            return Err(Error::dtype("grad", self.dtype()));
        }
        let g = no_grad(|| grad.detach().to_dtype(self.dtype()))?;
        let meta = self
            .autograd_slot()
            .get_or_init(|| Arc::new(AutogradMeta::new(false, None)));
        *meta.grad_slot() = Some(g);
        Ok(())
    }

    /// Registers `hook` to run once per backward pass, when this leaf's
    /// gradient is final for the pass (every use of the leaf in the graph
    /// backward reached has been processed, whether or not it carried a
    /// gradient), with this leaf as its argument; PyTorch's
    /// `register_post_accumulate_grad_hook`. The hook runs on the thread of
    /// `backward()` with no autograd lock held; its error ends the backward
    /// pass. The leaf only holds the hook weakly: it stays registered while
    /// the returned handle lives.
    pub fn register_post_accumulate_grad_hook(&self, hook: Arc<GradHook>) -> Result<HookHandle> {
        let op = "register_post_accumulate_grad_hook";
        if !self.is_leaf() || !self.requires_grad() {
            return Err(Error::invalid(
                op,
                if self.is_leaf() {
                    "the tensor does not require grad; call requires_grad(true) first"
                } else {
                    "hooks go on leaf tensors (parameters), not on results of recorded ops"
                },
            ));
        }
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let meta = self
            .autograd_meta()
            .ok_or_else(|| Error::invalid(op, "the tensor does not require grad"))?;
        let mut hooks = meta.hook_list();
        hooks.push(HookEntry {
            id,
            param: Arc::downgrade(&self.0),
            hook: Arc::downgrade(&hook),
        });
        meta.has_hooks.store(true, Ordering::Release);
        Ok(HookHandle {
            meta: Arc::downgrade(meta),
            id,
            _hook: hook,
        })
    }

    /// Clears the accumulated gradient (PyTorch's `zero_grad(set_to_none=True)`).
    pub fn zero_grad(&self) {
        if let Some(m) = self.autograd_meta() {
            *m.grad_slot() = None;
        }
    }

    /// A handle on the same data outside the graph: it does not require grad.
    pub fn detach(&self) -> Tensor {
        self.with_checked_layout(self.layout().clone())
    }

    /// Backpropagates from this one-element tensor (its gradient is 1).
    pub fn backward(&self) -> Result<()> {
        if self.numel() != 1 {
            return Err(Error::invalid(
                "backward",
                format!(
                    "a gradient can be implicitly created only for a tensor with one element, got shape {:?}; pass one: t.backward(grad)",
                    self.shape()
                ),
            ));
        }
        self.check_backward_root()?;
        let g = no_grad(|| self.ones_like())?;
        run_backward(vec![(self.clone(), g)], Sink::Accumulate)
    }

    /// Backpropagates from this tensor with `grad` as its gradient.
    pub fn backward_with(&self, grad: &Tensor) -> Result<()> {
        if grad.shape() != self.shape() {
            return Err(Error::shape(
                "backward",
                format!(
                    "the gradient has shape {:?} but the tensor has shape {:?}",
                    grad.shape(),
                    self.shape()
                ),
            ));
        }
        self.same_device("backward", grad)?;
        self.check_backward_root()?;
        let g = no_grad(|| grad.detach().to_dtype(self.dtype()))?;
        run_backward(vec![(self.clone(), g)], Sink::Accumulate)
    }

    fn check_backward_root(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::invalid(
                "backward",
                "the tensor does not require grad and has no grad_fn (no input of the ops that made it requires grad, or it was computed inside no_grad)",
            ));
        }
        Ok(())
    }

    /// The edge a recorded op keeps to this input.
    fn edge(&self) -> Option<Edge> {
        let m = self.autograd_meta()?;
        match &m.grad_fn {
            Some(n) => Some(Edge::Node(n.clone())),
            None if m.requires_grad.load(Ordering::Relaxed) => Some(Edge::Leaf(m.clone())),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Device;

    fn t(v: &[f32], shape: &[usize]) -> Tensor {
        Tensor::from_f32(v, shape, Device::Cpu).unwrap()
    }

    fn values(t: &Tensor) -> Vec<f64> {
        match t.to_host().unwrap() {
            crate::tensor::HostValues::Float(v) => v,
            other => panic!("not floats: {other:?}"),
        }
    }

    #[test]
    fn grad_mode_is_restored() {
        assert!(is_grad_enabled());
        no_grad(|| {
            assert!(!is_grad_enabled());
            no_grad(|| assert!(!is_grad_enabled()));
            assert!(!is_grad_enabled());
        });
        assert!(is_grad_enabled());
    }

    #[test]
    fn tensors_stay_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Tensor>();
    }

    #[test]
    fn nothing_is_recorded_without_requires_grad_or_in_no_grad() {
        let a = t(&[1.0, 2.0], &[2]);
        assert!(a.exp().unwrap().autograd_meta().is_none());
        a.set_requires_grad(true).unwrap();
        let y = no_grad(|| a.exp().unwrap());
        assert!(!y.requires_grad());
        assert!(a.exp().unwrap().requires_grad());
    }

    #[test]
    fn a_long_chain_runs_and_drops_without_deep_recursion() {
        let a = t(&[1.0], &[1]);
        a.set_requires_grad(true).unwrap();
        let mut y = a.clone();
        for _ in 0..100_000 {
            y = y.add_scalar(1.0).unwrap();
        }
        y.sum().unwrap().backward().unwrap();
        assert_eq!(values(&a.grad().unwrap()), vec![1.0]);
        drop(y);
    }

    #[test]
    fn uses_sum_and_second_backward_fails() {
        let a = t(&[3.0], &[1]);
        a.set_requires_grad(true).unwrap();
        let y = a.mul(&a).unwrap().add(&a).unwrap().sum().unwrap();
        y.backward().unwrap();
        assert_eq!(values(&a.grad().unwrap()), vec![7.0]);
        let e = y.backward().unwrap_err().to_string();
        assert!(e.contains("already used"), "{e}");
    }

    #[test]
    fn saved_tensor_modified_in_place_is_an_error() {
        let a = t(&[1.0, 2.0], &[2]);
        a.set_requires_grad(true).unwrap();
        let x = t(&[3.0, 4.0], &[2]);
        let y = a.mul(&x).unwrap().sum().unwrap();
        x.binary_scalar_(crate::core::op::BinaryOp::Add, crate::tensor::Scalar::Float(1.0))
            .unwrap();
        let e = y.backward().unwrap_err().to_string();
        assert!(e.contains("modified in place"), "{e}");
    }

    /// What the hooks of a test saw: `(name, grad)` per call.
    type Log = Arc<Mutex<Vec<(&'static str, Vec<f64>)>>>;

    /// A hook that records `(name, grad)` into `log` each time it runs.
    fn logging_hook(name: &'static str, log: &Log) -> Arc<GradHook> {
        let log = log.clone();
        Arc::new(move |p: &Tensor| {
            let g = p.grad().map(|g| values(&g)).unwrap_or_default();
            log.lock().unwrap().push((name, g));
            Ok(())
        })
    }

    #[test]
    fn a_hook_fires_once_with_the_summed_grad_in_backward_order() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let x = t(&[1.0, 2.0], &[2]);
        let w1 = t(&[3.0, 4.0], &[2]);
        let w2 = t(&[5.0, 6.0], &[2]);
        let unused = t(&[0.0], &[1]);
        for p in [&w1, &w2, &unused] {
            p.set_requires_grad(true).unwrap();
        }
        let _h1 = w1
            .register_post_accumulate_grad_hook(logging_hook("w1", &log))
            .unwrap();
        let _h2 = w2
            .register_post_accumulate_grad_hook(logging_hook("w2", &log))
            .unwrap();
        let _h3 = unused
            .register_post_accumulate_grad_hook(logging_hook("unused", &log))
            .unwrap();
        // w1 is used twice: (x * w1 + w1) * w2
        let a = x.mul(&w1).unwrap().add(&w1).unwrap();
        a.mul(&w2).unwrap().sum().unwrap().backward().unwrap();
        let got = log.lock().unwrap().clone();
        // w2 is final first (the last op), then w1 with both uses summed
        assert_eq!(got, vec![("w2", vec![6.0, 12.0]), ("w1", vec![10.0, 18.0])]);
        assert_eq!(values(&w1.grad().unwrap()), vec![10.0, 18.0]);
        // a second pass fires again, with the accumulated grads
        log.lock().unwrap().clear();
        x.mul(&w1).unwrap().sum().unwrap().backward().unwrap();
        assert_eq!(log.lock().unwrap().clone(), vec![("w1", vec![11.0, 20.0])]);
    }

    #[test]
    fn hooks_fire_for_a_leaf_root_and_once_for_several_paths() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let w = t(&[2.0], &[1]);
        w.set_requires_grad(true).unwrap();
        let _h = w
            .register_post_accumulate_grad_hook(logging_hook("w", &log))
            .unwrap();
        w.backward().unwrap();
        assert_eq!(log.lock().unwrap().clone(), vec![("w", vec![1.0])]);
        // reached directly and through a node: once, after both
        log.lock().unwrap().clear();
        w.zero_grad();
        let m = w.mul_scalar(3.0).unwrap().add(&w).unwrap();
        m.sum().unwrap().backward().unwrap();
        assert_eq!(log.lock().unwrap().clone(), vec![("w", vec![4.0])]);
    }

    #[test]
    fn removed_or_dropped_hooks_do_not_fire_and_errors_propagate() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let w = t(&[2.0], &[1]);
        w.set_requires_grad(true).unwrap();
        let h = w
            .register_post_accumulate_grad_hook(logging_hook("a", &log))
            .unwrap();
        let h2 = w
            .register_post_accumulate_grad_hook(logging_hook("b", &log))
            .unwrap();
        h.remove();
        w.mul_scalar(2.0).unwrap().sum().unwrap().backward().unwrap();
        assert_eq!(log.lock().unwrap().clone(), vec![("b", vec![2.0])]);
        drop(h2);
        assert!(!w.autograd_meta().unwrap().hooked());
        w.mul_scalar(2.0).unwrap().sum().unwrap().backward().unwrap();
        assert_eq!(log.lock().unwrap().len(), 1);
        let failing: Arc<GradHook> = Arc::new(|_: &Tensor| Err(Error::invalid("hook", "refused")));
        let _h3 = w.register_post_accumulate_grad_hook(failing).unwrap();
        let e = w.mul_scalar(2.0).unwrap().sum().unwrap().backward().unwrap_err();
        assert!(e.to_string().contains("refused"), "{e}");
        // a hook keeps neither its leaf alive nor fires for a dropped one
        let weak = Arc::downgrade(&w.0);
        drop(w);
        assert!(weak.upgrade().is_none());
        let plain = t(&[1.0], &[1]);
        assert!(plain
            .register_post_accumulate_grad_hook(logging_hook("c", &log))
            .is_err());
        plain.set_requires_grad(true).unwrap();
        let y = plain.mul_scalar(1.0).unwrap();
        assert!(y
            .register_post_accumulate_grad_hook(logging_hook("c", &log))
            .is_err());
    }
}
