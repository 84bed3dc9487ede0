//! Launch parameters shared by the host and the kernels. Each struct is
//! `#[repr(C)]`, passed to kernels by value, and defined only here, so the host
//! and the device cannot disagree on a field's place or type.

/// The most dims a strided kernel walks (after merging adjacent dims).
pub const MAX_DIMS: usize = 8;

/// The logical shape an elementwise kernel walks, outermost dim first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Geometry {
    /// Number of logical elements.
    pub n: u32,
    /// Number of dims in use (0 means a single element).
    pub ndim: u32,
    /// Size of each dim in use.
    pub sizes: [u32; MAX_DIMS],
}

/// Where one operand's elements are: an offset and a stride per dim of its
/// [`Geometry`] (stride 0 broadcasts), in elements.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Operand {
    /// Offset of the first element.
    pub offset: u32,
    /// 1 when the operand is dense in logical order (a fast path), else 0.
    pub contiguous: u32,
    /// Stride of each dim.
    pub strides: [u32; MAX_DIMS],
}

impl Geometry {
    /// The storage offset of logical element `i` of `op`.
    #[inline(always)]
    pub fn offset(&self, op: &Operand, i: u32) -> u32 {
        if op.contiguous != 0 {
            return op.offset + i;
        }
        if self.ndim <= 1 {
            return op.offset + i * op.strides[0];
        }
        let mut rem = i;
        let mut off = op.offset;
        let mut d = self.ndim as usize;
        while d > 0 {
            d -= 1;
            let size = self.sizes[d];
            let q = rem / size;
            off += (rem - q * size) * op.strides[d];
            rem = q;
        }
        off
    }
}

/// Sizes and matrix strides of an integer batched matmul (`y = a @ b`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatmulShape {
    /// rows of `a` and `y`
    pub m: u32,
    /// columns of `b` and `y`
    pub n: u32,
    /// the contracted size
    pub k: u32,
    /// row stride of `a`
    pub ars: u32,
    /// column stride of `a`
    pub acs: u32,
    /// row stride of `b`
    pub brs: u32,
    /// column stride of `b`
    pub bcs: u32,
}

/// The cross-entropy row kernels' sizes and options (forward and backward).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CrossEntropyParams {
    /// Number of rows (samples).
    pub rows: u32,
    /// Row length (classes).
    pub classes: u32,
    /// 1: one warp per row; 0: one block per row (set by the launch).
    pub per_warp: u32,
    /// Backward only: the stride of the per-row output gradient (0 broadcasts one value).
    pub grad_stride: u32,
    /// Rows whose label equals this contribute nothing (PyTorch's `ignore_index`).
    pub ignore_index: i64,
    /// Label smoothing in `[0, 1]`.
    pub smoothing: f64,
}

/// [`SgdParams::flags`]: add `weight_decay * param` to the gradient.
pub const SGD_WEIGHT_DECAY: u32 = 1;
/// [`SgdParams::flags`]: keep a momentum buffer.
pub const SGD_MOMENTUM: u32 = 2;
/// [`SgdParams::flags`]: Nesterov momentum.
pub const SGD_NESTEROV: u32 = 4;
/// [`SgdParams::flags`]: the first step: the buffer takes the update
/// (PyTorch's `momentum_buffer is None`).
pub const SGD_INIT_BUFFER: u32 = 8;

/// Hyperparameters of one SGD step (`torch.optim.SGD`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SgdParams {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor.
    pub momentum: f64,
    /// Dampening of the momentum.
    pub dampening: f64,
    /// L2 penalty.
    pub weight_decay: f64,
    /// `SGD_*` bits.
    pub flags: u32,
    /// The device address of the step count (an `i64`, counted from 1),
    /// or 0: when set, the kernel decides [`SGD_INIT_BUFFER`] from it (the
    /// first step initialises the buffer), so a recorded step stays right
    /// when replayed.
    pub step_at: u64,
}

impl SgdParams {
    /// These parameters with [`SGD_INIT_BUFFER`] decided by the count at
    /// `step_at` (unchanged when it is 0).
    ///
    /// # Safety
    /// A nonzero `step_at` must be the address of a readable `i64`.
    #[inline(always)]
    pub unsafe fn resolve(mut self) -> Self {
        if self.step_at != 0 {
            if *(self.step_at as *const i64) == 1 {
                self.flags |= SGD_INIT_BUFFER;
            } else {
                self.flags &= !SGD_INIT_BUFFER;
            }
        }
        self
    }
}

