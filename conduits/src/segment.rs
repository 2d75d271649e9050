//! The local segment of a PE whose segment is host memory served by an
//! engine (the ipv6 and ofi conduits): a shared mapping of a memfd (or of
//! another conduit's segment file, [`Segment::over`]) that the application
//! loads and stores directly and the progress thread's engine serves
//! remote puts, gets and atomics from (one mapping, shared through an
//! `Arc`). The file stays open so that a layer can map part of the segment
//! a second time ([`crate::Segments::segment_backing`]; the C ABI maps the
//! program's static data there): both mappings name the same pages.

use crate::aligned::AlignedMap;
use crate::error::{ConduitError, Result};
use gasnet_core::engine::{MemError, Memory, check_range};
use gasnet_core::{AmoOp, AmoWidth};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::Arc;

/// What backs a segment of [`Segment::new`], as errors name it.
pub(crate) const MEMFD: &str =
    "memory (a memfd; available memory and swap, within the memory cgroup's limit)";

/// The mapping, shared by the conduit (the application's view) and the
/// engine (the progress thread's view). Zero-filled at creation.
#[derive(Debug)]
pub(crate) struct Segment {
    map: AlignedMap,
    /// The memfd behind `map`, open for the segment's life.
    file: File,
    /// File offset of segment byte 0.
    offset: u64,
    len: usize,
}

