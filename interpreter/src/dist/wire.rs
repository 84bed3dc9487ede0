//! The process group's wire format and the hub's arithmetic, free of
//! sockets: length-prefixed frames, the request each rank sends for a
//! collective, the reply, and [`combine`], which checks that the ranks agree
//! and computes the result in rank order. Everything here is pure and
//! unit-tested; the TCP transport lives in the parent module.
//!
//! A frame is a little-endian `u64` byte count followed by that many bytes.
//! A request is `kind u8, arg u64, seq u64, dtype u8, ndim u32, dims u64…`
//! followed by the tensor's elements as little-endian bytes; a reply is
//! `status u8` (0: ok, 1: error) followed by the result's bytes or a UTF-8
//! message.

use crate::backend::cpu::{collective, CpuStorage};
use crate::core::collective::ReduceOp;
use crate::core::DType;
use crate::io::raw::{decode, encode_le, Endian, FileDType};
use std::io::{self, Read, Write};

/// Largest frame accepted (1 TiB): a guard against a corrupt length.
const MAX_FRAME: u64 = 1 << 40;

/// The first bytes a connecting rank sends: magic, version, rank, world size.
const HELLO_MAGIC: &[u8; 4] = b"KILN";
/// The protocol version in the hello frame.
const VERSION: u8 = 1;

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    w.write_all(&(payload.len() as u64).to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads one frame (an error on a short read or an absurd length).
pub fn read_frame(r: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len)?;
    let len = u64::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes is larger than the limit"),
        ));
    }
    let mut buf = Vec::new();
    r.take(len).read_to_end(&mut buf)?;
    if buf.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(buf)
}

/// The hello payload of `rank` in a group of `world`.
pub fn hello(rank: usize, world: usize) -> Vec<u8> {
    let mut b = HELLO_MAGIC.to_vec();
    b.push(VERSION);
    b.extend_from_slice(&(rank as u32).to_le_bytes());
    b.extend_from_slice(&(world as u32).to_le_bytes());
    b
}

/// Parses a hello payload into `(rank, world)`.
pub fn parse_hello(b: &[u8]) -> Result<(usize, usize), String> {
    let mut c = Cursor::new(b);
    let magic = c.take(4)?;
    if magic != HELLO_MAGIC {
        return Err("not a kiln process group peer".into());
    }
    let v = c.u8()?;
    if v != VERSION {
        return Err(format!("protocol version {v}, expected {VERSION}"));
    }
    Ok((c.u32()? as usize, c.u32()? as usize))
}

/// A collective's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `all_reduce`; arg is the [`ReduceOp`] code.
    AllReduce,
    /// `broadcast`; arg is the root rank.
    Broadcast,
    /// `all_gather`; arg is unused.
    AllGather,
    /// `barrier`; no tensor.
    Barrier,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::AllReduce => 1,
            Kind::Broadcast => 2,
            Kind::AllGather => 3,
            Kind::Barrier => 4,
        }
    }

    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            1 => Kind::AllReduce,
            2 => Kind::Broadcast,
            3 => Kind::AllGather,
            4 => Kind::Barrier,
            _ => return None,
        })
    }

    /// The script name of the collective.
    pub fn name(self) -> &'static str {
        match self {
            Kind::AllReduce => "all_reduce",
            Kind::Broadcast => "broadcast",
            Kind::AllGather => "all_gather",
            Kind::Barrier => "barrier",
        }
    }
}

/// The code of `op` sent as a request's arg.
pub(super) fn op_code(op: ReduceOp) -> u64 {
    match op {
        ReduceOp::Sum => 0,
        ReduceOp::Mean => 1,
        ReduceOp::Max => 2,
        ReduceOp::Min => 3,
    }
}

/// The reduce op of a request's arg.
fn op_from_code(c: u64) -> Option<ReduceOp> {
    Some(match c {
        0 => ReduceOp::Sum,
        1 => ReduceOp::Mean,
        2 => ReduceOp::Max,
        3 => ReduceOp::Min,
        _ => return None,
    })
}

