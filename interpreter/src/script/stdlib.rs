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

    #[test]
    fn every_module_compiles_and_imports() {
        let mut kiln = crate::Interpreter::with_device(crate::Device::Cpu).unwrap();
        for (name, _) in MODULES {
            let src = format!("import \"{name}\" as m;");
            let _ = kiln.run(&src, "<test>").unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
