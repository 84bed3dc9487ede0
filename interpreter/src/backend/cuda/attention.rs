//! CUDA fused attention: the operands' views checked against their
//! storages (every access the kernels make stays inside, 16-byte aligned,
//! in 32-bit indices), the outputs allocated, the kernels launched; and the
//! blocked attention's row kernels (softmax with mask and dropout, and its
//! backward).

use super::{kernels, CudaRuntime, CudaStorage};
use crate::backend::attention::{FlashShape, HeadView};
use crate::core::error::{Error, Result};
use crate::core::DType;
use kiln_kernels::params::{AttentionRows, FlashParams, HeadStrides};

const OP: &str = "scaled_dot_product_attention";

fn invalid(msg: String) -> Error {
    Error::invalid(OP, format!("internal: fused attention: {msg}"))
}

/// The kernels' strides of an operand of `heads` heads of `rows` rows,
/// checked: 16-byte aligned rows, every element inside `len`, 32-bit offsets.
#[allow(clippy::too_many_arguments)]
fn strides(
    dtype: DType,
    name: &str,
    view: HeadView,
    s: &FlashShape,
    heads: usize,
    rows: usize,
    len: usize,
) -> Result<HeadStrides> {
    let HeadView {
        offset,
        batch,
        head,
        row,
    } = view;
    let per_16_bytes = 16 / dtype.size_in_bytes();
    if [offset, batch, head, row].iter().any(|x| x % per_16_bytes != 0) {
        return Err(invalid(format!("{name} rows are not 16-byte aligned ({view:?})")));
    }
    let last = offset + (s.batch - 1) * batch + (heads - 1) * head + (rows - 1) * row + s.d;
    if last > len || last > u32::MAX as usize {
        return Err(invalid(format!(
            "{name} view {view:?} of {s:?} reaches element {last} of {len}"
        )));
    }
    Ok(HeadStrides {
        batch: batch as u32,
        head: head as u32,
        row: row as u32,
    })
}

/// The kernels' parameters for `shape` and the three operands' views.
fn params(shape: &FlashShape, [q, k, v]: [(&CudaStorage, HeadView); 3]) -> Result<FlashParams> {
    let s = shape;
    let dtype = q.0.dtype;
    if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32) || k.0.dtype != dtype || v.0.dtype != dtype {
        return Err(invalid(format!("dtype {dtype:?}")));
    }
    if !FlashParams::HEAD_DIMS.contains(&s.d) {
        return Err(invalid(format!("head dim {}", s.d)));
    }
    if s.batch == 0
        || s.l == 0
        || s.s == 0
        || s.kv_heads == 0
        || s.heads % s.kv_heads != 0
        || !(0.0..=1.0).contains(&s.dropout)
    {
        return Err(invalid(format!("shape {s:?}")));
    }
    if s.batch > 65_535 || s.heads > 65_535 {
        return Err(invalid(format!(
            "{s:?} has more heads or batch entries than a launch grid takes"
        )));
    }
    let (out, kv) = (s.batch * s.heads * s.l * s.d, s.batch * s.kv_heads * s.s * s.d);
    if out > u32::MAX as usize || kv > u32::MAX as usize {
        return Err(Error::invalid(
            OP,
            format!("{s:?} is too large for the fused CUDA kernels (32-bit indexing)"),
        ));
    }
    Ok(FlashParams {
        l: s.l as u32,
        s: s.s as u32,
        heads: s.heads as u32,
        group: (s.heads / s.kv_heads) as u32,
        causal: s.causal as u32,
        scale: s.scale as f32,
        q: strides(dtype, "query", q.1, s, s.heads, s.l, q.0.len)?,
        k: strides(dtype, "key", k.1, s, s.kv_heads, s.s, k.0.len)?,
        v: strides(dtype, "value", v.1, s, s.kv_heads, s.s, v.0.len)?,
        o: strides(
            dtype,
            "output",
            s.out.view(s.heads, s.l, s.d),
            s,
            s.heads,
            s.l,
            out,
        )?,
        dq: strides(
            dtype,
            "query gradient",
            s.grads[0].view(s.heads, s.l, s.d),
            s,
            s.heads,
            s.l,
            out,
        )?,
        dk: strides(
            dtype,
            "key gradient",
            s.grads[1].view(s.kv_heads, s.s, s.d),
            s,
            s.kv_heads,
            s.s,
            kv,
        )?,
        dv: strides(
            dtype,
            "value gradient",
            s.grads[2].view(s.kv_heads, s.s, s.d),
            s,
            s.kv_heads,
            s.s,
            kv,
        )?,
        dropout: s.dropout as f32,
        dropout_scale: (1.0 / (1.0 - s.dropout)) as f32,
        seed: s.draw.0,
        stream: s.draw.1,
        draw_at: if s.dropout > 0.0 {
            crate::core::capture::claim_draw(s.draw.0, s.draw.1)
        } else {
            0
        },
    })
}

/// `h` with its capture draw slot (see [`crate::core::capture::claim_draw`]).
fn with_draw_slot(h: AttentionRows) -> AttentionRows {
    AttentionRows {
        draw_at: if h.dropout > 0.0 {
            crate::core::capture::claim_draw(h.seed, h.stream)
        } else {
            0
        },
        ..h
    }
}

/// The device address of a view's first element.
fn at(t: (&CudaStorage, HeadView)) -> u64 {
    t.0.ptr() + (t.1.offset * t.0.dtype.size_in_bytes()) as u64
}