/// [`AdamParams::flags`]: add `weight_decay * param` to the gradient (Adam).
pub const ADAM_WEIGHT_DECAY: u32 = 1;
/// [`AdamParams::flags`]: decay the parameter by `1 - lr * weight_decay` (AdamW).
pub const ADAM_DECOUPLED: u32 = 2;

/// Hyperparameters of one Adam / AdamW step (`torch.optim.Adam`, `AdamW`),
/// with the step's bias corrections computed in f64: on the host, or in
/// the kernel from a step count in device memory (`step_at`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AdamParams {
    /// `1 - beta1`: the weight of the gradient in the first moment.
    pub one_minus_beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// `1 - beta2`.
    pub one_minus_beta2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// L2 penalty (Adam) or decoupled decay (AdamW).
    pub weight_decay: f64,
    /// `1 - lr * weight_decay` (AdamW's parameter decay).
    pub decay: f64,
    /// `lr / (1 - beta1^step)`.
    pub step_size: f64,
    /// `sqrt(1 - beta2^step)`.
    pub bias_correction2_sqrt: f64,
    /// `ADAM_*` bits.
    pub flags: u32,
    /// The learning rate.
    pub lr: f64,
    /// Decay of the first moment.
    pub beta1: f64,
    /// The device address of the step count (an `i64`, counted from 1),
    /// or 0: when set, the kernel computes `step_size` and
    /// `bias_correction2_sqrt` from it, so a recorded step stays right when
    /// replayed.
    pub step_at: u64,
}

impl AdamParams {
    /// The parameters of step `step` (counted from 1).
    pub fn new(lr: f64, betas: (f64, f64), eps: f64, weight_decay: f64, step: u64, decoupled: bool) -> Self {
        let (beta1, beta2) = betas;
        let mut flags = 0;
        if weight_decay != 0.0 {
            flags |= if decoupled {
                ADAM_DECOUPLED
            } else {
                ADAM_WEIGHT_DECAY
            };
        }
        AdamParams {
            one_minus_beta1: 1.0 - beta1,
            beta2,
            one_minus_beta2: 1.0 - beta2,
            eps,
            weight_decay,
            decay: 1.0 - lr * weight_decay,
            step_size: 0.0,
            bias_correction2_sqrt: 0.0,
            flags,
            lr,
            beta1,
            step_at: 0,
        }
        .at_step(step)
    }

    /// These parameters with the bias corrections of step `step` (the same
    /// arithmetic on the host and in a kernel).
    #[inline(always)]
    pub fn at_step(mut self, step: u64) -> Self {
        let s = step as f64;
        self.step_size = self.lr / (1.0 - crate::math::pow_f64(self.beta1, s));
        self.bias_correction2_sqrt = crate::math::sqrt_f64(1.0 - crate::math::pow_f64(self.beta2, s));
        self
    }

    /// These parameters at the step count at `step_at` (unchanged when it is 0).
    ///
    /// # Safety
    /// A nonzero `step_at` must be the address of a readable `i64`.
    #[inline(always)]
    pub unsafe fn resolve(self) -> Self {
        if self.step_at == 0 {
            return self;
        }
        self.at_step(*(self.step_at as *const i64) as u64)
    }
}

/// The indexed dim of a gather or scatter-add kernel (`gather_*`,
/// `scatter_add_*`): the element an index `k` picks lies `k * stride` past
/// the base operand's offset, and only `0 <= k < size` is used.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexDim {
    /// Stride of the indexed dim in the indexed tensor, in elements.
    pub stride: u32,
    /// Size of the indexed dim (indices at or above it are out of range).
    pub size: u32,
}

/// Which elements of a Philox stream a uniform draw takes: output element
/// `e` is element `start + (e / run) · stride + e % run` of the stream, so a
/// block of rows of every matrix of a batch draws exactly the values the
/// whole batch's draw has there (attention's dropout, drawn block by block
/// or in a fused kernel, is the same); `run` 0 takes elements `0..n`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RandView {
    /// The stream element of output element 0.
    pub start: u64,
    /// Stream elements between the starts of consecutive runs.
    pub stride: u64,
    /// Output elements per run (0: one dense run).
    pub run: u64,
}

