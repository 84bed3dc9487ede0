//! The emulated bulk reduction (`cp.reduce.async.bulk … .add.f32`): the run
//! is added when the copy is issued (blocks run one after another, so no
//! other block adds beside it), after checking what PTX requires of it.

use super::context;

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn reduce_add_f32(dst: *mut f32, src: u32, bytes: u32) {
    assert!(
        bytes.is_multiple_of(16) && src.is_multiple_of(16) && (dst as usize).is_multiple_of(16),
        "a bulk copy moves 16-byte aligned multiples of 16 bytes"
    );
    let from = context().1.shared.add(src as usize) as *const f32;
    for i in 0..bytes as usize / 4 {
        *dst.add(i) += *from.add(i);
    }
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn wait_read() {}