impl CudaStorage {
    /// See `Storage::flash_attention`.
    pub fn flash_attention(
        q: (&CudaStorage, HeadView),
        k: (&CudaStorage, HeadView),
        v: (&CudaStorage, HeadView),
        shape: &FlashShape,
    ) -> Result<(CudaStorage, CudaStorage)> {
        let rt = CudaRuntime::get()?;
        let h = params(shape, [q, k, v])?;
        let dtype = q.0.dtype;
        let o = CudaStorage::alloc(dtype, shape.batch * shape.heads * shape.l * shape.d)?;
        let lse = CudaStorage::alloc(DType::F32, shape.batch * shape.heads * shape.l)?;
        kernels::flash_forward(
            rt,
            dtype,
            shape.d,
            shape.batch as u32,
            h,
            [at(q), at(k), at(v), o.ptr(), lse.ptr()],
        )?;
        Ok((o, lse))
    }

    /// See `Storage::flash_attention_backward`.
    pub fn flash_attention_backward(
        q: (&CudaStorage, HeadView),
        k: (&CudaStorage, HeadView),
        v: (&CudaStorage, HeadView),
        [dout, lse, out]: [&CudaStorage; 3],
        shape: &FlashShape,
    ) -> Result<(CudaStorage, CudaStorage, CudaStorage)> {
        let rt = CudaRuntime::get()?;
        let h = params(shape, [q, k, v])?;
        let dtype = q.0.dtype;
        let rows = shape.batch * shape.heads * shape.l;
        if dout.dtype != dtype
            || out.dtype != dtype
            || dout.len != rows * shape.d
            || out.len != rows * shape.d
            || lse.len != rows
        {
            return Err(invalid(format!(
                "gradient operands of {} / {} / {} elements for {shape:?}",
                dout.len, lse.len, out.len
            )));
        }
        if lse.dtype != DType::F32 {
            return Err(invalid("the log-sum-exp must be f32".into()));
        }
        let delta = CudaStorage::alloc(DType::F32, rows)?;
        let n = rows * shape.d;
        // the one-kernel backward adds the query gradient up in f32 sums,
        // which the row terms' kernel zeroes
        let sums_dq = kernels::backward_sums_dq(rt, dtype, shape.d, h.dropout);
        let acc = if sums_dq {
            Some(CudaStorage::alloc(DType::F32, n)?)
        } else {
            None
        };
        kernels::flash_delta(
            rt,
            dtype,
            shape.d,
            shape.batch as u32,
            h,
            [
                out.ptr(),
                dout.ptr(),
                delta.ptr(),
                acc.as_ref().map_or(0, |a| a.ptr()),
            ],
        )?;
        let kv = shape.batch * shape.kv_heads * shape.s * shape.d;
        let (dk, dv) = (CudaStorage::alloc(dtype, kv)?, CudaStorage::alloc(dtype, kv)?);
        if let Some(acc) = acc {
            let n32 = u32::try_from(n).map_err(|_| invalid(format!("a query gradient of {n} elements")))?;
            kernels::flash_backward_summing_dq(
                rt,
                dtype,
                shape.d,
                shape.batch as u32,
                h,
                [at(q), at(k), at(v), dout.ptr(), lse.ptr(), delta.ptr()],
                [acc.ptr(), dk.ptr(), dv.ptr()],
            )?;
            let dq = CudaStorage::alloc(dtype, n)?;
            let cast = rt.kernels.get(kernels::Kernel::CastV(DType::F32, dtype))?;
            kernels::cast_v(rt, cast, (DType::F32, dtype), n32, acc.ptr(), dq.ptr())?;
            return Ok((dq, dk, dv));
        }
        let dq = CudaStorage::alloc(dtype, n)?;
        kernels::flash_backward(
            rt,
            dtype,
            shape.d,
            shape.batch as u32,
            h,
            [at(q), at(k), at(v), dout.ptr(), lse.ptr(), delta.ptr()],
            [dq.ptr(), dk.ptr(), dv.ptr()],
        )?;
        Ok((dq, dk, dv))
    }

    /// See `Storage::attention_rows`.
    pub fn attention_rows(&self, h: AttentionRows) -> Result<(CudaStorage, CudaStorage)> {
        let rt = CudaRuntime::get()?;
        let rows = self.len / h.keys.max(1) as usize;
        let (w, lse) = (
            CudaStorage::alloc(self.dtype, self.len)?,
            CudaStorage::alloc(self.dtype, rows)?,
        );
        if rows > 0 && h.keys > 0 {
            let h = with_draw_slot(h);
            kernels::attention_rows(rt, self.dtype, rows as u32, h, [self.ptr(), w.ptr(), lse.ptr()])?;
        }
        Ok((w, lse))
    }

    /// See `Storage::attention_rows_backward`.
    pub fn attention_rows_backward(
        &self,
        [lse, gw, delta]: [&CudaStorage; 3],
        h: AttentionRows,
    ) -> Result<(CudaStorage, CudaStorage)> {
        let rt = CudaRuntime::get()?;
        let rows = self.len / h.keys.max(1) as usize;
        let (wd, ds) = (
            CudaStorage::alloc(self.dtype, self.len)?,
            CudaStorage::alloc(self.dtype, self.len)?,
        );
        if rows > 0 && h.keys > 0 {
            let ptrs = [self.ptr(), lse.ptr(), gw.ptr(), delta.ptr(), wd.ptr(), ds.ptr()];
            kernels::attention_rows_backward(rt, self.dtype, rows as u32, with_draw_slot(h), ptrs)?;
        }
        Ok((wd, ds))
    }
}
