//! Generator objects (`torch.Generator`): `generator()` / `generator(seed)`
//! make one, `g.manual_seed(n)` restarts it (and returns it, so
//! `generator().manual_seed(7)` works as in PyTorch), `g.initial_seed()`
//! reads its seed. Random ops take one as the `generator` option
//! (`rand([3], #{generator: g})`, `x.bernoulli(#{generator: g})`) and then
//! draw from it instead of the engine's generator; the numbers are the
//! same Philox draws on every device. Clones of a generator share it.

use super::convert::{script_error, RhaiResult};
use super::kwargs::Kwargs;
use super::registry::{Api, Category};
use super::Runtime;
use crate::tensor::random::Generator;
use rhai::{Engine, Map, INT};
use std::sync::{Arc, Mutex};

/// PyTorch's default seed for a new generator.
pub const DEFAULT_GENERATOR_SEED: u64 = 67280421310721;

/// A script handle to a generator (clones share it).
#[derive(Clone)]
pub struct ScriptGenerator(Arc<Mutex<Generator>>);

impl ScriptGenerator {
    fn new(seed: u64) -> ScriptGenerator {
        ScriptGenerator(crate::tensor::random::shared(Generator::new(seed)))
    }

    /// Runs `f` with this generator.
    pub fn with<R>(&self, f: impl FnOnce(&mut Generator) -> R) -> R {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }
}

impl Runtime {
    /// Runs `f` with `g` when given, else with the engine's generator.
    pub fn draw_with<R>(&self, g: Option<&ScriptGenerator>, f: impl FnOnce(&mut Generator) -> R) -> R {
        match g {
            Some(g) => g.with(f),
            None => self.with_rng(f),
        }
    }
}

/// The `generator` option of a call's options, if given.
pub fn from_kwargs(k: &Kwargs, op: &str) -> RhaiResult<Option<ScriptGenerator>> {
    k.get("generator")
        .map(|v| {
            v.clone().try_cast::<ScriptGenerator>().ok_or_else(|| {
                script_error(format!(
                    "{op}: option 'generator' must be a Generator, got {}",
                    v.type_name()
                ))
            })
        })
        .transpose()
}

/// Splits the `generator` entry off an options map.
pub fn take(op: &str, m: &Map) -> RhaiResult<(Map, Option<ScriptGenerator>)> {
    let mut rest = m.clone();
    let g = match rest.remove("generator") {
        None => None,
        Some(v) if v.is_unit() => None,
        Some(v) => Some(v.clone().try_cast::<ScriptGenerator>().ok_or_else(|| {
            script_error(format!(
                "{op}: option 'generator' must be a Generator, got {}",
                v.type_name()
            ))
        })?),
    };
    Ok((rest, g))
}

/// Registers the `Generator` type and its functions.
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<ScriptGenerator>("Generator");
    let mut api = Api::new(engine, Category::Creation);
    const NEW: &str = "a random generator of its own (torch.Generator), seeded with seed (PyTorch's default seed when none is given); pass it as the generator option of random ops";
    api.doc(NEW)
        .volatile("generator", [], || ScriptGenerator::new(DEFAULT_GENERATOR_SEED));
    api.doc(NEW)
        .volatile("generator", ["seed"], |s: INT| ScriptGenerator::new(s as u64));
    api.doc("restarts the generator with seed; returns it").volatile(
        "manual_seed",
        ["g", "seed"],
        |g: &mut ScriptGenerator, s: INT| {
            g.with(|r| r.reseed(s as u64));
            g.clone()
        },
    );
    api.doc("the seed the generator was last started with").volatile(
        "initial_seed",
        ["g"],
        |g: &mut ScriptGenerator| g.with(|r| r.seed()) as INT,
    );
    api.doc("a short description of the generator")
        .func("to_string", ["g"], |g: &mut ScriptGenerator| describe(g));
    api.doc("a short description of the generator")
        .func("to_debug", ["g"], |g: &mut ScriptGenerator| describe(g));
}

fn describe(g: &ScriptGenerator) -> String {
    g.with(|r| format!("Generator(seed={})", r.seed()))
}
