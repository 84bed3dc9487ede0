//! The process group of a data-parallel run: one process per rank, started
//! by `kiln launch`, which sets `KILN_RANK`, `KILN_WORLD_SIZE` and
//! `KILN_DIST_ADDR` (`127.0.0.1:PORT`, where rank 0 listens). Without them a
//! process is rank 0 of a group of one and every collective is the identity.
//!
//! The collectives ([`ProcessGroup::all_reduce`], [`ProcessGroup::broadcast`],
//! [`ProcessGroup::all_gather`], [`ProcessGroup::barrier`]) run over a small
//! TCP transport on `std::net`, shaped as a star: at its first collective
//! rank 0 accepts one connection from every other rank; each collective, every
//! rank sends its request to rank 0, which checks that all ranks made the same
//! call (kind, op, dtype, shape, sequence number), computes the result in rank
//! order ([`wire::combine`]: deterministic, the same bytes on every rank) and
//! sends it back. A peer that cannot be reached, a read or write that waits
//! longer than `KILN_DIST_TIMEOUT` seconds (60 by default), or ranks that
//! disagree give an [`Error::Distributed`] naming the ranks, never a hang;
//! after such an error the group refuses further collectives.
//!
//! CUDA tensors go through NCCL ([`crate::backend::cuda::nccl`]) when the
//! group has more than one rank and `libnccl.so` loads: the collective is
//! queued on the engine's stream, device to device, and returns at once. The
//! communicator is made at the first CUDA collective: rank 0 creates NCCL's
//! unique id and the TCP transport broadcasts it (so that first call is also
//! checked for agreement between the ranks). `KILN_DIST_BACKEND` chooses:
//! `auto` (the default), `nccl` (CUDA tensors always through NCCL, even in a
//! group of one, which is how a single GPU tests that path) or `host` (CUDA
//! tensors copied to the host, reduced over TCP and copied back). CPU
//! tensors always take the TCP path, which is also the oracle the NCCL path
//! is checked against. NCCL does not check that the ranks' calls agree:
//! every rank must make the same collectives, on tensors of the same shape,
//! dtype and device, in the same order.
//!
//! The tensor data is written without autograd checks, as
//! `torch.distributed` does: collectives act on data, not on the graph.

pub mod reducer;
pub mod wire;

use crate::backend::cuda::nccl::{self, Communicator};
use crate::backend::Storage;
pub use crate::core::collective::ReduceOp;
use crate::core::error::{Error, Result};
use crate::core::{DType, Device, Layout};
use crate::io::raw::{decode, encode_le, Endian, FileDType};
use crate::tensor::Tensor;
pub use reducer::Reducer;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use wire::{Kind, Request};

/// The default I/O timeout of the transport.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where this process stands in its group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// This process's rank, `0..world_size`.
    pub rank: usize,
    /// Number of processes in the group.
    pub world_size: usize,
    /// `host:port` where rank 0 listens (needed when `world_size > 1`).
    pub addr: Option<String>,
    /// How long a connection, read or write may wait.
    pub timeout: Duration,
    /// How CUDA tensors travel (`KILN_DIST_BACKEND`).
    pub transport: Transport,
}

/// How the collectives move CUDA tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// NCCL when the group has several ranks and the library loads, else the host.
    #[default]
    Auto,
    /// Always NCCL (an error when it cannot load), even in a group of one.
    Nccl,
    /// Always through the host, over TCP.
    Host,
}

impl Transport {
    /// The transport named `s` (`auto`, `nccl` or `host`).
    pub fn parse(s: &str) -> Option<Transport> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(Transport::Auto),
            "nccl" => Some(Transport::Nccl),
            "host" | "tcp" => Some(Transport::Host),
            _ => None,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rank: 0,
            world_size: 1,
            addr: None,
            timeout: DEFAULT_TIMEOUT,
            transport: Transport::Auto,
        }
    }
}