/// What one rank contributes to a collective.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The collective.
    pub kind: Kind,
    /// The reduce op code (all_reduce) or the root (broadcast).
    pub arg: u64,
    /// How many collectives this rank ran before this one.
    pub seq: u64,
    /// The tensor's dtype (bool for barrier).
    pub dtype: DType,
    /// The tensor's shape (empty for barrier).
    pub shape: Vec<usize>,
    /// The tensor's elements, little-endian (empty where nothing is sent).
    pub data: Vec<u8>,
}

impl Request {
    /// The request as a frame payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32 + 8 * self.shape.len() + self.data.len());
        b.push(self.kind.code());
        b.extend_from_slice(&self.arg.to_le_bytes());
        b.extend_from_slice(&self.seq.to_le_bytes());
        b.push(dtype_code(self.dtype));
        b.extend_from_slice(&(self.shape.len() as u32).to_le_bytes());
        for &d in &self.shape {
            b.extend_from_slice(&(d as u64).to_le_bytes());
        }
        b.extend_from_slice(&self.data);
        b
    }

    /// Parses a frame payload.
    pub fn decode(b: &[u8]) -> Result<Request, String> {
        let mut c = Cursor::new(b);
        let kind = Kind::from_code(c.u8()?).ok_or("unknown collective")?;
        let arg = c.u64()?;
        let seq = c.u64()?;
        let dtype = DType::ALL.get(c.u8()? as usize).copied().ok_or("unknown dtype")?;
        let ndim = c.u32()? as usize;
        let mut shape = Vec::with_capacity(ndim.min(64));
        for _ in 0..ndim {
            shape.push(usize::try_from(c.u64()?).map_err(|_| "dimension too large")?);
        }
        Ok(Request {
            kind,
            arg,
            seq,
            dtype,
            shape,
            data: c.rest().to_vec(),
        })
    }

    /// The call as a user wrote it, for error messages.
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::Barrier => format!("barrier() (collective #{})", self.seq),
            k => {
                let arg = match k {
                    Kind::AllReduce => op_from_code(self.arg)
                        .map_or_else(|| "?".to_string(), |o| format!("\"{}\"", o.name())),
                    Kind::Broadcast => self.arg.to_string(),
                    _ => String::new(),
                };
                let sep = if arg.is_empty() { "" } else { ", " };
                format!(
                    "{}(<{} tensor of shape {:?}>{sep}{arg}) (collective #{})",
                    k.name(),
                    self.dtype,
                    self.shape,
                    self.seq
                )
            }
        }
    }

    fn same_call(&self, other: &Request) -> bool {
        self.kind == other.kind
            && self.arg == other.arg
            && self.seq == other.seq
            && self.dtype == other.dtype
            && self.shape == other.shape
    }
}

fn dtype_code(d: DType) -> u8 {
    DType::ALL.iter().position(|&x| x == d).unwrap_or(0) as u8
}

/// An ok reply carrying `data`.
pub fn reply_ok(data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(1 + data.len());
    b.push(0);
    b.extend_from_slice(data);
    b
}

/// An error reply carrying `msg`.
pub fn reply_err(msg: &str) -> Vec<u8> {
    let mut b = vec![1];
    b.extend_from_slice(msg.as_bytes());
    b
}

/// Parses a reply: the result's bytes, or the hub's error message.
pub fn parse_reply(mut b: Vec<u8>) -> Result<Vec<u8>, String> {
    match b.first() {
        Some(0) => {
            b.remove(0);
            Ok(b)
        }
        Some(1) => Err(String::from_utf8_lossy(&b[1..]).into_owned()),
        _ => Err("malformed reply from rank 0".into()),
    }
}