impl RandView {
    /// The stream element output element `e` takes.
    #[inline(always)]
    pub fn index(&self, e: u64) -> u64 {
        match (e.checked_div(self.run), e.checked_rem(self.run)) {
            (Some(q), Some(r)) => self.start + q * self.stride + r,
            _ => e,
        }
    }
}

/// Where one `[batch, head, row, :]` row of an attention operand starts:
/// its strides in elements (the last dim is dense and its rows 16-byte
/// aligned; the host checks both).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadStrides {
    /// Between batch entries.
    pub batch: u32,
    /// Between heads.
    pub head: u32,
    /// Between rows (queries or keys).
    pub row: u32,
}

impl HeadStrides {
    /// The element offset of row `row` of head `head` of batch entry `batch`.
    #[inline(always)]
    pub fn offset(&self, batch: u32, head: u32, row: u32) -> usize {
        batch as usize * self.batch as usize
            + head as usize * self.head as usize
            + row as usize * self.row as usize
    }
}

/// The sizes and options of the fused attention kernels (`flash_*`):
/// `q [B, H, L, D]`, `k`, `v [B, H / group, S, D]`, the output `o` (and its
/// gradient `dout`, laid out alike) and the gradients `dq`, `dk`, `dv`
/// through their strides; `lse` and `delta` are dense `[B, H, L]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlashParams {
    /// Query length `L`.
    pub l: u32,
    /// Key length `S`.
    pub s: u32,
    /// Query heads `H`.
    pub heads: u32,
    /// Query heads per key/value head (1 without grouped-query attention).
    pub group: u32,
    /// 1: query `i` attends to keys `0..=i` only (top-left aligned).
    pub causal: u32,
    /// The factor on `q·k`.
    pub scale: f32,
    /// The query's strides.
    pub q: HeadStrides,
    /// The key's strides.
    pub k: HeadStrides,
    /// The value's strides.
    pub v: HeadStrides,
    /// The output's strides, and its gradient's.
    pub o: HeadStrides,
    /// The query gradient's strides.
    pub dq: HeadStrides,
    /// The key gradient's strides.
    pub dk: HeadStrides,
    /// The value gradient's strides.
    pub dv: HeadStrides,
    /// Dropout probability of the attention weights (0: none).
    pub dropout: f32,
    /// The factor on a kept weight, `1 / (1 - dropout)` rounded to f32.
    pub dropout_scale: f32,
    /// The dropout's draw: the weight of key `j` for query `i` of matrix
    /// `b·H + h` is kept when element `((b·H + h)·L + i)·S + j` of the
    /// uniform draw `(seed, stream)` is at least `dropout` (as the blocked
    /// attention draws it).
    pub seed: u64,
    /// See `seed`.
    pub stream: u64,
    /// A CUDA graph's draw slot, or 0 (see [`crate::philox::replayed`]).
    pub draw_at: u64,
}

impl FlashParams {
    /// These parameters with the draw a graph replay makes (unchanged
    /// outside graphs).
    ///
    /// # Safety
    /// As [`crate::philox::replayed`].
    #[inline(always)]
    pub unsafe fn replayed(mut self) -> Self {
        (self.seed, self.stream) = crate::philox::replayed(self.seed, self.stream, self.draw_at);
        self
    }

    /// Whether the weight of key `col` for query `row` of matrix `bh`
    /// survives the dropout.
    #[inline(always)]
    pub fn keeps(&self, bh: u32, row: u32, col: u32) -> bool {
        let i = (bh as u64 * self.l as u64 + row as u64) * self.s as u64 + col as u64;
        crate::philox::uniform_at(self.seed, self.stream, i) >= self.dropout
    }

    /// The keep bits (bit `j` for key `col + j`) of the four weights of
    /// keys `col..col + 4` for query `row` of matrix `bh`, from one Philox
    /// block: as [`FlashParams::keeps`] gives them when the first one's
    /// element is a multiple of 4 (`S` and `col` multiples of 4).
    #[inline(always)]
    pub fn keeps4(&self, bh: u32, row: u32, col: u32) -> u32 {
        let i = (bh as u64 * self.l as u64 + row as u64) * self.s as u64 + col as u64;
        let k = crate::philox::keep4(self.seed, self.stream, i / 4, self.dropout);
        k[0] as u32 | (k[1] as u32) << 1 | (k[2] as u32) << 2 | (k[3] as u32) << 3
    }

