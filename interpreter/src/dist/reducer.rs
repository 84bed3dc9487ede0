//! Bucketed gradient averaging overlapped with backward, after PyTorch
//! DDP's `Reducer`: [`Reducer`] groups the parameters into buckets (in
//! reverse order, since backward makes the last layers' gradients first;
//! by device and dtype; up to a cap in bytes), registers a
//! post-accumulate-grad hook on each parameter, and as soon as every
//! gradient of a bucket is final it copies them into the bucket's flat
//! buffer and starts one `all_reduce(Mean)` of it while backward goes on.
//! [`Reducer::wait`] finishes the round and writes the averages back into
//! the `.grad`s. Also here: the same bucketing for one-shot use
//! ([`ProcessGroup::all_reduce_coalesced`]).
//!
//! Buckets are launched strictly in bucket order, so every rank issues the
//! same collectives in the same order whatever order its gradients come
//! in. Over the host transport a reducer's thread runs the collectives one
//! after another; a CUDA bucket that the group reduces with NCCL is
//! enqueued on a stream of the reducer's own and returns at once.
//!
//! Every rank must produce gradients for the same parameters: a bucket in
//! which no parameter got a gradient is skipped, and a parameter without a
//! gradient in a bucket that has some contributes zeros (and keeps no
//! gradient). The collectives of the reducer and those the script calls
//! itself must not interleave: call other collectives before `backward()`
//! or after `wait()`.

use super::{ProcessGroup, ReduceOp, Transport};
use crate::backend::cuda::{CudaRuntime, EngineStream};
use crate::core::error::{Error, Result};
use crate::core::{DType, Device, Scalar};
use crate::tensor::autograd::{GradHook, HookHandle, NoGradGuard};
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex, MutexGuard, Weak};

/// The default bucket cap: 25 MiB, as in PyTorch's DDP.
pub const DEFAULT_BUCKET_CAP_BYTES: usize = 25 * 1024 * 1024;

/// True when a reducer on `group` communicates: a group of more than one
/// process, or a transport named explicitly (`KILN_DIST_BACKEND=nccl` or
/// `host`: how a single process, e.g. on one GPU, tests the path).
fn communicates(group: &ProcessGroup) -> bool {
    group.world_size() > 1 || group.transport() != Transport::Auto
}

/// One bucket of a plan: the tensors it holds (indices into the caller's
/// list, in bucket order), where each starts in the flat buffer, and the
/// device and dtype they share.
#[derive(Clone, Debug, PartialEq)]
struct Plan {
    members: Vec<usize>,
    offsets: Vec<usize>,
    numel: usize,
    device: Device,
    dtype: DType,
}

/// Groups the tensors described by `specs` (device, dtype, elements),
/// taken in `order`, into buckets of one device and dtype of at most
/// `cap` bytes each (a single larger tensor gets a bucket of its own).
/// Buckets come in the order of their first tensor.
fn plan(specs: &[(Device, DType, usize)], order: impl IntoIterator<Item = usize>, cap: usize) -> Vec<Plan> {
    let mut out: Vec<Plan> = Vec::new();
    // the bucket still open for each (device, dtype)
    let mut open: HashMap<(Device, DType), usize> = HashMap::new();
    for i in order {
        let (device, dtype, n) = specs[i];
        let size = dtype.size_in_bytes();
        if let Some(&b) = open.get(&(device, dtype)) {
            let bucket = &mut out[b];
            if (bucket.numel + n).saturating_mul(size) <= cap {
                bucket.members.push(i);
                bucket.offsets.push(bucket.numel);
                bucket.numel += n;
                continue;
            }
        }
        open.insert((device, dtype), out.len());
        out.push(Plan {
            members: vec![i],
            offsets: vec![0],
            numel: n,
            device,
            dtype,
        });
    }
    out
}

/// Views of `flat` shaped as `tensors`, at `offsets`.
fn views(flat: &Tensor, offsets: &[usize], tensors: &[&Tensor]) -> Result<Vec<Tensor>> {
    offsets
        .iter()
        .zip(tensors)
        .map(|(&at, t)| {
            let shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
            flat.narrow(0, at as i64, t.numel() as i64)?.reshape(&shape)
        })
        .collect()
}

fn dist_err(msg: String) -> Error {
    Error::Distributed { op: "reducer", msg }
}

