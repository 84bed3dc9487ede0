//! Script functions that create tensors: `tensor`, `zeros`, `ones`, `full`,
//! `arange`, `linspace`, `eye`, `rand`, `randn`, `randint`, `randperm` and the `*_like`
//! forms. Each accepts an optional options map `#{dtype: .., device: ..,
//! requires_grad: ..}`.

use super::convert::{nested_to_tensor, ok, opts, scalar, shape, shape_of, Opts, RhaiResult};
use super::generator::{self, ScriptGenerator};
use super::registry::{Api, Category};
use super::Runtime;
use crate::core::Scalar;
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, Map, INT};
use std::sync::Arc;

fn device(rt: &Runtime, o: &Opts) -> crate::tensor::Device {
    o.device.unwrap_or_else(|| rt.device())
}

/// Registers the creation functions.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Creation);
    let api = &mut api;
    const TENSOR: &str = "a tensor from a number or nested arrays (f32 for floats, i64 for ints); opts #{dtype, device, requires_grad}";
    let r = rt.clone();
    api.doc(TENSOR)
        .func("tensor", ["data"], move |d: Dynamic| -> RhaiResult<Tensor> {
            nested_to_tensor(&d, None, r.device())
        });
    let r = rt.clone();
    api.doc(TENSOR).func(
        "tensor",
        ["data", "opts"],
        move |d: Dynamic, m: Map| -> RhaiResult<Tensor> {
            let o = opts("tensor", &m)?;
            o.finish(nested_to_tensor(&d, o.dtype, device(&r, &o)))
        },
    );

    // zeros / ones / full / empty, with a shape array, separate ints, and options.
    for (name, value, doc) in [
        (
            "zeros",
            Some(Scalar::Int(0)),
            "a tensor of zeros (f32 by default); opts #{dtype, device, requires_grad}",
        ),
        (
            "ones",
            Some(Scalar::Int(1)),
            "a tensor of ones (f32 by default); opts #{dtype, device, requires_grad}",
        ),
        (
            "empty",
            None,
            "a tensor of unspecified values (f32 by default); opts #{dtype, device, requires_grad}",
        ),
    ] {
        let make = move |rt: &Runtime, shp: Vec<usize>, o: Opts| {
            let dtype = Some(o.dtype.unwrap_or(crate::tensor::DType::F32));
            o.finish(match value {
                Some(v) => ok(Tensor::full(&shp, v, dtype, device(rt, &o))),
                None => ok(Tensor::empty(&shp, dtype, device(rt, &o))),
            })
        };
        let r = rt.clone();
        api.doc(doc).func(name, ["shape"], move |s: Dynamic| {
            make(&r, shape(name, &s)?, Opts::default())
        });
        let r = rt.clone();
        api.doc(doc)
            .func(name, ["shape", "opts"], move |s: Dynamic, m: Map| {
                make(&r, shape(name, &s)?, opts(name, &m)?)
            });
        let r = rt.clone();
        api.doc(doc).func(name, ["d0", "d1"], move |a: INT, b: INT| {
            make(&r, shape_of(name, &[a, b])?, Opts::default())
        });
        let r = rt.clone();
        api.doc(doc)
            .func(name, ["d0", "d1", "d2"], move |a: INT, b: INT, c: INT| {
                make(&r, shape_of(name, &[a, b, c])?, Opts::default())
            });
    }
    const FULL: &str = "a tensor filled with value; opts #{dtype, device, requires_grad}";
    let r = rt.clone();
    api.doc(FULL).func(
        "full",
        ["shape", "value"],
        move |s: Dynamic, v: Dynamic| -> RhaiResult<Tensor> {
            ok(Tensor::full(
                &shape("full", &s)?,
                scalar("full", &v)?,
                None,
                r.device(),
            ))
        },
    );
    let r = rt.clone();
    api.doc(FULL).func(
        "full",
        ["shape", "value", "opts"],
        move |s: Dynamic, v: Dynamic, m: Map| -> RhaiResult<Tensor> {
            let o = opts("full", &m)?;
            o.finish(ok(Tensor::full(
                &shape("full", &s)?,
                scalar("full", &v)?,
                o.dtype,
                device(&r, &o),
            )))
        },
    );

    // arange
    const ARANGE: &str = "the numbers start, start + step, ... up to end, excluded (start 0, step 1 by default); opts #{dtype, device}";
    let arange = |rt: &Runtime, a: Scalar, b: Scalar, s: Scalar, o: Opts| {
        o.finish(ok(Tensor::arange(a, b, s, o.dtype, device(rt, &o))))
    };
    let r = rt.clone();
    api.doc(ARANGE)
        .func("arange", ["end"], move |end: Dynamic| -> RhaiResult<Tensor> {
            arange(
                &r,
                Scalar::Int(0),
                scalar("arange", &end)?,
                Scalar::Int(1),
                Opts::default(),
            )
        });
    let r = rt.clone();
    api.doc(ARANGE).func(
        "arange",
        ["end", "opts"],
        move |end: Dynamic, m: Map| -> RhaiResult<Tensor> {
            arange(
                &r,
                Scalar::Int(0),
                scalar("arange", &end)?,
                Scalar::Int(1),
                opts("arange", &m)?,
            )
        },
    );
    let r = rt.clone();
    api.doc(ARANGE).func(
        "arange",
        ["start", "end"],
        move |a: Dynamic, b: Dynamic| -> RhaiResult<Tensor> {
            arange(
                &r,
                scalar("arange", &a)?,
                scalar("arange", &b)?,
                Scalar::Int(1),
                Opts::default(),
            )
        },
    );
    let r = rt.clone();
    api.doc(ARANGE).func(
        "arange",
        ["start", "end", "step"],
        move |a: Dynamic, b: Dynamic, s: Dynamic| -> RhaiResult<Tensor> {
            let step = scalar("arange", &s)?;
            arange(
                &r,
                scalar("arange", &a)?,
                scalar("arange", &b)?,
                step,
                Opts::default(),
            )
        },
    );
    let r = rt.clone();
    api.doc(ARANGE).func(
        "arange",
        ["start", "end", "step", "opts"],
        move |a: Dynamic, b: Dynamic, s: Dynamic, m: Map| -> RhaiResult<Tensor> {
            let step = scalar("arange", &s)?;
            arange(
                &r,
                scalar("arange", &a)?,
                scalar("arange", &b)?,
                step,
                opts("arange", &m)?,
            )
        },
    );

    // linspace / eye
    const LINSPACE: &str = "n evenly spaced numbers from start to end, both included; opts #{dtype, device}";
    let r = rt.clone();
    api.doc(LINSPACE).func(
        "linspace",
        ["start", "end", "n"],
        move |a: Dynamic, b: Dynamic, n: INT| -> RhaiResult<Tensor> {
            let (a, b) = (scalar("linspace", &a)?.to_f64(), scalar("linspace", &b)?.to_f64());
            ok(Tensor::linspace(a, b, n, None, r.device()))
        },
    );
    let r = rt.clone();
    api.doc(LINSPACE).func(
        "linspace",
        ["start", "end", "n", "opts"],
        move |a: Dynamic, b: Dynamic, n: INT, m: Map| -> RhaiResult<Tensor> {
            let o = opts("linspace", &m)?;
            let (a, b) = (scalar("linspace", &a)?.to_f64(), scalar("linspace", &b)?.to_f64());
            o.finish(ok(Tensor::linspace(a, b, n, o.dtype, device(&r, &o))))
        },
    );
    const EYE: &str = "an n x m matrix (m = n by default) with ones on the diagonal; opts #{dtype, device}";
    let eye = |rt: &Runtime, n: INT, m: INT, o: Opts| -> RhaiResult<Tensor> {
        let s = shape_of("eye", &[n, m])?;
        o.finish(ok(Tensor::eye(s[0], s[1], o.dtype, device(rt, &o))))
    };
    let r = rt.clone();
    api.doc(EYE)
        .func("eye", ["n"], move |n: INT| eye(&r, n, n, Opts::default()));
    let r = rt.clone();
    api.doc(EYE).func("eye", ["n", "m"], move |n: INT, m: INT| {
        eye(&r, n, m, Opts::default())
    });
    let r = rt.clone();
    api.doc(EYE).func("eye", ["n", "opts"], move |n: INT, m: Map| {
        eye(&r, n, n, opts("eye", &m)?)
    });
    let r = rt.clone();
    api.doc(EYE)
        .func("eye", ["n", "m", "opts"], move |n: INT, k: INT, m: Map| {
            eye(&r, n, k, opts("eye", &m)?)
        });

    register_random(api, rt);
    register_like(api);
}