    /// Threads a block of the `flash_*` kernels (four warps).
    pub const THREADS: u32 = 128;
    /// Rows a block owns: queries in the forward and the query gradient,
    /// keys in the key/value gradients (16 a warp).
    pub const BLOCK_ROWS: u32 = 64;
    /// The head dims the kernels are built for.
    pub const HEAD_DIMS: [usize; 4] = [32, 64, 96, 128];
    /// Padding of each shared-memory row, in bytes (the eight rows one
    /// `ldmatrix` reads then fall in distinct banks, and so do the f32
    /// kernels' single-word reads of rows `2t` and `2t + 1`).
    pub const PAD_BYTES: usize = 16;

    /// Bytes of one shared row of `d` elements of `elem` bytes, padded.
    pub const fn row_bytes(d: usize, elem: usize) -> usize {
        d * elem + Self::PAD_BYTES
    }

    /// Query rows per tile of the key/value backward: the registers hold
    /// `dK` and `dV` for 16 keys × `d`, so wide heads take fewer at a time.
    pub const fn kv_query_rows(d: usize) -> u32 {
        if d > 64 {
            32
        } else {
            64
        }
    }

    /// Key rows per tile of the query backward.
    pub const fn q_key_rows(d: usize) -> u32 {
        if d > 64 {
            32
        } else {
            64
        }
    }

    /// Whether the `mma.sync` kernels keep `operands` row fragments of head
    /// dim `d` (`elem`-byte elements) in registers for the whole walk (the
    /// forward's queries: 1; the query backward's queries and output
    /// gradients: 2), or read them from shared memory at each step: f32's,
    /// split into two tf32 parts as they are used, take twice the
    /// registers of halves.
    pub const fn rows_in_registers(d: usize, elem: usize, operands: usize) -> bool {
        operands * d * elem <= if elem == 2 { 512 } else { 256 }
    }

    /// Bytes of one shared tile of 64 rows of `elem`-byte elements.
    const fn tile_bytes(d: usize, elem: usize) -> usize {
        Self::BLOCK_ROWS as usize * Self::row_bytes(d, elem)
    }

    /// Shared memory of the forward (elements of `elem` bytes: 2 for the
    /// halves, 4 for f32): two buffers of a key and a value tile of 64
    /// rows (the next pair loads while the current one is used), then the
    /// query tile where the queries stay in shared memory
    /// ([`FlashParams::rows_in_registers`]).
    pub const fn forward_shared_bytes(d: usize, elem: usize) -> u32 {
        let queries = if Self::rows_in_registers(d, elem, 1) {
            0
        } else {
            Self::tile_bytes(d, elem)
        };
        (4 * Self::tile_bytes(d, elem) + queries) as u32
    }

    /// Threads a block of `flash_delta_*` (a warp a row).
    pub const DELTA_THREADS: u32 = 256;

    /// Threads a block of the Hopper query backward
    /// (`flash90_backward_q_*`): three warpgroups of four warps (the
    /// kernels are capped at 168 registers so that they fit one SM).
    pub const HOPPER_THREADS: u32 = 384;
    /// Computing warpgroups of a block of the Hopper forward
    /// (`flash90_forward_*`), 64 query rows each, beside one producer
    /// warpgroup that loads the tiles: three at head dim 64, two at 128,
    /// where the output and the scores of a tile of 128 keys take 128
    /// registers a thread (as FlashAttention-3 has it).
    pub const fn hopper_forward_consumers(d: usize) -> u32 {
        if d > 64 {
            2
        } else {
            3
        }
    }
    /// Threads a block of the Hopper forward: the producer warpgroup and
    /// [`FlashParams::hopper_forward_consumers`] (launched at the most
    /// registers with which the block fits an SM, then moved by
    /// `setmaxnreg`: [`FlashParams::HOPPER_PRODUCER_REGISTERS`] and
    /// [`FlashParams::hopper_forward_consumer_registers`]).
    pub const fn hopper_forward_threads(d: usize) -> u32 {
        128 * (1 + Self::hopper_forward_consumers(d))
    }
    /// Query rows a block of the Hopper forward owns (64 a computing
    /// warpgroup).
    pub const fn hopper_forward_rows(d: usize) -> u32 {
        64 * Self::hopper_forward_consumers(d)
    }
    /// Registers a producer thread of the Hopper forward keeps.
    pub const HOPPER_PRODUCER_REGISTERS: u32 = 24;
    /// Registers a consumer thread of the Hopper forward may use: the
    /// producer's share given back, spread over the consumers (128·24 +
    /// 384·160 ≤ 65536 with three, 128·24 + 256·240 with two).
    pub const fn hopper_forward_consumer_registers(d: usize) -> u32 {
        if Self::hopper_forward_consumers(d) == 2 {
            240
        } else {
            160
        }
    }
    /// Query rows a block of the Hopper query backward owns (64 a
    /// warpgroup).
    pub const HOPPER_BLOCK_ROWS: u32 = 192;
    /// Keys per tile of the Hopper forward: 128 (the scores of 128 keys
    /// beside the output of 64 or 128 columns; a step of K-major operands
    /// then reads 96 bytes of shared memory a clock, below the SM's 128).
    pub const fn hopper_key_rows(_d: usize) -> u32 {
        128
    }
    /// The key tiles of `keys` rows that a block of query rows
    /// `row0..row0 + rows` walks: every one, or under a causal mask those
    /// up to its last row's diagonal.
    pub fn key_tiles(&self, row0: u32, rows: u32, keys: u32) -> u32 {
        let all = self.s.div_ceil(keys);
        if self.causal != 0 {
            let last_row = (row0 + rows - 1).min(self.l - 1);
            all.min(last_row / keys + 1)
        } else {
            all
        }
    }

