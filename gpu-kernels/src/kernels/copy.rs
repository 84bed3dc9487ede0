//! Transposing copies: `y[b][i][j] = x[b * sb + i + j * sj]` into a dense `y`
//! of shape `[batch, rows, cols]`, for inputs whose stride-1 dim is not the
//! last one (a transposed or permuted view made contiguous). Each block moves
//! a 32×32 tile through shared memory padded to 33 columns, so both the reads
//! (along `i`) and the writes (along `j`) are coalesced and the shared-memory
//! accesses are free of bank conflicts. Element types by size only.

use crate::device::{block_xyz, dims, shared, sync_threads, thread_xy};

const TILE: u32 = 32;
/// Rows of the tile each thread moves: blocks are 32 × 8 threads.
const STEP: u32 = 8;

/// # Safety
/// `x` and `y` cover the index ranges; launched with 32 × 8 threads a block,
/// a grid of (col tiles, row tiles, batch blocks) and `33 * 32 * size_of::<T>()`
/// bytes of dynamic shared memory.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn transpose<T: Copy>(batch: u32, rows: u32, cols: u32, sb: u32, sj: u32, x: *const T, y: *mut T) {
    let tile = shared::<T>();
    let (tx, ty) = thread_xy();
    let (bx, by, bz) = block_xyz();
    let (_, _, gz) = dims();
    let (i0, j0) = (by * TILE, bx * TILE);
    let mut b = bz;
    while b < batch {
        let xb = x.add(b as usize * sb as usize);
        let yb = y.add(b as usize * rows as usize * cols as usize);
        // read along i (stride 1 in x): tile[jj][ii]
        let i = i0 + tx;
        let mut k = ty;
        while k < TILE {
            let j = j0 + k;
            if i < rows && j < cols {
                *tile.add((k * (TILE + 1) + tx) as usize) = *xb.add(i as usize + j as usize * sj as usize);
            }
            k += STEP;
        }
        sync_threads();
        // write along j (stride 1 in y)
        let j = j0 + tx;
        let mut k = ty;
        while k < TILE {
            let i = i0 + k;
            if i < rows && j < cols {
                *yb.add(i as usize * cols as usize + j as usize) = *tile.add((tx * (TILE + 1) + k) as usize);
            }
            k += STEP;
        }
        sync_threads();
        b += gz;
    }
}

macro_rules! transpose_kernel {
    ($bytes:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(transpose, $bytes)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $t, y: *mut $t, args: crate::args::TransposeArgs) {
                let crate::args::TransposeArgs {
                    batch,
                    rows,
                    cols,
                    sb,
                    sj,
                } = args;
                transpose::<$t>(batch, rows, cols, sb, sj, x, y);
            }
        };
    };
}
transpose_kernel!(b1, u8);
transpose_kernel!(b2, u16);
transpose_kernel!(b4, u32);
transpose_kernel!(b8, u64);