/// Reduces `tensors` in place as [`ProcessGroup::all_reduce`] does each of
/// them, with one collective per bucket (see [`ProcessGroup::all_reduce_coalesced`]).
pub(super) fn all_reduce_coalesced(group: &ProcessGroup, tensors: &[Tensor], op: ReduceOp) -> Result<()> {
    if group.world_size() == 1 {
        // the identity, with all_reduce's checks
        return tensors.iter().try_for_each(|t| group.all_reduce(t, op));
    }
    for t in tensors {
        super::writable("all_reduce_coalesced", t)?;
    }
    let specs: Vec<_> = tensors
        .iter()
        .map(|t| (t.device(), t.dtype(), t.numel()))
        .collect();
    let _no_grad = NoGradGuard::new();
    for b in plan(&specs, 0..tensors.len(), DEFAULT_BUCKET_CAP_BYTES) {
        if let [only] = b.members[..] {
            group.all_reduce(&tensors[only], op)?;
            continue;
        }
        let members: Vec<&Tensor> = b.members.iter().map(|&i| &tensors[i]).collect();
        let flat = Tensor::zeros(&[b.numel], Some(b.dtype), b.device)?;
        let parts = views(&flat, &b.offsets, &members)?;
        for (part, t) in parts.iter().zip(&members) {
            part.copy_(t)?;
        }
        group.all_reduce(&flat, op)?;
        for (part, t) in parts.iter().zip(&members) {
            t.write_elements("all_reduce_coalesced", part, part.layout())?;
        }
    }
    Ok(())
}

/// A bucket of the reducer: its parameters and their views into its flat
/// buffer (kept from round to round).
struct Bucket {
    members: Vec<usize>,
    flat: Tensor,
    views: Vec<Tensor>,
    /// Reduced with NCCL on the reducer's stream (else on its thread).
    nccl: bool,
}

/// What became of a bucket in this round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Launch {
    Pending,
    /// No parameter of the bucket got a gradient.
    Skipped,
    Thread,
    Nccl,
}

/// The reducer's thread: jobs (flat buffers) in, results out, in order.
struct Worker {
    jobs: mpsc::Sender<Tensor>,
    done: mpsc::Receiver<Result<()>>,
}

/// The state of one round (one backward pass and its `wait`).
struct Round {
    /// Per parameter: its hook fired.
    seen: Vec<bool>,
    /// Per parameter: it had a gradient when its bucket was launched.
    with_grad: Vec<bool>,
    /// Per bucket: parameters whose hook has not fired yet.
    missing: Vec<usize>,
    launch: Vec<Launch>,
    /// The next bucket to launch.
    next: usize,
    /// The first error of an NCCL launch, reported by `wait`.
    error: Option<Error>,
    worker: Option<Worker>,
}

struct Shared {
    group: &'static ProcessGroup,
    params: Vec<Tensor>,
    buckets: Vec<Bucket>,
    bucket_of: Vec<usize>,
    /// The stream the NCCL buckets are enqueued on.
    stream: Option<EngineStream>,
    round: Mutex<Round>,
}

/// Averages the gradients of a list of parameters over the ranks of a
/// group, bucket by bucket while backward runs (see the module docs). Call
/// [`Reducer::wait`] after each `backward()`, before the optimizer step.
/// Dropping the reducer removes its hooks.
pub struct Reducer {
    sizes: Vec<usize>,
    shared: Option<Arc<Shared>>,
    _hooks: Vec<HookHandle>,
}

impl std::fmt::Debug for Reducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Reducer({} buckets{})",
            self.sizes.len(),
            if self.shared.is_some() { "" } else { ", inactive" }
        )
    }
}

impl Reducer {
    /// A reducer for `params` (leaves that require grad, each listed once)
    /// in buckets of at most `bucket_cap_bytes` ([`DEFAULT_BUCKET_CAP_BYTES`]
    /// is PyTorch's default). In a group of one it does nothing, unless
    /// `KILN_DIST_BACKEND` is `nccl` or `host`.
    pub fn new(group: &'static ProcessGroup, params: &[Tensor], bucket_cap_bytes: usize) -> Result<Reducer> {
        Reducer::build(group, params, bucket_cap_bytes, communicates(group))
    }