impl Segment {
    /// Maps `len` zero bytes of a new memfd, shared, at a multiple of
    /// [`crate::aligned::SEGMENT_ALIGN`], its pages reserved now
    /// ([`crate::backing`]): a segment that memory cannot hold is a
    /// [`ConduitError::NoSpace`] here, not an out-of-memory kill when a
    /// page is first touched.
    pub(crate) fn new(len: usize) -> Result<Arc<Segment>> {
        let io = |what: &str, e: std::io::Error| {
            ConduitError::Io(format!("{what} for a {len}-byte segment: {e}"))
        };
        // SAFETY: the name is a NUL-terminated string; the flags are valid.
        let fd = unsafe { libc::memfd_create(c"fshmem-ipv6-segment".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io("memfd_create", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(len.max(1) as u64)
            .map_err(|e| io("ftruncate", e))?;
        crate::backing::reserve(&file, 0, len as u64, MEMFD, crate::backing::Space::Memory)?;
        let map = AlignedMap::map(file.as_raw_fd(), 0, len, crate::aligned::SEGMENT_ALIGN)
            .map_err(|e| io("mmap", e))?;
        Ok(Arc::new(Segment {
            map,
            file,
            offset: 0,
            len,
        }))
    }

    /// Maps the segment another conduit of this process allocated
    /// ([`crate::SegmentRequest::Over`]): a duplicate of its descriptor,
    /// so the file stays open as long as this segment lives, mapped shared
    /// at a multiple of [`crate::aligned::SEGMENT_ALIGN`]. Bytes remote PEs put
    /// through this conduit land in that file, where the other conduit's
    /// mappings see them.
    pub(crate) fn over(b: crate::contract::SegmentBacking) -> Result<Arc<Segment>> {
        let io = |what: &str, e: std::io::Error| {
            ConduitError::Io(format!(
                "{what} of the {}-byte segment behind descriptor {}: {e}",
                b.len, b.fd
            ))
        };
        // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor of the same file;
        // it touches no memory.
        let fd = unsafe { libc::fcntl(b.fd, libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io("dup", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        let size = file.metadata().map_err(|e| io("fstat", e))?.len();
        if b.offset
            .checked_add(b.len as u64)
            .is_none_or(|end| end > size.max(1))
        {
            return Err(ConduitError::Bootstrap(format!(
                "the segment backing ({} bytes at offset {}) does not fit its {size}-byte file",
                b.len, b.offset
            )));
        }
        let map = AlignedMap::map(
            file.as_raw_fd(),
            b.offset,
            b.len,
            crate::aligned::SEGMENT_ALIGN,
        )
        .map_err(|e| io("mmap", e))?;
        Ok(Arc::new(Segment {
            map,
            file,
            offset: b.offset,
            len: b.len,
        }))
    }

    /// Base address.
    pub(crate) fn base(&self) -> *mut u8 {
        self.map.ptr()
    }

    /// The file (open while `self` lives), the offset of segment byte 0
    /// in it and the segment length.
    pub(crate) fn backing(&self) -> (RawFd, u64, usize) {
        (self.file.as_raw_fd(), self.offset, self.len)
    }
}

/// The engine's view of the segment. Atomics are CPU atomics, so the
/// application's atomic loads of its own words (`wait_until`) observe them
/// and its own local atomics are atomic with respect to remote ones.
#[derive(Debug)]
pub(crate) struct SegMemory {
    seg: Arc<Segment>,
    len: usize,
}

impl SegMemory {
    pub(crate) fn new(seg: Arc<Segment>, len: usize) -> SegMemory {
        SegMemory { seg, len }
    }
}

impl Memory for SegMemory {
    fn len(&self) -> u64 {
        self.len as u64
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> std::result::Result<(), MemError> {
        check_range(self.len as u64, offset, buf.len() as u64)?;
        // SAFETY: the range lies inside the mapping (checked), which lives
        // as long as `self.seg`, and is reached through a raw pointer (no
        // Rust reference to segment memory exists). The loads are relaxed
        // atomics (`segmem`), so an application thread writing the same
        // bytes meanwhile (atomically too, through the shmem API) does not
        // race with them; `buf` is the engine's own and cannot overlap the
        // mapping.
        unsafe {
            crate::segmem::copy_out(
                self.seg.base().add(offset as usize),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        Ok(())
    }

    fn read_vec(&self, offset: u64, len: usize) -> std::result::Result<Vec<u8>, MemError> {
        check_range(self.len as u64, offset, len as u64)?;
        // SAFETY: `filled` hands a buffer of `len` writable bytes, which
        // `copy_out` writes whole; its source lies inside the mapping
        // (checked) and is read with relaxed atomics, as in `read`.
        Ok(unsafe {
            gasnet_core::pool::filled(len, |p| {
                crate::segmem::copy_out(self.seg.base().add(offset as usize), p, len)
            })
        })
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> std::result::Result<(), MemError> {
        check_range(self.len as u64, offset, data.len() as u64)?;
        // SAFETY: as in `read`: relaxed atomic stores into the mapping
        // through a raw pointer, from the engine's own buffer.
        unsafe {
            crate::segmem::copy_in(
                data.as_ptr(),
                self.seg.base().add(offset as usize),
                data.len(),
            )
        };
        Ok(())
    }

    fn atomic(
        &mut self,
        op: AmoOp,
        width: AmoWidth,
        offset: u64,
        operand: u64,
        compare: u64,
    ) -> std::result::Result<u64, MemError> {
        let n = width.bytes();
        if !offset.is_multiple_of(n as u64) {
            return Err(MemError::Misaligned { offset, align: n });
        }
        check_range(self.len as u64, offset, n as u64)?;
        // SAFETY: in range and aligned (checked above); the mapping is page
        // aligned so segment alignment is address alignment.
        let old = unsafe {
            crate::cpu_amo::atomic_at(
                self.seg.base().add(offset as usize),
                op,
                width,
                operand,
                compare,
            )
        };
        Ok(old & width.mask())
    }
}

// SAFETY: the mapping is owned by the Arc and never moves; every thread
// reaches it through raw pointers with atomic accesses only (`segmem` and
// `cpu_amo`, see the impls above), so sharing it races with nothing.
unsafe impl Send for Segment {}
// SAFETY: as for Send.
unsafe impl Sync for Segment {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_checks_and_atomics() {
        let seg = Segment::new(64).unwrap();
        let mut m = SegMemory::new(seg.clone(), 64);
        m.write(8, &5u64.to_le_bytes()).unwrap();
        assert_eq!(m.atomic(AmoOp::FetchAdd, AmoWidth::W64, 8, 2, 0), Ok(5));
        assert_eq!(m.atomic(AmoOp::Fetch, AmoWidth::W32, 8, 0, 0), Ok(7));
        assert!(m.atomic(AmoOp::Add, AmoWidth::W64, 4, 1, 0).is_err());
        assert!(m.atomic(AmoOp::Add, AmoWidth::W64, 64, 1, 0).is_err());
        assert!(m.write(60, &[0; 8]).is_err());
        let mut b = [0u8; 8];
        m.read(8, &mut b).unwrap();
        assert_eq!(u64::from_le_bytes(b), 7);
    }
}