fn register_random(api: &mut Api, rt: &Arc<Runtime>) {
    for (name, normal, doc, like, like_doc) in [
        (
            "rand",
            false,
            "uniform random numbers in [0, 1) from the seeded generator; opts #{dtype, device, requires_grad, generator}",
            "rand_like",
            "uniform random numbers in [0, 1) of t's shape, dtype and device",
        ),
        (
            "randn",
            true,
            "standard normal random numbers from the seeded generator; opts #{dtype, device, requires_grad, generator}",
            "randn_like",
            "standard normal random numbers of t's shape, dtype and device",
        ),
    ] {
        let draw = move |rt: &Runtime, s: Vec<usize>, o: Opts, gen: Option<ScriptGenerator>| {
            let d = device(rt, &o);
            o.finish(ok(rt.draw_with(gen.as_ref(), |g| {
                if normal {
                    Tensor::randn(&s, o.dtype, d, g)
                } else {
                    Tensor::rand(&s, o.dtype, d, g)
                }
            })))
        };
        let r = rt.clone();
        api.doc(doc).volatile(name, ["shape"], move |s: Dynamic| {
            draw(&r, shape(name, &s)?, Opts::default(), None)
        });
        let r = rt.clone();
        api.doc(doc).volatile(name, ["shape", "opts"], move |s: Dynamic, m: Map| {
            let (m, gen) = generator::take(name, &m)?;
            draw(&r, shape(name, &s)?, opts(name, &m)?, gen)
        });
        let r = rt.clone();
        api.doc(doc).volatile(name, ["d0", "d1"], move |a: INT, b: INT| {
            draw(&r, shape_of(name, &[a, b])?, Opts::default(), None)
        });
        let r = rt.clone();
        api.doc(doc).volatile(name, ["d0", "d1", "d2"], move |a: INT, b: INT, c: INT| {
            draw(&r, shape_of(name, &[a, b, c])?, Opts::default(), None)
        });
        let r = rt.clone();
        api.doc(like_doc).volatile(like, ["t"], move |t: Tensor| {
            let o = Opts {
                dtype: Some(t.dtype()),
                device: Some(t.device()),
                requires_grad: false,
            };
            draw(&r, t.shape().to_vec(), o, None)
        });
    }
    const RANDINT: &str =
        "random integers in [low, high) (low 0 by default), i64; opts #{dtype, device, generator}";
    let randint = |rt: &Runtime, lo: INT, hi: INT, s: Vec<usize>, o: Opts, gen: Option<ScriptGenerator>| {
        let d = device(rt, &o);
        o.finish(ok(rt.draw_with(gen.as_ref(), |g| {
            Tensor::randint(lo, hi, &s, o.dtype, d, g)
        })))
    };
    let r = rt.clone();
    api.doc(RANDINT).volatile(
        "randint",
        ["low", "high", "shape"],
        move |lo: INT, hi: INT, s: Dynamic| randint(&r, lo, hi, shape("randint", &s)?, Opts::default(), None),
    );
    let r = rt.clone();
    api.doc(RANDINT).volatile(
        "randint",
        ["low", "high", "shape", "opts"],
        move |lo: INT, hi: INT, s: Dynamic, m: Map| {
            let (m, gen) = generator::take("randint", &m)?;
            randint(&r, lo, hi, shape("randint", &s)?, opts("randint", &m)?, gen)
        },
    );
    let r = rt.clone();
    api.doc(RANDINT)
        .volatile("randint", ["high", "shape"], move |hi: INT, s: Dynamic| {
            randint(&r, 0, hi, shape("randint", &s)?, Opts::default(), None)
        });
    const RANDPERM: &str = "a random permutation of 0..n (i64); opts #{dtype, device, generator}";
    let randperm = |rt: &Runtime, n: INT, o: Opts, gen: Option<ScriptGenerator>| {
        let d = device(rt, &o);
        o.finish(ok(
            rt.draw_with(gen.as_ref(), |g| Tensor::randperm(n, o.dtype, d, g))
        ))
    };
    let r = rt.clone();
    api.doc(RANDPERM).volatile("randperm", ["n"], move |n: INT| {
        randperm(&r, n, Opts::default(), None)
    });
    let r = rt.clone();
    api.doc(RANDPERM)
        .volatile("randperm", ["n", "opts"], move |n: INT, m: Map| {
            let (m, gen) = generator::take("randperm", &m)?;
            randperm(&r, n, opts("randperm", &m)?, gen)
        });
}

