//! Symmetric static data: the C ABI makes the global and static variables
//! of a C program symmetric objects.
//!
//! # Design
//!
//! A C program's global and static variables live in the writable part of
//! its executable: `.data` (initialized) and `.bss` (zeroed), loaded by the
//! writable `PT_LOAD` segment. Every PE runs the same executable, so those
//! variables have the same *relative* addresses on every PE (absolute
//! addresses differ under ASLR; that does not matter).
//!
//! At start-up, before the conduit attaches, [`find`] locates the pages of
//! that segment that follow its `PT_GNU_RELRO` part (`.got.plt`, `.data`,
//! `.bss` — the RELRO pages become read-only after relocation and are not
//! user data); the runtime reserves a page-aligned region of that length in
//! every PE's segment ([`crate::runtime::layout`]). Once attached, and
//! before any one-sided traffic, [`remap`] copies the pages into the
//! region through the segment's mapping, then maps the same region of the
//! segment's backing file ([`conduits::Segments::segment_backing`]) over the
//! pages with `MAP_FIXED | MAP_SHARED`. From then on the variable at
//! address `a` *is* segment byte `region + (a - start)`: a peer's put into
//! the region lands in the variable, local loads and stores and CPU
//! atomics act on the segment, and the C layer translates `&var` into a
//! segment offset like a heap address.
//!
//! # Limits
//!
//! - Only the executable's own variables: those of shared libraries the
//!   program loads are not symmetric (an RMA on them is reported as an
//!   address outside symmetric memory).
//! - Only whole pages after the RELRO end; a variable that shares a page
//!   with RELRO data (none does with GNU ld's page-aligned RELRO end) would
//!   be left out.
//! - Thread-local variables are not symmetric (they are per thread).
//! - The conduit must expose a file behind its segment; every conduit
//!   does (see below). One that did not (the trait's default) would run C
//!   programs without symmetric static data.
//! - After `fork`, parent and child share the pages (they are `MAP_SHARED`).
//!
//! # What each conduit provides
//!
//! - `smp`: its segment is the PE's `/dev/shm` file (unlinked after
//!   bootstrap, kept open), from offset 0.
//! - `ipv6`: its segment is a `MAP_SHARED` mapping of a memfd (created
//!   with `memfd_create` + `ftruncate`, open for the conduit's life), from
//!   offset 0. The progress thread's engine works on the same mapping, so
//!   remote puts and atomics land in the remapped variables.
//! - `fpga`: its segment is the BAR2 window (the devsim `bar2` file, or
//!   the PCI `resource2_wc`/`resource2`), from the segment's page-aligned
//!   offset in it (`SEG_BASE` = 0). With devsim the variables live in the
//!   board's DDR file. On a real board they live in board DDR behind the
//!   write-combining BAR2 window: plain loads and stores to globals cross
//!   PCIe, and CPU atomics on them are not atomic with the board's (the C
//!   layer's atomics go through the board, so only mixing plain CPU
//!   atomics with shmem atomics on one variable is affected).

use conduits::SegmentBacking;

/// A page-aligned range of this process's address space: the writable
/// static data of the executable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticData {
    /// First byte (page-aligned).
    pub start: usize,
    /// Length in bytes (a multiple of the page size).
    pub len: usize,
}

impl StaticData {
    /// Whether `addr..addr+len` lies inside the range.
    #[inline]
    pub fn contains(&self, addr: usize, len: usize) -> bool {
        addr >= self.start
            && addr
                .checked_add(len)
                .is_some_and(|e| e <= self.start + self.len)
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

struct Found {
    data: Option<StaticData>,
    page: usize,
}

unsafe extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    arg: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid `info` for this call, and `arg`
    // is the `Found` that `find` passed, alive for the whole iteration.
    let (info, found) = unsafe { (&*info, &mut *arg.cast::<Found>()) };
    if info.dlpi_phnum == 0 || info.dlpi_phdr.is_null() {
        return 1;
    }
    // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers of this
    // object (the loader's own table, alive while the object is loaded).
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let base = info.dlpi_addr as usize;
    let page = found.page;
    let relro_end = phdrs
        .iter()
        .find(|p| p.p_type == libc::PT_GNU_RELRO)
        .map(|p| base + (p.p_vaddr + p.p_memsz) as usize);
    let mut best: Option<StaticData> = None;
    for p in phdrs
        .iter()
        .filter(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_W != 0)
    {
        let seg_start = base + p.p_vaddr as usize;
        let seg_end = seg_start + p.p_memsz as usize;
        let mut start = seg_start.next_multiple_of(page);
        if let Some(r) = relro_end.filter(|&r| r > seg_start && r <= seg_end) {
            start = r.next_multiple_of(page);
        }
        let end = seg_end.next_multiple_of(page);
        if end > start && best.is_none_or(|b| end - start > b.len) {
            best = Some(StaticData {
                start,
                len: end - start,
            });
        }
    }
    found.data = best;
    // The first object is the executable: stop.
    1
}

/// The executable's writable static data after RELRO, or `None` if it has
/// none (or the loader does not report it).
pub fn find() -> Option<StaticData> {
    let mut found = Found {
        data: None,
        page: page_size(),
    };
    // SAFETY: `visit` only reads the headers the loader passes and writes
    // `found`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut found).cast()) };
    found.data
}

/// Makes `data` a view of segment bytes `region..region + data.len`:
/// copies the current contents there through `seg_base` (this process's
/// mapping of the segment), then maps that part of the segment's backing
/// file over `data`. On error nothing changed.
///
/// # Safety
/// `data` must come from [`find`] for this process; `seg_base` must be the
/// local segment's base address and `region + data.len` lie within the
/// segment and `backing`; `region` must be page-aligned. No other thread
/// may write the static data during the call, and no peer may write the
/// region before the call returns.
pub unsafe fn remap(
    data: StaticData,
    seg_base: *mut u8,
    region: usize,
    backing: SegmentBacking,
) -> std::io::Result<()> {
    if region + data.len > backing.len || !region.is_multiple_of(page_size()) {
        return Err(std::io::Error::other(
            "the static-data region does not fit the segment",
        ));
    }
    // SAFETY: the source is the executable's mapped, readable data pages
    // (caller contract); the destination lies inside the segment mapping
    // (checked above); they are different mappings, so they do not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(data.start as *const u8, seg_base.add(region), data.len)
    };
    // SAFETY: the target range is the page-aligned static data of the
    // executable, replaced by a shared mapping of the file region whose
    // contents were just made identical; nothing in the range is
    // reachable through Rust references that the swap could invalidate.
    let p = unsafe {
        libc::mmap(
            data.start as *mut libc::c_void,
            data.len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            backing.fd,
            (backing.offset + region as u64) as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
