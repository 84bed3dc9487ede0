//! The GPU code `build.rs` embedded: per kernel module its PTX (for sm_80,
//! which the driver JIT-compiles on any newer GPU) and, when `ptxas` was
//! found at build time, its SASS for each architecture built for. This
//! module decides which of them a GPU loads.

/// One kernel module's code.
pub(crate) struct ModuleImage {
    /// The module's name (`kiln_kernels::modules::MODULES`).
    pub name: &'static str,
    /// Its PTX text (empty when the kernels were not built).
    pub ptx: &'static str,
    /// Its SASS, as (architecture, cubin) pairs.
    pub sass: &'static [(u32, &'static [u8])],
}

include!(concat!(env!("OUT_DIR"), "/kernel_images.rs"));

/// True when this build has GPU kernels.
pub(crate) fn built() -> bool {
    MODULES.iter().any(|m| !m.ptx.is_empty())
}

/// Why this build has no GPU kernels (`ok` when it has them).
pub(crate) fn status() -> &'static str {
    PTX_STATUS
}

/// What a module is loaded from on a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Code {
    /// SASS compiled ahead of time for this architecture (`90` for sm_90).
    Sass(u32),
    /// PTX, compiled by the driver on first use.
    Ptx,
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Code::Sass(arch) => write!(f, "SASS for sm_{arch}"),
            Code::Ptx => write!(f, "PTX for sm_{PTX_ARCH}, compiled by the driver"),
        }
    }
}

/// The code a GPU of compute capability `major.minor` runs: SASS built for
/// exactly its architecture, else SASS of the same major version and an
/// older minor one (binary compatible), else the PTX; `force_ptx` (the
/// `KILN_FORCE_PTX` variable) always takes the PTX. An error when the GPU is
/// older than every target.
pub(crate) fn choose(major: u32, minor: u32, force_ptx: bool) -> Result<Code, String> {
    let arch = major * 10 + minor;
    if arch < PTX_ARCH {
        return Err(format!(
            "this GPU has compute capability {major}.{minor}; kiln's GPU kernels need {}.{} or newer",
            PTX_ARCH / 10,
            PTX_ARCH % 10
        ));
    }
    if force_ptx {
        return Ok(Code::Ptx);
    }
    let archs: Vec<u32> = MODULES
        .first()
        .map(|m| m.sass.iter().map(|&(a, _)| a).collect())
        .unwrap_or_default();
    if archs.contains(&arch) {
        return Ok(Code::Sass(arch));
    }
    let compatible = archs
        .iter()
        .copied()
        .filter(|&a| a / 10 == major && a % 10 <= minor)
        .max();
    Ok(compatible.map_or(Code::Ptx, Code::Sass))
}

/// The architectures with SASS in this build, for messages (`sm_80, sm_90`).
pub(crate) fn sass_archs() -> String {
    let archs: Vec<String> = MODULES
        .first()
        .map(|m| m.sass.iter().map(|&(a, _)| format!("sm_{a}")).collect())
        .unwrap_or_default();
    if archs.is_empty() {
        format!("none ({SASS_STATUS})")
    } else {
        archs.join(", ")
    }
}

impl ModuleImage {
    /// The bytes to load for `code`: a cubin, or the PTX text with its
    /// terminating NUL.
    pub(crate) fn code(&self, code: Code) -> cudarc::nvrtc::Ptx {
        match code {
            Code::Sass(arch) => {
                let cubin = self
                    .sass
                    .iter()
                    .find(|&&(a, _)| a == arch)
                    .map_or(&[][..], |&(_, c)| c);
                cudarc::nvrtc::Ptx::from_binary(cubin.to_vec())
            }
            Code::Ptx => cudarc::nvrtc::Ptx::from_src(self.ptx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_gpus_are_refused_and_newer_ones_fall_back_to_ptx() {
        assert!(choose(7, 5, false).unwrap_err().contains("7.5"));
        assert_eq!(choose(12, 0, false), Ok(Code::Ptx));
        assert_eq!(choose(9, 0, true), Ok(Code::Ptx));
    }

    #[test]
    fn a_gpu_takes_sass_of_its_own_or_a_compatible_architecture() {
        let archs: Vec<u32> = MODULES[0].sass.iter().map(|&(a, _)| a).collect();
        for &a in &archs {
            assert_eq!(choose(a / 10, a % 10, false), Ok(Code::Sass(a)));
        }
        if archs.contains(&80) && !archs.contains(&89) {
            assert_eq!(choose(8, 9, false), Ok(Code::Sass(80)));
        }
    }
}
