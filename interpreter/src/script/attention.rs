//! The script side of the transformer ops (`tensor/attention.rs`):
//! `scaled_dot_product_attention`, `rms_norm` and `rope`; argument
//! conversion only, options positionally in PyTorch's order or in a map.

use super::convert::ok;
use super::kwargs::{register as kw, Form};
use super::registry::{Api, Category};
use super::Runtime;
use crate::tensor::attention::AttentionOptions;
use rhai::Engine;
use std::sync::Arc;

/// Registers the transformer ops.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Nn);
    let api = &mut api;
    let r = rt.clone();
    kw(
        api,
        "scaled_dot_product_attention",
        "softmax(q kᵀ · scale + mask) v over q [..., L, E], k [..., S, E], v [..., S, Ev] (F.scaled_dot_product_attention); options attn_mask (bool: true takes part; or additive), dropout_p (0), is_causal (false), scale (1/√E), enable_gqa (false: fewer key/value heads shared by the query heads)",
        ["query", "key", "value"],
        &["attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"],
        Form::Random,
        move |[q, k, v], o| {
            let opts = AttentionOptions {
                attn_mask: o.tensor("attn_mask", &q)?,
                dropout_p: o.number("dropout_p", 0.0)?,
                is_causal: o.flag("is_causal", false)?,
                scale: o.opt_number("scale")?,
                enable_gqa: o.flag("enable_gqa", false)?,
                block_rows: None,
            };
            ok(r.with_rng(|g| q.scaled_dot_product_attention(&k, &v, &opts, g)))
        },
    );
    kw(
        api,
        "rms_norm",
        "x / √(mean(x²) + eps) · weight over the trailing normalized_shape dims (F.rms_norm); options weight, eps (the dtype's machine epsilon)",
        ["x"],
        &["normalized_shape", "weight", "eps"],
        Form::WithOptions,
        |[x], o| {
            let shape: Vec<usize> = o.required_ints("normalized_shape")?.iter().map(|&d| d.max(0) as usize).collect();
            ok(x.rms_norm(&shape, o.tensor("weight", &x)?.as_ref(), o.opt_number("eps")?))
        },
    );
    kw(
        api,
        "rope",
        "rotary position embedding of x [..., L, D] (rotate-half form: pairs (i, i + D/2) turn by position · base^(-2i/D)); options base (10000), offset (0: the first row's position), positions (one per row, instead)",
        ["x"],
        &["base", "offset", "positions"],
        Form::Plain,
        |[x], o| {
            let positions = o.tensor("positions", &x)?;
            ok(x.rope(o.number("base", 10000.0)?, o.int("offset", 0)?, positions.as_ref()))
        },
    );
}
