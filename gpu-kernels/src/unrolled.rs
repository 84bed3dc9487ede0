//! [`unrolled!`]: a loop of at most 16 steps written out by the macro
//! itself, for loop bodies too large for the compiler to inline a closure
//! 16 times (`device::unroll` takes a closure: one left outlined takes
//! its captured register arrays by pointer, into local memory).

/// `unrolled!(n, i => body)` runs `body` with `i` = 0, 1, ..., `n - 1`
/// (`n <= 16`, best known at compile time), each step written out.
#[macro_export]
macro_rules! unrolled {
    ($n:expr, $i:ident => $body:block) => {{
        let n: usize = $n;
        debug_assert!(n <= 16);
        $crate::unrolled!(@steps n, $i, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    }};
    (@steps $n:ident, $i:ident, $body:block, $($k:literal)*) => {
        $(
            // a step past `n` indexes past the arrays `n` is sized for; it never runs
            #[allow(unconditional_panic)]
            if $k < $n {
                let $i: usize = $k;
                $body
            }
        )*
    };
}
