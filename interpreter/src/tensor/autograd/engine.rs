//! The backward pass: from a root tensor, walks the recorded graph in
//! reverse topological order, runs each node's backward function once its
//! output gradient is complete, accumulates leaf gradients (and those of
//! the non-leaf tensors that `retain_grad` marked), and fires the leaves'
//! post-accumulate hooks as soon as their gradient is final.

use super::*;

/// Adds `g` into a leaf's accumulated gradient.
fn accumulate(meta: &AutogradMeta, g: Tensor, channels_last: bool) -> Result<()> {
    let mut slot = meta.grad_slot();
    let new = match slot.take() {
        None => owned(g, channels_last)?,
        // elementwise results keep the first operand's channels-last order
        Some(acc) => acc.add(&g)?,
    };
    *slot = Some(new);
    Ok(())
}

/// `g` when no one else can see its storage and it is dense in the leaf's
/// memory order (contiguous, or channels last for a channels-last leaf),
/// else a copy in that order: a stored gradient must not alias a tensor the
/// script holds, and the fused optimizer steps read parameters and
/// gradients in one memory order.
fn owned(g: Tensor, channels_last: bool) -> Result<Tensor> {
    let unique = Arc::strong_count(&g.0) == 1 && Arc::strong_count(&g.0.storage) == 1;
    if !channels_last || g.ndim() < 4 {
        return if unique && g.is_contiguous() {
            Ok(g)
        } else {
            g.clone_data()
        };
    }
    let order = crate::core::Layout::channels_last_order(g.ndim());
    let in_order = g.layout().offset() == 0 && g.layout().is_dense_in_order(&order);
    match (unique, in_order) {
        (true, true) => Ok(g),
        // a fresh copy: `dense_in_order` hands back `g` itself when it is in order
        (false, true) => g.clone_data()?.dense_in_order(&order),
        _ => g.dense_in_order(&order),
    }
}

fn key(n: &Arc<Node>) -> *const Node {
    Arc::as_ptr(n)
}

/// Where a backward pass delivers gradients.
pub(super) enum Sink<'a> {
    /// Into the leaves' `grad` (and the non-leaf tensors `retain_grad`
    /// marked), firing the leaves' hooks: `backward()`.
    Accumulate,
    /// Only into the slots of the chosen tensors, nothing else touched:
    /// `autograd::grad`.
    Capture(&'a mut Captured),
}

/// The gradients `autograd::grad` collects: one slot per requested tensor,
/// found by its leaf state or by the node that made it.
pub(super) struct Captured {
    pub(super) leaves: HashMap<*const AutogradMeta, Vec<usize>>,
    pub(super) nodes: HashMap<*const Node, Vec<usize>>,
    pub(super) grads: Vec<Option<Tensor>>,
}

impl Captured {
    fn add(&mut self, slots: Option<Vec<usize>>, g: &Tensor) -> Result<()> {
        for i in slots.into_iter().flatten() {
            self.grads[i] = Some(match self.grads[i].take() {
                Some(acc) => acc.add(g)?,
                None => g.clone(),
            });
        }
        Ok(())
    }

    fn leaf(&mut self, m: &Arc<AutogradMeta>, g: &Tensor) -> Result<()> {
        let slots = self.leaves.get(&Arc::as_ptr(m)).cloned();
        self.add(slots, g)
    }

    fn node(&mut self, n: &Arc<Node>, g: &Tensor) -> Result<()> {
        let slots = self.nodes.get(&key(n)).cloned();
        self.add(slots, g)
    }
}

/// A leaf's gradient from the pass: accumulated or captured.
fn deliver_leaf(sink: &mut Sink<'_>, m: &Arc<AutogradMeta>, g: Tensor, channels_last: bool) -> Result<()> {
    match sink {
        Sink::Accumulate => {
            if m.requires_grad.load(Ordering::Relaxed) {
                accumulate(m, g, channels_last)?;
            }
            Ok(())
        }
        Sink::Capture(c) => c.leaf(m, &g),
    }
}