    /// The head dims the Hopper forward is built for.
    pub const HOPPER_HEAD_DIMS: [usize; 2] = [64, 128];

    /// Shared memory of the Hopper forward, all in `wgmma`'s swizzle from a
    /// 1024-byte boundary (hence the extra 1024 bytes): the block's query
    /// rows, then [`FlashParams::HOPPER_BUFFERS`] buffers each of a key and
    /// a value tile of [`FlashParams::hopper_key_rows`] rows, then the
    /// pipeline's barriers (128 bytes).
    pub const fn hopper_forward_shared_bytes(d: usize) -> u32 {
        let queries = Self::hopper_forward_rows(d) as usize * d * 2;
        let tiles = 2 * Self::HOPPER_BUFFERS as usize;
        (queries + tiles * Self::hopper_key_rows(d) as usize * d * 2 + 128 + 1024) as u32
    }
    /// Buffers of key and value tiles in the Hopper forward: those being
    /// read, those landed for the next step, and those loading.
    pub const HOPPER_BUFFERS: u32 = 3;

    /// Threads a block of the Hopper key/value backward
    /// (`flash90_backward_kv_*`): two warpgroups, whose gradients of 64 keys
    /// each take most of an SM's registers.
    pub const HOPPER_KV_THREADS: u32 = 256;
    /// Keys a block of the Hopper key/value backward owns (64 a warpgroup).
    pub const HOPPER_KV_KEYS: u32 = 128;
    /// Query rows per tile of the Hopper key/value backward, and key rows
    /// per tile of the Hopper query backward (whose blocks are those of the
    /// Hopper forward: [`FlashParams::HOPPER_THREADS`] threads,
    /// [`FlashParams::HOPPER_BLOCK_ROWS`] query rows).
    pub const HOPPER_BACKWARD_TILE: u32 = 64;

    /// The k-steps (16 columns each, from the first) of the query rows that
    /// a consumer warp of the Hopper forward holds in registers as A
    /// fragments, so that their scores read only the keys from shared
    /// memory: none, since a step of K-major operands at 128 keys reads 96
    /// bytes a clock, below the SM's 128, and the registers are better
    /// spent on the tile's scores.
    pub const fn hopper_forward_held_steps(_d: usize) -> usize {
        0
    }

    /// The same for the Hopper backward kernels and the operand fixed for
    /// a whole block (K and V in the key/value backward, Q and dO in the
    /// query backward): all of it at head dim 64, where the fragments fit
    /// beside the accumulators; none at 128, where they would spill.
    pub const fn hopper_backward_held_steps(d: usize) -> usize {
        if d > 64 {
            0
        } else {
            d / 16
        }
    }

    /// Whether the Hopper backward at head dim `d` is one kernel adding the
    /// query gradient up in f32 (`flash90_backward_kvq_*`): at 128 (1–3 %
    /// faster on an H100), not at 64, where each warpgroup adds the whole
    /// query tile, twice the sums, and two kernels are 10 % faster.
    pub const fn hopper_backward_sums_dq(d: usize) -> bool {
        d > 64
    }

