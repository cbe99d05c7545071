//! The daemon's allocator: mimalloc, asked for a plain block wherever the plain block is
//! aligned enough.
//!
//! Sheets, requests and replies are many small, short-lived allocations, which glibc's malloc
//! spent a third of a SolveBatch on (measured with `perf record` on `loadgen`); mimalloc takes
//! that down to a few percent. The `mimalloc` crate's allocator passes every request to
//! `mi_malloc_aligned`, whose path checks the alignment, looks for a block that happens to be
//! aligned and falls back to a generic search for blocks over 1 KiB. Nearly every Rust
//! allocation asks for an alignment that every mimalloc block already has, so [`Allocator`]
//! asks for those with `mi_malloc`, as Rust's own `System` allocator does with `malloc`, and
//! keeps `mi_malloc_aligned` for the rest (callgrind, a starter character built and solved:
//! see `docs/solver.md`).
//!
//! Used by the `sheetd` binary and by the benches, so that both measure the same allocator:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;
//! ```

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// The largest alignment every mimalloc block of at least that size has: `MI_MAX_ALIGN_SIZE`
/// (16 on the 64-bit targets we build for). Blocks of 16 bytes or more come in multiples of 16
/// from a 16-byte-aligned start, and smaller ones in multiples of the word size, so a block of
/// `size` bytes is aligned to any power of two up to 16 that is no larger than `size`.
const PLAIN_ALIGN: usize = 16;

/// mimalloc as the global allocator, with the plain path for ordinary alignments.
pub struct Allocator;

/// Whether a plain mimalloc block of `layout.size()` bytes is aligned as `layout` asks
/// (see [`PLAIN_ALIGN`]). A Rust layout's size is a multiple of its alignment, so this holds
/// for every type of alignment up to 16 except zero-sized requests, which never reach here.
#[inline]
fn plain(layout: Layout) -> bool {
    layout.align() <= PLAIN_ALIGN && layout.align() <= layout.size()
}

// SAFETY: every block comes from mimalloc and goes back to it: `mi_free` and `mi_realloc*`
// take blocks from `mi_malloc` and `mi_malloc_aligned` alike, and `plain` only lets through
// layouts whose alignment every plain block of that size has (see `PLAIN_ALIGN`).
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain FFI calls; mimalloc returns null when out of memory, as `alloc` may.
        unsafe {
            if plain(layout) {
                libmimalloc_sys::mi_malloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if plain(layout) {
                libmimalloc_sys::mi_zalloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { libmimalloc_sys::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator; the new block must keep `layout`'s alignment
        // at `new_size` bytes, which the plain path gives when `plain` holds for the new size.
        unsafe {
            let new = Layout::from_size_align_unchecked(new_size, layout.align());
            if plain(new) {
                libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every layout up to 4 KiB and alignment 4 KiB gets a block aligned as asked, usable over
    /// its whole size, zeroed when asked, and kept (contents and alignment) through a realloc.
    #[test]
    fn blocks_are_aligned_as_asked() {
        let a = Allocator;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in (align..=4096).step_by(align.max(8)) {
                let layout = Layout::from_size_align(size, align).expect("valid layout");
                // SAFETY: nonzero size; every block is freed with the layout it was made with.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null() && (p as usize).is_multiple_of(align), "{size} bytes at {align}");
                    p.write_bytes(0xAB, size);
                    let q = a.realloc(p, layout, size * 2);
                    assert!(!q.is_null() && (q as usize).is_multiple_of(align), "grown to {}", size * 2);
                    assert_eq!(*q.add(size - 1), 0xAB, "contents kept");
                    a.dealloc(q, Layout::from_size_align(size * 2, align).expect("valid"));
                    let z = a.alloc_zeroed(layout);
                    assert!((z as usize).is_multiple_of(align));
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