/// The backward pass from `roots` (each with its gradient): nodes run in
/// topological order (each after every node that feeds it a gradient), the
/// gradients reaching one node are summed, and `sink` says where the
/// leaves' (and chosen non-leaves') gradients go. With
/// [`Sink::Accumulate`], a leaf with hooks runs them when the last of its
/// edges is processed.
pub(super) fn run_backward(roots: Vec<(Tensor, Tensor)>, mut sink: Sink<'_>) -> Result<()> {
    let _guard = NoGradGuard::new();
    // gradients follow the forward's dtypes, whatever autocast says now
    let _autocast = crate::tensor::autocast::AutocastGuard::new(None)?;
    let accumulating = matches!(sink, Sink::Accumulate);
    let mut grads: HashMap<*const Node, Tensor> = HashMap::new();
    let mut root_nodes: Vec<Arc<Node>> = Vec::new();
    for (root, grad) in roots {
        let meta = root
            .autograd_meta()
            .ok_or_else(|| Error::invalid("backward", "the tensor does not require grad"))?;
        match &meta.grad_fn {
            None => {
                let channels_last = crate::tensor::elementwise::channels_last_perm(&root).is_some();
                deliver_leaf(&mut sink, meta, grad, channels_last)?;
                if accumulating && meta.hooked() {
                    meta.fire_hooks()?;
                }
            }
            Some(n) => {
                let sum = match grads.remove(&key(n)) {
                    Some(acc) => acc.add(&grad)?,
                    None => {
                        root_nodes.push(n.clone());
                        grad
                    }
                };
                grads.insert(key(n), sum);
            }
        }
    }
    // How many gradients each reachable node waits for, and how many edges
    // reach each hooked leaf.
    let mut deps: HashMap<*const Node, usize> = HashMap::new();
    let mut leaf_uses: HashMap<*const AutogradMeta, usize> = HashMap::new();
    let mut stack = root_nodes.clone();
    for n in &root_nodes {
        deps.insert(key(n), 0);
    }
    while let Some(n) = stack.pop() {
        for input in &n.inputs {
            match &input.edge {
                Some(Edge::Node(m)) => match deps.get_mut(&key(m)) {
                    Some(c) => *c += 1,
                    None => {
                        deps.insert(key(m), 1);
                        stack.push(m.clone());
                    }
                },
                Some(Edge::Leaf(m)) if accumulating && m.hooked() => {
                    *leaf_uses.entry(Arc::as_ptr(m)).or_insert(0) += 1
                }
                _ => {}
            }
        }
    }
    let mut ready: Vec<Arc<Node>> = root_nodes.into_iter().filter(|n| deps[&key(n)] == 0).collect();
    while let Some(n) = ready.pop() {
        let g = grads.remove(&key(&n));
        let f = n
            .backward
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| {
                Error::invalid(
                    "backward",
                    format!(
                        "the graph through {} was already used by an earlier backward() and its saved tensors are freed; recompute the forward pass",
                        n.name
                    ),
                )
            })?;
        if let Some(g) = &g {
            match &mut sink {
                Sink::Accumulate => {
                    let retained = n.retained.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    if let Some(meta) = retained.and_then(|m| m.upgrade()) {
                        accumulate(&meta, g.clone(), false)?;
                    }
                }
                Sink::Capture(c) => c.node(&n, g)?,
            }
        }
        let needs: Vec<bool> = n.inputs.iter().map(|i| i.edge.is_some()).collect();
        let input_grads = match &g {
            Some(g) => {
                let _span = crate::profiler::span(|| format!("{}_backward", n.name).into());
                f(g, &needs)?
            }
            None => vec![None; n.inputs.len()],
        };
        if input_grads.len() != n.inputs.len() {
            return Err(Error::invalid(
                "backward",
                format!(
                    "{} returned {} gradients for {} inputs",
                    n.name,
                    input_grads.len(),
                    n.inputs.len()
                ),
            ));
        }
        for (input, ig) in n.inputs.iter().zip(input_grads) {
            let Some(edge) = &input.edge else { continue };
            let ig = match ig {
                Some(ig) => Some(fit(n.name, input, ig)?),
                None => None,
            };
            match edge {
                Edge::Leaf(m) => {
                    if let Some(ig) = ig {
                        deliver_leaf(&mut sink, m, ig, input.channels_last)?;
                    }
                    if !leaf_uses.is_empty() {
                        if let Some(c) = leaf_uses.get_mut(&Arc::as_ptr(m)) {
                            *c -= 1;
                            if *c == 0 {
                                m.fire_hooks()?;
                            }
                        }
                    }
                }
                Edge::Node(m) => {
                    if let Some(ig) = ig {
                        let sum = match grads.remove(&key(m)) {
                            Some(acc) => acc.add(&ig)?,
                            None => ig,
                        };
                        grads.insert(key(m), sum);
                    }
                    if let Some(c) = deps.get_mut(&key(m)) {
                        *c -= 1;
                        if *c == 0 {
                            ready.push(m.clone());
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Checks a gradient's shape against its input and converts it to the input's dtype.
fn fit(op: &'static str, input: &Input, g: Tensor) -> Result<Tensor> {
    if g.shape() != input.shape.as_slice() {
        return Err(Error::shape(
            "backward",
            format!(
                "{op} produced a gradient of shape {:?} for an input of shape {:?}",
                g.shape(),
                input.shape
            ),
        ));
    }
    g.to_dtype(input.dtype)
}