    fn build(group: &'static ProcessGroup, params: &[Tensor], cap: usize, active: bool) -> Result<Reducer> {
        if cap == 0 {
            return Err(Error::invalid(
                "reducer",
                "the bucket cap must be at least one byte",
            ));
        }
        let mut first_use = HashMap::new();
        for (i, p) in params.iter().enumerate() {
            if !p.is_leaf() || !p.requires_grad() {
                return Err(Error::invalid(
                    "reducer",
                    format!(
                        "parameter {i} (shape {:?}) is not a leaf that requires grad; pass the model's parameters",
                        p.shape()
                    ),
                ));
            }
            let key = p.autograd_meta().map(Arc::as_ptr);
            if let Some(j) = first_use.insert(key, i) {
                return Err(Error::invalid(
                    "reducer",
                    format!("parameters {j} and {i} are the same tensor; list each parameter once"),
                ));
            }
        }
        let specs: Vec<_> = params
            .iter()
            .map(|p| (p.device(), p.dtype(), p.numel()))
            .collect();
        let plans = plan(&specs, (0..params.len()).rev(), cap);
        let sizes = plans.iter().map(|b| b.numel).collect();
        if !active {
            return Ok(Reducer {
                sizes,
                shared: None,
                _hooks: Vec::new(),
            });
        }
        let mut bucket_of = vec![0; params.len()];
        let mut buckets = Vec::with_capacity(plans.len());
        for (b, p) in plans.iter().enumerate() {
            let members: Vec<&Tensor> = p.members.iter().map(|&i| &params[i]).collect();
            let flat = Tensor::zeros(&[p.numel], Some(p.dtype), p.device)?;
            for &i in &p.members {
                bucket_of[i] = b;
            }
            buckets.push(Bucket {
                members: p.members.clone(),
                views: views(&flat, &p.offsets, &members)?,
                nccl: group.uses_nccl(&flat),
                flat,
            });
        }
        let stream = if buckets.iter().any(|b| b.nccl) {
            Some(CudaRuntime::get()?.engine_stream()?)
        } else {
            None
        };
        let worker = if buckets.iter().any(|b| !b.nccl) {
            Some(spawn_worker(group)?)
        } else {
            None
        };
        let shared = Arc::new(Shared {
            group,
            params: params.to_vec(),
            round: Mutex::new(Round {
                seen: vec![false; params.len()],
                with_grad: vec![false; params.len()],
                missing: buckets.iter().map(|b| b.members.len()).collect(),
                launch: vec![Launch::Pending; buckets.len()],
                next: 0,
                error: None,
                worker,
            }),
            buckets,
            bucket_of,
            stream,
        });
        let mut hooks = Vec::with_capacity(params.len());
        for (i, p) in params.iter().enumerate() {
            let weak: Weak<Shared> = Arc::downgrade(&shared);
            let hook: Arc<GradHook> = Arc::new(move |_: &Tensor| match weak.upgrade() {
                Some(s) => s.ready(i),
                None => Ok(()),
            });
            hooks.push(p.register_post_accumulate_grad_hook(hook)?);
        }
        Ok(Reducer {
            sizes,
            shared: Some(shared),
            _hooks: hooks,
        })
    }

    /// Finishes the round: launches the buckets not launched yet (in
    /// order), waits for every collective, writes the averaged gradients
    /// into the parameters' `.grad` and readies the next round. The first
    /// error of the round's communication comes out here.
    pub fn wait(&self) -> Result<()> {
        match &self.shared {
            Some(s) => s.finish(),
            None => Ok(()),
        }
    }

    /// Number of buckets.
    pub fn num_buckets(&self) -> usize {
        self.sizes.len()
    }

    /// Elements per bucket, in launch order.
    pub fn bucket_sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// True when the reducer communicates (see [`Reducer::new`]).
    pub fn is_active(&self) -> bool {
        self.shared.is_some()
    }

    /// How many buckets this round has launched so far.
    #[cfg(test)]
    fn launched(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.lock().next)
    }
}

