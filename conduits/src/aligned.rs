//! Shared file mappings placed at an aligned address.
//!
//! Every conduit maps its segment (and smp its peers' segments) at an
//! address that is a multiple of [`SEGMENT_ALIGN`], so that a segment
//! offset aligned to any power of two up to it is an equally aligned
//! address on every PE: `shmem_align` with a large alignment then returns
//! an absolutely aligned, symmetric block. The mapping reserves
//! `len + align` bytes of address space with `PROT_NONE`, maps the file
//! with `MAP_FIXED` at the first aligned address inside, and gives the
//! unused head and tail of the reservation back.

use std::os::fd::RawFd;

/// Alignment of every segment's base address (1 GiB; address space only,
/// nothing is committed for the reservation).
pub const SEGMENT_ALIGN: usize = 1 << 30;

/// A `MAP_SHARED`, read-write mapping of `len` bytes of a file, unmapped on
/// drop.
#[derive(Debug)]
pub struct AlignedMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; it is only
// reached through raw pointers and atomics by its users.
unsafe impl Send for AlignedMap {}
// SAFETY: as for Send.
unsafe impl Sync for AlignedMap {}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

impl AlignedMap {
    /// Maps bytes `offset..offset + len` of `fd` (at least one page) at an
    /// address that is a multiple of `align` (a power of two, at least the
    /// page size).
    pub fn map(fd: RawFd, offset: u64, len: usize, align: usize) -> std::io::Result<AlignedMap> {
        let page = page_size();
        let align = align.max(page);
        let len = len.max(1).next_multiple_of(page);
        let reserve = len
            .checked_add(align)
            .ok_or_else(|| std::io::Error::other("mapping length overflows"))?;
        // SAFETY: an anonymous PROT_NONE reservation at an address of the
        // kernel's choice touches no existing mapping.
        let r = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserve,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if r == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let start = r as usize;
        let at = start.next_multiple_of(align);
        // SAFETY: `at..at + len` lies inside the reservation just made
        // (`at - start < align`), which nothing else uses.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            // SAFETY: the whole reservation is ours and unused.
            unsafe { libc::munmap(r, reserve) };
            return Err(e);
        }
        // SAFETY: the head `start..at` and tail `at + len..start + reserve`
        // are parts of our reservation outside the file mapping.
        unsafe {
            if at > start {
                libc::munmap(r, at - start);
            }
            let end = at + len;
            if start + reserve > end {
                libc::munmap(end as *mut libc::c_void, start + reserve - end);
            }
        }
        Ok(AlignedMap {
            ptr: at as *mut u8,
            len,
        })
    }

    /// Base address.
    #[inline(always)]
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes (a multiple of the page size).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for AlignedMap {
    fn drop(&mut self) {
        // SAFETY: the range is the mapping this value owns; nothing uses it
        // after the owner is dropped.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn maps_at_an_aligned_address_and_shares_the_file() {
        let f = tempfile_like();
        f.set_len(3 * 4096).unwrap();
        let m = AlignedMap::map(f.as_raw_fd(), 0, 3 * 4096, SEGMENT_ALIGN).unwrap();
        assert_eq!(m.ptr() as usize % SEGMENT_ALIGN, 0);
        let n = AlignedMap::map(f.as_raw_fd(), 4096, 4096, 1 << 20).unwrap();
        assert_eq!(n.ptr() as usize % (1 << 20), 0);
        // SAFETY: both pointers are inside their mappings.
        unsafe {
            m.ptr().add(4096 + 8).write_volatile(42);
            assert_eq!(n.ptr().add(8).read_volatile(), 42);
        }
    }

    fn tempfile_like() -> std::fs::File {
        // SAFETY: NUL-terminated name, valid flags.
        let fd = unsafe { libc::memfd_create(c"aligned-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: `fd` is new and owned by nobody else.
        unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) }
    }
}