fn register_like(api: &mut Api) {
    const ZEROS_LIKE: &str = "zeros of t's shape, dtype and device; opts #{dtype, device, requires_grad}";
    const ONES_LIKE: &str = "ones of t's shape, dtype and device; opts #{dtype, device, requires_grad}";
    api.doc(ZEROS_LIKE)
        .func("zeros_like", ["t"], |t: Tensor| ok(t.zeros_like()));
    api.doc(ONES_LIKE)
        .func("ones_like", ["t"], |t: Tensor| ok(t.ones_like()));
    api.doc("value in t's shape, dtype and device").func(
        "full_like",
        ["t", "value"],
        |t: Tensor, v: Dynamic| ok(t.full_like(scalar("full_like", &v)?)),
    );
    api.doc("a tensor of t's shape, dtype and device (zeroed)")
        .func("empty_like", ["t"], |t: Tensor| ok(t.zeros_like()));
    for (name, doc) in [("zeros_like", ZEROS_LIKE), ("ones_like", ONES_LIKE)] {
        let one = name == "ones_like";
        api.doc(doc).func(
            name,
            ["t", "opts"],
            move |t: Tensor, m: Map| -> RhaiResult<Tensor> {
                let o = opts(name, &m)?;
                let v = Scalar::Int(one as i64);
                o.finish(ok(Tensor::full(
                    t.shape(),
                    v,
                    Some(o.dtype.unwrap_or(t.dtype())),
                    o.device.unwrap_or(t.device()),
                )))
            },
        );
    }
}