/// Starts the thread that runs a reducer's host collectives in order; it
/// ends when the reducer goes away.
fn spawn_worker(group: &'static ProcessGroup) -> Result<Worker> {
    let (jobs, inbox) = mpsc::channel::<Tensor>();
    let (outbox, done) = mpsc::channel::<Result<()>>();
    std::thread::Builder::new()
        .name("kiln-reducer".into())
        .spawn(move || {
            for flat in inbox {
                if outbox.send(group.all_reduce(&flat, ReduceOp::Mean)).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| dist_err(format!("cannot start the reducer's thread: {e}")))?;
    Ok(Worker { jobs, done })
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hook of parameter `i`: its gradient is final for this round.
    fn ready(&self, i: usize) -> Result<()> {
        let mut r = self.lock();
        if r.seen[i] {
            return Err(Error::invalid(
                "reducer",
                format!(
                    "parameter {i} got a second gradient in one round (backward() ran again before wait()); call wait() after each backward()"
                ),
            ));
        }
        r.seen[i] = true;
        let b = self.bucket_of[i];
        r.missing[b] -= 1;
        while r.next < self.buckets.len() && r.missing[r.next] == 0 {
            let next = r.next;
            r.next += 1;
            self.launch(&mut r, next)?;
        }
        Ok(())
    }

    /// Flattens bucket `b`'s gradients and starts its all_reduce.
    fn launch(&self, r: &mut Round, b: usize) -> Result<()> {
        let bucket = &self.buckets[b];
        let grads: Vec<Option<Tensor>> = bucket
            .members
            .iter()
            .map(|&p| if r.seen[p] { self.params[p].grad() } else { None })
            .collect();
        if grads.iter().all(Option::is_none) {
            r.launch[b] = Launch::Skipped;
            return Ok(());
        }
        let _no_grad = NoGradGuard::new();
        for ((view, g), &p) in bucket.views.iter().zip(&grads).zip(&bucket.members) {
            match g {
                Some(g) => view.copy_(g)?,
                None => view.fill_(Scalar::Float(0.0))?,
            }
            r.with_grad[p] = g.is_some();
        }
        if bucket.nccl {
            r.launch[b] = Launch::Nccl;
            let stream = self
                .stream
                .as_ref()
                .ok_or_else(|| dist_err("internal: no stream for an NCCL bucket".into()))?;
            let _scope = stream.enter();
            if let Err(e) = self.group.all_reduce(&bucket.flat, ReduceOp::Mean) {
                r.error.get_or_insert(e);
            }
        } else {
            r.launch[b] = Launch::Thread;
            let sent = r.worker.as_ref().map(|w| w.jobs.send(bucket.flat.clone()));
            if !matches!(sent, Some(Ok(()))) {
                return Err(dist_err("the reducer's thread has stopped".into()));
            }
        }
        Ok(())
    }

    fn finish(&self) -> Result<()> {
        let mut r = self.lock();
        let mut first: Option<Error> = None;
        while r.next < self.buckets.len() {
            let next = r.next;
            r.next += 1;
            if let Err(e) = self.launch(&mut r, next) {
                first.get_or_insert(e);
            }
        }
        let jobs = r.launch.iter().filter(|l| **l == Launch::Thread).count();
        for _ in 0..jobs {
            let got = match &r.worker {
                Some(w) => w
                    .done
                    .recv()
                    .unwrap_or_else(|_| Err(dist_err("the reducer's thread has stopped".into()))),
                None => Err(dist_err("internal: no reducer thread".into())),
            };
            if let Err(e) = got {
                first.get_or_insert(e);
            }
        }
        if let Some(e) = r.error.take() {
            first.get_or_insert(e);
        }
        if first.is_none() {
            first = self.write_back(&r).err();
        }
        r.seen.fill(false);
        r.with_grad.fill(false);
        r.launch.fill(Launch::Pending);
        r.next = 0;
        for (m, b) in r.missing.iter_mut().zip(&self.buckets) {
            *m = b.members.len();
        }
        first.map_or(Ok(()), Err)
    }

    /// Copies each averaged slice into its parameter's gradient (on the
    /// caller's stream; it waits for the reducer's through the buffers).
    fn write_back(&self, r: &Round) -> Result<()> {
        let _no_grad = NoGradGuard::new();
        for (bucket, launch) in self.buckets.iter().zip(&r.launch) {
            if !matches!(launch, Launch::Thread | Launch::Nccl) {
                continue;
            }
            for (view, &p) in bucket.views.iter().zip(&bucket.members) {
                if !r.with_grad[p] {
                    continue;
                }
                if let Some(g) = self.params[p].grad() {
                    g.copy_(view)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;
    use std::net::TcpListener;
    use std::time::Duration;

    const F32: DType = DType::F32;
    const CPU: Device = Device::Cpu;

    fn members(p: &[Plan]) -> Vec<Vec<usize>> {
        p.iter().map(|b| b.members.clone()).collect()
    }

    #[test]
    fn buckets_follow_the_order_the_cap_and_the_dtype() {
        // 4-byte elements: a cap of 40 bytes holds 10 of them
        let specs = [
            (CPU, F32, 4),
            (CPU, F32, 4),
            (CPU, F32, 4),
            (CPU, F32, 12),
            (CPU, F32, 2),
        ];
        let p = plan(&specs, (0..5).rev(), 40);
        // tensor 3 alone is over the cap: a bucket of its own
        assert_eq!(members(&p), [vec![4], vec![3], vec![2, 1], vec![0]]);
        assert_eq!(p.iter().map(|b| b.numel).collect::<Vec<_>>(), [2, 12, 8, 4]);
        assert_eq!(p[2].offsets, [0, 4]);
        let p = plan(&specs, (0..5).rev(), 1 << 20);
        assert_eq!(members(&p), [vec![4, 3, 2, 1, 0]]);
        // dtypes (and devices) never share a bucket; buckets keep the order
        // of their first tensor
        let mixed = [
            (CPU, F32, 1),
            (CPU, DType::F64, 1),
            (CPU, F32, 1),
            (CPU, DType::F64, 1),
        ];
        let p = plan(&mixed, (0..4).rev(), 1024);
        assert_eq!(members(&p), [vec![3, 1], vec![2, 0]]);
        assert_eq!(p[0].dtype, DType::F64);
        assert_eq!(p[1].dtype, F32);
        // an f64 bucket of 16 bytes holds two, an f32 bucket four
        let p = plan(&[(CPU, DType::F64, 1); 3], 0..3, 16);
        assert_eq!(members(&p), [vec![0, 1], vec![2]]);
    }

    fn param(v: &[f32]) -> Tensor {
        let p = Tensor::from_slice(v, &[v.len()], CPU).unwrap();
        p.set_requires_grad(true).unwrap();
        p
    }

    fn leak(g: ProcessGroup) -> &'static ProcessGroup {
        Box::leak(Box::new(g))
    }

    /// Gives parameter `p` the gradient `scale * ones` through a backward
    /// pass of its own (which fires its hook).
    fn give_grad(p: &Tensor, scale: f32) {
        p.mul_scalar(scale as f64)
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
    }

    fn grad(p: &Tensor) -> Option<Vec<f32>> {
        p.grad().map(|g| g.to_vec::<f32>().unwrap())
    }

    #[test]
    fn a_named_transport_activates_a_group_of_one() {
        let params = [param(&[1.0])];
        let auto = leak(ProcessGroup::new(Config::default()));
        assert!(!Reducer::new(auto, &params, 4).unwrap().is_active());
        for transport in [Transport::Host, Transport::Nccl] {
            let g = leak(ProcessGroup::new(Config {
                transport,
                ..Config::default()
            }));
            assert!(Reducer::new(g, &params, 4).unwrap().is_active());
        }
    }

    #[test]
    fn a_group_of_one_does_nothing_unless_forced() {
        let g = leak(ProcessGroup::new(Config::default()));
        let params = [param(&[1.0, 2.0]), param(&[3.0])];
        let idle = Reducer::build(g, &params, 4, false).unwrap();
        assert!(!idle.is_active());
        assert_eq!(idle.bucket_sizes(), [1, 2]);
        assert!(!params[0].autograd_meta().unwrap().hooked());
        give_grad(&params[0], 2.0);
        idle.wait().unwrap();
        assert_eq!(grad(&params[0]), Some(vec![2.0, 2.0]));
        drop(idle);
        // forced: the whole path, and the gradients come back unchanged
        let red = Reducer::build(g, &params, 4, true).unwrap();
        assert!(red.is_active());
        give_grad(&params[1], 5.0);
        give_grad(&params[0], 1.0);
        assert_eq!(red.launched(), 2);
        red.wait().unwrap();
        assert_eq!(grad(&params[0]), Some(vec![3.0, 3.0]));
        assert_eq!(grad(&params[1]), Some(vec![5.0]));
        // a second backward before wait() names the parameter
        give_grad(&params[1], 1.0);
        let e = params[1]
            .mul_scalar(1.0)
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap_err();
        assert!(e.to_string().contains("parameter 1 got a second gradient"), "{e}");
        assert!(e.to_string().contains("call wait() after each backward()"), "{e}");
        red.wait().unwrap();
        // dropped: its hooks go with it
        drop(red);
        assert!(!params[0].autograd_meta().unwrap().hooked());
        assert!(Reducer::build(g, &[params[0].clone(), params[0].clone()], 4, true).is_err());
        let plain = Tensor::from_slice(&[1.0f32], &[1], CPU).unwrap();
        assert!(Reducer::build(g, &[plain], 4, true).is_err());
    }

    #[test]
    fn buckets_launch_in_order_when_they_complete_out_of_order() {
        let g = leak(ProcessGroup::new(Config::default()));
        // buckets (cap 8 bytes): [p2, p1], [p0]
        let params = [param(&[1.0, 1.0]), param(&[1.0]), param(&[1.0])];
        let red = Reducer::build(g, &params, 8, true).unwrap();
        assert_eq!(red.bucket_sizes(), [2, 2]);
        give_grad(&params[0], 1.0);
        assert_eq!(red.launched(), 0, "bucket 1 is complete but bucket 0 is not");
        give_grad(&params[2], 1.0);
        assert_eq!(red.launched(), 0);
        give_grad(&params[1], 1.0);
        assert_eq!(red.launched(), 2);
        red.wait().unwrap();
        assert_eq!(red.launched(), 0);
    }

    fn free_addr() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    }

    /// Runs `f(group)` on `world` threads, one rank each.
    fn run<T: Send + 'static>(world: usize, f: fn(&'static ProcessGroup) -> T) -> Vec<T> {
        let addr = free_addr();
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let config = Config {
                    rank,
                    world_size: world,
                    addr: Some(addr.clone()),
                    timeout: Duration::from_secs(20),
                    ..Config::default()
                };
                std::thread::spawn(move || f(leak(ProcessGroup::new(config))))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn three_ranks_average_like_one_all_reduce_per_gradient() {
        let out = run(3, |g| {
            let r = g.rank() as f32;
            let params = [param(&[0.0]), param(&[0.0; 2]), param(&[0.0]), param(&[0.0; 3])];
            // buckets of at most 12 bytes: [p3], [p2, p1], [p0]
            let red = Reducer::new(g, &params, 12).unwrap();
            assert_eq!(red.bucket_sizes(), [3, 3, 1]);
            // the ranks make their gradients in different orders; p0 gets
            // none (on every rank)
            let order: [usize; 3] = match g.rank() {
                0 => [1, 2, 3],
                1 => [3, 2, 1],
                _ => [2, 3, 1],
            };
            for _ in 0..2 {
                for p in &params {
                    p.zero_grad();
                }
                for i in order {
                    give_grad(&params[i], i as f32 * (r + 1.0));
                }
                assert_eq!(red.launched(), 2);
                red.wait().unwrap();
            }
            let reduced: Vec<_> = params.iter().map(grad).collect();
            // the same gradients through one all_reduce each
            params[0].zero_grad();
            for (i, p) in params.iter().enumerate().skip(1) {
                let v = Scalar::Float((i as f32 * (r + 1.0)) as f64);
                p.set_grad(Some(Tensor::full(p.shape(), v, Some(F32), CPU).unwrap()))
                    .unwrap();
            }
            // with an f64 tensor among them (a bucket of its own)
            let mut grads: Vec<Tensor> = params.iter().filter_map(|p| p.grad()).collect();
            let other = Tensor::from_slice(&[r as f64, 1.0], &[2], CPU).unwrap();
            grads.insert(1, other.clone());
            g.all_reduce_coalesced(&grads, ReduceOp::Mean).unwrap();
            assert_eq!(other.to_vec::<f64>().unwrap(), [1.0, 1.0]);
            let coalesced: Vec<_> = params.iter().map(grad).collect();
            (reduced, coalesced)
        });
        for (reduced, coalesced) in out {
            // mean over ranks of i (r + 1) = 2 i
            let expect = vec![None, Some(vec![2.0, 2.0]), Some(vec![4.0]), Some(vec![6.0; 3])];
            assert_eq!(reduced, expect);
            assert_eq!(coalesced, expect);
        }
    }

    #[test]
    fn a_failed_collective_comes_out_of_wait() {
        let out = run(2, |g| {
            // rank 1's parameter has another shape: the hub refuses the call
            let p = param(&vec![1.0; g.rank() + 1]);
            let red = Reducer::new(g, std::slice::from_ref(&p), 1024).unwrap();
            give_grad(&p, 1.0);
            red.wait().unwrap_err()
        });
        for e in out {
            assert!(matches!(e, Error::Distributed { .. }), "{e:?}");
            assert!(e.to_string().contains("shape [2]"), "{e}");
        }
    }
}