    /// Shared memory of the Hopper key/value backward, in the swizzle from
    /// a 1024-byte boundary: the block's key and value tiles, two buffers
    /// of a query and an output-gradient tile, the two buffers'
    /// log-sum-exps and deltas (f32), then, when it adds the query
    /// gradient too (`dq`), a step's `dSᵀ` (keys × query tile).
    pub const fn hopper_backward_kv_shared_bytes(d: usize, dq: bool) -> u32 {
        let keys = 2 * Self::HOPPER_KV_KEYS as usize * d * 2;
        let tile = Self::HOPPER_BACKWARD_TILE as usize;
        let scores = if dq {
            Self::HOPPER_KV_KEYS as usize * tile * 2
        } else {
            0
        };
        (keys + 4 * tile * d * 2 + 4 * tile * 4 + scores + 1024) as u32
    }

    /// Shared memory of the Hopper query backward, in the swizzle from a
    /// 1024-byte boundary: the block's query and output-gradient rows, then
    /// two buffers each of a key and a value tile.
    pub const fn hopper_backward_q_shared_bytes(d: usize) -> u32 {
        let rows = 2 * Self::HOPPER_BLOCK_ROWS as usize * d * 2;
        (rows + 4 * Self::HOPPER_BACKWARD_TILE as usize * d * 2 + 1024) as u32
    }

    /// Shared memory of the query backward: its query and output-gradient
    /// tiles of 64 rows, then two buffers of a key and a value tile of
    /// [`FlashParams::q_key_rows`] (in the same memory where the rows'
    /// fragments move to registers, after it where they stay).
    pub const fn backward_q_shared_bytes(d: usize, elem: usize) -> u32 {
        let staged = 2 * Self::tile_bytes(d, elem);
        let pipelined = 4 * Self::q_key_rows(d) as usize * Self::row_bytes(d, elem);
        (if !Self::rows_in_registers(d, elem, 2) {
            staged + pipelined
        } else if staged > pipelined {
            staged
        } else {
            pipelined
        }) as u32
    }

    /// Shared memory of the key/value backward: key and value tiles of 64
    /// rows, then two buffers of a query and an output-gradient tile and
    /// the tile's log-sum-exps and deltas.
    pub const fn backward_kv_shared_bytes(d: usize, elem: usize) -> u32 {
        let q = Self::kv_query_rows(d) as usize;
        (2 * Self::tile_bytes(d, elem) + 4 * q * Self::row_bytes(d, elem) + 4 * q * 4) as u32
    }
}

/// Tensors one multi-tensor optimizer launch takes (more go in more launches).
pub const LIST_TENSORS: usize = 24;

/// The tensors of a multi-tensor launch (`adam_multi_*`: each tensor's
/// parameter, gradient and two state buffers; `norm_multi_*` and
/// `scale_multi_*`: one tensor each, in `p`), as device addresses of dense
/// runs of `len` elements, split into chunks of [`TensorList::CHUNK`]
/// elements, one block each. Passed by value: the kernel reads it with
/// constant indices only (its lookups are written out), so it stays in the
/// parameter space.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TensorList {
    /// Tensors in the list.
    pub count: u32,
    /// Elements of each tensor.
    pub len: [u32; LIST_TENSORS],
    /// The first block of each tensor; entry `count` is the launch's blocks.
    pub first_block: [u32; LIST_TENSORS + 1],
    /// Parameters.
    pub p: [u64; LIST_TENSORS],
    /// Gradients.
    pub g: [u64; LIST_TENSORS],
    /// First state buffers (Adam's first moments).
    pub m: [u64; LIST_TENSORS],
    /// Second state buffers (Adam's second moments).
    pub v: [u64; LIST_TENSORS],
}

impl TensorList {
    /// Elements a block updates.
    pub const CHUNK: u32 = 4096;

    /// Appends a tensor of `len` elements (dense, at the given addresses);
    /// false when the list is full.
    pub fn push(&mut self, len: u32, [p, g, m, v]: [u64; 4]) -> bool {
        let i = self.count as usize;
        if i == LIST_TENSORS {
            return false;
        }
        self.len[i] = len;
        (self.p[i], self.g[i], self.m[i], self.v[i]) = (p, g, m, v);
        self.first_block[i + 1] = self.first_block[i] + len.div_ceil(Self::CHUNK);
        self.count += 1;
        true
    }

    /// Blocks the launch takes.
    pub fn blocks(&self) -> u32 {
        self.first_block[self.count as usize]
    }