impl Config {
    /// The configuration `kiln launch` passes in the environment; without
    /// `KILN_WORLD_SIZE`, a group of one.
    pub fn from_env() -> Result<Config> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let num = |k: &str, v: String| {
            v.trim().parse::<usize>().map_err(|_| Error::Distributed {
                op: "dist",
                msg: format!("{k}={v} is not a non-negative integer"),
            })
        };
        let world_size = match var("KILN_WORLD_SIZE") {
            Some(v) => num("KILN_WORLD_SIZE", v)?,
            None => 1,
        };
        let rank = match var("KILN_RANK") {
            Some(v) => num("KILN_RANK", v)?,
            None => 0,
        };
        let timeout = match var("KILN_DIST_TIMEOUT") {
            Some(v) => match v.trim().parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s.min(1e9)),
                _ => {
                    return Err(Error::Distributed {
                        op: "dist",
                        msg: format!("KILN_DIST_TIMEOUT={v} is not a positive number of seconds"),
                    })
                }
            },
            None => DEFAULT_TIMEOUT,
        };
        let transport = match var("KILN_DIST_BACKEND") {
            Some(v) => Transport::parse(&v).ok_or_else(|| Error::Distributed {
                op: "dist",
                msg: format!("KILN_DIST_BACKEND={v} is not one of auto, nccl, host"),
            })?,
            None => Transport::Auto,
        };
        let c = Config {
            rank,
            world_size,
            addr: var("KILN_DIST_ADDR"),
            timeout,
            transport,
        };
        c.check()?;
        Ok(c)
    }

    fn check(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::Distributed { op: "dist", msg });
        if self.world_size == 0 {
            return bad("the world size must be at least 1".into());
        }
        if self.rank >= self.world_size {
            return bad(format!(
                "rank {} is not below the world size {}",
                self.rank, self.world_size
            ));
        }
        if self.world_size > 1 && self.addr.is_none() {
            return bad(format!(
                "rank {} of {}: KILN_DIST_ADDR (host:port of rank 0) is not set; start the ranks with kiln launch",
                self.rank, self.world_size
            ));
        }
        Ok(())
    }
}

/// The connections of this rank: rank 0 holds one per other rank (index
/// `r - 1` for rank `r`), the others one to rank 0.
enum Links {
    Hub(Vec<TcpStream>),
    Peer(TcpStream),
}

#[derive(Default)]
struct State {
    links: Option<Links>,
    seq: u64,
    broken: Option<String>,
}

/// A group of processes that run collectives together.
pub struct ProcessGroup {
    config: Config,
    state: Mutex<State>,
    /// The NCCL communicator, made at the first CUDA collective (or why it
    /// could not be).
    nccl: Mutex<Option<std::result::Result<Communicator, String>>>,
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ProcessGroup(rank {} of {})",
            self.config.rank, self.config.world_size
        )
    }
}

/// The process's group, from the environment (read once).
pub fn global() -> Result<&'static ProcessGroup> {
    static GROUP: OnceLock<Result<ProcessGroup>> = OnceLock::new();
    GROUP
        .get_or_init(|| Config::from_env().map(ProcessGroup::new))
        .as_ref()
        .map_err(Clone::clone)
}

