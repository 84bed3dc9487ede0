//! The kernels' modules: the PTX is split by op family into modules the CUDA
//! backend loads one by one on first use (a script that only adds vectors
//! loads the dense binary module alone), and, where the driver must compile
//! the PTX itself, several at once. `build.rs` splits the PTX by
//! [`module_of`]; the host's kernel table maps each kernel to the same
//! module (a test checks that the two agree).

/// The module names, in index order.
pub const MODULES: [&str; 15] = [
    "unary",
    "unary_dense",
    "binary",
    "binary_dense",
    "convert",
    "random",
    "reduce",
    "rows",
    "copy",
    "loss",
    "optim",
    "index",
    "order",
    "attention",
    "attention_sm90a",
];

/// The module built for sm_90a alone (Hopper's `wgmma`): its PTX targets
/// `sm_90a`, it is compiled to SASS for sm_90 only, and the host launches
/// its kernels only on a GPU of compute capability 9.0.
pub const HOPPER_MODULE: usize = 14;

/// Which module (an index into [`MODULES`]) exports the kernel `entry`, by
/// its name's family prefix; `None` for a name of no known family.
pub fn module_of(entry: &str) -> Option<usize> {
    // Longer prefixes first: `binary_v_` is dense, `binary_` strided.
    const PREFIXES: [(&str, usize); 32] = [
        ("unary_v_", 1),
        ("unary_", 0),
        ("binary_v_", 3),
        ("binary_scalar_v_", 3),
        ("binary_row_", 3),
        ("binary_", 2),
        ("cmp_", 2),
        ("where_", 2),
        ("cast_", 4),
        ("fill_", 4),
        ("arange_", 4),
        ("rand_", 5),
        ("dropout_", 5),
        ("reduce_", 6),
        ("softmax_", 7),
        ("layer_norm_", 7),
        ("attention_rows_", 7),
        ("transpose_", 8),
        ("cross_entropy_", 9),
        ("sgd_step_", 10),
        ("adam_step_", 10),
        ("adam_multi_", 10),
        ("sgd_multi_", 10),
        ("norm_multi_", 10),
        ("scale_multi_", 10),
        ("gather_", 11),
        ("scatter_add_", 11),
        ("matmul_int_", 11),
        ("scan_", 12),
        ("sort_", 12),
        ("flash_", 13),
        ("flash90_", HOPPER_MODULE),
    ];
    PREFIXES
        .iter()
        .find(|(prefix, _)| entry.starts_with(prefix))
        .map(|&(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_map_to_their_modules() {
        assert_eq!(
            module_of("unary_v_exp_f32").map(|m| MODULES[m]),
            Some("unary_dense")
        );
        assert_eq!(module_of("unary_exp_f32").map(|m| MODULES[m]), Some("unary"));
        assert_eq!(
            module_of("binary_scalar_v_add_f32").map(|m| MODULES[m]),
            Some("binary_dense")
        );
        assert_eq!(
            module_of("binary_scalar_add_f32").map(|m| MODULES[m]),
            Some("binary")
        );
        assert_eq!(module_of("adam_step_f32").map(|m| MODULES[m]), Some("optim"));
        assert_eq!(
            module_of("flash90_forward_d128_bf16").map(|m| MODULES[m]),
            Some("attention_sm90a")
        );
        assert_eq!(module_of("nothing"), None);
    }
}