    /// The tensor block `block` updates, and its element range there
    /// (constant indices only, for the kernel).
    #[inline(always)]
    pub fn locate(&self, block: u32) -> (usize, u32, u32) {
        let mut t = 0;
        let mut i = 1;
        while i < LIST_TENSORS {
            if (i as u32) < self.count && block >= self.first_block[i] {
                t = i;
            }
            i += 1;
        }
        let mut first = 0;
        let mut len = 0;
        let mut i = 0;
        while i < LIST_TENSORS {
            if i == t {
                first = self.first_block[i];
                len = self.len[i];
            }
            i += 1;
        }
        let start = (block - first) * Self::CHUNK;
        (t, start, len.min(start + Self::CHUNK))
    }

    /// Entry `t` of `a` (constant indices only, for the kernel).
    #[inline(always)]
    pub fn pick(a: &[u64; LIST_TENSORS], t: usize) -> u64 {
        let mut r = 0;
        let mut i = 0;
        while i < LIST_TENSORS {
            if i == t {
                r = a[i];
            }
            i += 1;
        }
        r
    }
}

#[cfg(test)]
mod list_tests {
    use super::*;

    #[test]
    fn blocks_find_their_tensor_and_range() {
        let mut l = TensorList::default();
        let c = TensorList::CHUNK;
        for (k, n) in [1, c, c + 1, 3 * c].iter().enumerate() {
            assert!(l.push(*n, [k as u64; 4]));
        }
        assert_eq!(l.blocks(), 1 + 1 + 2 + 3);
        assert_eq!(l.locate(0), (0, 0, 1));
        assert_eq!(l.locate(1), (1, 0, c));
        assert_eq!(l.locate(2), (2, 0, c));
        assert_eq!(l.locate(3), (2, c, c + 1));
        assert_eq!(l.locate(6), (3, 2 * c, 3 * c));
        assert_eq!(TensorList::pick(&l.p, 2), 2);
        for _ in 4..LIST_TENSORS {
            assert!(l.push(1, [0; 4]));
        }
        assert!(!l.push(1, [0; 4]));
    }
}

/// One block of the blocked attention's score rows (`attention_rows_*`):
/// `[M, n, S]` scores of `M` query-key matrices, rows `i0 .. i0 + n` of
/// each matrix's `L` queries. Row `r` is query `i0 + r % n` of matrix
/// `r / n`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AttentionRows {
    /// Rows of the block in each matrix.
    pub n: u32,
    /// Keys `S` (the row length).
    pub keys: u32,
    /// The block's first query.
    pub i0: u32,
    /// Queries `L` of each matrix.
    pub l: u32,
    /// 1: query `i` attends to keys `0..=i` only.
    pub causal: u32,
    /// Dropout probability of the weights (0: none).
    pub dropout: f32,
    /// The factor on the scores.
    pub scale: f64,
    /// The factor on a kept weight, `1 / (1 - dropout)`.
    pub keep_scale: f64,
    /// The dropout's draw: the weight of key `j` for query `i` of matrix
    /// `m` is kept when element `(m·L + i)·S + j` of the uniform draw
    /// `(seed, stream)` is at least `dropout` (as [`FlashParams::keeps`]).
    pub seed: u64,
    /// See `seed`.
    pub stream: u64,
    /// A CUDA graph's draw slot, or 0 (see [`crate::philox::replayed`]).
    pub draw_at: u64,
}

impl AttentionRows {
    /// These parameters with the draw a graph replay makes (unchanged
    /// outside graphs).
    ///
    /// # Safety
    /// As [`crate::philox::replayed`].
    #[inline(always)]
    pub unsafe fn replayed(mut self) -> Self {
        (self.seed, self.stream) = crate::philox::replayed(self.seed, self.stream, self.draw_at);
        self
    }

    /// The query of row `r`.
    #[inline(always)]
    pub fn query(&self, r: u32) -> u32 {
        self.i0 + r % self.n
    }

    /// Whether the dropout keeps the weight of key `j` in row `r` (always
    /// without dropout).
    #[inline(always)]
    pub fn dropout_kept(&self, r: u32, j: u32) -> bool {
        if self.dropout <= 0.0 {
            return true;
        }
        let m = (r / self.n) as u64;
        let i = (m * self.l as u64 + self.query(r) as u64) * self.keys as u64 + j as u64;
        crate::philox::uniform_at(self.seed, self.stream, i) >= self.dropout
    }
}
