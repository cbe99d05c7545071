//! Memory for large native code: one contiguous mapping on 2 MiB pages.
//!
//! **Why.** A plan's machine code is about 320 bytes per variable: 62 MiB at 200,000
//! variables, twice the L3 cache, run front to back in the order. On 4 KiB pages that is
//! 15,000 pages, far more than the processor's TLB holds, and Cranelift's default memory gives
//! each function its own mapping. Measured on the anchor workload's hub change (same run, 200
//! rounds each): 72 → 64 ns an evaluation at 200,000 variables, 11.9 → 11.0–11.5 at 20,000.
//!
//! **What it does.** [`HugeCode`] reserves one read-write mapping, aligned to 2 MiB and advised
//! `MADV_HUGEPAGE` (the kernel backs it with huge pages where it can, and with small ones
//! otherwise), bump-allocates every function's code from it, and at `finalize` makes the used
//! part read-execute and returns the rest. Other kinds of memory (data, read-only constants)
//! go to Cranelift's own provider. It is used only for code estimated above [`HUGE_FROM`]: a
//! huge page would be mostly empty below that (the 2,000-variable
//! anchor sheet's 617 KiB stays on small pages).
//!
//! **Invariants.** Code is written only before `finalize`; after it the mapping is never
//! writable again. The mapping lives until `free_memory` (called when the [`super::native`]
//! module is dropped, after its function pointers are cleared).

use cranelift_jit::{BranchProtection, JITMemoryKind, JITMemoryProvider, SystemMemoryProvider};
use cranelift_module::{ModuleError, ModuleResult};
use std::io;
use std::ptr;

/// A huge page's size on x86-64 and most aarch64 kernels.
const HUGE: usize = 2 << 20;

/// Code estimated at or above this many bytes is placed on huge pages (in the solver's own
/// tests, all code: their native property tests then run through this provider).
#[cfg(not(test))]
pub(super) const HUGE_FROM: usize = 2 << 20;
#[cfg(test)]
pub(super) const HUGE_FROM: usize = 1;

/// One mapping for all of a module's code (see the module docs).
pub(super) struct HugeCode {
    /// The 2 MiB-aligned start of the reservation (null once freed).
    base: *mut u8,
    /// Bytes reserved from `base`.
    reserved: usize,
    /// Bytes handed out from `base`.
    used: usize,
    /// The whole mapping as made (`base` lies inside it): what `munmap` takes.
    map: (*mut u8, usize),
    /// Whether the used part is read-execute already.
    finalized: bool,
    /// Everything that is not code.
    other: SystemMemoryProvider,
}

// SAFETY: the mapping is owned by this value alone; the raw pointers are addresses in it, not
// shared references, and the module that owns the provider is moved between threads whole.
unsafe impl Send for HugeCode {}

impl HugeCode {
    /// Reserves `bytes` (rounded up to 2 MiB) for code.
    pub(super) fn new(bytes: usize) -> io::Result<HugeCode> {
        let reserved = bytes.div_ceil(HUGE).max(1) * HUGE;
        let len = reserved + HUGE;
        // SAFETY: an anonymous private mapping at an address the kernel chooses; nothing else
        // refers to it.
        let map = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = map.cast::<u8>();
        let skip = (HUGE - (map as usize) % HUGE) % HUGE;
        // SAFETY: `skip` < HUGE, so `base` and the `reserved` bytes after it lie in the mapping.
        let base = unsafe { map.add(skip) };
        // SAFETY: the range lies in the mapping just made. Advice is a hint: when the kernel
        // does not take it (THP disabled), the code still runs, on small pages.
        unsafe { libc::madvise(base.cast(), reserved, libc::MADV_HUGEPAGE) };
        Ok(HugeCode {
            base,
            reserved,
            used: 0,
            map: (map, len),
            finalized: false,
            other: SystemMemoryProvider::new(),
        })
    }
}

impl JITMemoryProvider for HugeCode {
    fn allocate(&mut self, size: usize, align: u64, kind: JITMemoryKind) -> io::Result<*mut u8> {
        if !matches!(kind, JITMemoryKind::Executable) {
            return self.other.allocate(size, align, kind);
        }
        let align = usize::try_from(align).unwrap_or(usize::MAX).max(1);
        let start = self.used.checked_next_multiple_of(align);
        match start.and_then(|s| s.checked_add(size)) {
            Some(end) if !self.finalized && !self.base.is_null() && end <= self.reserved => {
                self.used = end;
                // SAFETY: `start` + `size` ≤ `reserved`, so the range lies in the mapping.
                Ok(unsafe { self.base.add(end - size) })
            }
            _ => Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("the native code outgrew its {} MiB reservation", self.reserved >> 20),
            )),
        }
    }

    unsafe fn free_memory(&mut self) {
        // SAFETY: the caller guarantees no function in the code runs or will run.
        unsafe { self.other.free_memory() };
        if !self.map.0.is_null() {
            // SAFETY: the mapping made in `new`, unmapped once (its pointer is cleared).
            unsafe { libc::munmap(self.map.0.cast(), self.map.1) };
            self.map = (ptr::null_mut(), 0);
            self.base = ptr::null_mut();
        }
    }

    fn finalize(&mut self, branch_protection: BranchProtection) -> ModuleResult<()> {
        self.other.finalize(branch_protection)?;
        if self.finalized || self.base.is_null() {
            return Ok(());
        }
        self.finalized = true;
        let page = 4096;
        let code = self.used.div_ceil(page) * page;
        if code > 0 {
            // SAFETY: the first `code` bytes of the reservation, written by now and never again.
            if unsafe { libc::mprotect(self.base.cast(), code, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
                return Err(ModuleError::Allocation { err: io::Error::last_os_error() });
            }
        }
        // The rest was never touched; giving it back keeps the address space small.
        let keep = code.div_ceil(HUGE) * HUGE;
        if keep < self.reserved {
            // SAFETY: the untouched tail of the mapping: nothing points into it.
            unsafe { libc::munmap(self.base.add(keep).cast(), self.reserved - keep) };
            self.reserved = keep;
        }
        Ok(())
    }
}