impl ProcessGroup {
    /// A group for `config`; nothing connects until the first collective.
    pub fn new(config: Config) -> ProcessGroup {
        ProcessGroup {
            config,
            state: Mutex::new(State::default()),
            nccl: Mutex::new(None),
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.config.rank
    }

    /// Number of processes in the group.
    pub fn world_size(&self) -> usize {
        self.config.world_size
    }

    /// How the group moves CUDA tensors.
    pub fn transport(&self) -> Transport {
        self.config.transport
    }

    /// Reduces `t` over all ranks with `op`, in place (every rank ends with
    /// the same values, reduced in rank order). Shapes and dtypes must match
    /// across ranks; `Mean` needs a floating-point dtype.
    pub fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<()> {
        let name = "all_reduce";
        writable(name, t)?;
        if op == ReduceOp::Mean && !t.dtype().is_float() {
            return Err(Error::Distributed {
                op: name,
                msg: format!(
                    "op \"mean\" needs a floating-point tensor, got {} (use \"sum\")",
                    t.dtype()
                ),
            });
        }
        if self.uses_nccl(t) {
            return self.in_place_on_device(name, t, |c, buf, start, n| c.all_reduce(buf, start, n, op));
        }
        if self.world_size() == 1 {
            return Ok(());
        }
        let data = host_bytes(t)?;
        let out = self.collective(Kind::AllReduce, wire::op_code(op), t.dtype(), t.shape(), data)?;
        write_back(name, t, &out)
    }

    /// Copies rank `root`'s `t` into `t` on every rank, in place.
    pub fn broadcast(&self, t: &Tensor, root: usize) -> Result<()> {
        let name = "broadcast";
        writable(name, t)?;
        check_root(root, self.world_size())?;
        if self.uses_nccl(t) {
            return self.in_place_on_device(name, t, |c, buf, start, n| c.broadcast(buf, start, n, root));
        }
        if self.world_size() == 1 {
            return Ok(());
        }
        let data = if root == self.rank() {
            host_bytes(t)?
        } else {
            Vec::new()
        };
        let out = self.collective(Kind::Broadcast, root as u64, t.dtype(), t.shape(), data)?;
        write_back(name, t, &out)
    }

    /// Every rank's `t` stacked along a new leading dimension, in rank
    /// order: shape `[world_size, ...t.shape]`, on `t`'s device (PyTorch's
    /// `all_gather_into_tensor` of `t.unsqueeze(0)`).
    pub fn all_gather(&self, t: &Tensor) -> Result<Tensor> {
        let mut shape = vec![self.world_size()];
        shape.extend_from_slice(t.shape());
        if self.uses_nccl(t) {
            let name = "all_gather";
            let (dense, start) = dense_on_device(t)?;
            let Storage::Cuda(buf) = &*dense.storage() else {
                return Err(Error::invalid(
                    name,
                    "internal: a CUDA tensor without CUDA storage",
                ));
            };
            let out = self.with_communicator(name, |c| c.all_gather(buf, start, t.numel()))?;
            return Tensor::from_storage(name, Storage::Cuda(out), &shape);
        }
        let out = if self.world_size() == 1 {
            host_bytes(t)?
        } else {
            self.collective(Kind::AllGather, 0, t.dtype(), t.shape(), host_bytes(t)?)?
        };
        let cpu =
            decode(&out, FileDType::of(t.dtype()), Endian::Little).map_err(|m| dist_err("all_gather", m))?;
        Tensor::from_storage("all_gather", Storage::from_cpu(t.device(), cpu)?, &shape)
    }

    /// Waits until every rank has reached its barrier.
    pub fn barrier(&self) -> Result<()> {
        if self.world_size() == 1 {
            return Ok(());
        }
        self.collective(Kind::Barrier, 0, DType::Bool, &[], Vec::new())
            .map(|_| ())
    }

    /// True when the collectives on `t` go through NCCL (see the module
    /// docs: a CUDA tensor, and `KILN_DIST_BACKEND=nccl`, or several ranks
    /// with the library present under `auto`).
    pub fn uses_nccl(&self, t: &Tensor) -> bool {
        if !matches!(t.device(), Device::Cuda(_)) {
            return false;
        }
        match self.config.transport {
            Transport::Host => false,
            Transport::Nccl => true,
            Transport::Auto => self.world_size() > 1 && nccl::is_available(),
        }
    }

    /// Runs `f` on the group's NCCL communicator, making it first if needed.
    fn with_communicator<R>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Communicator) -> Result<R>,
    ) -> Result<R> {
        let mut slot = self.nccl.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.make_communicator().map_err(|e| e.to_string()));
        }
        match slot.as_ref() {
            Some(Ok(c)) => f(c),
            Some(Err(why)) => Err(dist_err(
                op,
                format!("rank {}: NCCL could not be set up ({why})", self.rank()),
            )),
            None => Err(dist_err(op, "internal: no communicator".into())),
        }
    }

    /// Rank 0 makes NCCL's unique id, the TCP transport hands it to every
    /// rank, and all join the communicator.
    fn make_communicator(&self) -> Result<Communicator> {
        let id = if self.rank() == 0 {
            nccl::unique_id()?
        } else {
            [0; nccl::ID_BYTES]
        };
        let id = if self.world_size() > 1 {
            let data = if self.rank() == 0 { id.to_vec() } else { Vec::new() };
            let got = self.collective(Kind::Broadcast, 0, DType::U8, &[nccl::ID_BYTES], data)?;
            <[u8; nccl::ID_BYTES]>::try_from(got.as_slice())
                .map_err(|_| dist_err("init", format!("got an NCCL id of {} bytes", got.len())))?
        } else {
            id
        };
        Communicator::new(id, self.rank(), self.world_size())
    }

    /// Runs an in-place NCCL collective on `t`'s elements: on its storage
    /// when they are one dense range, else on a dense copy written back.
    fn in_place_on_device(
        &self,
        op: &'static str,
        t: &Tensor,
        f: impl FnOnce(&Communicator, &crate::backend::cuda::CudaStorage, usize, usize) -> Result<()>,
    ) -> Result<()> {
        let (dense, start) = dense_on_device(t)?;
        {
            let Storage::Cuda(buf) = &*dense.storage() else {
                return Err(Error::invalid(op, "internal: a CUDA tensor without CUDA storage"));
            };
            self.with_communicator(op, |c| f(c, buf, start, t.numel()))?;
        }
        if !dense.shares_storage(t) {
            t.write_elements(op, &dense, dense.layout())?;
        }
        Ok(())
    }

    /// Reduces each of `tensors` in place as [`ProcessGroup::all_reduce`]
    /// does, with one collective per bucket: the tensors are grouped by
    /// device and dtype into buckets of at most 25 MiB, each flattened into
    /// one buffer, reduced and copied back. Every rank must pass the same
    /// list of shapes and dtypes.
    pub fn all_reduce_coalesced(&self, tensors: &[Tensor], op: ReduceOp) -> Result<()> {
        reducer::all_reduce_coalesced(self, tensors, op)
    }

    /// Runs one collective: connects on first use, exchanges the request
    /// with the hub and returns the result's bytes.
    fn collective(
        &self,
        kind: Kind,
        arg: u64,
        dtype: DType,
        shape: &[usize],
        data: Vec<u8>,
    ) -> Result<Vec<u8>> {
        let op = kind.name();
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(why) = &st.broken {
            return Err(dist_err(
                op,
                format!("rank {}: the process group failed earlier ({why})", self.rank()),
            ));
        }
        let req = Request {
            kind,
            arg,
            seq: st.seq,
            dtype,
            shape: shape.to_vec(),
            data,
        };
        st.seq += 1;
        let result = self.exchange(&mut st, req);
        if let Err(e) = &result {
            st.broken = Some(e.to_string());
            st.links = None;
        }
        result.map_err(|m| dist_err(op, m))
    }

    fn exchange(&self, st: &mut State, req: Request) -> std::result::Result<Vec<u8>, String> {
        if st.links.is_none() {
            st.links = Some(self.connect()?);
        }
        let rank = self.rank();
        let secs = self.config.timeout.as_secs_f64();
        match st.links.as_mut() {
            Some(Links::Peer(s)) => {
                wire::write_frame(s, &req.encode()).map_err(|e| io_msg(rank, 0, "sending to", &e, secs))?;
                let reply = wire::read_frame(s).map_err(|e| io_msg(rank, 0, "waiting for", &e, secs))?;
                wire::parse_reply(reply)
            }
            Some(Links::Hub(peers)) => {
                let mut reqs = vec![req];
                let mut failure = None;
                for (i, s) in peers.iter_mut().enumerate() {
                    let got = wire::read_frame(s)
                        .map_err(|e| io_msg(0, i + 1, "waiting for", &e, secs))
                        .and_then(|b| Request::decode(&b).map_err(|m| format!("rank {}: {m}", i + 1)));
                    match got {
                        Ok(q) => reqs.push(q),
                        Err(m) => {
                            failure = Some(m);
                            break;
                        }
                    }
                }
                let result = match failure {
                    Some(m) => Err(m),
                    None => wire::combine(&reqs),
                };
                let reply = match &result {
                    Ok(b) => wire::reply_ok(b),
                    Err(m) => wire::reply_err(m),
                };
                for (i, s) in peers.iter_mut().enumerate() {
                    if let Err(e) = wire::write_frame(s, &reply) {
                        if result.is_ok() {
                            return Err(io_msg(0, i + 1, "sending to", &e, secs));
                        }
                    }
                }
                result
            }
            None => Err("not connected".into()),
        }
    }

    /// Rank 0 accepts every other rank; the others connect to it (retrying
    /// until the timeout, as rank 0 may not listen yet).
    fn connect(&self) -> std::result::Result<Links, String> {
        let c = &self.config;
        let addr_text = c.addr.clone().unwrap_or_default();
        let addr: SocketAddr = addr_text
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| format!("KILN_DIST_ADDR={addr_text} is not a host:port address"))?;
        let deadline = Instant::now() + c.timeout;
        let secs = c.timeout.as_secs_f64();
        let setup = |s: &TcpStream| -> std::io::Result<()> {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(c.timeout))?;
            s.set_write_timeout(Some(c.timeout))
        };
        if c.rank == 0 {
            let listener =
                TcpListener::bind(addr).map_err(|e| format!("rank 0 cannot listen on {addr}: {e}"))?;
            listener
                .set_nonblocking(true)
                .map_err(|e| format!("rank 0: {e}"))?;
            let mut peers: Vec<Option<TcpStream>> = (1..c.world_size).map(|_| None).collect();
            while peers.iter().any(Option::is_none) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let hello = s
                            .set_nonblocking(false)
                            .and_then(|_| setup(&s))
                            .and_then(|_| wire::read_frame(&mut &s));
                        // a stray connection that does not say hello is dropped
                        let Ok(hello) = hello else { continue };
                        let Ok((r, w)) = wire::parse_hello(&hello) else {
                            continue;
                        };
                        if w != c.world_size {
                            return Err(format!(
                                "rank {r} runs with world size {w}, rank 0 with {}",
                                c.world_size
                            ));
                        }
                        match peers.get_mut(r.wrapping_sub(1)) {
                            Some(slot @ None) => *slot = Some(s),
                            Some(Some(_)) => return Err(format!("rank {r} connected twice")),
                            None => return Err(format!("a peer claims rank {r} in a group of {w}")),
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if Instant::now() >= deadline {
                            let missing: Vec<String> = peers
                                .iter()
                                .enumerate()
                                .filter(|(_, p)| p.is_none())
                                .map(|(i, _)| (i + 1).to_string())
                                .collect();
                            return Err(format!(
                                "rank 0 timed out after {secs} s waiting for rank {} to connect",
                                missing.join(", ")
                            ));
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => return Err(format!("rank 0 cannot accept connections: {e}")),
                }
            }
            Ok(Links::Hub(peers.into_iter().flatten().collect()))
        } else {
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let attempt = TcpStream::connect_timeout(
                    &addr,
                    left.clamp(Duration::from_millis(1), Duration::from_secs(1)),
                );
                match attempt {
                    Ok(mut s) => {
                        setup(&s).map_err(|e| format!("rank {}: {e}", c.rank))?;
                        wire::write_frame(&mut s, &wire::hello(c.rank, c.world_size))
                            .map_err(|e| io_msg(c.rank, 0, "sending to", &e, secs))?;
                        return Ok(Links::Peer(s));
                    }
                    Err(e) if Instant::now() >= deadline => {
                        return Err(format!(
                            "rank {} could not connect to rank 0 at {addr} within {secs} s: {e}",
                            c.rank
                        ))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
    }
}

fn dist_err(op: &'static str, msg: String) -> Error {
    Error::Distributed { op, msg }
}

/// An I/O failure between `rank` and `other`, as a user reads it.
fn io_msg(rank: usize, other: usize, doing: &str, e: &std::io::Error, secs: f64) -> String {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::WouldBlock | K::TimedOut => {
            format!("rank {rank} timed out after {secs} s {doing} rank {other}")
        }
        K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
            format!("rank {rank} lost its connection to rank {other} (rank {other} exited or failed)")
        }
        _ => format!("rank {rank}: error {doing} rank {other}: {e}"),
    }
}

