//! The Rhai modules of `stdlib/`, embedded in the binary and served to
//! `import "name" as name;`; other names load `name.rhai` files, through the
//! runtime's file-access gate (off: such an import is an error).

use super::convert::kiln_error_at;
use super::Runtime;
use crate::core::error::{Error, Result};
use rhai::module_resolvers::{FileModuleResolver, ModuleResolversCollection, StaticModuleResolver};
use rhai::{Engine, EvalAltResult, Module, ModuleResolver, Position, Scope, Shared};
use std::sync::Arc;

/// The names of the embedded stdlib modules.
pub const MODULE_NAMES: [&str; 7] = ["nn", "optim", "losses", "data", "metrics", "ddp", "init"];

/// Each module's sources, compiled as one script in this order (`nn` is
/// long enough to keep its transformer layers in a file of their own).
const MODULES: [(&str, &[&str]); 7] = [
    (
        "nn",
        &[
            include_str!("../../../stdlib/nn.rhai"),
            include_str!("../../../stdlib/nn_transformer.rhai"),
        ],
    ),
    ("optim", &[include_str!("../../../stdlib/optim.rhai")]),
    ("losses", &[include_str!("../../../stdlib/losses.rhai")]),
    ("data", &[include_str!("../../../stdlib/data.rhai")]),
    ("metrics", &[include_str!("../../../stdlib/metrics.rhai")]),
    ("ddp", &[include_str!("../../../stdlib/dist.rhai")]),
    ("init", &[include_str!("../../../stdlib/init.rhai")]),
];

/// Fails unless every name is a stdlib module.
pub(crate) fn check_names(names: &[String]) -> Result<()> {
    match names.iter().find(|n| !MODULE_NAMES.contains(&n.as_str())) {
        Some(n) => Err(Error::invalid(
            "stdlib",
            format!(
                "unknown module '{n}' (expected one of {})",
                MODULE_NAMES.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// `.rhai` files relative to the working directory, read only while the
/// runtime allows file access.
struct GatedFiles {
    runtime: Arc<Runtime>,
    files: FileModuleResolver,
}

impl ModuleResolver for GatedFiles {
    fn resolve(
        &self,
        engine: &Engine,
        source: Option<&str>,
        path: &str,
        pos: Position,
    ) -> std::result::Result<Shared<Module>, Box<EvalAltResult>> {
        if !self.runtime.files().allowed() {
            // a resolver in a collection must fail with one of these two
            // errors (Rhai treats any other as unreachable)
            let cause = kiln_error_at(Error::FilesDisabled { op: "import" }, pos);
            return Err(EvalAltResult::ErrorInModule(path.to_string(), cause, pos).into());
        }
        self.files.resolve(engine, source, path, pos)
    }
}

/// Compiles the embedded modules named (`None`: all of them) and installs a
/// resolver that serves them first and `.rhai` files (through the gate) after.
pub(crate) fn install(engine: &mut Engine, runtime: &Arc<Runtime>, names: Option<&[String]>) {
    let mut resolver = StaticModuleResolver::new();
    for (name, sources) in MODULES {
        if names.is_some_and(|n| !n.iter().any(|m| m == name)) {
            continue;
        }
        // The sources are ours and tested; a module that fails to compile is
        // left out rather than taking the engine down.
        if let Ok(ast) = engine.compile(sources.join("\n")) {
            if let Ok(m) = Module::eval_ast_as_new(Scope::new(), &ast, engine) {
                resolver.insert(name, m);
            }
        }
    }
    let mut all = ModuleResolversCollection::new();
    all.push(resolver);
    all.push(GatedFiles {
        runtime: runtime.clone(),
        files: FileModuleResolver::new(),
    });
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
