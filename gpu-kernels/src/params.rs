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