fn check_root(root: usize, world: usize) -> Result<()> {
    if root >= world {
        return Err(dist_err(
            "broadcast",
            format!("root {root} is not a rank of this group (world size {world})"),
        ));
    }
    Ok(())
}

/// Fails for tensors an in-place collective cannot write (expanded views).
fn writable(op: &'static str, t: &Tensor) -> Result<()> {
    if t.layout().has_internal_overlap() {
        return Err(Error::invalid(
            op,
            format!(
                "cannot write into an expanded tensor of shape {:?} (several elements share one memory location); call contiguous() or clone() first",
                t.shape()
            ),
        ));
    }
    Ok(())
}

/// `t` itself and its first element's index when its elements are one dense
/// range of its storage, else a dense copy (from index 0).
fn dense_on_device(t: &Tensor) -> Result<(Tensor, usize)> {
    if let Some((start, _)) = t.layout().contiguous_range() {
        return Ok((t.clone(), start));
    }
    let copy = t.storage().cast(t.layout(), t.dtype())?;
    Ok((Tensor::from_storage("dist", copy, t.shape())?, 0))
}

/// The elements of `t` in logical order, as little-endian bytes on the host.
fn host_bytes(t: &Tensor) -> Result<Vec<u8>> {
    let dense = t.storage().to_device(t.layout(), Device::Cpu)?;
    match dense {
        Storage::Cpu(c) => Ok(encode_le(&c)),
        Storage::Cuda(_) => Err(Error::invalid(
            "dist",
            "internal: data not on the host after a copy",
        )),
    }
}

