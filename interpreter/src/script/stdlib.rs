//! The Rhai modules of `stdlib/`, embedded in the binary and served to
//! `import "name" as name;` (other names load `name.rhai` files).

use rhai::module_resolvers::{FileModuleResolver, ModuleResolversCollection, StaticModuleResolver};
use rhai::{Engine, Module, Scope};

const MODULES: &[(&str, &str)] = &[
    ("nn", include_str!("../../../stdlib/nn.rhai")),
    ("optim", include_str!("../../../stdlib/optim.rhai")),
    ("losses", include_str!("../../../stdlib/losses.rhai")),
    ("data", include_str!("../../../stdlib/data.rhai")),
    ("metrics", include_str!("../../../stdlib/metrics.rhai")),
];

/// Compiles the embedded modules and installs a resolver that serves them
/// first and `.rhai` files relative to the working directory after.
pub(super) fn install(engine: &mut Engine) {
    let mut resolver = StaticModuleResolver::new();
    for (name, src) in MODULES {
        // The sources are ours and tested; a module that fails to compile is
        // left out rather than taking the engine down.
        if let Ok(ast) = engine.compile(*src) {
            if let Ok(m) = Module::eval_ast_as_new(Scope::new(), &ast, engine) {
                resolver.insert(*name, m);
            }
        }
    }
    let mut all = ModuleResolversCollection::new();
    all.push(resolver);
    all.push(FileModuleResolver::new());
    engine.set_module_resolver(all);
}

#[cfg(test)]
mod tests {
    use super::MODULES;
    use rhai::{Engine, Module, Scope};

    #[test]
    fn every_module_compiles() {
        let mut engine = Engine::new();
        // The modules call kiln's native functions only when run; compiling
        // and evaluating the top level needs none of them.
        engine.set_max_expr_depths(0, 0);
        for (name, src) in MODULES {
            let ast = engine.compile(*src).unwrap_or_else(|e| panic!("{name}: {e}"));
            Module::eval_ast_as_new(Scope::new(), &ast, &engine).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