/// Checks that every rank made the same call (`reqs[r]` is rank `r`'s) and
/// computes the collective's result bytes, reducing in rank order so that
/// the result is deterministic and the same on every rank.
pub fn combine(reqs: &[Request]) -> Result<Vec<u8>, String> {
    let Some(first) = reqs.first() else {
        return Err("no ranks".into());
    };
    for (r, q) in reqs.iter().enumerate().skip(1) {
        if !q.same_call(first) {
            return Err(format!(
                "the ranks disagree: rank 0 called {} but rank {r} called {}",
                first.describe(),
                q.describe()
            ));
        }
    }
    let world = reqs.len();
    let elem = first.dtype.size_in_bytes();
    let numel = crate::core::shape::numel(&first.shape);
    let expect = |r: usize, q: &Request| {
        if q.data.len() != numel * elem {
            Err(format!(
                "rank {r} sent {} bytes for a {} tensor of shape {:?}",
                q.data.len(),
                first.dtype,
                first.shape
            ))
        } else {
            Ok(())
        }
    };
    match first.kind {
        Kind::Barrier => Ok(Vec::new()),
        Kind::AllGather => {
            let mut out = Vec::with_capacity(numel * elem * world);
            for (r, q) in reqs.iter().enumerate() {
                expect(r, q)?;
                out.extend_from_slice(&q.data);
            }
            Ok(out)
        }
        Kind::Broadcast => {
            let root = usize::try_from(first.arg).unwrap_or(usize::MAX);
            let q = reqs.get(root).ok_or_else(|| {
                format!(
                    "root {} is not a rank of this group (world size {world})",
                    first.arg
                )
            })?;
            expect(root, q)?;
            Ok(q.data.clone())
        }
        Kind::AllReduce => {
            let op = op_from_code(first.arg).ok_or("unknown reduce op")?;
            if op == ReduceOp::Mean && !first.dtype.is_float() {
                return Err(format!(
                    "op \"mean\" needs a floating-point tensor, got {} (use \"sum\")",
                    first.dtype
                ));
            }
            let fd = FileDType::of(first.dtype);
            let mut acc: Option<CpuStorage> = None;
            for (r, q) in reqs.iter().enumerate() {
                expect(r, q)?;
                let x = decode(&q.data, fd, Endian::Little)?;
                acc = Some(match acc {
                    None => x,
                    Some(mut a) => {
                        collective::accumulate(&mut a, &x, op)?;
                        a
                    }
                });
            }
            let mut acc = acc.ok_or("no ranks")?;
            if op == ReduceOp::Mean {
                collective::divide(&mut acc, world);
            }
            Ok(encode_le(&acc))
        }
    }
}