/// Writes the result bytes into `t`'s elements (on its device).
fn write_back(op: &'static str, t: &Tensor, bytes: &[u8]) -> Result<()> {
    let cpu = decode(bytes, FileDType::of(t.dtype()), Endian::Little).map_err(|m| dist_err(op, m))?;
    if cpu.len() != t.numel() {
        return Err(dist_err(
            op,
            format!("got {} elements back for a tensor of {}", cpu.len(), t.numel()),
        ));
    }
    let src = Storage::from_cpu(t.device(), cpu)?;
    let layout = t.layout().clone();
    t.storage_mut()
        .copy_from(&layout, &src, &Layout::contiguous(t.shape()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    fn free_addr() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    }

    /// Runs `f(group)` on `world` threads, one rank each.
    fn run<T: Send + 'static>(world: usize, timeout: Duration, f: fn(&ProcessGroup) -> T) -> Vec<T> {
        let addr = free_addr();
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let config = Config {
                    rank,
                    world_size: world,
                    addr: Some(addr.clone()),
                    timeout,
                    transport: Transport::Auto,
                };
                thread::spawn(move || f(&ProcessGroup::new(config)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn collectives_over_tcp_on_three_ranks() {
        let out = run(3, Duration::from_secs(20), |g| {
            let r = g.rank() as f32;
            let t = Tensor::from_slice(&[r, 10.0 * r + 1.0], &[2], Device::Cpu).unwrap();
            g.all_reduce(&t, ReduceOp::Sum).unwrap();
            let sum = t.to_vec::<f32>().unwrap();
            let m = Tensor::from_slice(&[r], &[1], Device::Cpu).unwrap();
            g.all_reduce(&m, ReduceOp::Max).unwrap();
            let b = Tensor::from_slice(&[g.rank() as i64; 3], &[3], Device::Cpu).unwrap();
            g.broadcast(&b, 2).unwrap();
            let gathered = g
                .all_gather(&Tensor::from_slice(&[g.rank() as i32], &[1], Device::Cpu).unwrap())
                .unwrap();
            g.barrier().unwrap();
            (
                sum,
                m.to_vec::<f32>().unwrap(),
                b.to_vec::<i64>().unwrap(),
                gathered.shape().to_vec(),
                gathered.to_vec::<i32>().unwrap(),
            )
        });
        for o in out {
            assert_eq!(o.0, [3.0, 33.0]);
            assert_eq!(o.1, [2.0]);
            assert_eq!(o.2, [2, 2, 2]);
            assert_eq!(o.3, [3, 1]);
            assert_eq!(o.4, [0, 1, 2]);
        }
    }

    #[test]
    fn mismatched_shapes_fail_on_every_rank() {
        let out = run(2, Duration::from_secs(20), |g| {
            let t = Tensor::from_slice(&vec![1.0f32; g.rank() + 1], &[g.rank() + 1], Device::Cpu).unwrap();
            let first = g.all_reduce(&t, ReduceOp::Sum).unwrap_err().to_string();
            let then = g.barrier().unwrap_err().to_string();
            (first, then)
        });
        for (first, then) in out {
            assert!(
                first.contains("rank 1 called all_reduce(<f32 tensor of shape [2]>"),
                "{first}"
            );
            assert!(then.contains("failed earlier"), "{then}");
        }
    }

    #[test]
    fn a_missing_rank_times_out_with_its_number() {
        let config = Config {
            rank: 0,
            world_size: 2,
            addr: Some(free_addr()),
            timeout: Duration::from_millis(300),
            transport: Transport::Auto,
        };
        let e = ProcessGroup::new(config).barrier().unwrap_err().to_string();
        assert!(e.contains("waiting for rank 1 to connect"), "{e}");
        let config = Config {
            rank: 1,
            world_size: 2,
            addr: Some(free_addr()),
            timeout: Duration::from_millis(300),
            transport: Transport::Auto,
        };
        let e = ProcessGroup::new(config).barrier().unwrap_err().to_string();
        assert!(e.contains("rank 1 could not connect to rank 0"), "{e}");
    }

    #[test]
    fn transports_parse_and_cpu_tensors_stay_on_the_host() {
        assert_eq!(Transport::parse("NCCL"), Some(Transport::Nccl));
        assert_eq!(Transport::parse(" host "), Some(Transport::Host));
        assert_eq!(Transport::parse("auto"), Some(Transport::Auto));
        assert_eq!(Transport::parse("mpi"), None);
        let t = Tensor::from_slice(&[1.0f32], &[1], Device::Cpu).unwrap();
        for transport in [Transport::Auto, Transport::Nccl, Transport::Host] {
            let g = ProcessGroup::new(Config {
                transport,
                world_size: 2,
                addr: Some("127.0.0.1:1".into()),
                ..Config::default()
            });
            assert!(!g.uses_nccl(&t));
        }
    }

    #[test]
    fn a_group_of_one_is_the_identity() {
        let g = ProcessGroup::new(Config::default());
        let t = Tensor::from_slice(&[1.5f32, 2.5], &[2], Device::Cpu).unwrap();
        g.all_reduce(&t, ReduceOp::Mean).unwrap();
        g.broadcast(&t, 0).unwrap();
        g.barrier().unwrap();
        assert_eq!(t.to_vec::<f32>().unwrap(), [1.5, 2.5]);
        let all = g.all_gather(&t).unwrap();
        assert_eq!(all.shape(), [1, 2]);
        assert!(g.broadcast(&t, 1).is_err());
        let i = Tensor::from_slice(&[1i64], &[1], Device::Cpu).unwrap();
        assert!(g.all_reduce(&i, ReduceOp::Mean).is_err());
        let bad = Config {
            rank: 2,
            world_size: 2,
            ..Config::default()
        };
        assert!(bad.check().is_err());
    }
}
