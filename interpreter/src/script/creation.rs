//! Script functions that create tensors: `tensor`, `zeros`, `ones`, `full`,
//! `arange`, `linspace`, `eye`, `rand`, `randn`, `randint`, `randperm` and the `*_like`
//! forms. Each accepts an optional options map `#{dtype: .., device: ..,
//! requires_grad: ..}`.

use super::convert::{nested_to_tensor, ok, opts, scalar, shape, shape_of, Opts, RhaiResult};
use super::Runtime;
use crate::core::Scalar;
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, Map, INT};
use std::sync::Arc;

/// Registers a function as volatile: never evaluated at compile time.
macro_rules! volatile {
    ($engine:expr, $name:expr, $f:expr $(,)?) => {
        rhai::FuncRegistration::new($name)
            .with_volatility(true)
            .register_into_engine($engine, $f)
    };
}
pub(crate) use volatile;

fn device(rt: &Runtime, o: &Opts) -> crate::tensor::Device {
    o.device.unwrap_or_else(|| rt.device())
}

/// Registers the creation functions.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let r = rt.clone();
    engine.register_fn("tensor", move |d: Dynamic| -> RhaiResult<Tensor> {
        nested_to_tensor(&d, None, r.device())
    });
    let r = rt.clone();
    engine.register_fn("tensor", move |d: Dynamic, m: Map| -> RhaiResult<Tensor> {
        let o = opts("tensor", &m)?;
        o.finish(nested_to_tensor(&d, o.dtype, device(&r, &o)))
    });

    // zeros / ones / full / empty, with a shape array, separate ints, and options.
    for (name, value) in [
        ("zeros", Some(Scalar::Int(0))),
        ("ones", Some(Scalar::Int(1))),
        ("empty", None),
    ] {
        let make = move |rt: &Runtime, shp: Vec<usize>, o: Opts| {
            let dtype = Some(o.dtype.unwrap_or(crate::tensor::DType::F32));
            o.finish(match value {
                Some(v) => ok(Tensor::full(&shp, v, dtype, device(rt, &o))),
                None => ok(Tensor::empty(&shp, dtype, device(rt, &o))),
            })
        };
        let r = rt.clone();
        engine.register_fn(name, move |s: Dynamic| {
            make(&r, shape(name, &s)?, Opts::default())
        });
        let r = rt.clone();
        engine.register_fn(name, move |s: Dynamic, m: Map| {
            make(&r, shape(name, &s)?, opts(name, &m)?)
        });
        let r = rt.clone();
        engine.register_fn(name, move |a: INT, b: INT| {
            make(&r, shape_of(name, &[a, b])?, Opts::default())
        });
        let r = rt.clone();
        engine.register_fn(name, move |a: INT, b: INT, c: INT| {
            make(&r, shape_of(name, &[a, b, c])?, Opts::default())
        });
    }
    let r = rt.clone();
    engine.register_fn("full", move |s: Dynamic, v: Dynamic| -> RhaiResult<Tensor> {
        ok(Tensor::full(
            &shape("full", &s)?,
            scalar("full", &v)?,
            None,
            r.device(),
        ))
    });
    let r = rt.clone();
    engine.register_fn(
        "full",
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
    let arange = |rt: &Runtime, a: Scalar, b: Scalar, s: Scalar, o: Opts| {
        o.finish(ok(Tensor::arange(a, b, s, o.dtype, device(rt, &o))))
    };
    let r = rt.clone();
    engine.register_fn("arange", move |end: Dynamic| -> RhaiResult<Tensor> {
        arange(
            &r,
            Scalar::Int(0),
            scalar("arange", &end)?,
            Scalar::Int(1),
            Opts::default(),
        )
    });
    let r = rt.clone();
    engine.register_fn("arange", move |end: Dynamic, m: Map| -> RhaiResult<Tensor> {
        arange(
            &r,
            Scalar::Int(0),
            scalar("arange", &end)?,
            Scalar::Int(1),
            opts("arange", &m)?,
        )
    });
    let r = rt.clone();
    engine.register_fn("arange", move |a: Dynamic, b: Dynamic| -> RhaiResult<Tensor> {
        arange(
            &r,
            scalar("arange", &a)?,
            scalar("arange", &b)?,
            Scalar::Int(1),
            Opts::default(),
        )
    });
    let r = rt.clone();
    engine.register_fn(
        "arange",
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
    engine.register_fn(
        "arange",
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
    let r = rt.clone();
    engine.register_fn(
        "linspace",
        move |a: Dynamic, b: Dynamic, n: INT| -> RhaiResult<Tensor> {
            let (a, b) = (scalar("linspace", &a)?.to_f64(), scalar("linspace", &b)?.to_f64());
            ok(Tensor::linspace(a, b, n, None, r.device()))
        },
    );
    let r = rt.clone();
    engine.register_fn(
        "linspace",
        move |a: Dynamic, b: Dynamic, n: INT, m: Map| -> RhaiResult<Tensor> {
            let o = opts("linspace", &m)?;
            let (a, b) = (scalar("linspace", &a)?.to_f64(), scalar("linspace", &b)?.to_f64());
            o.finish(ok(Tensor::linspace(a, b, n, o.dtype, device(&r, &o))))
        },
    );
    let eye = |rt: &Runtime, n: INT, m: INT, o: Opts| -> RhaiResult<Tensor> {
        let s = shape_of("eye", &[n, m])?;
        o.finish(ok(Tensor::eye(s[0], s[1], o.dtype, device(rt, &o))))
    };
    let r = rt.clone();
    engine.register_fn("eye", move |n: INT| eye(&r, n, n, Opts::default()));
    let r = rt.clone();
    engine.register_fn("eye", move |n: INT, m: INT| eye(&r, n, m, Opts::default()));
    let r = rt.clone();
    engine.register_fn("eye", move |n: INT, m: Map| eye(&r, n, n, opts("eye", &m)?));
    let r = rt.clone();
    engine.register_fn("eye", move |n: INT, k: INT, m: Map| {
        eye(&r, n, k, opts("eye", &m)?)
    });

    register_random(engine, rt);
    register_like(engine, rt);
}

fn register_random(engine: &mut Engine, rt: &Arc<Runtime>) {
    for (name, normal) in [("rand", false), ("randn", true)] {
        let draw = move |rt: &Runtime, s: Vec<usize>, o: Opts| {
            let d = device(rt, &o);
            o.finish(ok(rt.with_rng(|g| {
                if normal {
                    Tensor::randn(&s, o.dtype, d, g)
                } else {
                    Tensor::rand(&s, o.dtype, d, g)
                }
            })))
        };
        let r = rt.clone();
        volatile!(engine, name, move |s: Dynamic| draw(
            &r,
            shape(name, &s)?,
            Opts::default()
        ));
        let r = rt.clone();
        volatile!(engine, name, move |s: Dynamic, m: Map| draw(
            &r,
            shape(name, &s)?,
            opts(name, &m)?
        ));
        let r = rt.clone();
        volatile!(engine, name, move |a: INT, b: INT| draw(
            &r,
            shape_of(name, &[a, b])?,
            Opts::default()
        ));
        let r = rt.clone();
        volatile!(engine, name, move |a: INT, b: INT, c: INT| draw(
            &r,
            shape_of(name, &[a, b, c])?,
            Opts::default()
        ));
        let r = rt.clone();
        volatile!(engine, &format!("{name}_like"), move |t: Tensor| {
            let o = Opts {
                dtype: Some(t.dtype()),
                device: Some(t.device()),
                requires_grad: false,
            };
            draw(&r, t.shape().to_vec(), o)
        });
    }
    let randint = |rt: &Runtime, lo: INT, hi: INT, s: Vec<usize>, o: Opts| {
        let d = device(rt, &o);
        o.finish(ok(rt.with_rng(|g| Tensor::randint(lo, hi, &s, o.dtype, d, g))))
    };
    let r = rt.clone();
    volatile!(engine, "randint", move |lo: INT, hi: INT, s: Dynamic| {
        randint(&r, lo, hi, shape("randint", &s)?, Opts::default())
    });
    let r = rt.clone();
    volatile!(engine, "randint", move |lo: INT, hi: INT, s: Dynamic, m: Map| {
        randint(&r, lo, hi, shape("randint", &s)?, opts("randint", &m)?)
    });
    let r = rt.clone();
    volatile!(engine, "randint", move |hi: INT, s: Dynamic| {
        randint(&r, 0, hi, shape("randint", &s)?, Opts::default())
    });
    let randperm = |rt: &Runtime, n: INT, o: Opts| {
        let d = device(rt, &o);
        o.finish(ok(rt.with_rng(|g| Tensor::randperm(n, o.dtype, d, g))))
    };
    let r = rt.clone();
    volatile!(engine, "randperm", move |n: INT| randperm(&r, n, Opts::default()));
    let r = rt.clone();
    volatile!(engine, "randperm", move |n: INT, m: Map| randperm(
        &r,
        n,
        opts("randperm", &m)?
    ));
}

fn register_like(engine: &mut Engine, _rt: &Arc<Runtime>) {
    engine.register_fn("zeros_like", |t: Tensor| ok(t.zeros_like()));
    engine.register_fn("ones_like", |t: Tensor| ok(t.ones_like()));
    engine.register_fn("full_like", |t: Tensor, v: Dynamic| {
        ok(t.full_like(scalar("full_like", &v)?))
    });
    engine.register_fn("empty_like", |t: Tensor| ok(t.zeros_like()));
    for name in ["zeros_like", "ones_like"] {
        let one = name == "ones_like";
        engine.register_fn(name, move |t: Tensor, m: Map| -> RhaiResult<Tensor> {
            let o = opts(name, &m)?;
            let v = Scalar::Int(one as i64);
            o.finish(ok(Tensor::full(
                t.shape(),
                v,
                Some(o.dtype.unwrap_or(t.dtype())),
                o.device.unwrap_or(t.device()),
            )))
        });
    }
}
