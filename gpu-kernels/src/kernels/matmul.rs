//! Integer batched matmul (cuBLAS has none): one thread per output element.

use crate::device::for_each_index;
use crate::elem::Elem;

macro_rules! matmul_int {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(matmul_int, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                a: *const $t,
                b: *const $t,
                y: *mut $t,
                args: crate::args::MatmulIntArgs,
            ) {
                let crate::args::MatmulIntArgs { g, ao, bo, dims } = args;
                let crate::params::MatmulShape {
                    m,
                    n,
                    k,
                    ars,
                    acs,
                    brs,
                    bcs,
                } = dims;
                let mn = m * n;
                for_each_index(g.n * mn, |idx| {
                    let (bi, r) = (idx / mn, idx % mn);
                    let (i, j) = (r / n, r % n);
                    let (pa, pb) = (g.offset(&ao, bi), g.offset(&bo, bi));
                    let mut acc = 0i64;
                    let mut p = 0;
                    while p < k {
                        let x = (*a.add((pa + i * ars + p * acs) as usize)).to_i64();
                        let w = (*b.add((pb + p * brs + j * bcs) as usize)).to_i64();
                        acc = acc.wrapping_add(x.wrapping_mul(w));
                        p += 1;
                    }
                    *y.add(idx as usize) = <$t>::from_i64(acc);
                });
            }
        };
    };
}
for_int_types!(matmul_int!());
