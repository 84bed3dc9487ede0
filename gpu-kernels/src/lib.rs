//! kiln's device code and the per-element math it shares with the host.
//!
//! This crate is `#![cfg_attr(not(feature = "std"), no_std)]` plain Rust. The host build uses its math
//! ([`math`], [`philox`], [`optim`]) directly, so the CPU backend computes exactly what the
//! GPU kernels compute; the kernels themselves (compiled for
//! `nvptx64-nvidia-cuda` by `interpreter/build.rs`) arrive with the CUDA
//! backend and live behind `cfg(target_arch = "nvptx64")`.
#![cfg_attr(not(feature = "std"), no_std)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        stdarch_nvptx,
        asm_experimental_arch,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    )
)]

#[macro_use]
mod unrolled;
pub mod args;
pub mod elem;
pub mod fragments;
pub mod half;
pub mod math;
pub mod modules;
pub mod ops;
pub mod optim;
pub mod params;
pub mod philox;
pub mod real;
pub mod reduce;
pub mod sort_key;
pub mod special;

#[cfg(all(test, not(target_arch = "nvptx64")))]
extern crate std;

#[cfg(target_arch = "nvptx64")]
mod device;
// Test builds on the host run kernels through the warp emulator, which
// stands in for the device-support and tensor-core modules.
#[cfg(all(test, not(target_arch = "nvptx64")))]
mod emulator;
#[cfg(all(test, not(target_arch = "nvptx64")))]
use emulator::{device, pipeline, tensor_core, warpgroup};
#[cfg(all(test, not(target_arch = "nvptx64")))]
#[path = "kernels/attention.rs"]
mod attention;
#[cfg(all(test, not(target_arch = "nvptx64")))]
#[path = "kernels/attention_hopper.rs"]
mod attention_hopper;
#[cfg(all(test, not(target_arch = "nvptx64")))]
#[path = "kernels/attention_hopper_backward.rs"]
mod attention_hopper_backward;
#[cfg(all(test, not(target_arch = "nvptx64")))]
#[path = "kernels/flash_operands.rs"]
mod flash_operands;
#[cfg(all(test, not(target_arch = "nvptx64")))]
#[path = "kernels/flash_rows.rs"]
mod flash_rows;
#[cfg(target_arch = "nvptx64")]
mod kernels;
#[cfg(target_arch = "nvptx64")]
mod pipeline;
#[cfg(target_arch = "nvptx64")]
mod tensor_core;
#[cfg(target_arch = "nvptx64")]
mod warpgroup;