/// Reads fields from a payload; every read fails cleanly when short.
struct Cursor<'a> {
    b: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8]) -> Self {
        Cursor { b }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() < n {
            return Err("truncated message".into());
        }
        let (head, tail) = self.b.split_at(n);
        self.b = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    fn rest(&self) -> &'a [u8] {
        self.b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: Kind, arg: u64, s: CpuStorage, shape: &[usize]) -> Request {
        Request {
            kind,
            arg,
            seq: 3,
            dtype: s.dtype(),
            shape: shape.to_vec(),
            data: encode_le(&s),
        }
    }

    fn f32s(b: &[u8]) -> Vec<f32> {
        match decode(b, FileDType::F32, Endian::Little).unwrap() {
            CpuStorage::F32(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn frames_round_trip_and_reject_short_input() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"hello").unwrap();
        write_frame(&mut buf, b"").unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap(), b"hello");
        assert_eq!(read_frame(&mut r).unwrap(), b"");
        assert!(read_frame(&mut r).is_err());
        let mut short = &buf[..10];
        assert!(read_frame(&mut short).is_err());
        let huge = (MAX_FRAME + 1).to_le_bytes();
        assert!(read_frame(&mut &huge[..]).is_err());
    }

    #[test]
    fn requests_and_hellos_round_trip() {
        let q = req(
            Kind::AllReduce,
            op_code(ReduceOp::Max),
            CpuStorage::I64(vec![5, -7]),
            &[2, 1],
        );
        assert_eq!(Request::decode(&q.encode()).unwrap(), q);
        assert!(Request::decode(&q.encode()[..9]).is_err());
        assert_eq!(parse_hello(&hello(2, 3)).unwrap(), (2, 3));
        assert!(parse_hello(b"HTTP/1.1").is_err());
        assert_eq!(parse_reply(reply_ok(&[1, 2])).unwrap(), [1, 2]);
        assert_eq!(parse_reply(reply_err("boom")).unwrap_err(), "boom");
        assert!(parse_reply(Vec::new()).is_err());
    }

    #[test]
    fn reductions_in_rank_order() {
        let ranks = [
            vec![1.0f32, -2.0, 0.5],
            vec![10.0, 4.0, f32::NAN],
            vec![100.0, -8.0, 0.25],
        ];
        let reqs = |op: ReduceOp| -> Vec<Request> {
            ranks
                .iter()
                .map(|v| req(Kind::AllReduce, op_code(op), CpuStorage::F32(v.clone()), &[3]))
                .collect()
        };
        let sum = f32s(&combine(&reqs(ReduceOp::Sum)).unwrap());
        assert_eq!(&sum[..2], [111.0, -6.0]);
        assert!(sum[2].is_nan());
        let mean = f32s(&combine(&reqs(ReduceOp::Mean)).unwrap());
        assert_eq!(mean[0], 37.0);
        assert_eq!(mean[1], -2.0);
        let max = f32s(&combine(&reqs(ReduceOp::Max)).unwrap());
        assert_eq!(&max[..2], [100.0, 4.0]);
        assert!(max[2].is_nan());
        let min = f32s(&combine(&reqs(ReduceOp::Min)).unwrap());
        assert_eq!(&min[..2], [1.0, -8.0]);
    }

    #[test]
    fn integer_and_bool_reductions() {
        let ints = [CpuStorage::U8(vec![200, 3]), CpuStorage::U8(vec![100, 9])];
        let q: Vec<_> = ints
            .iter()
            .map(|s| req(Kind::AllReduce, op_code(ReduceOp::Sum), s.clone(), &[2]))
            .collect();
        assert_eq!(combine(&q).unwrap(), [44, 12]); // u8 wraps like a u8 add
        let q: Vec<_> = ints
            .iter()
            .map(|s| req(Kind::AllReduce, op_code(ReduceOp::Mean), s.clone(), &[2]))
            .collect();
        assert!(combine(&q).unwrap_err().contains("floating-point"));
        let b = [
            CpuStorage::Bool(vec![true, false]),
            CpuStorage::Bool(vec![true, true]),
        ];
        let q: Vec<_> = b
            .iter()
            .map(|s| req(Kind::AllReduce, op_code(ReduceOp::Min), s.clone(), &[2]))
            .collect();
        assert_eq!(combine(&q).unwrap(), [1, 0]);
    }

    #[test]
    fn gather_broadcast_and_mismatches() {
        let a = req(Kind::AllGather, 0, CpuStorage::I32(vec![1, 2]), &[2]);
        let b = req(Kind::AllGather, 0, CpuStorage::I32(vec![3, 4]), &[2]);
        assert_eq!(
            combine(&[a.clone(), b.clone()]).unwrap(),
            encode_le(&CpuStorage::I32(vec![1, 2, 3, 4]))
        );
        let root1 = |s| req(Kind::Broadcast, 1, s, &[2]);
        let out = combine(&[
            root1(CpuStorage::I32(vec![0, 0])),
            root1(CpuStorage::I32(vec![7, 8])),
        ]);
        assert_eq!(out.unwrap(), encode_le(&CpuStorage::I32(vec![7, 8])));
        let bad_root = req(Kind::Broadcast, 5, CpuStorage::I32(vec![1, 2]), &[2]);
        assert!(combine(&[bad_root.clone(), bad_root])
            .unwrap_err()
            .contains("root 5"));
        let c = req(Kind::AllGather, 0, CpuStorage::I32(vec![3, 4, 5]), &[3]);
        let e = combine(&[a, c]).unwrap_err();
        assert!(
            e.contains("rank 1 called all_gather(<i32 tensor of shape [3]>)"),
            "{e}"
        );
        let f = req(Kind::AllReduce, 0, CpuStorage::F32(vec![1.0, 2.0]), &[2]);
        let e = combine(&[f, b]).unwrap_err();
        assert!(
            e.contains("rank 0 called all_reduce(<f32 tensor of shape [2]>, \"sum\")"),
            "{e}"
        );
    }
}
